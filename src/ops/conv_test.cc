// Conv against a direct float64 reference, over the shapes of the three
// 2-D paths (depthwise, 1x1 over every pixel, gathered columns), output
// channels split into blocks, and the any-rank path; each run at one and two
// threads, which must agree bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/conv_kernels.h"
#include "kernels/gemm_tile.h"
#include "ops/conv_kernel.h"
#include "test_support/reference_conv.h"
#include "test_support/session_util.h"

namespace weft {
namespace {

// Sessions whose convolutions stay on this file's NCHW kernels on every CPU
// (the nhwc-layout pass has its own tests).
SessionOptions NchwKernelOptions(int inter, int intra) {
  SessionOptions options = test::PerSessionOptions(inter, intra);
  options.disabled_graph_passes = {"nhwc-layout"};
  return options;
}

struct FloatConvCase {
  const char* name;
  int64_t n, c, h, w, m, group, kh, kw, stride, dilation, pad;
  bool bias;
};

Tensor ConvRandom(const Shape& shape, uint32_t seed) {
  return test::SeededFloats(shape, seed);
}

class ConvTest : public testing::TestWithParam<FloatConvCase> {};

TEST_P(ConvTest, MatchesADirectReference) {
  const FloatConvCase p = GetParam();
  const int64_t cg = p.c / p.group;
  const Tensor x = ConvRandom({p.n, p.c, p.h, p.w}, 1);
  const Tensor w = ConvRandom({p.m, cg, p.kh, p.kw}, 2);
  const Tensor b = ConvRandom({p.m}, 3);
  std::vector<Tensor> inputs = {x, w};
  if (p.bias) inputs.push_back(b);
  AttrMap attrs = {
      {"group", AttrValue(p.group)},
      {"strides", AttrValue(std::vector<int64_t>{p.stride, p.stride})},
      {"dilations", AttrValue(std::vector<int64_t>{p.dilation, p.dilation})},
      {"pads", AttrValue(std::vector<int64_t>{p.pad, p.pad, p.pad, p.pad})}};
  auto y = test::RunOneOutput("Conv", inputs, attrs);
  ASSERT_TRUE(y.ok()) << y.status();
  test::ReferenceConvShape s{p.n,  p.c,  p.h,     p.w,      p.m,
                             p.kh, p.kw, p.group, p.stride, p.dilation};
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = p.pad;
  const int64_t oh = s.out_h(), ow = s.out_w();
  ASSERT_EQ(y->shape(), Shape({p.n, p.m, oh, ow}));
  const std::vector<double> want = test::ReferenceConv2D(
      s, x.data<float>(), w.data<float>(), p.bias ? b.data<float>() : nullptr);
  for (int64_t at = 0; at < y->NumElements(); ++at) {
    ASSERT_NEAR(y->data<float>()[at], want[at],
                1e-4 * std::max(1.0, std::abs(want[at])))
        << "image " << at / (p.m * oh * ow) << " channel "
        << at / (oh * ow) % p.m << " at " << at / ow % oh << "," << at % ow;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Paths, ConvTest,
    testing::Values(
        // name, n, c, h, w, m, group, kh, kw, stride, dilation, pad, bias
        FloatConvCase{"pointwise", 2, 16, 9, 30, 24, 1, 1, 1, 1, 1, 0, true},
        FloatConvCase{"pointwise_strided", 1, 8, 10, 10, 8, 1, 1, 1, 2, 1, 0,
                      false},
        FloatConvCase{"three_by_three_pad", 2, 5, 17, 19, 7, 1, 3, 3, 1, 1, 1,
                      true},
        FloatConvCase{"seven_by_seven_stride2", 1, 3, 40, 37, 16, 1, 7, 7, 2, 1,
                      3, true},
        FloatConvCase{"dilated", 1, 4, 15, 15, 6, 1, 3, 3, 1, 2, 2, false},
        FloatConvCase{"grouped", 2, 8, 12, 12, 12, 4, 3, 3, 1, 1, 1, true},
        FloatConvCase{"depthwise", 2, 6, 14, 21, 6, 6, 3, 3, 1, 1, 1, true},
        FloatConvCase{"depthwise_stride2", 1, 5, 15, 16, 5, 5, 3, 3, 2, 1, 1,
                      false},
        // Wider than 16 outputs (the four-row path) over column phases.
        FloatConvCase{"depthwise_stride2_wide", 1, 4, 41, 45, 4, 4, 3, 3, 2, 1,
                      1, true},
        FloatConvCase{"depthwise_stride3_dilated", 1, 3, 30, 83, 3, 3, 5, 5, 3,
                      2, 3, false},
        FloatConvCase{"depthwise_stride2_unpadded", 1, 2, 36, 37, 2, 2, 3, 3, 2,
                      1, 0, true},
        // Planes above DepthwiseRunsInLanes's size, one by one.
        FloatConvCase{"depthwise_large_plane", 1, 3, 30, 31, 3, 3, 3, 3, 1, 1,
                      1, true},
        FloatConvCase{"depthwise_large_plane_stride2", 1, 2, 64, 66, 2, 2, 3, 3,
                      2, 1, 1, false},
        // Several blocks of lanes, the last one partial.
        FloatConvCase{"depthwise_lane_blocks", 1, 37, 9, 10, 37, 37, 3, 3, 1, 1,
                      1, true},
        FloatConvCase{"depthwise_multiplier", 1, 3, 9, 9, 6, 3, 5, 5, 1, 1, 2,
                      true},
        FloatConvCase{"late_layer_channel_blocks", 1, 32, 7, 7, 200, 1, 3, 3, 1,
                      1, 1, true},
        FloatConvCase{"window_in_padding_only", 1, 2, 2, 2, 3, 1, 3, 3, 3, 1, 2,
                      true}),
    [](const testing::TestParamInfo<FloatConvCase>& info) {
      return info.param.name;
    });

TEST(ConvAnyRankTest, OneDimensionalMatchesADirectReference) {
  const Tensor x = ConvRandom({2, 3, 20}, 4), w = ConvRandom({4, 3, 5}, 5);
  auto y =
      test::RunOneOutput("Conv", {x, w},
                         {{"pads", AttrValue(std::vector<int64_t>{2, 2})},
                          {"strides", AttrValue(std::vector<int64_t>{2})}});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), Shape({2, 4, 10}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t oc = 0; oc < 4; ++oc) {
      for (int64_t o = 0; o < 10; ++o) {
        double want = 0;
        for (int64_t ci = 0; ci < 3; ++ci) {
          for (int64_t k = 0; k < 5; ++k) {
            const int64_t at = o * 2 - 2 + k;
            if (at < 0 || at >= 20) continue;
            want += double(x.data<float>()[(i * 3 + ci) * 20 + at]) *
                    w.data<float>()[(oc * 3 + ci) * 5 + k];
          }
        }
        EXPECT_NEAR(y->data<float>()[(i * 4 + oc) * 10 + o], want, 1e-5);
      }
    }
  }
}

// An input with no rows: every path returns an empty output, no crash.
TEST(ConvTest, EmptyInputPlanesGiveEmptyOutputs) {
  for (int64_t group : {1, 2}) {
    auto y = test::RunOneOutput(
        "Conv",
        {ConvRandom({1, 2, 0, 5}, 7), ConvRandom({2, 2 / group, 3, 3}, 8)},
        {{"group", AttrValue(group)},
         {"auto_pad", AttrValue(std::string("SAME_UPPER"))}});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), Shape({1, 2, 0, 5})) << "group " << group;
  }
}

