#include "kernels/bf16_gemm.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace weft::internal {
namespace {

// Floats in [-1, 1) from a linear congruential sequence: the same on every
// machine.
std::vector<float> SeededFloats(int64_t n, uint32_t seed) {
  std::vector<float> out(static_cast<size_t>(n));
  for (float& v : out) {
    seed = seed * 1664525U + 1013904223U;
    v = static_cast<float>(seed >> 8) / 8388608.0f - 1.0f;
  }
  return out;
}

TEST(Bf16GemmTest, RoundingIsToNearestEvenWithDenormalsToZero) {
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: the even one, 1, wins.
  EXPECT_EQ(RoundToBf16(1.0f + 0x1p-8f), RoundToBf16(1.0f));
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: 1 + 2^-6.
  EXPECT_EQ(Bf16ToFloat(RoundToBf16(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
  EXPECT_EQ(Bf16ToFloat(RoundToBf16(1.0f + 0x1p-8f + 0x1p-20f)),
            1.0f + 0x1p-7f);
  EXPECT_EQ(RoundToBf16(-0x1p-140f), 0x8000);  // A denormal: -0.
  EXPECT_EQ(RoundToBf16(0x1p-140f), 0x0000);
  EXPECT_TRUE(std::isnan(
      Bf16ToFloat(RoundToBf16(std::numeric_limits<float>::quiet_NaN()))));
  // A signalling NaN whose payload lies in the dropped bits stays a NaN.
  EXPECT_TRUE(std::isnan(Bf16ToFloat(
      RoundToBf16(std::bit_cast<float>(static_cast<uint32_t>(0x7F800001U))))));
  EXPECT_TRUE(std::isinf(Bf16ToFloat(RoundToBf16(3.4e38f))));
  EXPECT_EQ(Bf16ToFloat(RoundToBf16(-2.5f)), -2.5f);
}

// The vector conversion gives the scalar one's bits for every class of
// float: normals, ties, denormals, zeros, infinities, NaNs, partial vectors.
TEST(Bf16GemmTest, VectorRoundingGivesTheScalarBits) {
  std::vector<float> x;
  uint32_t seed = 5;
  for (int i = 0; i < 4096; ++i) {
    seed = seed * 1664525U + 1013904223U;
    x.push_back(std::bit_cast<float>(seed));
  }
  for (uint32_t bits : {0x00000000U, 0x80000000U, 0x00000001U, 0x807FFFFFU,
                        0x7F800000U, 0xFF800000U, 0x7FC00000U, 0x7F800001U,
                        0x3F808000U, 0x3F818000U, 0x7F7FFFFFU}) {
    x.push_back(std::bit_cast<float>(bits));
  }
  for (int64_t n : {int64_t{1}, int64_t{15}, static_cast<int64_t>(x.size())}) {
    std::vector<uint16_t> out(static_cast<size_t>(n));
    RoundToBf16(x.data(), n, out.data());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], RoundToBf16(x[i]))
          << "float bits " << std::hex << std::bit_cast<uint32_t>(x[i]);
    }
  }
}

// Products equal a float64 sum of the rounded operands to float32 precision
// (every bf16 product is exact in float32, so only the float32 sums
// round); tiles of whole and partial rows and blocks, odd depths,
// transposed operands.
TEST(Bf16GemmTest, ProductsAreTheSumsOfTheRoundedOperands) {
  if (!CpuHasBf16Products()) {
    GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  }
  for (int64_t m : {1, 6, 13}) {
    for (int64_t k : {1, 2, 33, 256}) {
      for (int64_t n : {1, 16, 70, 128}) {
        for (bool transposed : {false, true}) {
          SCOPED_TRACE("m=" + std::to_string(m) + " k=" + std::to_string(k) +
                       " n=" + std::to_string(n) +
                       (transposed ? " transposed" : ""));
          const std::vector<float> a = SeededFloats(m * k, 3);
          const std::vector<float> b = SeededFloats(k * n, 9);
          const Bf16PackedWeights packed(b.data(), transposed ? k : n,
                                         transposed, k, n);
          Bf16Rows rows;
          rows.Reset(m, k);
          rows.Fill(a.data(), transposed ? m : k, transposed, 0, m);
          std::vector<float> c(static_cast<size_t>(m * n), -7.0f);
          Bf16Product(rows, 0, m, packed, 0, packed.blocks(), c.data(), n);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              double want = 0, magnitude = 0;
              for (int64_t p = 0; p < k; ++p) {
                const float av = transposed ? a[p * m + i] : a[i * k + p];
                const float bv = transposed ? b[j * k + p] : b[p * n + j];
                const double term =
                    static_cast<double>(Bf16ToFloat(RoundToBf16(av))) *
                    static_cast<double>(Bf16ToFloat(RoundToBf16(bv)));
                want += term;
                magnitude += std::fabs(term);
              }
              // Each of the k additions rounds once in float32.
              ASSERT_NEAR(c[i * n + j], want,
                          0x1p-23 * static_cast<double>(k) * magnitude)
                  << "at " << i << ", " << j;
            }
          }
        }
      }
    }
  }
}

// An element's bits do not depend on the tile that computes it: rows split
// at any point, and blocks computed one at a time, give the same product.
TEST(Bf16GemmTest, AnySplitOfRowsAndBlocksGivesTheSameBits) {
  if (!CpuHasBf16Products()) {
    GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  }
  const int64_t m = 23, k = 97, n = 150;
  const std::vector<float> a = SeededFloats(m * k, 21);
  const std::vector<float> b = SeededFloats(k * n, 22);
  const Bf16PackedWeights packed(b.data(), n, false, k, n);
  Bf16Rows rows;
  rows.Reset(m, k);
  rows.Fill(a.data(), k, false, 0, m);
  std::vector<float> whole(static_cast<size_t>(m * n));
  Bf16Product(rows, 0, m, packed, 0, packed.blocks(), whole.data(), n);
  std::vector<float> pieces(static_cast<size_t>(m * n));
  for (int64_t r0 = 0; r0 < m; r0 += 5) {
    const int64_t r1 = std::min(m, r0 + 5);
    for (int64_t j = 0; j < packed.blocks(); ++j) {
      Bf16Product(rows, r0, r1, packed, j, j + 1, pieces.data() + r0 * n, n);
    }
  }
  EXPECT_EQ(whole, pieces);
}

}  // namespace
}  // namespace weft::internal
