#include "kernels/int8_gemm.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace weft::internal {
namespace {

// Bytes from a linear congruential sequence: the same on every machine.
template <class T>
std::vector<T> SeededBytes(int64_t n, uint32_t seed) {
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
  for (Int8Kernel kernel : {Int8Kernel::kGeneric, Int8Kernel::kAvx512Vnni}) {
    if (!CpuRunsInt8Kernel(kernel)) continue;
    for (int64_t depth : {1, 4, 7, 64, 147}) {
      for (int64_t rows : {1, 5, 8}) {
        for (int64_t cols : {1, 17, 32}) {
          SCOPED_TRACE(std::string(Int8KernelName(kernel)) +
                       " depth=" + std::to_string(depth) +
                       " rows=" + std::to_string(rows) +
                       " cols=" + std::to_string(cols));
          const auto w = SeededBytes<int8_t>(rows * depth, 7);
          const auto x = SeededBytes<uint8_t>(cols * depth, 11);
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

TEST(Int8GemmTest, TheEnvironmentNamesOnlyKernels) {
  EXPECT_EQ(ParseInt8Kernel("vnni"), Int8Kernel::kAvx512Vnni);
  EXPECT_EQ(ParseInt8Kernel("generic"), Int8Kernel::kGeneric);
  EXPECT_EQ(ParseInt8Kernel("amx"), std::nullopt);
  EXPECT_TRUE(CpuRunsInt8Kernel(Int8Kernel::kGeneric));
  EXPECT_TRUE(CpuRunsInt8Kernel(ActiveInt8Kernel()));
}

}  // namespace
}  // namespace weft::internal