// A constant W with no output channels (nothing to pack) builds and runs:
// an empty output, not a division by zero when the kernel is built.
TEST(ConvPackedWeightTest, AnEmptyConstantWeightGivesAnEmptyOutput) {
  auto y = test::RunOneOutput(
      "Conv", {ConvRandom({1, 4, 5, 5}, 15), ConvRandom({0, 4, 3, 3}, 16)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({1, 0, 3, 3}));
}

// y = Conv(x, w, b) with `attrs`, W a Const holding `w` or, when
// constant_w is false, a placeholder of its shape to feed.
Graph ConvGraph(const Shape& x_shape, const Tensor& w, bool constant_w,
                const Tensor& bias, const AttrMap& attrs) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape(x_shape.dims()));
  if (constant_w) {
    g.Const("w", w);
  } else {
    g.Placeholder("w", DataType::kFloat32, PartialShape(w.shape().dims()));
  }
  g.Const("b", bias);
  EXPECT_TRUE(g.AddNode({"y", "Conv", {"x", "w", "b"}, attrs, ""}).ok());
  return g;
}

// Per-session threads with the nhwc-layout pass off, so that Conv runs as
// ConvKernel whatever the CPU: on CPUs where oneDNN's AVX-512 kernels run
// (Intel and AMD alike) the pass would turn it into NhwcConv, whose
// reordered W counts in prepared_bytes() whichever tile kernel is active.
SessionOptions NchwOptions(int threads) {
  SessionOptions options = test::PerSessionOptions(threads, threads);
  options.disabled_graph_passes = {"nhwc-layout"};
  return options;
}

