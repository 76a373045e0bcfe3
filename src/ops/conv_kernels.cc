#include "ops/conv_kernels.h"

#include <algorithm>
#include <limits>

namespace weft::internal {
namespace {

// Output columns ox whose tap at x offset `shift` (= kw * dilation_w -
// pad_left) lands inside the input: [first, last).
struct ColumnRange {
  int64_t first, last;
};

ColumnRange InsideColumns(const Conv2DGeometry& g, int64_t shift) {
  // ix = ox * stride_w + shift must lie in [0, in_w).
  const int64_t s = g.stride_w;
  const int64_t first = shift >= 0 ? 0 : (-shift + s - 1) / s;
  const int64_t last =
      g.in_w - shift <= 0 ? 0 : (g.in_w - shift + s - 1) / s;  // ceil
  return {std::min(first, g.out_w), std::clamp(last, int64_t{0}, g.out_w)};
}

// One output row of a depthwise plane, kLanes columns at a time: each group
// of columns sums its taps in registers (bias first, taps in row-major
// order). kStride: the column stride, or 0 to use `stride`.
template <class T, int64_t kLanes, int64_t kStride>
void DepthwiseRow(const Conv2DGeometry& g, const T* src, int64_t cols,
                  const T* w, T bias, int64_t width, int64_t stride, T* row) {
  const int64_t sw = kStride != 0 ? kStride : stride;
  for (int64_t ox = 0; ox < width; ox += kLanes) {
    T sum[kLanes];
    for (int64_t j = 0; j < kLanes; ++j) sum[j] = bias;
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const T* line = src + kh * g.dilation_h * cols + ox * sw;
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const T weight = w[kh * g.kernel_w + kw];
        const T* tap = line + kw * g.dilation_w;
        for (int64_t j = 0; j < kLanes; ++j) sum[j] += weight * tap[j * sw];
      }
    }
    for (int64_t j = 0; j < kLanes; ++j) row[ox + j] = sum[j];
  }
}

}  // namespace

template <class T>
void Im2Col2D(const Conv2DGeometry& g, const T* x, int64_t channels, int64_t p0,
              int64_t pixels, T* cols, int64_t ld_cols) {
  const int64_t end = p0 + pixels;
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = x + c * g.InSize();
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        T* row = cols + (c * g.Taps() + kh * g.kernel_w + kw) * ld_cols;
        const int64_t shift = kw * g.dilation_w - g.pad_left;
        const ColumnRange inside = InsideColumns(g, shift);
        // Walk the tile one output row (or part of one) at a time.
        for (int64_t p = p0; p < end;) {
          const int64_t oy = p / g.out_w, ox0 = p % g.out_w;
          const int64_t ox1 = std::min(g.out_w, ox0 + (end - p));
          T* dst = row + (p - p0);  // dst[ox - ox0] for ox in [ox0, ox1)
          const int64_t iy = oy * g.stride_h + kh * g.dilation_h - g.pad_top;
          if (iy < 0 || iy >= g.in_h) {
            std::fill(dst, dst + (ox1 - ox0), T(0));
          } else {
            // src[ox * stride_w + shift] is inside the row for ox in [a, b).
            const T* src = plane + iy * g.in_w;
            const int64_t a = std::clamp(inside.first, ox0, ox1);
            const int64_t b = std::clamp(inside.last, a, ox1);
            std::fill(dst, dst + (a - ox0), T(0));
            if (g.stride_w == 1) {
              std::copy(src + a + shift, src + b + shift, dst + (a - ox0));
            } else {
              for (int64_t ox = a; ox < b; ++ox) {
                dst[ox - ox0] = src[ox * g.stride_w + shift];
              }
            }
            std::fill(dst + (b - ox0), dst + (ox1 - ox0), T(0));
          }
          p += ox1 - ox0;
        }
      }
    }
  }
}

