// Window geometry shared by the convolutions (Conv, ConvTranspose,
// ConvInteger, QLinearConv) and the pools: ONNX's kernel_shape, strides,
// dilations, pads and auto_pad over 1 to 3 spatial dims.
#ifndef WEFT_SRC_OPS_CONV_WINDOW_H_
#define WEFT_SRC_OPS_CONV_WINDOW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv_kernels.h"
#include "weft/kernel.h"
#include "weft/op_registry.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::internal {

// Per spatial dimension: kernel, stride, dilation, pads at both ends, and the
// input and output sizes.
struct Window {
  int rank = 0;  // Spatial dimensions.
  std::vector<int64_t> in, out, kernel, stride, dilation, pad_begin, pad_end;
  int64_t InSize() const { return Product(in); }
  int64_t OutSize() const { return Product(out); }
  int64_t KernelSize() const { return Product(kernel); }
  static int64_t Product(const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t x : v) p *= x;
    return p;
  }
};

// The largest kernel_shape, strides, dilations, pads (and ConvTranspose's
// output_padding) value taken: far past any model's, and small enough that
// the window arithmetic on any tensor's dims stays inside int64.
inline constexpr int64_t kMaxWindowAttr = int64_t{1} << 24;

// OK when every value of `values` is at most kMaxWindowAttr, else an error
// naming the attribute and the value.
Status CheckWindowAttrBound(const std::vector<int64_t>& values,
                            const char* name);

// Window attributes as the node gives them (empty lists: defaults).
struct WindowAttrs {
  std::vector<int64_t> kernel, strides, dilations, pads;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
};

WindowAttrs ReadWindowAttrs(const KernelConstruction& c);

// The window of a forward op (Conv, pools) over input dims `in` (spatial).
StatusOr<Window> ForwardWindow(const WindowAttrs& a,
                               const std::vector<int64_t>& in,
                               const std::vector<int64_t>& kernel);

// Calls fn(offset_in_input or -1 when in the padding, kernel index) for
// every kernel position of output position `o` (flat over spatial dims).
template <class Fn>
void ForEachTap(const Window& w, int64_t o, Fn fn) {
  int64_t start[3], coord[3];
  int64_t rest = o;
  for (int d = w.rank - 1; d >= 0; --d) {
    start[d] = (rest % w.out[d]) * w.stride[d] - w.pad_begin[d];
    rest /= w.out[d];
  }
  const int64_t taps = w.KernelSize();
  for (int64_t k = 0; k < taps; ++k) {
    int64_t kr = k, offset = 0;
    bool inside = true;
    for (int d = w.rank - 1; d >= 0; --d) {
      coord[d] = start[d] + (kr % w.kernel[d]) * w.dilation[d];
      kr /= w.kernel[d];
      inside = inside && coord[d] >= 0 && coord[d] < w.in[d];
    }
    if (inside) {
      for (int d = 0; d < w.rank; ++d) offset = offset * w.in[d] + coord[d];
    }
    fn(inside ? offset : -1, k);
  }
}

// The geometry of a window over two spatial dims, for conv_kernels.h.
Conv2DGeometry Geometry2D(const Window& win);

// The spatial dims of an N x C x D1 [x D2 [x D3]] shape; `what` names it
// in the error.
StatusOr<std::vector<int64_t>> SpatialDims(const Shape& s, const char* what);

// [n, c, spatial...].
Shape OutShape(int64_t n, int64_t c, const std::vector<int64_t>& spatial);

// The window attributes, checked when the graph is compiled so that a bad
// value is refused before any Run (output shapes are found at Run).
Status CheckWindowAttrs(InferenceContext& ctx);

// The window attributes as a shape function sees them (ceil_mode left
// false: pools set it from their own attribute).
WindowAttrs InferredWindowAttrs(const InferenceContext& ctx);

// Declares kernel_shape, strides, dilations, pads and auto_pad on an op,
// with CheckWindowAttrs as its shape function.
OpDefBuilder& WindowAttrsOn(OpDefBuilder& b);

// A forward convolution's output shape (Conv, FusedConv, ConvInteger,
// QLinearConv) from x (input 0) and w (input w_index) when both are known
// (the graph passes need it: a residual Add's fusion, the channels-last
// layout); unknown otherwise, or when the sizes do not fit, which the
// kernel then reports.
Status InferForwardConvShape(InferenceContext& ctx, int w_index);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_CONV_WINDOW_H_