// Fetches y, or an empty tensor after failing the test.
Tensor RunY(Session& session, const NamedTensors& feeds) {
  std::vector<Tensor> out = test::MustRun(session, {"y"}, feeds);
  return out.empty() ? Tensor() : out[0];
}

// A constant W is packed for ConvKernel's micro-kernel when the session is
// created where the tile kernel is BLIS (the per-CPU rule, or
// WEFT_GEMM_KERNEL) and the micro-kernel's rule packs this layer
// (ConvPacksConstantWeights: BLIS's zen3 and skx kernels decide differently),
// or transformed where the layer runs as NCHW Winograd (NchwWinogradTile),
// and not where it is Eigen. Per path (phase panels gathered
// per tile or shared by channel blocks, with stride 2, grouped; a 1x1 window
// over every pixel; and transposed products over planes small enough for
// ConvProductsRunTransposed: columns gathered per tile or shared by channel
// blocks, a partial channel panel, grouped, a 1x1 window with stride 2, a
// 1x1 window over every pixel of a small plane): the
// packed session agrees with one that feeds W (not packed) within float32
// rounding, gives the same bits at (1, 1) and (2, 2), and reports the packed
// bytes; a Run that feeds the Const's output computes with the fed W, not
// the packed one, and one that feeds the bias's with the fed bias (the
// phase path packs a constant bias into W).
TEST(ConvPackedWeightTest, PackedWeightsGiveTheProductOfTheWeightsGiven) {
  struct Shape4 {
    int64_t c, hw, m, group, k, stride = 1;
  };
  for (const Shape4& p :
       {Shape4{16, 40, 24, 1, 3}, Shape4{16, 21, 24, 1, 3, 2},
        Shape4{16, 20, 24, 1, 3}, Shape4{64, 7, 96, 1, 3},
        Shape4{32, 9, 120, 1, 1}, Shape4{8, 12, 12, 2, 3},
        Shape4{32, 7, 48, 1, 3}, Shape4{32, 20, 120, 1, 3},
        Shape4{64, 9, 32, 2, 3}, Shape4{256, 14, 32, 1, 1, 2},
        Shape4{320, 7, 96, 1, 1},
        // Large enough that both threads of (2, 2) take
        // tiles of shared columns: phase panels (2 pixel
        // tiles x 4 channel blocks), transposed (8 blocks).
        Shape4{64, 14, 256, 1, 3}, Shape4{64, 7, 512, 1, 3}}) {
    SCOPED_TRACE("c " + std::to_string(p.c) + " m " + std::to_string(p.m) +
                 " group " + std::to_string(p.group) + " k " +
                 std::to_string(p.k) + " stride " + std::to_string(p.stride));
    const Shape x_shape{1, p.c, p.hw, p.hw};
    const Shape w_shape{p.m, p.c / p.group, p.k, p.k};
    const Tensor x = ConvRandom(x_shape, 11), w = ConvRandom(w_shape, 12);
    const Tensor other_w = ConvRandom(w_shape, 13);
    const AttrMap attrs = {
        {"group", AttrValue(p.group)},
        {"strides", AttrValue(std::vector<int64_t>(2, p.stride))},
        {"pads", AttrValue(std::vector<int64_t>(4, p.k / 2))}};
    const Tensor bias = ConvRandom({p.m}, 14),
                 other_bias = ConvRandom({p.m}, 15);
    auto graph_with_w = [&](bool constant_w) {
      return ConvGraph(x_shape, w, constant_w, bias, attrs);
    };
    const int64_t out_side = (p.hw + 2 * (p.k / 2) - p.k) / p.stride + 1;
    internal::Conv2DGeometry geo{};
    geo.kernel_h = geo.kernel_w = p.k;
    geo.stride_h = geo.stride_w = p.stride;
    geo.dilation_h = geo.dilation_w = 1;
    geo.out_h = geo.out_w = out_side;
    // Packed, or transformed for Winograd (whose W counts as well).
    const bool packs =
        internal::NchwWinogradTile(p.m, p.c, p.group, geo) != 0 ||
        (internal::ActiveGemmKernel() == internal::GemmKernel::kBlis &&
         internal::ConvPacksConstantWeights(
             p.m / p.group, p.c / p.group * p.k * p.k,
             /*unit_window=*/p.k == 1 && p.stride == 1, out_side * out_side));
    std::vector<Tensor> packed;
    for (int threads : {1, 2}) {
      auto session = test::MustCreate(graph_with_w(true), NchwOptions(threads));
      ASSERT_NE(session, nullptr);
      EXPECT_EQ(session->prepared_bytes() > 0, packs);
      packed.push_back(RunY(*session, {{"x", x}}));
      // Feeding the Const's output replaces the weight.
      const Tensor fed = RunY(*session, {{"x", x}, {"w", other_w}});
      auto plain = test::MustCreate(graph_with_w(false), NchwOptions(1));
      const Tensor want = RunY(*plain, {{"x", x}, {"w", other_w}});
      EXPECT_LT(test::MaxAbsDifference(fed, want), 1e-4);
      EXPECT_GT(test::MaxAbsDifference(fed, packed.back()), 1e-2);
      // So does feeding the bias's: a bias packed into W is not used then.
      const Tensor fed_bias = RunY(*session, {{"x", x}, {"b", other_bias}});
      const Tensor want_bias =
          RunY(*plain, {{"x", x}, {"w", w}, {"b", other_bias}});
      EXPECT_LT(test::MaxAbsDifference(fed_bias, want_bias), 1e-4);
      EXPECT_GT(test::MaxAbsDifference(fed_bias, packed.back()), 1e-2);
    }
    EXPECT_TRUE(packed[0].BitwiseEqual(packed[1]));
    auto plain = test::MustCreate(graph_with_w(false), NchwOptions(1));
    const Tensor want = RunY(*plain, {{"x", x}, {"w", w}});
    EXPECT_LT(test::MaxAbsDifference(packed[0], want), 1e-4);
  }
}