template <class T>
void DepthwisePlane2D(const Conv2DGeometry& g, const T* x, const T* w, T bias,
                      T* y, std::vector<T>& scratch) {
  // Output rows are computed kLanes columns at a time, in fixed-length inner
  // loops the compiler turns into vector instructions whatever the plane's
  // width (MobileNet's late planes are 7 or 14 wide, narrower than one
  // 512-bit vector loop's minimum trip count, and ran scalar). So the plane
  // is first copied into a zero-bordered buffer holding every row and column
  // those loops read, rounded up to whole groups of kLanes outputs: no
  // bounds tests inside. Taps on the zero border add +0, which leaves every
  // finite sum unchanged.
  if (g.out_h <= 0 || g.out_w <= 0) return;  // An empty plane.
  constexpr int64_t kLanes = 8;
  const int64_t width = (g.out_w + kLanes - 1) / kLanes * kLanes;
  const int64_t rows =
      (g.out_h - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1;
  const int64_t cols =
      (width - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1;
  scratch.assign(rows * cols + width, T(0));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t iy = r - g.pad_top;
    if (iy < 0 || iy >= g.in_h) continue;
    const int64_t first = std::max<int64_t>(0, g.pad_left);  // column of ix0
    const int64_t ix0 = std::max<int64_t>(0, -g.pad_left);
    const int64_t count = std::min(g.in_w - ix0, cols - first);
    if (count > 0) {
      std::copy(x + iy * g.in_w + ix0, x + iy * g.in_w + ix0 + count,
                scratch.data() + r * cols + first);
    }
  }
  const T* padded = scratch.data();
  T* row = scratch.data() + rows * cols;  // One output row, `width` wide.
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    const T* src = padded + oy * g.stride_h * cols;
    switch (g.stride_w) {  // A constant stride lets loads be contiguous.
      case 1:
        DepthwiseRow<T, kLanes, 1>(g, src, cols, w, bias, width, 1, row);
        break;
      case 2:
        DepthwiseRow<T, kLanes, 2>(g, src, cols, w, bias, width, 2, row);
        break;
      default:
        DepthwiseRow<T, kLanes, 0>(g, src, cols, w, bias, width, g.stride_w,
                                   row);
    }
    std::copy(row, row + g.out_w, y + oy * g.out_w);
  }
}

template <class T>
void MaxPoolPlane2D(const Conv2DGeometry& g, const T* x, T* y,
                    std::vector<T>& line) {
  // Separable: per output row, the window's input rows are first reduced to
  // one row (a contiguous, vectorised max), then the row's taps are taken
  // along it. Half the time of taking the k_h x k_w taps one by one, and the
  // same maxima: "v > best ? v : best" keeps best when v is NaN, so NaN
  // inputs are skipped either way.
  line.resize(g.in_w);
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    std::fill(line.begin(), line.end(), std::numeric_limits<T>::lowest());
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t iy = oy * g.stride_h + kh * g.dilation_h - g.pad_top;
      if (iy < 0 || iy >= g.in_h) continue;
      const T* src = x + iy * g.in_w;
      for (int64_t ix = 0; ix < g.in_w; ++ix) {
        line[ix] = src[ix] > line[ix] ? src[ix] : line[ix];
      }
    }
    T* out = y + oy * g.out_w;
    std::fill(out, out + g.out_w, std::numeric_limits<T>::lowest());
    const T* src = line.data();  // src[ox * stride_w + shift]
    for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
      const int64_t shift = kw * g.dilation_w - g.pad_left;
      const ColumnRange inside = InsideColumns(g, shift);
      if (g.stride_w == 1) {
        for (int64_t ox = inside.first; ox < inside.last; ++ox) {
          const T v = src[ox + shift];
          out[ox] = v > out[ox] ? v : out[ox];
        }
      } else {
        for (int64_t ox = inside.first; ox < inside.last; ++ox) {
          const T v = src[ox * g.stride_w + shift];
          out[ox] = v > out[ox] ? v : out[ox];
        }
      }
    }
  }
}

template void Im2Col2D<float>(const Conv2DGeometry&, const float*, int64_t,
                              int64_t, int64_t, float*, int64_t);
template void Im2Col2D<double>(const Conv2DGeometry&, const double*, int64_t,
                               int64_t, int64_t, double*, int64_t);
template void DepthwisePlane2D<float>(const Conv2DGeometry&, const float*,
                                      const float*, float, float*,
                                      std::vector<float>&);
template void DepthwisePlane2D<double>(const Conv2DGeometry&, const double*,
                                       const double*, double, double*,
                                       std::vector<double>&);
template void MaxPoolPlane2D<float>(const Conv2DGeometry&, const float*, float*,
                                    std::vector<float>&);
template void MaxPoolPlane2D<double>(const Conv2DGeometry&, const double*,
                                     double*, std::vector<double>&);

}  // namespace weft::internal
