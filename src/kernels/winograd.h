// Winograd's minimal filtering F(m x m, 3 x 3) for float32 convolutions on
// NCHW planes (3 x 3 window, stride 1, no dilation): each m x m tile of
// output pixels is computed from an (m + 2) x (m + 2) tile of input as
//   Y = A^T [ sum over input channels of (G g G^T) .* (B^T d B) ] A,
// so that the products over the channels become (m + 2)^2 matrix products
// (one per point of the transformed tile). F(4 x 4, 3 x 3): 36 products
// for 16 outputs, 4 times fewer multiply-adds than the direct sum's 144;
// F(2 x 2, 3 x 3): 16 for 4, 2.25 times fewer, for planes too small for
// 4 x 4 tiles. The matrices are Lavin and Gray's (arXiv:1509.09308), with
// interpolation points 0, 1, -1, 2, -2 for m = 4 and 0, 1, -1 for m = 2.
//
// The op layer (ops/conv_winograd.cc) cuts an output plane into blocks of
// whole tile rows, transforms a block's input (WinogradInputBlock), runs the
// products on the BLIS micro-kernel (PackedGemmTile) with the transformed
// weights (WinogradWeights) and transforms their results back into the
// output's rows (WinogradOutputBlock).
//
// Columns. A block's tiles are the products' columns, in quads: the four
// tiles 4 q .. 4 q + 3 of a tile row (the last quad of a row padded with
// tiles past the plane), quad after quad over the block's rows, then empty
// quads up to whole panels of the micro-kernel. The transforms work on two
// quads at once, one tile a lane of an 8-float vector, so a pair of quads
// is 8 adjacent columns of a panel: the transformed input is written
// straight into the panels the micro-kernel reads, and a plane whose tile
// rows are a multiple of 4 tiles (ResNet's 56, 28, 14 as 4 x 4 tiles, its
// 7 as 2 x 2 ones) wastes no column.
//
// Layouts. The transformed input of a block is, per point ((m + 2) * row +
// column of the transformed tile), a right operand of PackedGemmTile packed
// as packed_gemm.h lays them out: `channels` deep, MaxColumns() columns
// (panel stride), point after point PointFloats(channels) apart. The
// products are plain rows of ld, PointStride(channels * ld) a point.
//
// Determinism: every output is computed by the same straight-line code
// whatever its tile's position in a block, and the tile size and blocks
// depend on the plane's size and the micro-kernel's panel shape alone, so
// an output's bits depend on the shapes alone.
#ifndef WEFT_SRC_KERNELS_WINOGRAD_H_
#define WEFT_SRC_KERNELS_WINOGRAD_H_

#include <cstdint>

#include "kernels/conv_kernels.h"

namespace weft::internal {

inline constexpr int64_t kWinogradQuad = 4;   // tiles a quad
inline constexpr int64_t kWinogradLanes = 8;  // tiles transformed at once

// The output tile side (m) a 2-D convolution's geometry takes, or 0 where
// it is not one Winograd computes: a 3 x 3 window, stride 1, no dilation,
// micro-kernel panels a multiple of kWinogradLanes columns wide (every x86
// BLIS kernel weft has seen: 16 or 32); 4 where the output plane has at
// least kWinogradMinPlane rows and columns, 2 where it has at least
// kWinogradMinSmallPlane (ResNet-18's 7 x 7: as 4 x 4 tiles it would pad
// to 8 x 8 in quads of two live tiles, 8 columns for 4 tiles; as 2 x 2 ones
// it is 16 tiles in 16 columns), else 0.
inline constexpr int64_t kWinogradMinPlane = 8;
inline constexpr int64_t kWinogradMinSmallPlane = 6;
int64_t WinogradTileFor(const Conv2DGeometry& g);
inline bool WinogradFits(const Conv2DGeometry& g) {
  return WinogradTileFor(g) != 0;
}
// Transformed points for tile side m: (m + 2)^2.
inline int64_t WinogradPoints(int64_t tile) { return (tile + 2) * (tile + 2); }

// The distance between two points' data, for `floats` of each: a cache
// line more than them. The transforms touch all points of a tile at once;
// points a multiple of 4 KiB apart (ResNet-18's 64 columns x 64 channels: 16
// KiB) all fall in one set of the L1 cache, which holds 8.
inline constexpr int64_t kWinogradPointPad = 16;
inline int64_t PointStride(int64_t floats) {
  return floats + kWinogradPointPad;
}

// How an output plane is cut into m x m tiles, quads and blocks of tile
// rows.
struct WinogradPlane {
  Conv2DGeometry geometry;
  int64_t tile = 0;    // m, WinogradTileFor(geometry)
  int64_t points = 0;  // (m + 2)^2
  int64_t tiles_h = 0, tiles_w = 0;
  int64_t quads_w = 0;     // quads a tile row
  int64_t block_rows = 0;  // tile rows per block (the last may have fewer)
  int64_t blocks = 0;
  int64_t panel = 0, depth_block = 0;  // the micro-kernel's nr and kc

  // For a geometry that fits. Blocks of at most kWinogradMaxColumns columns,
  // the rows that waste the fewest columns to whole panels, the larger block on
  // a tie (the products then read the transformed weights fewer times).
  static WinogradPlane Of(const Conv2DGeometry& g);

  int64_t RowsOf(int64_t block) const;
  int64_t QuadsOf(int64_t block) const { return RowsOf(block) * quads_w; }
  // The products' columns for a block: its quads' tiles, whole panels.
  int64_t ColumnsOf(int64_t block) const;
  int64_t MaxColumns() const { return ColumnsOf(0); }
  // Floats from one point's transformed input over `channels` to the
  // next's: its panels and kWinogradPointPad (PointStride).
  int64_t PointFloats(int64_t channels) const {
    return PointStride(MaxColumns() * channels);
  }
  // The output pixels block `block` covers: whole rows of the plane.
  int64_t FirstPixel(int64_t block) const;
  int64_t PixelsOf(int64_t block) const;
  // Floats of WinogradInputBlock's scratch buffer.
  int64_t ScratchFloats() const;
};
inline constexpr int64_t kWinogradMaxColumns = 64;

// u[(point * out_channels + o) * in_channels + i] = (G w_oi G^T)[point] for
// tile side `tile` (4 or 2), w: out_channels x in_channels x 3 x 3 (one
// group). Computed in double, rounded once.
void WinogradWeights(int64_t tile, const float* w, int64_t out_channels,
                     int64_t in_channels, float* u);

// The transformed input of block `block` for channels [c0, c1) of the
// `channels` of x (planes of in_h x in_w, channel c at x + c * in_h *
// in_w), into v as laid out above. `scratch` holds ScratchFloats().
void WinogradInputBlock(const WinogradPlane& plane, int64_t block,
                        const float* x, int64_t c0, int64_t c1,
                        int64_t channels, float* v, float* scratch);

// The outputs of block `block` for `channels` channels from m (the
// products: m[point * PointStride(channels * ld) + c * ld + column], for
// ColumnsOf(block) columns), plus bias[c] when bias is not null, into the
// rows of the planes y + c * out_h * out_w.
void WinogradOutputBlock(const WinogradPlane& plane, int64_t block,
                         const float* m, int64_t channels, int64_t ld,
                         const float* bias, float* y);

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_WINOGRAD_H_