// A constant depthwise W is arranged for DepthwiseLanes2D once, when the
// session is created: its bytes are reported, and over small planes (the
// lanes path; 40 channels: two whole blocks of 16 and a partial one) it
// gives the bits a session feeding the same W gives, which arranges it per
// Run; feeding another W to the Const's output computes with that one.
TEST(ConvPackedWeightTest, ConstantDepthwiseWeightsAreArrangedOnce) {
  const Shape x_shape{1, 40, 9, 9}, w_shape{40, 1, 3, 3};
  const Tensor x = ConvRandom(x_shape, 31), w = ConvRandom(w_shape, 32);
  const Tensor other_w = ConvRandom(w_shape, 33);
  const Tensor bias = ConvRandom({40}, 34);
  const AttrMap attrs = {{"group", AttrValue(int64_t{40})},
                         {"pads", AttrValue(std::vector<int64_t>(4, 1))}};
  auto graph_with_w = [&](bool constant_w) {
    return ConvGraph(x_shape, w, constant_w, bias, attrs);
  };
  auto arranged = test::MustCreate(graph_with_w(true), NchwKernelOptions(1, 2));
  auto fed =
      test::MustCreate(graph_with_w(false), test::PerSessionOptions(1, 2));
  ASSERT_NE(arranged, nullptr);
  ASSERT_NE(fed, nullptr);
  // Three blocks of 16 planes, 9 taps each, in float32.
  EXPECT_EQ(arranged->prepared_bytes(), 3 * 16 * 9 * 4);
  EXPECT_TRUE(RunY(*arranged, {{"x", x}})
                  .BitwiseEqual(RunY(*fed, {{"x", x}, {"w", w}})));
  EXPECT_TRUE(RunY(*arranged, {{"x", x}, {"w", other_w}})
                  .BitwiseEqual(RunY(*fed, {{"x", x}, {"w", other_w}})));
  EXPECT_FALSE(RunY(*arranged, {{"x", x}})
                   .BitwiseEqual(RunY(*fed, {{"x", x}, {"w", other_w}})));
}

