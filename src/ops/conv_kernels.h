// The inner loops of 2-D convolution, on one image and one group, for the
// Conv kernel (nn_ops.cc) to split over the intra-op pool:
//
//   Im2Col2D          gathers a tile of output pixels' receptive fields into
//                     columns, for one product with the weights (GemmTile);
//   DepthwisePlane2D  one output plane of a convolution whose groups have a
//                     single input channel (MobileNet's depthwise layers),
//                     computed directly, row by row, vectorisable along x;
//   MaxPoolPlane2D    one output plane of MaxPool, the same way.
//
// Both are single-threaded and visit taps in a fixed order, so each output
// element's arithmetic does not depend on how the caller splits the work.
#ifndef WEFT_SRC_OPS_CONV_KERNELS_H_
#define WEFT_SRC_OPS_CONV_KERNELS_H_

#include <cstdint>
#include <vector>

namespace weft::internal {

struct Conv2DGeometry {
  int64_t in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w, dilation_h, dilation_w;
  int64_t pad_top, pad_left;  // Bottom and right pads follow from out_h/w.

  int64_t Taps() const { return kernel_h * kernel_w; }
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

// y[p] = bias + sum over taps of w[tap] * x[tap's input of p], for every
// output pixel p of one plane; taps in the padding add zero. Taps are added
// in row-major order after the bias. `scratch` is a buffer the caller keeps
// between planes (a zero-padded copy of the plane).
template <class T>
void DepthwisePlane2D(const Conv2DGeometry& g, const T* x, const T* w, T bias,
                      T* y, std::vector<T>& scratch);

// y[p] = the largest input under p's window, ignoring the padding and NaN
// inputs; the lowest finite value when the window holds neither. (MaxPool
// without its optional indices output.) `line` is a buffer the caller keeps
// between planes.
template <class T>
void MaxPoolPlane2D(const Conv2DGeometry& g, const T* x, T* y,
                    std::vector<T>& line);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_CONV_KERNELS_H_
