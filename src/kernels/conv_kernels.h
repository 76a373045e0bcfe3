// The inner loops of 2-D convolution, on one image and one group, for the
// Conv kernel (ops/conv_ops.cc) to split over the intra-op pool:
//
//   Im2Col2D          gathers a tile of output pixels' receptive fields into
//                     columns, for one product with the weights (GemmTile);
//   Im2ColPanels      gathers them straight into the micro-kernel's packed
//                     panels, one pixel per row, for the product computed
//                     transposed (pixels x depth times depth x channels);
//   DepthwisePlane2D  one output plane of a convolution whose groups have a
//                     single input channel (MobileNet's depthwise layers),
//                     computed directly, row by row, vectorisable along x;
//   MaxPoolPlane2D    one output plane of MaxPool, the same way.
//
// Both are single-threaded and visit taps in a fixed order, so each output
// element's arithmetic does not depend on how the caller splits the work.
#ifndef WEFT_SRC_KERNELS_CONV_KERNELS_H_
#define WEFT_SRC_KERNELS_CONV_KERNELS_H_

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace weft::internal {

struct Conv2DGeometry {
  int64_t in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w, dilation_h, dilation_w;
  int64_t pad_top, pad_left;  // Bottom and right pads follow from out_h/w.

  bool operator==(const Conv2DGeometry&) const = default;

  int64_t Taps() const { return kernel_h * kernel_w; }
  // The padded rows and columns some output's window reads (from the pad's
  // first on).
  int64_t SpanRows() const {
    return (out_h - 1) * stride_h + (kernel_h - 1) * dilation_h + 1;
  }
  int64_t SpanCols() const {
    return (out_w - 1) * stride_w + (kernel_w - 1) * dilation_w + 1;
  }
  int64_t InSize() const { return in_h * in_w; }
  int64_t OutSize() const { return out_h * out_w; }
  // A 1x1 window over every pixel: the input planes are already the columns.
  bool IsPointwise() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 &&
           pad_top == 0 && pad_left == 0 && in_h == out_h && in_w == out_w;
  }
};

// cols[(c * Taps() + tap) * ld_cols + p] = the input under tap `tap` (row-
// major over kernel_h x kernel_w) of channel c for output pixel p0 + p, or 0
// in the padding; for c < channels, p < pixels. x: channels planes of
// InSize(). Instantiated for float and double.
template <class T>
void Im2Col2D(const Conv2DGeometry& g, const T* x, int64_t channels, int64_t p0,
              int64_t pixels, T* cols, int64_t ld_cols);

// Whether a Conv whose W is packed (float32, BLIS) computes its products
// transposed, Y^T = cols^T * W^T: pixels on the micro-kernel's mr-row side,
// output channels on its nr-column side, C written by column. Otherwise
// the pixels are the nr-wide panels, gathered from a phase copy
// (conv_phase_panels.h) or read from X itself for a 1 x 1 window over every
// pixel. Those panels are cheap to fill, so transposed pays only where they
// waste work: over an output plane of `out_pixels` (its size when the graph
// fixes it, else 0) that nr-wide panels pad by more than an eighth over
// mr-wide ones (ResNet's 7 x 7 = 49 pixels fill four 16-wide panels, 77% of
// the work useful; nine 6-row panels are 91% useful), with a depth of at
// least one depth block and channel counts that nr-wide panels pad by at
// most an eighth more than mr-wide ones. Measured on an AMD EPYC (Zen 4,
// docs/BENCHMARKS.md): at 7 x 7, transposed ran ResNet-18's 512-channel
// 3 x 3 layer 8% and its 1 x 1 stride-2 one 20% faster, MobileNetV2's 1 x 1
// layers 12% faster (960 -> 160: 0.235 -> 0.205 ms); over 14 x 14 and
// larger planes the phase panels ran ResNet-18's 3 x 3 layers 5-7% faster
// than transposed, and its 7 x 7 stem 12% faster than columns packed twice.
// Decided by W's shape, the graph's output shape and the micro-kernel
// alone: one layer, one path.
bool ConvProductsRunTransposed(int64_t mg, int64_t depth, int64_t out_pixels);

// A 1 x 1 window over every pixel with fewer output channels per group than
// this many panels of the micro-kernel's rows leaves W unpacked
// (ConvPacksConstantWeights).
inline constexpr int64_t kPackedConvMinChannels = 16;

