#include "kernels/packed_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace weft::internal {
namespace {

// Uniform in [-0.5, 0.5), reproducible.
std::vector<float> PackedGemmRandom(int64_t n, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  std::vector<float> v(n);
  for (auto& x : v) x = uniform(engine);
  return v;
}

struct PackedGemmCase {
  bool ta, tb, accumulate;
};

class PackedGemmTest : public testing::TestWithParam<PackedGemmCase> {
 protected:
  // Sizes not multiples of the panels, a depth over two depth blocks, and
  // rows over one mc block.
  const MicroKernelShape& shape = FloatMicroKernel();
  const int64_t m = shape.mc + 2 * shape.mr + 1, n = 3 * shape.nr + 5;
  const int64_t k = 2 * shape.kc + 7, pad = 3;
};

// Every way of giving the operands (plain, packed ahead, packed from an
// offset) gives Eigen's result within rounding, and the same bits.
TEST_P(PackedGemmTest, EveryOperandFormGivesTheSameBitsAndTheReference) {
  const PackedGemmCase p = GetParam();
  const int64_t lda = (p.ta ? m : k) + pad, ldb = (p.tb ? k : n) + pad;
  const int64_t ldc = n + pad;
  const std::vector<float> a = PackedGemmRandom((p.ta ? k : m) * lda, 1);
  const std::vector<float> b = PackedGemmRandom((p.tb ? n : k) * ldb, 2);
  const std::vector<float> c0 = PackedGemmRandom(m * ldc, 3);
  const GemmOperand<float> pa{a.data(), lda, p.ta}, pb{b.data(), ldb, p.tb};
  const PackedOperand packed_a =
      PackedOperand::Pack(PackedOperand::Side::kLeft, pa, m, k);
  const PackedOperand packed_b =
      PackedOperand::Pack(PackedOperand::Side::kRight, pb, k, n);

  std::vector<float> plain = c0;
  PackedGemmTile(m, n, k, GemmInput::Plain(pa), GemmInput::Plain(pb),
                 {plain.data(), ldc}, p.accumulate);
  // The reference: Eigen's product, checked against a double reference in
  // GemmTileTest.
  std::vector<float> reference = c0;
  GemmTile<float>(GemmKernel::kEigen, m, n, k, pa, pb, reference.data(), ldc,
                  p.accumulate);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {  // Row padding stays as it was.
      ASSERT_NEAR(plain[i * ldc + j], reference[i * ldc + j], 1e-4)
          << i << "," << j;
    }
  }

  std::vector<float> both = c0, left = c0, right = c0;
  PackedGemmTile(m, n, k, GemmInput::Packed(packed_a, 0),
                 GemmInput::Packed(packed_b, 0), {both.data(), ldc},
                 p.accumulate);
  PackedGemmTile(m, n, k, GemmInput::Packed(packed_a, 0), GemmInput::Plain(pb),
                 {left.data(), ldc}, p.accumulate);
  PackedGemmTile(m, n, k, GemmInput::Plain(pa), GemmInput::Packed(packed_b, 0),
                 {right.data(), ldc}, p.accumulate);
  EXPECT_EQ(0, std::memcmp(both.data(), plain.data(), plain.size() * 4));
  EXPECT_EQ(0, std::memcmp(left.data(), plain.data(), plain.size() * 4));
  EXPECT_EQ(0, std::memcmp(right.data(), plain.data(), plain.size() * 4));

  // C stored by column, as a product computed transposed writes it: the
  // same product, element for element.
  std::vector<float> by_column(n * m);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) by_column[j * m + i] = c0[i * ldc + j];
  }
  PackedGemmTile(m, n, k, GemmInput::Packed(packed_a, 0),
                 GemmInput::Packed(packed_b, 0), {by_column.data(), 1, m},
                 p.accumulate);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(by_column[j * m + i], plain[i * ldc + j]) << i << "," << j;
    }
  }

  // A tile from panel offsets: rows from mr on, columns from nr on.
  std::vector<float> tile = c0;
  const int64_t r0 = shape.mr, q0 = shape.nr;
  PackedGemmTile(m - r0, n - q0, k, GemmInput::Packed(packed_a, r0),
                 GemmInput::Packed(packed_b, q0),
                 {tile.data() + r0 * ldc + q0, ldc}, p.accumulate);
  for (int64_t i = r0; i < m; ++i) {
    for (int64_t j = q0; j < n; ++j) {
      ASSERT_EQ(tile[i * ldc + j], plain[i * ldc + j]) << i << "," << j;
    }
  }
}

