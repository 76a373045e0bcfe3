// Conv layers that run as Winograd's F(4 x 4, 3 x 3) (conv_winograd.cc):
// against a direct float64 reference, the same bits at every thread count
// and for an image alone or in a batch, a fed W instead of the transformed
// one, and a fused residual and Relu. Whether a layer runs so is the rule's
// (NchwWinogradEnabled, the tile kernel, the panel width), which the
// kernel-choice suites turn both ways.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/gemm_tile.h"
#include "kernels/int_division.h"
#include "kernels/packed_gemm.h"
#include "kernels/winograd.h"
#include "ops/conv_kernel.h"
#include "test_support/reference_conv.h"
#include "test_support/session_util.h"

namespace weft {
namespace {

struct WinogradConvShape {
  int64_t n, c, h, w, m, pad;
};

// Channels-last would take these layers on CPUs where oneDNN's kernels
// run; this file tests the NCHW kernel.
SessionOptions WinogradConvOptions(int threads) {
  SessionOptions options = test::PerSessionOptions(threads, threads);
  options.disabled_graph_passes = {"nhwc-layout"};
  return options;
}

int64_t WinogradOutSide(int64_t in, int64_t pad) { return in + 2 * pad - 2; }

// y = Relu(Conv(x, w, b) + z) when `residual`, else Conv(x, w, b); W a
// Const, fed through its output when a Run feeds "w".
Graph WinogradConvGraph(const WinogradConvShape& s, const Tensor& w,
                        const Tensor& b, bool residual) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({s.n, s.c, s.h, s.w}));
  g.Const("w", w);
  g.Const("b", b);
  const AttrMap attrs = {
      {"pads", AttrValue(std::vector<int64_t>(4, s.pad))},
      {"kernel_shape", AttrValue(std::vector<int64_t>{3, 3})}};
  EXPECT_TRUE(g.AddNode({"conv", "Conv", {"x", "w", "b"}, attrs, ""}).ok());
  if (!residual) {
    EXPECT_TRUE(g.AddNode({"y", "Identity", {"conv"}, {}, ""}).ok());
    return g;
  }
  g.Placeholder("z", DataType::kFloat32,
                PartialShape({s.n, s.m, WinogradOutSide(s.h, s.pad),
                              WinogradOutSide(s.w, s.pad)}));
  EXPECT_TRUE(g.AddNode({"sum", "Add", {"conv", "z"}, {}, ""}).ok());
  EXPECT_TRUE(g.AddNode({"y", "Relu", {"sum"}, {}, ""}).ok());
  return g;
}

// The largest difference from a float64 direct convolution, relative to
// the largest output (at least 1).
double WinogradConvError(const WinogradConvShape& s, const Tensor& x,
                         const Tensor& w, const Tensor& b, const Tensor* z,
                         const Tensor& y) {
  const test::ReferenceConvShape shape{.n = s.n,
                                       .c = s.c,
                                       .h = s.h,
                                       .w = s.w,
                                       .m = s.m,
                                       .kh = 3,
                                       .kw = 3,
                                       .pad_top = s.pad,
                                       .pad_left = s.pad,
                                       .pad_bottom = s.pad,
                                       .pad_right = s.pad};
  const std::vector<double> direct = test::ReferenceConv2D(
      shape, x.data<float>(), w.data<float>(), b.data<float>());
  double worst = 0, largest = 1;
  for (size_t at = 0; at < direct.size(); ++at) {
    double want = direct[at];
    if (z != nullptr) want = std::max(0.0, want + z->data<float>()[at]);
    worst = std::max(worst, std::abs(y.data<float>()[at] - want));
    largest = std::max(largest, std::abs(want));
  }
  return worst / largest;
}

// The layer's geometry as far as the Winograd rule reads it.
internal::Conv2DGeometry WinogradConvGeometry(const WinogradConvShape& s) {
  internal::Conv2DGeometry g{};
  g.kernel_h = g.kernel_w = 3;
  g.stride_h = g.stride_w = g.dilation_h = g.dilation_w = 1;
  g.out_h = WinogradOutSide(s.h, s.pad);
  g.out_w = WinogradOutSide(s.w, s.pad);
  return g;
}

bool RunsAsWinograd(const WinogradConvShape& s) {
  return internal::NchwWinogradEnabled() &&
         internal::ActiveGemmKernel() == internal::GemmKernel::kBlis &&
         internal::WinogradFits(WinogradConvGeometry(s)) &&
         s.c >= internal::kWinogradMinChannels &&
         s.m >= internal::kWinogradMinChannels;
}

// The transformed weights' bytes: a packed operand of m x c a point.
int64_t WinogradBytes(const WinogradConvShape& s) {
  const int64_t mr = internal::FloatMicroKernel().mr;
  return internal::WinogradPoints(
             internal::WinogradTileFor(WinogradConvGeometry(s))) *
         internal::RoundUp(s.m, mr) * s.c * 4;
}

