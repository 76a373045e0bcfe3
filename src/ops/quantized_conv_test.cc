#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

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

namespace weft {
namespace {

// (t - zero) as float32, zero per tensor or per first dimension.
template <class T>
Tensor MinusZero(const Tensor& t, const std::vector<int32_t>& zero) {
  Tensor out(DataType::kFloat32, t.shape());
  const int64_t per = t.NumElements() / t.shape().dim(0);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const int32_t z = zero.size() == 1 ? zero[0] : zero[i / per];
    out.data<float>()[i] = static_cast<float>(t.data<T>()[i] - z);
  }
  return out;
}

struct QuantizedConvCase {
  const char* name;
  int64_t n, c, h, w, m, k, stride, pad, dilation, group;
};

// ConvInteger over every convolution shape the int8 kernels take (1 x 1,
// 3 x 3, 7 x 7 / 2, depthwise, grouped, dilated; depths that are not whole
// quads, planes that are not whole panels, two images), with per-channel
// weight zero points, int8 and uint8 x, and w constant (packed at
// construction) or fed: the sums equal float32 Conv's over (x - x_zero) and
// (w - w_zero), exact at these sizes (every sum below 2^24), at one and
// two threads.
TEST(QuantizedConvTest, Int8KernelsGiveTheExactSumsOfEveryConvolutionShape) {
  const QuantizedConvCase cases[] = {
      {"1x1", 2, 13, 9, 11, 19, 1, 1, 0, 1, 1},
      {"3x3", 1, 8, 10, 9, 16, 3, 1, 1, 1, 1},
      {"3x3 wide rows", 2, 7, 6, 21, 17, 3, 1, 1, 1, 1},
      {"5x5 dilated wide rows", 1, 5, 12, 24, 8, 5, 1, 3, 2, 1},
      {"grouped wide rows", 1, 8, 4, 16, 12, 3, 1, 1, 1, 2},
      {"7x7/2", 1, 3, 17, 15, 9, 7, 2, 3, 1, 1},
      {"3x3/2 wide rows", 1, 4, 5, 75, 8, 3, 2, 1, 1, 1},
      {"3x3/2 depthwise", 2, 12, 9, 10, 12, 3, 2, 1, 1, 12},
      {"3x3 depthwise", 1, 5, 7, 7, 5, 3, 1, 1, 1, 5},
      {"5x5 depthwise wide rows", 2, 6, 9, 30, 6, 5, 1, 2, 1, 6},
      {"grouped", 1, 12, 6, 7, 9, 3, 1, 1, 1, 3},
      {"dilated", 1, 6, 11, 11, 10, 3, 1, 2, 2, 1},
  };
  for (const QuantizedConvCase& t : cases) {
    for (bool signed_x : {false, true}) {
      for (bool fed_w : {false, true}) {
        SCOPED_TRACE(std::string(t.name) + (signed_x ? " int8 x" : " uint8 x") +
                     (fed_w ? ", w fed" : ", w constant"));
        const Shape x_shape{t.n, t.c, t.h, t.w};
        const Shape w_shape{t.m, t.c / t.group, t.k, t.k};
        Tensor x = signed_x ? test::SeededBytes<int8_t>(x_shape, 3)
                            : test::SeededBytes<uint8_t>(x_shape, 3);
        Tensor w = test::SeededBytes<int8_t>(w_shape, 5);
        std::vector<int8_t> w_zero(static_cast<size_t>(t.m));
        std::vector<int32_t> w_zero32;
        for (int64_t i = 0; i < t.m; ++i) {
          w_zero[i] = static_cast<int8_t>(i % 3 == 0 ? 0 : i % 5 - 2);
          w_zero32.push_back(w_zero[i]);
        }
        const int32_t x_zero = signed_x ? -3 : 121;
        Tensor x_zero_t = signed_x ? Tensor::FromVector<int8_t>({}, {-3})
                                   : Tensor::FromVector<uint8_t>({}, {121});
        const std::vector<int64_t> pads = {t.pad, t.pad, t.pad, t.pad};
        const AttrMap attrs = {
            {"group", t.group},
            {"pads", pads},
            {"strides", std::vector<int64_t>{t.stride, t.stride}},
            {"dilations", std::vector<int64_t>{t.dilation, t.dilation}}};

        Graph graph;
        graph.Placeholder("x", x.dtype(), x_shape);
        const std::string w_name =
            fed_w ? graph.Placeholder("w", DataType::kInt8, w_shape)
                  : graph.Const("w", w);
        graph.Const("xz", x_zero_t);
        graph.Const("wz", Tensor::FromVector<int8_t>({t.m}, w_zero));
        test::MustAdd(
            graph, {"y", "ConvInteger", {"x", w_name, "xz", "wz"}, attrs, ""});
        Graph reference;
        reference.Const("x", signed_x ? MinusZero<int8_t>(x, {x_zero})
                                      : MinusZero<uint8_t>(x, {x_zero}));
        reference.Const("w", MinusZero<int8_t>(w, w_zero32));
        test::MustAdd(reference, {"y", "Conv", {"x", "w"}, attrs, ""});
        auto want = test::RunAtOneAndTwoThreads(reference, {"y"});
        ASSERT_TRUE(want.ok()) << want.status();

        for (int threads : {1, 2}) {
          auto session =
              Session::Create(graph, test::PerSessionOptions(threads, threads));
          ASSERT_TRUE(session.ok()) << session.status();
          NamedTensors feeds = {{"x", x}};
          if (fed_w) feeds.push_back({"w", w});
          std::vector<Tensor> got = test::MustRun(**session, {"y"}, feeds);
          ASSERT_EQ(got.size(), 1u);
          ASSERT_EQ(got[0].shape(), (*want)[0].shape());
          const Tensor& expect = (*want)[0];
          for (int64_t i = 0; i < expect.NumElements(); ++i) {
            ASSERT_EQ(got[0].data<int32_t>()[i],
                      static_cast<int32_t>(expect.data<float>()[i]))
                << "element " << i << " at " << threads << " threads";
          }
          if (!fed_w) EXPECT_GT((*session)->prepared_bytes(), 0);
        }
      }
    }
  }
}

// The constant W is packed once, by the first Run that reads it; a Run that
// feeds the Const's output must convolve with what it fed, and the next Run
// without it with the constant again.
TEST(QuantizedConvTest, AFedWeightReplacesTheConstantOnlyForThatRun) {
  const Shape x_shape{1, 8, 6, 6}, w_shape{16, 8, 3, 3};
  const Tensor x = test::SeededBytes<uint8_t>(x_shape, 3);
  const Tensor w = test::SeededBytes<int8_t>(w_shape, 5);
  const Tensor other_w = test::SeededBytes<int8_t>(w_shape, 9);
  const AttrMap attrs = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const auto conv_with = [&](const Tensor& weights) {
    Graph graph;
    graph.Placeholder("x", DataType::kUInt8, x_shape);
    graph.Const("w", weights);
    test::MustAdd(graph, {"y", "ConvInteger", {"x", "w"}, attrs, ""});
    return graph;
  };
  for (int threads : {1, 2}) {
    SCOPED_TRACE(testing::Message() << threads << " threads");
    auto with_other = test::MustCreate(
        conv_with(other_w), test::PerSessionOptions(threads, threads));
    ASSERT_NE(with_other, nullptr);
    const Tensor want_other =
        test::MustRun(*with_other, {"y"}, {{"x", x}}).at(0);
    auto session = test::MustCreate(conv_with(w),
                                    test::PerSessionOptions(threads, threads));
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(session->prepared_bytes(), 0);  // Nothing packed before a Run.
    const Tensor first = test::MustRun(*session, {"y"}, {{"x", x}}).at(0);
    EXPECT_GT(session->prepared_bytes(), 0);
    const Tensor fed =
        test::MustRun(*session, {"y"}, {{"x", x}, {"w", other_w}}).at(0);
    const Tensor again = test::MustRun(*session, {"y"}, {{"x", x}}).at(0);
    ASSERT_EQ(fed.shape(), want_other.shape());
    EXPECT_EQ(std::memcmp(fed.raw_data(), want_other.raw_data(),
                          fed.NumElements() * sizeof(int32_t)),
              0);
    EXPECT_EQ(std::memcmp(again.raw_data(), first.raw_data(),
                          first.NumElements() * sizeof(int32_t)),
              0);
    EXPECT_NE(std::memcmp(first.raw_data(), want_other.raw_data(),
                          first.NumElements() * sizeof(int32_t)),
              0);
  }
}

}  // namespace
}  // namespace weft