std::vector<PackedGemmCase> PackedGemmAllCases() {
  std::vector<PackedGemmCase> cases;
  for (int mask = 0; mask < 8; ++mask) {
    cases.push_back({(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    Transposes, PackedGemmTest, testing::ValuesIn(PackedGemmAllCases()),
    [](const testing::TestParamInfo<PackedGemmCase>& info) {
      const PackedGemmCase& c = info.param;
      return std::string(c.ta ? "At" : "A") + (c.tb ? "Bt" : "B") +
             (c.accumulate ? "_accumulate" : "");
    });

// Every panel width the BLIS configurations give (4 to 32) and the others
// up to 17, every count of live runs, depths with and without a tail of
// eight: each entry is its run's step, or 0 past the live runs, and nothing
// past the panel is written.
TEST(PackPanelFromRunsTest, GivesEachRunsStepsAndZerosAndNothingMore) {
  constexpr float kUntouched = -7.0f;
  for (int64_t width = 1; width <= 32; width += width < 17 ? 1 : 15) {
    for (int64_t live = 1; live <= width; ++live) {
      for (const int64_t kc : {0, 1, 7, 8, 9, 16, 23}) {
        const int64_t stride = kc + 3;
        const std::vector<float> src = PackedGemmRandom(live * stride, 5);
        std::vector<float> dst(static_cast<size_t>(width * kc + 8), kUntouched);
        PackPanelFromRuns(src.data(), stride, live, kc, width, dst.data());
        for (int64_t p = 0; p < kc; ++p) {
          for (int64_t i = 0; i < width; ++i) {
            ASSERT_EQ(dst[p * width + i], i < live ? src[i * stride + p] : 0.0f)
                << "width " << width << " live " << live << " kc " << kc
                << " step " << p << " run " << i;
          }
        }
        for (size_t at = width * kc; at < dst.size(); ++at) {
          ASSERT_EQ(dst[at], kUntouched)
              << "width " << width << " live " << live << " kc " << kc;
        }
      }
    }
  }
}

TEST(PackedOperandTest, ReportsThePaddedPanelsItHolds) {
  const MicroKernelShape& shape = FloatMicroKernel();
  const std::vector<float> w = PackedGemmRandom(10 * 7, 4);
  const PackedOperand left = PackedOperand::Pack(
      PackedOperand::Side::kLeft, {w.data(), 7}, /*rows=*/10, /*cols=*/7);
  const int64_t rows = (10 + shape.mr - 1) / shape.mr * shape.mr;
  EXPECT_EQ(left.bytes(), rows * 7 * 4);
  EXPECT_EQ(left.width(), shape.mr);
  const PackedOperand right = PackedOperand::Pack(
      PackedOperand::Side::kRight, {w.data(), 7}, /*rows=*/10, /*cols=*/7);
  EXPECT_EQ(right.width(), shape.nr);
  EXPECT_EQ(right.bytes(), (7 + shape.nr - 1) / shape.nr * shape.nr * 10 * 4);
}

TEST(PackedGemmTileTest, EmptyDepthGivesZerosOrLeavesC) {
  std::vector<float> c(6, std::nanf(""));
  PackedGemmTile(2, 3, 0, GemmInput::Plain({nullptr, 1}),
                 GemmInput::Plain({nullptr, 3}), {c.data(), 3}, false);
  for (float v : c) EXPECT_EQ(v, 0.0f);
  std::vector<float> kept(6, 2.0f);
  PackedGemmTile(2, 3, 0, GemmInput::Plain({nullptr, 1}),
                 GemmInput::Plain({nullptr, 3}), {kept.data(), 3}, true);
  for (float v : kept) EXPECT_EQ(v, 2.0f);
}

}  // namespace
}  // namespace weft::internal