// A 1x1 Conv with fewer than 96 output channels keeps W as it is (packing
// X per Run would cost what the product does), reports no packed bytes,
// and computes what the direct reference does.
TEST(ConvPackedWeightTest, FewChannelsOverEveryPixelStayUnpacked) {
  const Tensor x = ConvRandom({1, 40, 11, 13}, 21),
               w = ConvRandom({24, 40, 1, 1}, 22);
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({1, 40, 11, 13}));
  g.Const("w", w);
  ASSERT_TRUE(g.AddNode({"y", "Conv", {"x", "w"}, {}, ""}).ok());
  auto session = test::MustCreate(std::move(g), NchwKernelOptions(1, 2));
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->prepared_bytes(), 0);
  const Tensor y = RunY(*session, {{"x", x}});
  double worst = 0;
  for (int64_t o = 0; o < 24; ++o) {
    for (int64_t p = 0; p < 11 * 13; ++p) {
      double want = 0;
      for (int64_t c = 0; c < 40; ++c) {
        want += double(w.data<float>()[o * 40 + c]) *
                x.data<float>()[c * 11 * 13 + p];
      }
      worst =
          std::max(worst, std::abs(y.data<float>()[o * 11 * 13 + p] - want));
    }
  }
  EXPECT_LT(worst, 1e-4);
}

// The plane-by-plane 2-D MaxPool against a direct reference: stride, pads,
// dilation and ceil_mode, including windows that hang over the end; stride 2
// (split into column phases) over even and odd widths, pads that shift taps
// by even and odd columns, and stride 1.
TEST(MaxPool2DTest, MatchesADirectReference) {
  struct PoolCase {
    int64_t h, w, k, s, d, pad, ceil_mode;
  };
  for (const PoolCase& c :
       {PoolCase{13, 16, 3, 2, 2, 1, 1}, PoolCase{14, 15, 3, 2, 1, 1, 0},
        PoolCase{9, 17, 5, 2, 1, 2, 1}, PoolCase{8, 16, 2, 2, 1, 0, 0},
        PoolCase{10, 11, 3, 1, 1, 1, 0},
        // Rows of 32 outputs or more, with a border: row by row (also
        // windows past the right end in ceil mode); without one, flat, with
        // rows longer than the windows read (floor mode) and dilation.
        PoolCase{9, 70, 3, 2, 1, 1, 0}, PoolCase{7, 68, 3, 2, 1, 0, 1},
        PoolCase{11, 18, 3, 2, 1, 0, 0}, PoolCase{10, 40, 3, 1, 2, 0, 0},
        // Wider rows with four taps (no fixed-size pass for them), and a
        // window wider than the vectorised path takes.
        PoolCase{12, 80, 4, 1, 1, 1, 0}, PoolCase{70, 70, 66, 1, 1, 0, 0}}) {
    SCOPED_TRACE(std::to_string(c.h) + " x " + std::to_string(c.w) +
                 " kernel " + std::to_string(c.k) + " stride " +
                 std::to_string(c.s) + " dilation " + std::to_string(c.d) +
                 " pad " + std::to_string(c.pad));
    const Tensor x = ConvRandom({2, 3, c.h, c.w}, 6);
    auto y = test::RunOneOutput(
        "MaxPool", {x},
        {{"kernel_shape", AttrValue(std::vector<int64_t>{c.k, c.k})},
         {"strides", AttrValue(std::vector<int64_t>{c.s, c.s})},
         {"dilations", AttrValue(std::vector<int64_t>{c.d, c.d})},
         {"pads", AttrValue(std::vector<int64_t>(4, c.pad))},
         {"ceil_mode", AttrValue(c.ceil_mode)}});
    ASSERT_TRUE(y.ok()) << y.status();
    const int64_t span = (c.k - 1) * c.d + 1;
    auto out_dim = [&](int64_t in) {
      const int64_t room = in + 2 * c.pad - span;
      return (c.ceil_mode ? (room + c.s - 1) / c.s : room / c.s) + 1;
    };
    const int64_t oh = out_dim(c.h), ow = out_dim(c.w);
    ASSERT_EQ(y->shape(), Shape({2, 3, oh, ow}));
    for (int64_t plane = 0; plane < 6; ++plane) {
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          float want = -std::numeric_limits<float>::infinity();
          for (int64_t ky = 0; ky < c.k; ++ky) {
            for (int64_t kx = 0; kx < c.k; ++kx) {
              const int64_t iy = oy * c.s - c.pad + ky * c.d,
                            ix = ox * c.s - c.pad + kx * c.d;
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
              want = std::max(want,
                              x.data<float>()[(plane * c.h + iy) * c.w + ix]);
            }
          }
          ASSERT_EQ(y->data<float>()[(plane * oh + oy) * ow + ox], want)
              << plane << " " << oy << "," << ox;
        }
      }
    }
  }
}

