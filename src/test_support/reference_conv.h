// A float64 direct 2-D convolution, for tests to hold the float kernels
// (direct, packed, Winograd, channels-last) against: ONNX Conv's meaning,
// NCHW input, OIHW weights, groups, strides, dilations and uneven pads.
#ifndef WEFT_SRC_TEST_SUPPORT_REFERENCE_CONV_H_
#define WEFT_SRC_TEST_SUPPORT_REFERENCE_CONV_H_

#include <cstdint>
#include <vector>

namespace weft::test {

struct ReferenceConvShape {
  int64_t n = 1, c = 1, h = 1, w = 1;  // input
  int64_t m = 1, kh = 1, kw = 1;       // output channels, taps
  int64_t group = 1, stride = 1, dilation = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;

  int64_t out_h() const {
    return (h + pad_top + pad_bottom - ((kh - 1) * dilation + 1)) / stride + 1;
  }
  int64_t out_w() const {
    return (w + pad_left + pad_right - ((kw - 1) * dilation + 1)) / stride + 1;
  }
};

// y[((i * m + o) * out_h + oy) * out_w + ox], summed in double from bias[o]
// (0 where bias is null).
inline std::vector<double> ReferenceConv2D(const ReferenceConvShape& s,
                                           const float* x, const float* w,
                                           const float* bias) {
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  const int64_t oh = s.out_h(), ow = s.out_w();
  std::vector<double> y(s.n * s.m * oh * ow);
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t o = 0; o < s.m; ++o) {
      const int64_t first_channel = o / mg * cg;
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          double sum = bias != nullptr ? bias[o] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const float* plane =
                x + ((i * s.c + first_channel + ci) * s.h) * s.w;
            const float* taps = w + (o * cg + ci) * s.kh * s.kw;
            for (int64_t ky = 0; ky < s.kh; ++ky) {
              const int64_t iy = oy * s.stride - s.pad_top + ky * s.dilation;
              if (iy < 0 || iy >= s.h) continue;
              for (int64_t kx = 0; kx < s.kw; ++kx) {
                const int64_t ix = ox * s.stride - s.pad_left + kx * s.dilation;
                if (ix < 0 || ix >= s.w) continue;
                sum += double(plane[iy * s.w + ix]) * taps[ky * s.kw + kx];
              }
            }
          }
          y[((i * s.m + o) * oh + oy) * ow + ox] = sum;
        }
      }
    }
  }
  return y;
}

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_REFERENCE_CONV_H_
