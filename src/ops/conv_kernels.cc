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

}  // namespace

template <class T>
void Im2Col2D(const Conv2DGeometry& g, const T* x, int64_t channels,
              int64_t p0, int64_t pixels, T* cols, int64_t ld_cols) {
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
                      T* y) {
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    T* out = y + oy * g.out_w;
    std::fill(out, out + g.out_w, bias);
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t iy = oy * g.stride_h + kh * g.dilation_h - g.pad_top;
      if (iy < 0 || iy >= g.in_h) continue;
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const T weight = w[kh * g.kernel_w + kw];
        const int64_t shift = kw * g.dilation_w - g.pad_left;
        const ColumnRange inside = InsideColumns(g, shift);
        const T* src = x + iy * g.in_w;  // src[ox * stride_w + shift]
        if (g.stride_w == 1) {
          for (int64_t ox = inside.first; ox < inside.last; ++ox) {
            out[ox] += weight * src[ox + shift];
          }
        } else {
          for (int64_t ox = inside.first; ox < inside.last; ++ox) {
            out[ox] += weight * src[ox * g.stride_w + shift];
          }
        }
      }
    }
  }
}

template <class T>
void MaxPoolPlane2D(const Conv2DGeometry& g, const T* x, T* y) {
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    T* out = y + oy * g.out_w;
    std::fill(out, out + g.out_w, std::numeric_limits<T>::lowest());
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t iy = oy * g.stride_h + kh * g.dilation_h - g.pad_top;
      if (iy < 0 || iy >= g.in_h) continue;
      const T* src = x + iy * g.in_w;  // src[ox * stride_w + shift]
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const int64_t shift = kw * g.dilation_w - g.pad_left;
        const ColumnRange inside = InsideColumns(g, shift);
        // "v > best ? v : best" keeps best when v is NaN, and is one
        // vector max instruction.
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
}

template void Im2Col2D<float>(const Conv2DGeometry&, const float*, int64_t,
                              int64_t, int64_t, float*, int64_t);
template void Im2Col2D<double>(const Conv2DGeometry&, const double*, int64_t,
                               int64_t, int64_t, double*, int64_t);
template void DepthwisePlane2D<float>(const Conv2DGeometry&, const float*,
                                      const float*, float, float*);
template void DepthwisePlane2D<double>(const Conv2DGeometry&, const double*,
                                       const double*, double, double*);
template void MaxPoolPlane2D<float>(const Conv2DGeometry&, const float*,
                                    float*);
template void MaxPoolPlane2D<double>(const Conv2DGeometry&, const double*,
                                     double*);

}  // namespace weft::internal
