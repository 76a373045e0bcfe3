#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// A direct int32 reference: x [1, C, H, W] (uint8), w [M, C/group, kh, kw]
// (int8), stride 1, `pad` on every side, w's zero point per output channel.
std::vector<int32_t> ReferenceConv(const std::vector<uint8_t>& x, int c, int h,
                                   int w_, const std::vector<int8_t>& w, int m,
                                   int k, int group, int pad, int32_t x_zero,
                                   const std::vector<int8_t>& w_zero) {
  const int oh = h + 2 * pad - k + 1, ow = w_ + 2 * pad - k + 1;
  const int cg = c / group, mg = m / group;
  std::vector<int32_t> y(static_cast<size_t>(m * oh * ow), 0);
  for (int oc = 0; oc < m; ++oc) {
    const int g = oc / mg;
    for (int i = 0; i < oh; ++i) {
      for (int j = 0; j < ow; ++j) {
        int32_t acc = 0;
        for (int ci = 0; ci < cg; ++ci) {
          for (int a = 0; a < k; ++a) {
            for (int b = 0; b < k; ++b) {
              const int r = i + a - pad, s = j + b - pad;
              if (r < 0 || r >= h || s < 0 || s >= w_) continue;
              const int32_t xv = x[((g * cg + ci) * h + r) * w_ + s] - x_zero;
              const int32_t wv =
                  w[((oc * cg + ci) * k + a) * k + b] - w_zero[oc];
              acc += xv * wv;
            }
          }
        }
        y[(oc * oh + i) * ow + j] = acc;
      }
    }
  }
  return y;
}

TEST(QuantizedConvTest, ConvIntegerMatchesADirectSumWithGroupsAndPadding) {
  const int c = 4, h = 5, w = 6, m = 6, k = 3, group = 2, pad = 1;
  std::vector<uint8_t> x(c * h * w);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<uint8_t>(i * 37 % 251);
  std::vector<int8_t> wt(m * (c / group) * k * k);
  for (size_t i = 0; i < wt.size(); ++i) {
    wt[i] = static_cast<int8_t>(static_cast<int>(i * 53 % 255) - 127);
  }
  const std::vector<int8_t> w_zero = {0, 3, -2, 1, 5, -7};
  const AttrMap attrs = {{"group", int64_t{group}},
                         {"pads", std::vector<int64_t>{pad, pad, pad, pad}}};
  auto y =
      test::RunOneNode("ConvInteger",
                       {Tensor::FromVector<uint8_t>({1, c, h, w}, x),
                        Tensor::FromVector<int8_t>({m, c / group, k, k}, wt),
                        Tensor::FromVector<uint8_t>({}, {7}),
                        Tensor::FromVector<int8_t>({m}, w_zero)},
                       attrs);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, m, h, w}));
  EXPECT_EQ(test::Values<int32_t>((*y)[0]),
            ReferenceConv(x, c, h, w, wt, m, k, group, pad, 7, w_zero));
}

TEST(QuantizedConvTest, QLinearConvRequantizesWithBiasAndPerChannelScales) {
  // 1x1 convolution of one pixel: acc = (x - 2) * (w - 1) + B, then
  // * x_scale * w_scale / y_scale, rounded half to even, + y_zero.
  auto y = test::RunOneNode(
      "QLinearConv",
      {Tensor::FromVector<uint8_t>({1, 1, 1, 2}, {12, 2}),  // x - 2 = 10, 0
       Tensor::FromVector<float>({}, {0.5f}),
       Tensor::FromVector<uint8_t>({}, {2}),
       Tensor::FromVector<int8_t>({2, 1, 1, 1}, {4, -1}),  // w - 1 = 3, -2
       Tensor::FromVector<float>({2}, {1.0f, 0.25f}),
       Tensor::FromVector<int8_t>({2}, {1, 1}),
       Tensor::FromVector<float>({}, {2.0f}),
       Tensor::FromVector<uint8_t>({}, {100}),
       Tensor::FromVector<int32_t>({2}, {1, -2})});
  ASSERT_TRUE(y.ok()) << y.status();
  // Channel 0: (30 + 1) * 0.25 = 7.75 -> 8 + 100; (0 + 1) * 0.25 -> 0 + 100.
  // Channel 1: (-20 - 2) * 0.0625 = -1.375 -> -1 + 100; -2 * 0.0625 -> 100.
  EXPECT_EQ(test::Values<uint8_t>((*y)[0]),
            (std::vector<uint8_t>{108, 100, 99, 100}));
}

TEST(QuantizedConvTest, RefusesAZeroPointOfTheWrongDtype) {
  auto y = test::RunOneNode(
      "ConvInteger", {Tensor::FromVector<uint8_t>({1, 1, 2, 2}, {1, 2, 3, 4}),
                      Tensor::FromVector<int8_t>({1, 1, 1, 1}, {1}),
                      Tensor::FromVector<int8_t>({}, {0})});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(),
              HasSubstr("x_zero_point has dtype int8, expected uint8"));
}

}  // namespace
}  // namespace weft
