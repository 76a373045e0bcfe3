// A tiled transpose of one matrix, shared by the Transpose op
// (ops/shape_ops.cc) and the fused attention kernel (ops/attention.cc),
// which transposes K's heads with it.
#ifndef WEFT_SRC_KERNELS_TRANSPOSE_ROWS_H_
#define WEFT_SRC_KERNELS_TRANSPOSE_ROWS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace weft::internal {

// Output rows of this many elements, read in column strips of this many,
// make one block of a tiled transpose: 16 x 16 4-byte elements are sixteen
// cache lines each way, so every line read is used sixteen times while it
// is in L1.
constexpr int64_t kTransposeTile = 16;

// dst[a * cols + b] = src[a + b * src_stride] for a in [0, rows), b in
// [0, cols): `rows` output rows, each a column of the input. By tiles, not
// row by row: a row alone reads one element of each of `cols` cache lines,
// and a [1, 128, 4, 64] -> [1, 4, 64, 128] Transpose (attention's K^T) ran
// at 1.1 ns an element (a Zen 4 core).
template <size_t kSize>
void TransposeRows(const char* src, int64_t src_stride, int64_t rows,
                   int64_t cols, char* dst) {
  for (int64_t b0 = 0; b0 < cols; b0 += kTransposeTile) {
    const int64_t b1 = std::min(cols, b0 + kTransposeTile);
    for (int64_t a = 0; a < rows; ++a) {
      const char* column = src + (a + b0 * src_stride) * kSize;
      char* row = dst + (a * cols + b0) * kSize;
      for (int64_t b = 0; b < b1 - b0; ++b) {
        std::memcpy(row + b * kSize, column + b * src_stride * kSize, kSize);
      }
    }
  }
}

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_TRANSPOSE_ROWS_H_
