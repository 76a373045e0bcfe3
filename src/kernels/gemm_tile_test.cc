#include "kernels/gemm_tile.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "test_support/threads.h"

namespace weft::internal {
namespace {

std::vector<float> GemmTileRandom(int64_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) * 0x1p-24f - 0.5f;
  }
  return v;
}

constexpr GemmKernel kAllKernels[] = {GemmKernel::kEigen, GemmKernel::kBlis,
                                      GemmKernel::kDnnl};

struct GemmTileCase {
  GemmKernel kernel;
  bool ta, tb, accumulate;
};

class GemmTileTest : public testing::TestWithParam<GemmTileCase> {};

// Operands with leading dimensions wider than the matrices, to check that
// the strides are honoured; sizes not multiples of any register block.
TEST_P(GemmTileTest, MatchesADoubleReference) {
  const GemmTileCase p = GetParam();
  const int64_t m = 37, n = 53, k = 29, pad = 3;
  const int64_t lda = (p.ta ? m : k) + pad, ldb = (p.tb ? k : n) + pad;
  const int64_t ldc = n + pad;
  const std::vector<float> a = GemmTileRandom((p.ta ? k : m) * lda, 1);
  const std::vector<float> b = GemmTileRandom((p.tb ? n : k) * ldb, 2);
  std::vector<float> c = GemmTileRandom(m * ldc, 3);
  const std::vector<float> c0 = c;
  GemmTile<float>(p.kernel, m, n, k, {a.data(), lda, p.ta},
                  {b.data(), ldb, p.tb}, c.data(), ldc, p.accumulate);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = p.accumulate ? c0[i * ldc + j] : 0.0;
      for (int64_t l = 0; l < k; ++l) {
        const double x = p.ta ? a[l * lda + i] : a[i * lda + l];
        const double y = p.tb ? b[j * ldb + l] : b[l * ldb + j];
        want += x * y;
      }
      ASSERT_NEAR(c[i * ldc + j], want, 1e-5) << i << "," << j;
    }
    // The padding between rows of C is not written.
    for (int64_t j = n; j < ldc; ++j)
      ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]);
  }
}

std::vector<GemmTileCase> GemmTileAllCases() {
  std::vector<GemmTileCase> cases;
  for (GemmKernel kernel : kAllKernels) {
    for (int mask = 0; mask < 8; ++mask) {
      cases.push_back(
          {kernel, (mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(KernelsAndTransposes, GemmTileTest,
                         testing::ValuesIn(GemmTileAllCases()),
                         [](const testing::TestParamInfo<GemmTileCase>& info) {
                           const GemmTileCase& c = info.param;
                           return std::string(GemmKernelName(c.kernel)) +
                                  (c.ta ? "_At" : "_A") + (c.tb ? "Bt" : "B") +
                                  (c.accumulate ? "_accumulate" : "");
                         });

TEST(GemmTileTest, DoubleProductsAreExactOnIntegers) {
  const std::vector<double> a = {1, 2, 3, 4, 5, 6};     // 2 x 3
  const std::vector<double> b = {7, 8, 9, 10, 11, 12};  // 3 x 2
  for (GemmKernel kernel : kAllKernels) {
    std::vector<double> c(4, -1);
    GemmTile<double>(kernel, 2, 2, 3, {a.data(), 3}, {b.data(), 2}, c.data(), 2,
                     false);
    EXPECT_EQ(c, (std::vector<double>{58, 64, 139, 154}))
        << GemmKernelName(kernel);
  }
}

TEST(GemmTileTest, EmptyInnerDimensionGivesZerosNotGarbage) {
  for (GemmKernel kernel : kAllKernels) {
    std::vector<float> c(6, std::nanf(""));
    GemmTile<float>(kernel, 2, 3, 0, {nullptr, 1}, {nullptr, 3}, c.data(), 3,
                    false);
    for (float v : c) EXPECT_EQ(v, 0.0f) << GemmKernelName(kernel);
  }
}

// A one-row operand may come with a leading dimension shorter than its row
// (it is never stepped over); every kernel takes it.
TEST(GemmTileTest, OneRowOperandsTakeAnyLeadingDimension) {
  const std::vector<float> a = {1, 2, 3};           // 1 x 3, ld 1
  const std::vector<float> b = {1, 0, 0, 1, 1, 1};  // 3 x 2
  for (GemmKernel kernel : kAllKernels) {
    std::vector<float> c(2, -1);
    GemmTile<float>(kernel, 1, 2, 3, {a.data(), 1}, {b.data(), 2}, c.data(), 2,
                    false);
    EXPECT_EQ(c, (std::vector<float>{4, 5})) << GemmKernelName(kernel);
  }
}

// oneDNN's tiles run on the calling thread alone, whatever the caller's
// OpenMP setting (which they leave as it was), and give the same bits on
// every call: a tile's sums depend on its shape only.
TEST(GemmTileTest, OneDnnTilesStartNoThreadAndRepeatTheirBits) {
  const int64_t n = 384;
  const std::vector<float> a = GemmTileRandom(n * n, 1),
                           b = GemmTileRandom(n * n, 2);
  std::vector<float> first(n * n), again(n * n);
  const int callers_setting = omp_get_max_threads();
  omp_set_num_threads(4);
  const int before = test::CountProcessThreads();
  GemmTile<float>(GemmKernel::kDnnl, n, n, n, {a.data(), n}, {b.data(), n},
                  first.data(), n, false);
  GemmTile<float>(GemmKernel::kDnnl, n, n, n, {a.data(), n}, {b.data(), n},
                  again.data(), n, false);
  // At most as many: a thread of an earlier test may still be exiting (on
  // a 16-CPU Xeon the count once fell from 2 to 1 here).
  EXPECT_LE(test::CountProcessThreads(), before);
  EXPECT_EQ(omp_get_max_threads(), 4);
  for (int64_t i = 0; i < n * n; ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(first[i]),
              std::bit_cast<uint32_t>(again[i]))
        << "element " << i;
  }
  omp_set_num_threads(callers_setting);
}

TEST(GemmKernelTest, TheRuleDependsOnTheCpuOnly) {
  EXPECT_EQ(GemmKernelForCpu({.amd = true, .avx2_fma = true}),
            GemmKernel::kBlis);
  EXPECT_EQ(GemmKernelForCpu({.amd = true, .avx2_fma = false}),
            GemmKernel::kEigen);
  EXPECT_EQ(GemmKernelForCpu({.intel = true, .avx2_fma = true}),
            GemmKernel::kEigen);
  EXPECT_EQ(GemmKernelForCpu({.intel = true, .avx2_fma = true, .avx512 = true}),
            GemmKernel::kDnnl);
  EXPECT_EQ(GemmKernelForCpu({.avx2_fma = true, .avx512 = true}),
            GemmKernel::kEigen);
  EXPECT_EQ(GemmKernelForCpu({}), GemmKernel::kEigen);
}

TEST(GemmKernelTest, NamesRoundTrip) {
  for (GemmKernel kernel : kAllKernels) {
    EXPECT_EQ(ParseGemmKernel(GemmKernelName(kernel)), kernel);
  }
  EXPECT_EQ(ParseGemmKernel("openblas"), std::nullopt);
}

}  // namespace
}  // namespace weft::internal
