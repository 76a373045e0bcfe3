// How NhwcConv cuts an image's output rows into pieces (src/ops/nhwc_ops.cc):
// the rows each piece computes and the input rows its windows read.
#ifndef WEFT_SRC_OPS_CONV_ROW_PIECES_H_
#define WEFT_SRC_OPS_CONV_ROW_PIECES_H_

#include <cstdint>
#include <vector>

namespace weft::internal {

// Output rows [out_begin, out_begin + out_rows) of one image read input
// rows [in_begin, in_begin + in_rows), with this much padding above and
// below.
struct RowPiece {
  int64_t out_begin, out_rows, in_begin, in_rows, pad_top, pad_bottom;
};

// The output rows [0, out_rows) of a convolution over in_rows input rows
// (kernel height, stride, dilation, padding above) in `count` pieces of
// whole units of `align` rows (a Winograd kernel's output tile height;
// the last piece may end inside its last unit), at most one a unit.
//
// The pieces come top to bottom, their sizes differ by one unit at most,
// and the larger ones are at the two ends (the first, the last, the second,
// ...). The caller of ParallelFor claims pieces from the front and its
// helper from the back, so each thread takes a contiguous band of rows,
// about the band it took in the layer before, whose output it then reads
// from its own cache (a buffer the other core wrote reads at half the rate:
// docs/BENCHMARKS.md, "Zen 5 again"); the smaller pieces, claimed last in
// the middle, even out the finish. Taller pieces first in claim order had
// given each thread every other band of a 28-row plane (3, 4, 3, 4, ...
// rows claimed as 4, 4, 4, 4, 3, 3, 3, 3).
//
// REQUIRES: out_rows >= 1, align >= 1, count >= 1.
std::vector<RowPiece> RowPieces(int64_t in_rows, int64_t out_rows,
                                int64_t kernel, int64_t stride,
                                int64_t dilation, int64_t pad_top,
                                int64_t count, int64_t align);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_CONV_ROW_PIECES_H_