// GlobalAveragePool sums each plane in double (eight partial sums): planes
// shorter than eight values, and longer ones with a remainder, against a
// plain double sum; float32 inputs whose float sum would lose the small
// terms (1e8 then ones) keep them, and integer-valued inputs give exact
// means. Bits at one and two threads agree.
TEST(GlobalAveragePoolTest, MeansEachPlaneInDouble) {
  for (const Shape& shape :
       {Shape({2, 3, 1, 5}), Shape({1, 4, 13, 13}), Shape({1, 2, 7, 8})}) {
    SCOPED_TRACE(shape.ToString());
    Tensor x = ConvRandom(shape, 41);
    const int64_t planes = shape.dim(0) * shape.dim(1);
    const int64_t size = shape.dim(2) * shape.dim(3);
    float* v = x.data<float>();
    v[0] = 1e8f;  // Plane 0: 1e8 and ones after it.
    for (int64_t i = 1; i < size; ++i) v[i] = 1.0f;
    std::vector<Tensor> by_threads;
    for (int threads : {1, 2}) {
      Graph g;
      g.Placeholder("x", DataType::kFloat32, PartialShape(shape.dims()));
      ASSERT_TRUE(g.AddNode({"y", "GlobalAveragePool", {"x"}, {}, ""}).ok());
      auto session =
          test::MustCreate(std::move(g), test::PerSessionOptions(1, threads));
      ASSERT_NE(session, nullptr);
      by_threads.push_back(RunY(*session, {{"x", x}}));
    }
    const Tensor& y = by_threads[0];
    ASSERT_EQ(y.shape(), Shape({shape.dim(0), shape.dim(1), 1, 1}));
    EXPECT_TRUE(y.BitwiseEqual(by_threads[1]));
    EXPECT_EQ(y.data<float>()[0],
              static_cast<float>((1e8 + static_cast<double>(size - 1)) /
                                 static_cast<double>(size)));
    for (int64_t p = 1; p < planes; ++p) {
      double want = 0;
      for (int64_t i = 0; i < size; ++i) want += v[p * size + i];
      EXPECT_NEAR(y.data<float>()[p], want / size, 1e-6) << "plane " << p;
    }
  }
}

