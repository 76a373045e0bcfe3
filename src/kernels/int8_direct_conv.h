// Direct int8 convolution over channels-last (NHWC) uint8 activations: the
// form ONNX Runtime and oneDNN give quantized convolutions, where a pixel's
// channels are contiguous and so every four of them are already the quad
// that one VNNI lane multiplies and sums. Nothing is gathered or packed per
// image: each output pixel reads its taps straight from the (padded) input,
// a broadcast per quad, against weight vectors of 16 output channels.
//
// Layout of the packed weights, per block of kDirectBlock output channels
// (the last block holds the rest, in whole vectors of kDirectLanes):
//   [tap][quad of input channels][vector of the block][lane][4 bytes]
// Input channels past C (to whole quads) and output channels past M (to
// whole vectors) are zero, so they add nothing whatever the input holds
// there.
//
// Kernels: Int8Kernel (int8_gemm.h), the CPU's choice or WEFT_INT8_KERNEL;
// both sum exactly in int32, so both give the same bits.
#ifndef WEFT_SRC_KERNELS_INT8_DIRECT_CONV_H_
#define WEFT_SRC_KERNELS_INT8_DIRECT_CONV_H_

#include <cstdint>
#include <vector>

#include "kernels/int8_gemm.h"

namespace weft::internal {

constexpr int64_t kDirectLanes = 16;   // output channels per vector
constexpr int64_t kDirectVectors = 4;  // vectors per full block
constexpr int64_t kDirectBlock = kDirectLanes * kDirectVectors;
constexpr int64_t kDirectPixels = 6;  // output pixels per tile
// Output pixels per tile of a layer of at most two vectors of output
// channels: twice as many, so that the VNNI tile still holds 24 sums per
// weight vector loaded (MobileNetV2's projections to 16, 24 and 32
// channels).
constexpr int64_t kDirectWidePixels = 12;

// int8 weights [M][C][taps] (ONNX's order for one group), packed once.
class DirectConvWeights {
 public:
  DirectConvWeights() = default;
  DirectConvWeights(const int8_t* w, int64_t m, int64_t c, int64_t taps);

  int64_t m() const { return m_; }
  int64_t c() const { return c_; }
  int64_t taps() const { return taps_; }
  int64_t quads() const { return Int8Quads(c_); }  // per tap
  int64_t blocks() const { return (m_ + kDirectBlock - 1) / kDirectBlock; }
  // Vectors of output channels in block b (kDirectVectors but in the last).
  int64_t vectors(int64_t b) const;
  const int8_t* block(int64_t b) const {
    return data_.data() + b * taps_ * quads() * kDirectBlock * 4;
  }
  // Output pixels a tile of the Requantized/Sums/Scaled forms below may
  // hold: kDirectWidePixels for one block of at most two vectors, else
  // kDirectPixels.
  int64_t tile_pixels() const {
    return blocks() == 1 && vectors(0) <= 2 ? kDirectWidePixels : kDirectPixels;
  }
  // Each output channel's sum of weights (what the input's zero point
  // multiplies).
  const std::vector<int32_t>& row_sums() const { return row_sums_; }
  int64_t bytes() const {
    return static_cast<int64_t>(data_.size() + row_sums_.size() * 4);
  }