TEST(ConvWinogradTest,
     MatchesADirectReferenceWithTheSameBitsAtEveryThreadCount) {
  const int64_t kc = internal::FloatMicroKernel().kc;
  // ResNet-like, a plane not a multiple of 4 with several blocks, the
  // smallest plane and channel counts taken, and more input channels than
  // one depth block of the micro-kernel.
  for (const WinogradConvShape& s :
       {WinogradConvShape{1, 64, 14, 14, 64, 1},
        WinogradConvShape{2, 24, 37, 30, 40, 1},
        WinogradConvShape{1, 16, 8, 8, 16, 1},
        WinogradConvShape{1, kc + 8, 10, 12, 20, 1},
        WinogradConvShape{1, 32, 12, 11, 24, 0},
        // 2 x 2 tiles: ResNet-18's last plane, and one not square.
        WinogradConvShape{2, 48, 7, 7, 40, 1},
        WinogradConvShape{1, 16, 9, 6, 24, 0}}) {
    SCOPED_TRACE("n " + std::to_string(s.n) + " c " + std::to_string(s.c) +
                 " plane " + std::to_string(s.h) + "x" + std::to_string(s.w) +
                 " m " + std::to_string(s.m) + " pad " + std::to_string(s.pad));
    const Tensor x = test::SeededFloats({s.n, s.c, s.h, s.w}, 41);
    const Tensor w = test::SeededFloats({s.m, s.c, 3, 3}, 42);
    const Tensor b = test::SeededFloats({s.m}, 43);
    std::vector<Tensor> ys;
    for (int threads : {1, 2}) {
      auto session = test::MustCreate(WinogradConvGraph(s, w, b, false),
                                      WinogradConvOptions(threads));
      ASSERT_NE(session, nullptr);
      EXPECT_EQ(session->prepared_bytes() == WinogradBytes(s),
                RunsAsWinograd(s));
      ys.push_back(test::MustRun(*session, {"y"}, {{"x", x}})[0]);
    }
    EXPECT_TRUE(ys[0].BitwiseEqual(ys[1]));
    EXPECT_LT(WinogradConvError(s, x, w, b, nullptr, ys[0]), 1e-5);
  }
  // ResNet-18's shapes run so where the rule allows.
  EXPECT_EQ(
      RunsAsWinograd({1, 64, 56, 56, 64, 1}),
      internal::NchwWinogradEnabled() &&
          internal::ActiveGemmKernel() == internal::GemmKernel::kBlis &&
          internal::FloatMicroKernel().nr % internal::kWinogradLanes == 0);
  EXPECT_EQ(RunsAsWinograd({1, 512, 7, 7, 512, 1}),
            RunsAsWinograd({1, 64, 56, 56, 64, 1}));
  EXPECT_FALSE(RunsAsWinograd({1, 512, 5, 5, 512, 1}));
  EXPECT_FALSE(RunsAsWinograd({1, 8, 20, 20, 64, 1}));
}

// Each image's outputs are the bits it gets alone (the blocks are per
// image), with a residual and Relu fused after the products.
TEST(ConvWinogradTest, AnImageInABatchGetsItsBitsAloneWithAFusedResidual) {
  const WinogradConvShape batch{3, 32, 17, 20, 48, 1};
  const WinogradConvShape alone{1, 32, 17, 20, 48, 1};
  const Tensor x = test::SeededFloats({3, 32, 17, 20}, 51);
  const Tensor w = test::SeededFloats({48, 32, 3, 3}, 52);
  const Tensor b = test::SeededFloats({48}, 53);
  const Tensor z = test::SeededFloats({3, 48, 17, 20}, 54);
  auto batched = test::MustCreate(WinogradConvGraph(batch, w, b, true),
                                  WinogradConvOptions(2));
  auto single = test::MustCreate(WinogradConvGraph(alone, w, b, true),
                                 WinogradConvOptions(1));
  ASSERT_NE(batched, nullptr);
  ASSERT_NE(single, nullptr);
  const Tensor y = test::MustRun(*batched, {"y"}, {{"x", x}, {"z", z}})[0];
  EXPECT_LT(WinogradConvError(batch, x, w, b, &z, y), 1e-5);
  const int64_t x_image = 32 * 17 * 20, y_image = 48 * 17 * 20;
  for (int64_t i = 0; i < 3; ++i) {
    Tensor xi(DataType::kFloat32, Shape({1, 32, 17, 20}));
    Tensor zi(DataType::kFloat32, Shape({1, 48, 17, 20}));
    std::copy_n(x.data<float>() + i * x_image, x_image, xi.data<float>());
    std::copy_n(z.data<float>() + i * y_image, y_image, zi.data<float>());
    const Tensor yi = test::MustRun(*single, {"y"}, {{"x", xi}, {"z", zi}})[0];
    Tensor batched_yi(DataType::kFloat32, Shape({1, 48, 17, 20}));
    std::copy_n(y.data<float>() + i * y_image, y_image,
                batched_yi.data<float>());
    EXPECT_TRUE(yi.BitwiseEqual(batched_yi)) << "image " << i;
  }
}

// A Run that feeds the Const's output computes with the fed W, not the
// transformed one.
TEST(ConvWinogradTest, AFedWeightReplacesTheTransformedOne) {
  const WinogradConvShape s{1, 16, 12, 12, 32, 1};
  const Tensor x = test::SeededFloats({1, 16, 12, 12}, 61);
  const Tensor w = test::SeededFloats({32, 16, 3, 3}, 62);
  const Tensor other_w = test::SeededFloats({32, 16, 3, 3}, 63);
  const Tensor b = test::SeededFloats({32}, 64);
  auto session = test::MustCreate(WinogradConvGraph(s, w, b, false),
                                  WinogradConvOptions(2));
  ASSERT_NE(session, nullptr);
  const Tensor fed =
      test::MustRun(*session, {"y"}, {{"x", x}, {"w", other_w}})[0];
  EXPECT_LT(WinogradConvError(s, x, other_w, b, nullptr, fed), 1e-5);
  const Tensor own = test::MustRun(*session, {"y"}, {{"x", x}})[0];
  EXPECT_LT(WinogradConvError(s, x, w, b, nullptr, own), 1e-5);
}

}  // namespace
}  // namespace weft
