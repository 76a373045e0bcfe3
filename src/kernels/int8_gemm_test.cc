#include "kernels/int8_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <vector>

namespace weft::internal {
namespace {

// Bytes from a linear congruential sequence: the same on every machine.
template <class T>
std::vector<T> Int8GemmSeededBytes(int64_t n, uint32_t seed) {
  std::vector<T> out(static_cast<size_t>(n));
  for (T& v : out) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<T>(seed >> 24);
  }
  return out;
}

// One column panel of `cols` pixels over `depth` in the kernels' layout,
// from a pixel-major matrix (cols x depth); the rest zero.
std::vector<uint8_t> PackColumns(const std::vector<uint8_t>& x, int64_t cols,
                                 int64_t depth) {
  std::vector<uint8_t> panel(static_cast<size_t>(Int8ColumnPanelBytes(depth)));
  for (int64_t p = 0; p < cols; ++p) {
    for (int64_t d = 0; d < depth; ++d) {
      panel[(d / 4) * kInt8Cols * 4 + p * 4 + d % 4] = x[p * depth + d];
    }
  }
  return panel;
}

// Every kernel this CPU runs gives each panel product's exact sums, for
// depths that are and are not whole quads and partial panels.
TEST(Int8GemmTest, PanelProductsAreTheExactSumsOnEveryKernelTheCpuRuns) {
  for (Int8Kernel kernel : kAllInt8Kernels) {
    if (!CpuRunsInt8Kernel(kernel)) continue;
    // 588 and 2400: 147 and 600 quads, past the AVX2 kernel's chunk of 128.
    for (int64_t depth : {1, 4, 7, 64, 147, 588, 2400}) {
      for (int64_t rows : {1, 5, 8}) {
        for (int64_t cols : {1, 17, 32}) {
          SCOPED_TRACE(std::string(Int8KernelName(kernel)) + " depth=" +
                       std::to_string(depth) + " rows=" + std::to_string(rows) +
                       " cols=" + std::to_string(cols));
          const auto w = Int8GemmSeededBytes<int8_t>(rows * depth, 7);
          const auto x = Int8GemmSeededBytes<uint8_t>(cols * depth, 11);
          const PackedInt8Weights packed(w.data(), rows, depth);
          const std::vector<uint8_t> panel = PackColumns(x, cols, depth);
          std::vector<int32_t> acc(rows * kInt8Cols, -1);
          Int8PanelProduct(kernel, packed.panel(0), panel.data(),
                           packed.quads(), rows, cols, acc.data(), kInt8Cols);
          for (int64_t r = 0; r < rows; ++r) {
            int32_t row_sum = 0;
            for (int64_t d = 0; d < depth; ++d) row_sum += w[r * depth + d];
            EXPECT_EQ(packed.row_sums()[r], row_sum);
            for (int64_t p = 0; p < kInt8Cols; ++p) {
              int32_t want = -1;  // Past `cols`: left as it was.
              if (p < cols) {
                want = 0;
                for (int64_t d = 0; d < depth; ++d) {
                  want += int32_t{w[r * depth + d]} * x[p * depth + d];
                }
              }
              ASSERT_EQ(acc[r * kInt8Cols + p], want) << r << "," << p;
            }
          }
        }
      }
    }
  }
}

// The extremes: 255 x -128 and 255 x 127 in every byte, where a pair sum
// (65,280 or -65,280) does not fit the int16 that vpmaddubsw saturates to.
TEST(Int8GemmTest, ExtremeBytesSumExactlyOnEveryKernelTheCpuRuns) {
  constexpr int64_t kDepth = 1000, kRows = 8;
  std::vector<int8_t> w(kRows * kDepth);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t d = 0; d < kDepth; ++d) {
      w[r * kDepth + d] = static_cast<int8_t>(r % 2 == 0 ? -128 : 127);
    }
  }
  const std::vector<uint8_t> x(kInt8Cols * kDepth, 255);
  const PackedInt8Weights packed(w.data(), kRows, kDepth);
  const std::vector<uint8_t> panel = PackColumns(x, kInt8Cols, kDepth);
  for (Int8Kernel kernel : kAllInt8Kernels) {
    if (!CpuRunsInt8Kernel(kernel)) continue;
    SCOPED_TRACE(std::string(Int8KernelName(kernel)));
    std::vector<int32_t> acc(kRows * kInt8Cols, 0);
    Int8PanelProduct(kernel, packed.panel(0), panel.data(), packed.quads(),
                     kRows, kInt8Cols, acc.data(), kInt8Cols);
    for (int64_t r = 0; r < kRows; ++r) {
      const int32_t want = (r % 2 == 0 ? -128 : 127) * 255 * int32_t{kDepth};
      for (int64_t p = 0; p < kInt8Cols; ++p) {
        ASSERT_EQ(acc[r * kInt8Cols + p], want) << r << "," << p;
      }
    }
  }
}