 private:
  int64_t m_ = 0, c_ = 0, taps_ = 0;
  std::vector<int8_t> data_;
  std::vector<int32_t> row_sums_;
};

// Whether a convolution over `c` input channels whose windows are `kw`
// adjacent columns wide (no dilation along a row) takes fewer quads a
// window with the columns folded into the channels: on a channels-last
// row, a window row's kw pixels are kw * c adjacent bytes, which fill
// whole quads together where each pixel alone fills part of one (the RGB
// stem: 7 pixels of 3 channels are 21 bytes in 6 quads, not 7 quads of 3
// bytes and a zero weight).
bool DirectConvFoldsColumns(int64_t c, int64_t kw);

// int8 weights [M][C][kh][kw] (ONNX's order for one group) as the weights
// [M][kw * C][kh] of the folded convolution, whose "input channel"
// kx * C + i is input channel i at window column kx and whose taps are the
// window's rows: DirectConvWeights(folded.data(), M, kw * C, kh). Its
// tiles read kw * C bytes from each tap's first column, rounded up to
// whole quads: up to 3 bytes past the window, which the zero weights past
// kw * C multiply, so the input needs that many readable bytes past its
// last window.
std::vector<int8_t> FoldWindowColumns(const int8_t* w, int64_t m, int64_t c,
                                      int64_t kh, int64_t kw);

// The sums of one tile: for pixels p < count (at most kDirectPixels),
//   acc[p * kDirectBlock + j] = sum over taps t and input channels i of
//       pixels[p][tap_offsets[t] + i] * weight(block channel j, i, t)
// for the block's vectors * kDirectLanes channels j. pixels[p] points at
// the input bytes of pixel p's first tap; the input's channel stride makes
// quads of four channels (C rounded up to whole quads, whatever is past C
// being multiplied by zero weights).
void DirectConvTile(Int8Kernel kernel, const DirectConvWeights& w,
                    int64_t block, const uint8_t* const* pixels, int64_t count,
                    const int64_t* tap_offsets, int32_t* acc);

// dst[j] = saturate(round_half_even(float(acc[j] + offset[j]) *
// multiplier[j]) + zero) for j < n, output channels on the lanes (the
// int32 addition wraps); a NaN gives 0. Bit for bit the scalar reference
// of QLinearConv's requantization (quantized_conv.cc), on 16 lanes where
// the build has AVX-512.
void RequantizeChannels(const int32_t* acc, int64_t n, const int32_t* offset,
                        const float* multiplier, float zero, uint8_t* dst);
void RequantizeChannels(const int32_t* acc, int64_t n, const int32_t* offset,
                        const float* multiplier, float zero, int8_t* dst);

// Where requantized outputs go: output channel oc of pixel i (counted
// from `y`, the first pixel's channel 0) is written at y[i * m + oc], as
// RequantizeChannels gives it from offset[oc], multiplier[oc] and zero.
struct RequantizedOutput {
  const int32_t* offset = nullptr;
  const float* multiplier = nullptr;
  float zero = 0;
  int64_t m = 0;  // channels of a pixel
  void* y = nullptr;
  bool y_signed = false;  // int8 y, else uint8
  int64_t ldy = 0;        // int32 sums: elements between rows of y
  // Every multiplier is finite (the caller checked): a shorter vector form
  // with the same bits. False takes the form that maps NaN to 0.
  bool finite = false;
  // Float outputs (DirectConvTileScaled): added after the multiplier.
  const float* bias = nullptr;
};

// The forms below take count <= w.tile_pixels().
//
// DirectConvTile's sums for pixels [0, count), requantized into `out` (the
// tile's first pixel at out.y) for the block's channels below out.m; on
// the VNNI kernel straight from the registers.
void DirectConvTileRequantized(Int8Kernel kernel, const DirectConvWeights& w,
                               int64_t block, const uint8_t* const* pixels,
                               int64_t count, const int64_t* tap_offsets,
                               const RequantizedOutput& out);

// DirectConvTile's sums for pixels [0, count) plus out.offset[oc], written
// as int32 at y[i * out.ldy + oc] (y = out.y) for the block's channels
// below out.m: a matrix product's rows (MatMulInteger, whose A rows are
// one-tap "pixels").
void DirectConvTileSums(Int8Kernel kernel, const DirectConvWeights& w,
                        int64_t block, const uint8_t* const* pixels,
                        int64_t count, const int64_t* tap_offsets,
                        const RequantizedOutput& out);

// DirectConvTileSums's values as float, scaled: y[i * out.ldy + oc] =
// float(sum + out.offset[oc]) * out.multiplier[oc] + out.bias[oc] (no bias
// when null), each operation rounded as written, for the block's channels
// below out.m: MatMulInteger, Cast, Mul and Add in one pass
// (FusedMatMulInteger). out.y is float.
void DirectConvTileScaled(Int8Kernel kernel, const DirectConvWeights& w,
                          int64_t block, const uint8_t* const* pixels,
                          int64_t count, const int64_t* tap_offsets,
                          const RequantizedOutput& out);

// Which of the three forms above a tile's outputs take.
enum class DirectOutputForm { kSums, kRequantized, kScaled };

// The outputs of sums computed elsewhere (oneDNN's int8 products), bit for
// bit as the tiles of `form` write them: row i's sums for output channels
// [oc0, oc0 + channels) at acc + i * acc_ld, before out.offset; row i is
// output pixel i of `out` (the first at out.y).
void DirectSumsInto(DirectOutputForm form, const int32_t* acc, int64_t acc_ld,
                    int64_t count, int64_t oc0, int64_t channels,
                    const RequantizedOutput& out);

// `count` output pixels of a depthwise convolution, requantized into out
// (pixel 0 at out.y, out.m = C channels): pixel i reads tap t's C channels
// at x + i * pixel_step + tap_offsets[t]; w[t * C + c] is channel c's
// weight at tap t. Exact int32 sums; vectors of 16 channels on the VNNI
// kernel (whose CPUs have AVX-512), scalar on the generic one.
void DepthwiseRowRequantized(Int8Kernel kernel, const uint8_t* x,
                             int64_t pixel_step, int64_t count,
                             const int64_t* tap_offsets, int64_t taps,
                             const int32_t* w, const RequantizedOutput& out);

// A depthwise window of kh rows of kw adjacent input columns (no dilation
// along a row), output pixels `stride` input columns apart: tap (ky, kx)
// of pixel i lies at x + ky * row_step + (i * stride + kx) * C.
struct DepthwiseGrid {
  int64_t kh = 0;
  int64_t kw = 0;
  int64_t row_step = 0;  // bytes between the window's rows
  int64_t stride = 1;
};

// A depthwise window's weights (w[t * C + c], t = ky * kw + kx, each an
// int8 value) as the VNNI kernel's byte form reads them: per block of 64
// channels, per group of four window rows, per window column, four vectors
// of 64 bytes. Vector q's 32-bit lane 4 L + d holds channel 64 b + 16 L +
// 4 q + d's weights at the group's four rows, a byte each, 0 past the
// window's rows or the channels: the order in which four input rows'
// bytes, interleaved in place (vpunpck, within 128-bit lanes), meet them.
std::vector<int8_t> PackDepthwiseQuads(const int32_t* w, int64_t c, int64_t kh,
                                       int64_t kw);

// DepthwiseRowRequantized's outputs for a DepthwiseGrid window (w[t * C +
// c] with t = ky * kw + kx), bit for bit: on the VNNI kernel, for 3 or 5
// columns at stride 1 or 2, each input vector is loaded once for the
// pixels that share it, and where `quads` (PackDepthwiseQuads(w, ...), or
// null) is given and every multiplier is finite, four rows' bytes go into
// one vpdpbusd (64 products, not vpdpwssd's 16 on one row); other windows
// and kernels take DepthwiseRowRequantized.
void DepthwiseGridRowRequantized(Int8Kernel kernel, const uint8_t* x,
                                 const DepthwiseGrid& grid, int64_t count,
                                 const int32_t* w, const int8_t* quads,
                                 const RequantizedOutput& out);

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_INT8_DIRECT_CONV_H_