// Window attributes past kMaxWindowAttr are refused with the attribute
// named (their arithmetic once passed int64), for Conv, the pools and
// ConvTranspose; EyeLike's k past either side sets nothing.
TEST(WindowAttrTest, ValuesPastTheLimitAreRefused) {
  constexpr int64_t kHuge = int64_t{1} << 62;
  const Tensor x = Tensor::FromVector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor w = Tensor::FromVector<float>({1, 1, 1, 1}, {1});
  auto message = [](const StatusOr<Tensor>& y) {
    return y.ok() ? std::string("ok") : y.status().message();
  };
  for (const char* attr : {"strides", "dilations"}) {
    EXPECT_NE(
        message(test::RunOneOutput("Conv", {x, w},
                                   {{attr, std::vector<int64_t>{kHuge, 1}}}))
            .find(std::string(attr) + " value 4611686018427387904"),
        std::string::npos)
        << attr;
  }
  EXPECT_NE(message(test::RunOneOutput(
                        "MaxPool", {x},
                        {{"kernel_shape", std::vector<int64_t>{1, 1}},
                         {"pads", std::vector<int64_t>{0, kHuge, 0, 0}}}))
                .find("past the limit"),
            std::string::npos);
  EXPECT_NE(
      message(test::RunOneOutput("ConvTranspose", {x, w},
                                 {{"strides", std::vector<int64_t>{kHuge, 1}}}))
          .find("strides value"),
      std::string::npos);
  EXPECT_NE(
      message(
          test::RunOneOutput(
              "ConvTranspose", {x, w},
              {{"output_shape",
                std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 2}}}))
          .find("output_shape value"),
      std::string::npos);
  auto eye =
      test::RunOneOutput("EyeLike", {Tensor(DataType::kFloat32, Shape{2, 3})},
                         {{"k", std::numeric_limits<int64_t>::max()},
                          {"dtype", DataType::kFloat32}});
  ASSERT_TRUE(eye.ok()) << eye.status();
  for (float v : test::Values<float>(*eye)) EXPECT_EQ(v, 0);
}

// GlobalMaxPool propagates NaN wherever it stands in the plane (as
// ReduceMax does); both global pools refuse a plane with no positions,
// naming the shape, rather than answer a value for nothing.
TEST(GlobalPoolTest, MaxPropagatesNaNAndEmptyPlanesAreErrors) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto max = test::RunOneOutput(
      "GlobalMaxPool",
      {Tensor::FromVector<float>({1, 2, 1, 3}, {1, nan, 3, nan, 2, 0})});
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_TRUE(std::isnan(max->data<float>()[0]));
  EXPECT_TRUE(std::isnan(max->data<float>()[1]));
  for (const char* op : {"GlobalMaxPool", "GlobalAveragePool"}) {
    auto empty =
        test::RunOneOutput(op, {Tensor(DataType::kFloat32, Shape{1, 2, 0, 4})});
    ASSERT_FALSE(empty.ok()) << op;
    EXPECT_NE(empty.status().message().find("empty spatial extent"),
              std::string::npos)
        << empty.status();
    EXPECT_NE(empty.status().message().find("[1, 2, 0, 4]"), std::string::npos)
        << empty.status();
  }
}

// ConvTranspose with an output_shape shorter than the full output crops
// total = full - output_shape values, the odd one at the end for
// SAME_UPPER and at the beginning otherwise (ONNX's equations; ONNX
// Runtime does the same). x = 1, 2 and w = 1, 10 give the full 1, 12, 20.
TEST(ConvTransposeTest, AnOutputShapeCropsTheOddPadAsAutoPadSays) {
  const Tensor x = Tensor::FromVector<float>({1, 1, 2}, {1, 2});
  const Tensor w = Tensor::FromVector<float>({1, 1, 2}, {1, 10});
  const std::pair<const char*, std::vector<float>> cases[] = {
      {"NOTSET", {12, 20}}, {"SAME_LOWER", {12, 20}}, {"SAME_UPPER", {1, 12}}};
  for (const auto& [auto_pad, want] : cases) {
    SCOPED_TRACE(auto_pad);
    auto y = test::RunOneOutput("ConvTranspose", {x, w},
                                {{"output_shape", std::vector<int64_t>{2}},
                                 {"auto_pad", std::string(auto_pad)}});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(test::Values<float>(*y), want);
  }
}

}  // namespace
}  // namespace weft