// Whether ConvKernel packs a constant float32 W (mg output channels per
// group, `depth` = C/g * taps) at session creation, given that the tile
// kernel is BLIS: the rule is the micro-kernel's, so it differs between
// CPUs (BLIS's zen3 6 x 16 and its skx kernel, used transposed as 12 x 32)
// and tests assert it rather than one CPU's outcome. Not packed:
//  - a 1 x 1 window moving one pixel at a time (`unit_window`), which reads
//    X itself as columns, over fewer than kPackedConvMinChannels * mr
//    output channels: packing X's columns for the micro-kernel each Run
//    costs about what the product does (K x pixels floats copied for
//    m x K x pixels multiply-adds), and bli_sgemm's own path (GemmTile) ran
//    these layers faster: 128 -> 16 at 55 x 55 0.26 -> 0.18 ms, 144 -> 24
//    at 56 x 56 0.33 -> 0.27, 384 -> 64 at 14 x 14 0.14 -> 0.13 (one core
//    of an AMD EPYC Zen 4, 6 x 16 kernel; at 96 channels the paths tied);
//  - products that are not transposed (ConvProductsRunTransposed) when the
//    micro-kernel's nr-wide pixel panels are wider than the phase panels
//    GatherPhasePanels fills (kMaxPhasePanelWidth).
bool ConvPacksConstantWeights(int64_t mg, int64_t depth, bool unit_window,
                              int64_t out_pixels);

// Calls fn(std::integral_constant<int64_t, W>()) with W = width for the
// micro-kernels' panel widths seen so far (6, 8, 12, 16), so that panel
// rows are fixed-size copies, and with W = 0 for any other width.
template <class Fn>
void WithPanelWidth(int64_t width, Fn&& fn) {
  switch (width) {
    case 6:
      return fn(std::integral_constant<int64_t, 6>());
    case 8:
      return fn(std::integral_constant<int64_t, 8>());
    case 12:
      return fn(std::integral_constant<int64_t, 12>());
    case 16:
      return fn(std::integral_constant<int64_t, 16>());
    default:
      return fn(std::integral_constant<int64_t, 0>());
  }
}

// The rows [p0, p0 + pixels) of cols^T (output pixels x depth, depth in
// Im2Col2D's order, depth = channels * Taps()) packed as a left operand of
// PackedGemmTile (layout in packed_gemm.h): panels of `width` pixels, depth
// blocks of `kc`, the last panel zero-padded; `panels` holds
// PanelView::Floats(pixels, depth, width) floats. Only the depth blocks
// [first_block, end_block) are written, so that callers can split one
// gather over threads.
void Im2ColPanels(const Conv2DGeometry& g, const float* x, int64_t channels,
                  int64_t p0, int64_t pixels, int64_t width, int64_t kc,
                  int64_t first_block, int64_t end_block, float* panels);

// DepthwisePlane2D's buffer, kept by the caller between planes: a copy of
// the plane inside a border of zeros. The border's cells depend on the
// geometry alone and no plane writes them, so they are zeroed once per
// geometry, not per plane (per-row fills were a tenth of a stride-2 layer).
template <class T>
struct PlaneScratch {
  std::vector<T> buffer;
  Conv2DGeometry zeroed_for{};  // The layout whose border holds zeros.
  int64_t zeroed_lanes = 0;     // 0: none yet.
};

// y[p] = bias + sum over taps of w[tap] * x[tap's input of p], for every
// output pixel p of one plane; taps in the padding add zero. Taps are added
// in row-major order after the bias. Each output is then bounded to
// [lower, upper] as Clip bounds it (NaN stays NaN; -infinity and +infinity
// for no bounds), in registers where the row kernel allows.
template <class T>
void DepthwisePlane2D(const Conv2DGeometry& g, const T* x, const T* w, T bias,
                      T lower, T upper, T* y, PlaneScratch<T>& scratch);

inline constexpr int64_t kDepthwiseLanes = 16;

// DepthwisePlane2D for kDepthwiseLanes output planes at once, the planes in
// the lanes of one vector: planes[c] is the input plane of output plane
// outs[c], w holds Taps() x kDepthwiseLanes weights (tap-major: w[tap *
// kDepthwiseLanes + c]) and bias kDepthwiseLanes values; only the first
// `lanes` planes are read and written. Each output adds the same terms in
// the same order as DepthwisePlane2D's, then is bounded to [lower, upper]
// as Clip bounds it (NaN stays NaN; -infinity and +infinity for no bounds),
// in registers, which saves MobileNet's ReLU6 a pass over the planes. For
// small planes, where one plane's rows are too short for a vector loop
// (MobileNet's 14 x 14 and 7 x 7) and the per-plane set-up outweighs the
// arithmetic. `scratch` is a buffer the caller keeps between blocks.
void DepthwiseLanes2D(const Conv2DGeometry& g, const float* const* planes,
                      const float* w, const float* bias, float lower,
                      float upper, int64_t lanes, float* const* outs,
                      std::vector<float>& scratch);

