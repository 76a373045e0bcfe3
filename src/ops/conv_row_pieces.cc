#include "ops/conv_row_pieces.h"

#include <algorithm>

#include "kernels/int_division.h"

namespace weft::internal {

std::vector<RowPiece> RowPieces(int64_t in_rows, int64_t out_rows,
                                int64_t kernel, int64_t stride,
                                int64_t dilation, int64_t pad_top,
                                int64_t count, int64_t align) {
  const int64_t units = CeilDiv(out_rows, align);
  count = std::clamp<int64_t>(count, 1, units);
  const int64_t extent = (kernel - 1) * dilation + 1;
  // `larger` pieces get a unit more than `base`: 27 rows in 6 are 5, 5, 4,
  // 4, 4, 5 (not five of 5 and one of 2, which would leave one thread
  // computing while the other waits).
  const int64_t base = units / count;
  const int64_t larger = units % count;
  std::vector<RowPiece> pieces;
  pieces.reserve(static_cast<size_t>(count));
  int64_t unit = 0;
  for (int64_t j = 0; j < count; ++j) {
    // Rank from the ends: the first piece 0, the last 1, the second 2, ...
    const int64_t mirror = count - 1 - j;
    const int64_t rank = 2 * std::min(j, mirror) + (j > mirror ? 1 : 0);
    const int64_t r0 = unit * align;
    unit += base + (rank < larger ? 1 : 0);
    const int64_t r1 = std::min(unit * align, out_rows);
    const int64_t first = r0 * stride - pad_top;
    const int64_t last = (r1 - 1) * stride - pad_top + extent;  // Exclusive.
    const int64_t in0 = std::clamp<int64_t>(first, 0, in_rows);
    const int64_t in1 = std::clamp<int64_t>(last, in0, in_rows);
    pieces.push_back({r0, r1 - r0, in0, in1 - in0, in0 - first, last - in1});
  }
  return pieces;
}

}  // namespace weft::internal
