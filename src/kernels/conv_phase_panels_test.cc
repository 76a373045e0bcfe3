// GatherPhasePanels against Im2Col2D (checked against a direct convolution
// in ConvTest): every packed element is the column element it stands for,
// lanes past the last pixel hold zeros, and a gather split by depth blocks
// writes what one call writes. The geometries cover what the phase copy has
// to get right: padding on every side, strides (phase planes), dilation,
// panels that cross one or several output rows, widths other than 16.
#include "kernels/conv_phase_panels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <vector>

#include "kernels/packed_gemm.h"
#include "test_support/panels.h"
#include "test_support/session_util.h"

namespace weft::internal {
namespace {

struct PhaseCase {
  const char* name;
  Conv2DGeometry geo;
  int64_t channels, p0, pixels, width, kc;
};

void PrintTo(const PhaseCase& c, std::ostream* os) { *os << c.name; }

// Conv2DGeometry with pads on the top and left; the bottom and right pads
// are what the output size leaves.
Conv2DGeometry Geometry(int64_t in_h, int64_t in_w, int64_t kernel,
                        int64_t stride, int64_t dilation, int64_t pad_top,
                        int64_t pad_left, int64_t pad_end) {
  auto out = [&](int64_t in, int64_t pad) {
    return (in + pad + pad_end - ((kernel - 1) * dilation + 1)) / stride + 1;
  };
  return {in_h,
          in_w,
          out(in_h, pad_top),
          out(in_w, pad_left),
          kernel,
          kernel,
          stride,
          stride,
          dilation,
          dilation,
          pad_top,
          pad_left};
}

class GatherPhasePanelsTest : public testing::TestWithParam<PhaseCase> {};

TEST_P(GatherPhasePanelsTest, HoldsTheColumnsInThePackedLayout) {
  const PhaseCase& c = GetParam();
  const Conv2DGeometry& g = c.geo;
  const int64_t depth = c.channels * g.Taps();
  const Tensor x_tensor = test::SeededFloats({c.channels * g.InSize()}, 3);
  const float* x = x_tensor.data<float>();
  std::vector<float> cols(depth * c.pixels);
  Im2Col2D<float>(g, x, c.channels, c.p0, c.pixels, cols.data(), c.pixels);

  const PhasePlanes layout = PhasePlanes::Of(g);
  // NaN in the slack: a lane that took a value from it would show.
  std::vector<float> copy(layout.BufferFloats(c.channels), std::nanf(""));
  float* first = copy.data() + kPhaseCopySlack;
  for (int64_t ch = 0; ch < c.channels; ++ch) {
    CopyIntoPhasePlanes(g, layout, x + ch * g.InSize(),
                        first + ch * layout.ChannelFloats());
  }
  std::vector<int64_t> offsets(depth);
  PhaseTapOffsets(g, layout, c.channels, offsets.data());

  const int64_t floats = PanelView::Floats(c.pixels, depth, c.width);
  const int64_t blocks = (depth + c.kc - 1) / c.kc;
  std::vector<float> panels(floats, std::nanf(""));
  const PhaseSource source{first, offsets.data(), depth, 0.0f};
  GatherPhasePanels(g, layout, source, depth, c.p0, c.pixels, c.width, c.kc, 0,
                    blocks, panels.data());
  const int64_t padded = floats / depth;
  for (int64_t d = 0; d < depth; ++d) {
    for (int64_t i = 0; i < padded; ++i) {
      const float got =
          test::PanelAt(panels, padded, c.width, c.kc, depth, i, d);
      const float want = i < c.pixels ? cols[d * c.pixels + i] : 0.0f;
      ASSERT_EQ(got, want) << "depth " << d << " pixel " << i;
    }
  }
  // One depth block per call, in reverse order: the same floats.
  std::vector<float> by_block(floats, std::nanf(""));
  for (int64_t block = blocks - 1; block >= 0; --block) {
    GatherPhasePanels(g, layout, source, depth, c.p0, c.pixels, c.width, c.kc,
                      block, block + 1, by_block.data());
  }
  for (int64_t f = 0; f < floats; ++f) {
    ASSERT_EQ(by_block[f], panels[f]) << "float " << f;
  }
  // One row more, of ones (W's column of biases multiplies it): the same
  // rows from the copy, then ones for every pixel and zeros past them.
  const int64_t deeper = depth + 1;
  const int64_t deeper_floats = PanelView::Floats(c.pixels, deeper, c.width);
  std::vector<float> with_ones(deeper_floats, std::nanf(""));
  GatherPhasePanels(g, layout, {first, offsets.data(), depth, 1.0f}, deeper,
                    c.p0, c.pixels, c.width, c.kc, 0,
                    (deeper + c.kc - 1) / c.kc, with_ones.data());
  for (int64_t d = 0; d < deeper; ++d) {
    for (int64_t i = 0; i < padded; ++i) {
      const float got =
          test::PanelAt(with_ones, padded, c.width, c.kc, deeper, i, d);
      const float want = i >= c.pixels ? 0.0f
                         : d == depth  ? 1.0f
                                       : cols[d * c.pixels + i];
      ASSERT_EQ(got, want) << "depth " << d << " pixel " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, GatherPhasePanelsTest,
    testing::Values(
        // Whole panels inside one output row, and panels crossing a row,
        // with the padding on every side; depth 36 in blocks of 16.
        PhaseCase{"three_by_three_pad", Geometry(20, 20, 3, 1, 1, 1, 1, 1), 4,
                  5, 300, 16, 16},
        // A stride: four phase planes, pads of 3 (ResNet's stem, smaller).
        PhaseCase{"seven_by_seven_stride2", Geometry(30, 30, 7, 2, 1, 3, 3, 3),
                  3, 17, 200, 16, 64},
        // Odd input sizes with a stride: the phases differ in length.
        PhaseCase{"stride2_odd", Geometry(15, 13, 3, 2, 1, 1, 1, 0), 2, 0, 42,
                  16, 9},
        // Rows wide enough for the vector split of stride-2 rows, with an
        // odd pad (the even columns go to the second phase).
        PhaseCase{"stride2_wide_rows", Geometry(7, 75, 3, 2, 1, 1, 1, 1), 2, 20,
                  60, 16, 18},
        // Dilation 2 with stride 2: taps land in one phase only.
        PhaseCase{"dilated_stride2", Geometry(17, 17, 3, 2, 2, 2, 2, 2), 2, 3,
                  60, 16, 7},
        PhaseCase{"dilated", Geometry(15, 15, 3, 1, 2, 2, 2, 2), 2, 0, 225, 16,
                  7},
        // A 1 x 1 window with stride 2 (ResNet's downsample): one phase read.
        PhaseCase{"one_by_one_stride2", Geometry(14, 14, 1, 2, 1, 0, 0, 0), 5,
                  0, 49, 16, 4},
        // Rows narrower than a panel: a panel spans three output rows.
        PhaseCase{"narrow_rows", Geometry(5, 5, 3, 1, 1, 1, 1, 1), 3, 0, 25, 16,
                  27},
        // Pads on the top and left only, more on one side than the window.
        PhaseCase{"uneven_pads", Geometry(9, 11, 3, 1, 1, 2, 0, 0), 2, 4, 60,
                  16, 18},
        // The micro-kernels' other panel widths.
        PhaseCase{"width6", Geometry(11, 11, 3, 1, 1, 1, 1, 1), 4, 5, 50, 6,
                  16},
        PhaseCase{"width12", Geometry(9, 9, 3, 2, 1, 1, 1, 1), 3, 0, 25, 12,
                  10}),
    [](const testing::TestParamInfo<PhaseCase>& info) {
      return info.param.name;
    });

// A 1 x 1 window over every pixel reads X itself, with no slack around it
// (`bounded`): the last, partial panel reads only its own pixels (under
// AddressSanitizer a read past the vector would fail) and holds the columns.
TEST(GatherPhasePanelsBoundedTest, ReadsXItselfAndNothingPastIt) {
  const Conv2DGeometry g = Geometry(5, 7, 1, 1, 1, 0, 0, 0);
  const int64_t channels = 3, pixels = g.OutSize(), width = 16, kc = 2;
  const Tensor x_tensor = test::SeededFloats({channels * g.InSize()}, 4);
  // Exactly X's floats, in their own allocation.
  const std::vector<float> x(x_tensor.data<float>(),
                             x_tensor.data<float>() + channels * g.InSize());
  const PhasePlanes layout = PhasePlanes::Of(g);
  ASSERT_EQ(layout.ChannelFloats(), g.InSize());
  std::vector<int64_t> offsets(channels);
  PhaseTapOffsets(g, layout, channels, offsets.data());
  const int64_t floats = PanelView::Floats(pixels, channels, width);
  std::vector<float> panels(floats, std::nanf(""));
  GatherPhasePanels(g, layout, {x.data(), offsets.data(), channels, 0.0f, true},
                    channels, 0, pixels, width, kc, 0, (channels + kc - 1) / kc,
                    panels.data());
  const int64_t padded = floats / channels;
  for (int64_t d = 0; d < channels; ++d) {
    for (int64_t i = 0; i < padded; ++i) {
      const float got =
          test::PanelAt(panels, padded, width, kc, channels, i, d);
      ASSERT_EQ(got, i < pixels ? x[d * pixels + i] : 0.0f)
          << "channel " << d << " pixel " << i;
    }
  }
}

TEST(PhasePlanesTest, HoldsTheRowsAndColumnsTheWindowsRead) {
  // ResNet-18's stem: 224 + 3 + 3 padded, 7 x 7 stride 2 -> 112; the
  // windows read padded rows 0 .. 228, 115 per phase.
  const Conv2DGeometry stem = Geometry(224, 224, 7, 2, 1, 3, 3, 3);
  const PhasePlanes p = PhasePlanes::Of(stem);
  EXPECT_EQ(stem.out_h, 112);
  EXPECT_EQ(p.rows, 115);
  EXPECT_EQ(p.cols, 115);
  EXPECT_EQ(p.ChannelFloats(), 4 * 115 * 115);
  // Stride 1: one phase, the padded plane.
  const PhasePlanes unit = PhasePlanes::Of(Geometry(56, 56, 3, 1, 1, 1, 1, 1));
  EXPECT_EQ(unit.rows, 58);
  EXPECT_EQ(unit.ChannelFloats(), 58 * 58);
}

}  // namespace
}  // namespace weft::internal