// MaxPoolPlane2D for `lanes` <= kDepthwiseLanes planes at once, one plane
// per lane of a vector, as DepthwiseLanes2D: planes[c] is the input plane of
// output plane outs[c]. A stride costs nothing there (each output is a few
// whole-vector maxima), where the planes' own rows need a split per row. The
// same maxima, taken in the same order, as MaxPoolPlane2D.
void MaxPoolLanes2D(const Conv2DGeometry& g, const float* const* planes,
                    int64_t lanes, float* const* outs,
                    std::vector<float>& scratch);

// Whether MaxPool's float planes run in lanes (MaxPoolLanes2D): planes
// whose windows reach past their edges (MaxPoolNeedsBorder) and whose
// output rows are narrower than kMaxPoolFlatBelow, where the whole-plane
// passes would first copy each plane inside a border. One core of an AMD
// EPYC (Zen 4), 3 x 3 / 2, µs, plane by plane against lanes: 256 planes of
// 14 x 14 with a pad of 1 38.5 / 19.9, 64 of 56 x 56 with a pad of 1
// 89 / 77; without a border, lanes lost (256 of 27 x 27: 68 / 73, 128 of
// 55 x 55: 125 / 145), as it did over wider rows (64 of 112 x 112: 235 /
// 316): the transposes in and out cost more than they save there.
bool MaxPoolRunsInLanes(const Conv2DGeometry& g);

// Whether DepthwiseLanes2D computes a layer's planes: decided by the output
// plane's size alone (measured in docs/BENCHMARKS.md).
bool DepthwiseRunsInLanes(const Conv2DGeometry& g);

// One input row of in_w floats into the two column phases of a stride-2
// copy: the row padded by pad_left on the left, its even padded columns to
// phase0[0, 1, ...] and its odd ones to phase1[...]. Only entries holding an
// input are written, and none at or past phase_len.
void SplitRowByPhase(const float* row, int64_t in_w, int64_t pad_left,
                     int64_t phase_len, float* phase0, float* phase1);

// DepthwiseLanes2D's weights for the block of kDepthwiseLanes output planes
// from `first` on: out[tap * kDepthwiseLanes + c] = w[(first + c) * taps +
// tap], zero for planes past `channels` (w holds channels x taps weights).
void ArrangeLaneWeights(const float* w, int64_t channels, int64_t taps,
                        int64_t first, float* out);

// Where a running maximum starts, and what fills a window's padding:
// -infinity for float (a window of -inf inputs has -inf as its maximum),
// the lowest value for integers.
template <class T>
constexpr T MaxPoolFloor() {
  if constexpr (std::numeric_limits<T>::has_infinity) {
    return -std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

// y[p] = the largest input under p's window, ignoring the padding and NaN
// inputs; MaxPoolFloor when the window holds neither. (MaxPool
// without its optional indices output.) `line` is a buffer the caller keeps
// between planes. A plane whose output rows are narrower than
// kMaxPoolFlatBelow is reduced in passes over the whole plane
// (MaxPoolPlaneIsFlat), wider ones row by row; the maxima are the same. On
// one core of an AMD EPYC (Zen 4), 3 x 3 / 2 windows, µs, row by row
// against flat: 256 planes of 27 x 27 136 / 98, 128 of 55 x 55 174 / 125,
// 64 of 111 x 111 222 / 250, 64 of 112 x 112 with a pad of 1 244 / 235.
inline constexpr int64_t kMaxPoolFlatBelow = 32;
// The largest window side MaxPoolPlane2D takes (ONNX models use 2 or 3).
inline constexpr int64_t kMaxPoolTaps = 64;
// Whether some window of the geometry reaches past the plane's edges (the
// padding, or ceil mode's last windows).
bool MaxPoolNeedsBorder(const Conv2DGeometry& g);
bool MaxPoolPlaneIsFlat(const Conv2DGeometry& g);
template <class T>
void MaxPoolPlane2D(const Conv2DGeometry& g, const T* x, T* y,
                    std::vector<T>& line);

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_CONV_KERNELS_H_
