// Im2ColPanels against Im2Col2D (checked against a direct convolution in
// ConvTest): every packed element is the column element it stands for, the
// padding panels hold zeros, and a gather split by depth blocks writes what
// one call writes. And the rule that picks the transposed products, and
// the depthwise kernel that computes planes in vector lanes.
#include "kernels/conv_kernels.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/conv_phase_panels.h"
#include "kernels/packed_gemm.h"
#include "test_support/panels.h"
#include "test_support/session_util.h"

namespace weft::internal {
namespace {

struct PanelCase {
  const char* name;
  Conv2DGeometry geo;
  int64_t channels, p0, pixels, width, kc;
};

// Conv2DGeometry for a square input, kernel, stride, dilation and pad.
Conv2DGeometry Square(int64_t in, int64_t kernel, int64_t stride,
                      int64_t dilation, int64_t pad) {
  const int64_t out =
      (in + 2 * pad - ((kernel - 1) * dilation + 1)) / stride + 1;
  return {in,     in,     out,      out,      kernel, kernel,
          stride, stride, dilation, dilation, pad,    pad};
}

void PrintTo(const PanelCase& c, std::ostream* os) { *os << c.name; }

class Im2ColPanelsTest : public testing::TestWithParam<PanelCase> {};

TEST_P(Im2ColPanelsTest, HoldsTheColumnsInThePackedLayout) {
  const PanelCase& p = GetParam();
  const Conv2DGeometry& g = p.geo;
  const int64_t depth = p.channels * g.Taps();
  const Tensor x_tensor = test::SeededFloats({p.channels * g.InSize()}, 1);
  const float* x = x_tensor.data<float>();
  std::vector<float> cols(depth * p.pixels);
  Im2Col2D<float>(g, x, p.channels, p.p0, p.pixels, cols.data(), p.pixels);
  const int64_t floats = PanelView::Floats(p.pixels, depth, p.width);
  const int64_t blocks = (depth + p.kc - 1) / p.kc;
  std::vector<float> panels(floats, std::nanf(""));
  Im2ColPanels(g, x, p.channels, p.p0, p.pixels, p.width, p.kc, 0, blocks,
               panels.data());
  const int64_t padded = floats / depth;
  for (int64_t d = 0; d < depth; ++d) {
    for (int64_t i = 0; i < padded; ++i) {
      const float got =
          test::PanelAt(panels, padded, p.width, p.kc, depth, i, d);
      const float want = i < p.pixels ? cols[d * p.pixels + i] : 0.0f;
      ASSERT_EQ(got, want) << "depth " << d << " pixel " << i;
    }
  }
  // One depth block per call, in reverse order: the same floats.
  std::vector<float> by_block(floats, std::nanf(""));
  for (int64_t block = blocks - 1; block >= 0; --block) {
    Im2ColPanels(g, x, p.channels, p.p0, p.pixels, p.width, p.kc, block,
                 block + 1, by_block.data());
  }
  for (int64_t f = 0; f < floats; ++f) {
    ASSERT_EQ(by_block[f], panels[f]) << "float " << f;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, Im2ColPanelsTest,
    testing::Values(
        // Panels crossing output rows, the padding on both sides, a partial
        // last panel; depth 36 in blocks of 16 (not a divisor).
        PanelCase{"three_by_three_pad", Square(11, 3, 1, 1, 1), 4, 5, 50, 6,
                  16},
        // A stride: the runs of a panel read every second input.
        PanelCase{"seven_by_seven_stride2", Square(30, 7, 2, 1, 3), 3, 17, 80,
                  6, 64},
        PanelCase{"dilated", Square(15, 3, 1, 2, 2), 2, 0, 225, 6, 7},
        // Panels whose every tap is inside the input (copied without tests),
        // with depth blocks that start inside a channel's taps.
        PanelCase{"interior_panels", Square(20, 3, 1, 1, 1), 3, 21, 100, 6, 16},
        PanelCase{"one_by_one_stride2", Square(14, 1, 2, 1, 0), 5, 0, 49, 6, 4},
        // Widths other than 6: the vectorised 16 and a width the code has
        // no fixed-length copy for.
        PanelCase{"width16", Square(9, 3, 1, 1, 1), 3, 2, 61, 16, 10},
        PanelCase{"width5", Square(9, 3, 2, 1, 0), 3, 0, 16, 5, 27}),
    [](const testing::TestParamInfo<PanelCase>& info) {
      return info.param.name;
    });

// The rule that picks the transposed products, on any CPU's micro-kernel:
// only over a known plane small enough that nr-wide panels would pad it
// (one pixel more than a whole nr panel pads it to two: 2 nr against
// nr + mr), at depth >= kc; an unknown plane or one that nr-wide panels
// fill keeps pixels in nr-wide panels.
TEST(ConvProductsRunTransposedTest, FollowsPlaneAndDepth) {
  const MicroKernelShape& shape = FloatMicroKernel();
  const int64_t whole = shape.mr * shape.nr;  // whole panels both ways
  EXPECT_FALSE(ConvProductsRunTransposed(whole, shape.kc, 0));
  EXPECT_FALSE(ConvProductsRunTransposed(whole, shape.kc, whole));
  if (2 * shape.nr * 8 > (shape.nr + shape.mr) * 9) {
    EXPECT_TRUE(ConvProductsRunTransposed(whole, shape.kc, shape.nr + 1));
    EXPECT_FALSE(ConvProductsRunTransposed(whole, shape.kc - 1, shape.nr + 1));
  }
}

// And the shapes of ResNet-18 and MobileNetV2 with the 6 x 16 micro-kernel
// BLIS picks for AMD's Zen CPUs: over 7 x 7 (64 vs 54 pixels) transposed
// unless 16-wide panels pad the channels by more than an eighth over 6-wide
// ones; over 14 x 14 (208 vs 198) and larger planes never.
TEST(ConvProductsRunTransposedTest, KeepsSmallPlanesAndChannelCountsThatPad) {
  const MicroKernelShape& shape = FloatMicroKernel();
  if (shape.mr != 6 || shape.nr != 16) {
    GTEST_SKIP() << "the micro-kernel here is " << shape.mr << " x "
                 << shape.nr;
  }
  const int64_t deep = shape.kc, small = 7 * 7;
  EXPECT_TRUE(ConvProductsRunTransposed(512, 4608, small));  // 3 x 3
  EXPECT_TRUE(ConvProductsRunTransposed(512, deep, small));  // 512 vs 516
  EXPECT_TRUE(ConvProductsRunTransposed(120, deep, small));  // 128 vs 120
  EXPECT_FALSE(ConvProductsRunTransposed(24, deep, small));  // 32 vs 24
  EXPECT_FALSE(ConvProductsRunTransposed(40, deep, small));  // 48 vs 42
  EXPECT_TRUE(ConvProductsRunTransposed(320, 960, small));   // 1 x 1
  EXPECT_FALSE(ConvProductsRunTransposed(256, 2304, 14 * 14));
  EXPECT_FALSE(ConvProductsRunTransposed(96, 576, 14 * 14));
  EXPECT_FALSE(ConvProductsRunTransposed(64, 576, 56 * 56));
}

// The rule that packs a constant W, on any CPU's micro-kernel: a 1 x 1
// window over every pixel packs from kPackedConvMinChannels panels of rows
// on; products that are not transposed pack only where the nr-wide pixel
// panels fit a phase panel (BLIS's zen3 kernel, 16 wide, does; its skx
// kernel used transposed, 32 wide, does not); transposed ones always pack.
TEST(ConvPacksConstantWeightsTest, FollowsTheMicroKernelsPanels) {
  const MicroKernelShape& shape = FloatMicroKernel();
  const bool phase_panels_fit = shape.nr <= kMaxPhasePanelWidth;
  const int64_t enough = kPackedConvMinChannels * shape.mr;
  EXPECT_FALSE(ConvPacksConstantWeights(enough - 1, shape.kc, true, 0));
  EXPECT_EQ(ConvPacksConstantWeights(enough, shape.kc, true, 0),
            phase_panels_fit);
  EXPECT_EQ(ConvPacksConstantWeights(8, 9 * 16, false, 0), phase_panels_fit);
  EXPECT_EQ(ConvPacksConstantWeights(8, 9 * 16, false, 56 * 56),
            phase_panels_fit);
  const int64_t whole = shape.mr * shape.nr;
  if (ConvProductsRunTransposed(whole, shape.kc, shape.nr + 1)) {
    EXPECT_TRUE(ConvPacksConstantWeights(whole, shape.kc, false, shape.nr + 1));
  }
}

// And ResNet-18's and MobileNetV2's layers with the 6 x 16 micro-kernel
// BLIS picks for AMD's Zen 3 and Zen 4: 1 x 1 layers from 96 output
// channels on, every 3 x 3 layer.
TEST(ConvPacksConstantWeightsTest, PacksTheZenKernelsLayers) {
  const MicroKernelShape& shape = FloatMicroKernel();
  if (shape.mr != 6 || shape.nr != 16) {
    GTEST_SKIP() << "the micro-kernel here is " << shape.mr << " x "
                 << shape.nr;
  }
  EXPECT_FALSE(ConvPacksConstantWeights(64, 384, true, 14 * 14));
  EXPECT_TRUE(ConvPacksConstantWeights(96, 576, true, 14 * 14));
  EXPECT_TRUE(ConvPacksConstantWeights(320, 960, true, 7 * 7));
  EXPECT_TRUE(ConvPacksConstantWeights(64, 576, false, 56 * 56));
  EXPECT_TRUE(ConvPacksConstantWeights(24, 144, false, 28 * 28));
}

// MaxPoolLanes2D against MaxPoolPlane2D, plane by plane, bit for bit (the
// same maxima taken in the same order), with every lane used and with a
// partial block, over strides, dilation, pads, ceil mode's last windows and
// planes of fewer than 16 pixels; planes past `lanes` are not written.
TEST(MaxPoolLanesTest, AgreesWithMaxPoolPlane2D) {
  struct LanesCase {
    Conv2DGeometry geo;
    int64_t lanes;
  };
  // ceil mode: 27 -> 13 with windows inside; 8 -> 4 with the last window
  // one column past the end (out 4 needs 9 columns).
  const Conv2DGeometry ceil_past_end{8, 8, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0};
  for (const LanesCase& c :
       {LanesCase{Square(27, 3, 2, 1, 0), 16},
        LanesCase{Square(14, 3, 2, 1, 1), 9},
        LanesCase{Square(13, 5, 1, 2, 4), 16}, LanesCase{ceil_past_end, 16},
        LanesCase{Square(3, 2, 1, 1, 0), 5}}) {
    const Conv2DGeometry& g = c.geo;
    SCOPED_TRACE("in " + std::to_string(g.in_h) + " kernel " +
                 std::to_string(g.kernel_h) + " stride " +
                 std::to_string(g.stride_h) + " lanes " +
                 std::to_string(c.lanes));
    const Tensor x = test::SeededFloats({kDepthwiseLanes * g.InSize()}, 5);
    std::vector<float> want(kDepthwiseLanes * g.OutSize());
    std::vector<float> line;
    for (int64_t p = 0; p < kDepthwiseLanes; ++p) {
      MaxPoolPlane2D<float>(g, x.data<float>() + p * g.InSize(),
                            want.data() + p * g.OutSize(), line);
    }
    std::vector<float> got(kDepthwiseLanes * g.OutSize(), std::nanf(""));
    const float* planes[kDepthwiseLanes];
    float* outs[kDepthwiseLanes];
    for (int64_t p = 0; p < kDepthwiseLanes; ++p) {
      planes[p] = x.data<float>() + p * g.InSize();
      outs[p] = got.data() + p * g.OutSize();
    }
    std::vector<float> scratch;
    MaxPoolLanes2D(g, planes, c.lanes, outs, scratch);
    for (int64_t p = 0; p < kDepthwiseLanes; ++p) {
      for (int64_t i = 0; i < g.OutSize(); ++i) {
        const float v = got[p * g.OutSize() + i];
        if (p < c.lanes) {
          ASSERT_EQ(std::bit_cast<uint32_t>(v),
                    std::bit_cast<uint32_t>(want[p * g.OutSize() + i]))
              << "plane " << p << " output " << i;
        } else {
          ASSERT_TRUE(std::isnan(v)) << "plane " << p << " was written";
        }
      }
    }
  }
}

// DepthwiseLanes2D against DepthwisePlane2D (checked against a direct
// convolution in ConvTest), plane by plane, within float rounding (the
// compiler may fuse the multiply-adds of one and not the other), with every
// lane used, with a partial block, and over strides, dilation, padding and
// rows narrower than one vector; planes past `lanes` are not written.
TEST(DepthwiseLanesTest, AgreesWithDepthwisePlane2D) {
  struct LanesCase {
    Conv2DGeometry geo;
    int64_t lanes;
  };
  for (const LanesCase& c : {LanesCase{Square(7, 3, 1, 1, 1), 16},
                             LanesCase{Square(14, 3, 2, 1, 1), 9},
                             LanesCase{Square(13, 5, 1, 2, 4), 16},
                             LanesCase{Square(30, 3, 3, 1, 0), 1},
                             LanesCase{Square(2, 3, 1, 1, 1), 16}}) {
    const Conv2DGeometry& g = c.geo;
    SCOPED_TRACE("in " + std::to_string(g.in_h) + " kernel " +
                 std::to_string(g.kernel_h) + " stride " +
                 std::to_string(g.stride_h) + " lanes " +
                 std::to_string(c.lanes));
    const Tensor x = test::SeededFloats({kDepthwiseLanes * g.InSize()}, 2);
    const Tensor w = test::SeededFloats({kDepthwiseLanes * g.Taps()}, 3);
    const Tensor bias = test::SeededFloats({kDepthwiseLanes}, 4);
    std::vector<float> lane_w(g.Taps() * kDepthwiseLanes);
    const float* planes[kDepthwiseLanes];
    float* outs[kDepthwiseLanes];
    std::vector<float> got(kDepthwiseLanes * g.OutSize(), std::nanf(""));
    for (int64_t lane = 0; lane < kDepthwiseLanes; ++lane) {
      planes[lane] = x.data<float>() + lane * g.InSize();
      outs[lane] = got.data() + lane * g.OutSize();
      for (int64_t t = 0; t < g.Taps(); ++t) {
        lane_w[t * kDepthwiseLanes + lane] =
            w.data<float>()[lane * g.Taps() + t];
      }
    }
    std::vector<float> scratch;
    const float inf = std::numeric_limits<float>::infinity();
    DepthwiseLanes2D(g, planes, lane_w.data(), bias.data<float>(), -inf, inf,
                     c.lanes, outs, scratch);
    PlaneScratch<float> plane_scratch;
    for (int64_t lane = 0; lane < kDepthwiseLanes; ++lane) {
      std::vector<float> want(g.OutSize(), std::nanf(""));
      if (lane < c.lanes) {
        DepthwisePlane2D<float>(
            g, planes[lane], w.data<float>() + lane * g.Taps(),
            bias.data<float>()[lane], -inf, inf, want.data(), plane_scratch);
      }
      for (int64_t p = 0; p < g.OutSize(); ++p) {
        const float value = outs[lane][p];
        if (lane < c.lanes) {
          ASSERT_NEAR(value, want[p], 1e-5f * (1.0f + std::fabs(want[p])))
              << "lane " << lane << " pixel " << p;
        } else {
          ASSERT_TRUE(std::isnan(value)) << "lane " << lane << " pixel " << p;
        }
      }
    }
  }
}

// The bounds are Clip's: each output of the unbounded run clamped to
// [lower, upper], NaN (here from a NaN input) kept.
TEST(DepthwiseLanesTest, BoundsOutputsAsClipDoes) {
  const Conv2DGeometry g = Square(6, 3, 1, 1, 1);
  Tensor x = test::SeededFloats({kDepthwiseLanes * g.InSize()}, 5);
  x.data<float>()[7] = std::nanf("");  // Plane 0, pixel (1, 1).
  const Tensor w = test::SeededFloats({g.Taps() * kDepthwiseLanes}, 6);
  const Tensor bias = test::SeededFloats({kDepthwiseLanes}, 7);
  const float* planes[kDepthwiseLanes];
  float* outs[2][kDepthwiseLanes];
  std::vector<float> y[2];
  std::vector<float> scratch;
  const float inf = std::numeric_limits<float>::infinity();
  const float lower = -0.1f, upper = 0.2f;
  for (int bounded = 0; bounded < 2; ++bounded) {
    y[bounded].assign(kDepthwiseLanes * g.OutSize(), 0.0f);
    for (int64_t lane = 0; lane < kDepthwiseLanes; ++lane) {
      planes[lane] = x.data<float>() + lane * g.InSize();
      outs[bounded][lane] = y[bounded].data() + lane * g.OutSize();
    }
    DepthwiseLanes2D(g, planes, w.data<float>(), bias.data<float>(),
                     bounded ? lower : -inf, bounded ? upper : inf,
                     kDepthwiseLanes, outs[bounded], scratch);
  }
  int nans = 0, clamped = 0;
  for (size_t i = 0; i < y[0].size(); ++i) {
    const float free = y[0][i], got = y[1][i];
    if (std::isnan(free)) {
      ++nans;
      EXPECT_TRUE(std::isnan(got)) << i;
      continue;
    }
    clamped += free < lower || free > upper;
    EXPECT_EQ(got, std::min(std::max(free, lower), upper)) << i;
  }
  EXPECT_EQ(nans, 9);  // The 3 x 3 outputs whose windows hold the NaN.
  EXPECT_GT(clamped, 0);
}

// DepthwisePlane2D's bounds are Clip's too, on every row: planes whose
// rows run four at a time in registers (3 x 3, strides 1 and 2) with rows
// left over, and a 5 x 5 window (every row bounded after the sums); NaN
// (from a NaN input) kept.
TEST(DepthwisePlaneTest, BoundsOutputsAsClipDoes) {
  const float inf = std::numeric_limits<float>::infinity();
  const float lower = -0.1f, upper = 0.2f;
  for (const Conv2DGeometry& g :
       {Square(34, 3, 1, 1, 1), Square(35, 3, 2, 1, 1),
        Square(33, 5, 1, 1, 2)}) {
    SCOPED_TRACE("plane " + std::to_string(g.out_h) + " kernel " +
                 std::to_string(g.kernel_h) + " stride " +
                 std::to_string(g.stride_h));
    Tensor x = test::SeededFloats({g.InSize()}, 8);
    x.data<float>()[5 * g.in_w + 7] = std::nanf("");
    const Tensor w = test::SeededFloats({g.Taps()}, 9);
    std::vector<float> free(g.OutSize()), got(g.OutSize());
    PlaneScratch<float> scratch;
    DepthwisePlane2D<float>(g, x.data<float>(), w.data<float>(), 0.05f, -inf,
                            inf, free.data(), scratch);
    DepthwisePlane2D<float>(g, x.data<float>(), w.data<float>(), 0.05f, lower,
                            upper, got.data(), scratch);
    int nans = 0, clamped = 0;
    for (int64_t i = 0; i < g.OutSize(); ++i) {
      if (std::isnan(free[i])) {
        ++nans;
        EXPECT_TRUE(std::isnan(got[i])) << i;
        continue;
      }
      clamped += free[i] < lower || free[i] > upper;
      EXPECT_EQ(got[i], std::min(std::max(free[i], lower), upper)) << i;
    }
    EXPECT_GT(nans, 0);
    EXPECT_GT(clamped, 0);
    // Rows past the last group of four were bounded too.
    const float* last_row = got.data() + (g.out_h - 1) * g.out_w;
    for (int64_t j = 0; j < g.out_w; ++j) {
      if (!std::isnan(last_row[j])) {
        EXPECT_GE(last_row[j], lower);
        EXPECT_LE(last_row[j], upper);
      }
    }
  }
}

}  // namespace
}  // namespace weft::internal