TEST(Int8GemmTest, TheEnvironmentNamesOnlyKernels) {
  EXPECT_EQ(ParseInt8Kernel("vnni"), Int8Kernel::kAvx512Vnni);
  EXPECT_EQ(ParseInt8Kernel("avxvnni"), Int8Kernel::kAvxVnni);
  EXPECT_EQ(ParseInt8Kernel("avx2"), Int8Kernel::kAvx2);
  EXPECT_EQ(ParseInt8Kernel("generic"), Int8Kernel::kGeneric);
  EXPECT_EQ(ParseInt8Kernel("amx"), std::nullopt);
  for (Int8Kernel kernel : kAllInt8Kernels) {
    EXPECT_EQ(ParseInt8Kernel(Int8KernelName(kernel)), kernel);
  }
  EXPECT_TRUE(CpuRunsInt8Kernel(Int8Kernel::kGeneric));
  EXPECT_TRUE(CpuRunsInt8Kernel(ActiveInt8Kernel()));
}

// The rule on every kind of CPU, whichever this one is: the widest VNNI,
// then AVX2's widened bytes, then portable C++.
TEST(Int8GemmTest, TheCpusUnitsChooseTheKernel) {
  EXPECT_EQ(Int8KernelForUnits({}), Int8Kernel::kGeneric);
  EXPECT_EQ(Int8KernelForUnits({.avx2 = true}), Int8Kernel::kAvx2);
  // Alder Lake, Sierra Forest: AVX-VNNI without AVX-512.
  EXPECT_EQ(Int8KernelForUnits({.avx2 = true, .avx_vnni = true}),
            Int8Kernel::kAvxVnni);
  // Ice Lake, Zen 4: AVX-512 VNNI alone.
  EXPECT_EQ(Int8KernelForUnits({.avx2 = true, .avx512_vnni = true}),
            Int8Kernel::kAvx512Vnni);
  // Sapphire Rapids, Zen 5: both; the 512-bit one.
  EXPECT_EQ(
      Int8KernelForUnits({.avx2 = true, .avx_vnni = true, .avx512_vnni = true}),
      Int8Kernel::kAvx512Vnni);
}

}  // namespace
}  // namespace weft::internal

namespace weft::internal {
namespace {

// The requantization, vectorised or not, rounds half to even and saturates
// exactly as the scalar definition does, for every run length (masked
// tails) and for ties.
TEST(Int8GemmTest, RequantizeRoundsHalfToEvenAndSaturatesLikeTheDefinition) {
  std::vector<int32_t> acc;
  for (int32_t v = -700; v <= 700; v += 3) acc.push_back(v);
  for (float multiplier : {0.5f, 0.25f, 0.37f, 1.0f}) {
    for (int32_t bias : {0, 7, -300}) {
      for (int64_t n : {int64_t{1}, int64_t{15}, int64_t{16}, int64_t{33},
                        static_cast<int64_t>(acc.size())}) {
        std::vector<uint8_t> u(static_cast<size_t>(n));
        std::vector<int8_t> s(static_cast<size_t>(n));
        RequantizeToUint8(acc.data(), n, bias, multiplier, 128.f, u.data());
        RequantizeToInt8(acc.data(), n, bias, multiplier, -3.f, s.data());
        for (int64_t p = 0; p < n; ++p) {
          const float scaled = static_cast<float>(acc[p] + bias) * multiplier;
          const float uw =
              std::clamp(std::nearbyint(scaled) + 128.f, 0.f, 255.f);
          const float sw =
              std::clamp(std::nearbyint(scaled) - 3.f, -128.f, 127.f);
          ASSERT_EQ(u[p], static_cast<uint8_t>(uw)) << acc[p] << " " << n;
          ASSERT_EQ(s[p], static_cast<int8_t>(sw)) << acc[p] << " " << n;
        }
      }
    }
  }
  // A tie: 5 * 0.5 = 2.5 rounds to 2, 7 * 0.5 = 3.5 to 4.
  const int32_t ties[] = {5, 7};
  uint8_t out[2];
  RequantizeToUint8(ties, 2, 0, 0.5f, 0.f, out);
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 4);
}

// A bias near the int32 limits is valid input: the sum wraps at 32 bits,
// on every path alike (a signed add there would be undefined).
TEST(Int8GemmTest, RequantizeWrapsTheSumOfAccumulatorAndBias) {
  const int32_t acc[] = {1, 2, -1, 0, 1000, -1000, 1,  2, 3,
                         4, 5, 6,  7, 8,    9,     10, 11};
  const int64_t n = std::size(acc);
  for (int32_t bias : {std::numeric_limits<int32_t>::max(),
                       std::numeric_limits<int32_t>::min()}) {
    std::vector<uint8_t> u(static_cast<size_t>(n));
    RequantizeToUint8(acc, n, bias, 1.0f / 65536 / 256, 128.f, u.data());
    for (int64_t p = 0; p < n; ++p) {
      const auto sum = static_cast<int32_t>(static_cast<uint32_t>(acc[p]) +
                                            static_cast<uint32_t>(bias));
      const float want = std::clamp(
          std::nearbyint(static_cast<float>(sum) / 65536 / 256) + 128.f, 0.f,
          255.f);
      ASSERT_EQ(u[static_cast<size_t>(p)], static_cast<uint8_t>(want))
          << "acc " << acc[p] << " bias " << bias;
    }
  }
}

}  // namespace
}  // namespace weft::internal
