// Winograd's F(4 x 4, 3 x 3) transforms, composed with a plain product over
// the packed panels they write, against a direct float64 convolution; and
// how planes are cut into blocks.
#include "kernels/winograd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/int_division.h"
#include "kernels/packed_gemm.h"
#include "test_support/panels.h"
#include "test_support/reference_conv.h"
#include "test_support/session_util.h"

namespace weft::internal {
namespace {

std::vector<float> WinogradSeeded(int64_t count, uint32_t seed) {
  const Tensor t = test::SeededFloats({count}, seed);
  return std::vector<float>(t.data<float>(), t.data<float>() + count);
}

Conv2DGeometry ThreeByThree(int64_t in_h, int64_t in_w, int64_t pad_top,
                            int64_t pad_left, int64_t pad_bottom,
                            int64_t pad_right) {
  Conv2DGeometry g{};
  g.in_h = in_h;
  g.in_w = in_w;
  g.kernel_h = g.kernel_w = 3;
  g.stride_h = g.stride_w = g.dilation_h = g.dilation_w = 1;
  g.pad_top = pad_top;
  g.pad_left = pad_left;
  g.out_h = in_h + pad_top + pad_bottom - 2;
  g.out_w = in_w + pad_left + pad_right - 2;
  return g;
}

// Every block through the three steps (the 36 products summed here from
// the panels), against the direct sum; the outputs of every pixel written.
void ExpectWinogradMatchesDirect(const Conv2DGeometry& g, int64_t in_channels,
                                 int64_t out_channels) {
  SCOPED_TRACE("in " + std::to_string(g.in_h) + "x" + std::to_string(g.in_w) +
               " out " + std::to_string(g.out_h) + "x" +
               std::to_string(g.out_w) + " pads " + std::to_string(g.pad_top) +
               "," + std::to_string(g.pad_left));
  ASSERT_TRUE(WinogradFits(g));
  const std::vector<float> x = WinogradSeeded(in_channels * g.InSize(), 7);
  const std::vector<float> w =
      WinogradSeeded(out_channels * in_channels * 9, 8);
  const std::vector<float> bias = WinogradSeeded(out_channels, 9);
  const WinogradPlane plane = WinogradPlane::Of(g);
  std::vector<float> u(plane.points * out_channels * in_channels);
  WinogradWeights(plane.tile, w.data(), out_channels, in_channels, u.data());

  const int64_t ld = plane.MaxColumns();
  std::vector<float> v(plane.points * plane.PointFloats(in_channels));
  std::vector<float> scratch(plane.ScratchFloats());
  const int64_t m_point = PointStride(out_channels * ld);
  std::vector<float> m(plane.points * m_point);
  std::vector<float> y(out_channels * g.OutSize(), std::nanf(""));
  for (int64_t block = 0; block < plane.blocks; ++block) {
    // Two calls over halves of the channels, as threads split them.
    const int64_t half = in_channels / 2;
    WinogradInputBlock(plane, block, x.data(), 0, half, in_channels, v.data(),
                       scratch.data());
    WinogradInputBlock(plane, block, x.data(), half, in_channels, in_channels,
                       v.data(), scratch.data());
    for (int64_t point = 0; point < plane.points; ++point) {
      const std::vector<float> panels(
          v.begin() + point * plane.PointFloats(in_channels),
          v.begin() + (point + 1) * plane.PointFloats(in_channels));
      for (int64_t o = 0; o < out_channels; ++o) {
        for (int64_t col = 0; col < plane.ColumnsOf(block); ++col) {
          double sum = 0;
          for (int64_t i = 0; i < in_channels; ++i) {
            sum += double(u[(point * out_channels + o) * in_channels + i]) *
                   test::PanelAt(panels, ld, plane.panel, plane.depth_block,
                                 in_channels, col, i);
          }
          m[point * m_point + o * ld + col] = static_cast<float>(sum);
        }
      }
    }
    WinogradOutputBlock(plane, block, m.data(), out_channels, ld, bias.data(),
                        y.data());
  }
  // The bottom and right pads the geometry's output size implies.
  const test::ReferenceConvShape shape{
      .c = in_channels,
      .h = g.in_h,
      .w = g.in_w,
      .m = out_channels,
      .kh = 3,
      .kw = 3,
      .pad_top = g.pad_top,
      .pad_left = g.pad_left,
      .pad_bottom = g.out_h + 2 - g.in_h - g.pad_top,
      .pad_right = g.out_w + 2 - g.in_w - g.pad_left};
  ASSERT_EQ(shape.out_h(), g.out_h);
  ASSERT_EQ(shape.out_w(), g.out_w);
  const std::vector<double> want =
      test::ReferenceConv2D(shape, x.data(), w.data(), bias.data());
  double worst = 0, largest = 0;
  for (size_t at = 0; at < want.size(); ++at) {
    ASSERT_FALSE(std::isnan(y[at])) << "unwritten output " << at;
    worst = std::max(worst, std::abs(y[at] - want[at]));
    largest = std::max(largest, std::abs(want[at]));
  }
  EXPECT_LT(worst, 1e-5 * std::max(1.0, largest));
}

TEST(WinogradTest, TransformsAndProductsGiveTheConvolution) {
  // 4 x 4 tiles over planes a multiple of 4 wide and not, same and valid
  // padding, uneven pads, and several blocks of tile rows (60 x 60: blocks
  // of 4 rows); 2 x 2 tiles over the planes under 8 (7 x 7, 6 x 9 valid,
  // 7 x 40 with uneven pads: 20 tiles a row, 5 quads).
  for (const Conv2DGeometry& g :
       {ThreeByThree(8, 8, 1, 1, 1, 1), ThreeByThree(14, 14, 1, 1, 1, 1),
        ThreeByThree(13, 11, 1, 1, 1, 1), ThreeByThree(10, 12, 0, 0, 0, 0),
        ThreeByThree(9, 10, 0, 1, 2, 1), ThreeByThree(60, 60, 1, 1, 1, 1),
        ThreeByThree(30, 37, 1, 1, 1, 1), ThreeByThree(7, 7, 1, 1, 1, 1),
        ThreeByThree(8, 11, 0, 0, 0, 0), ThreeByThree(7, 39, 1, 0, 1, 2)}) {
    ExpectWinogradMatchesDirect(g, 5, 7);
  }
}

TEST(WinogradTest, ThreeByThreeUnitStrideWindowsTakeTilesByTheirPlane) {
  const bool panels = FloatMicroKernel().nr % kWinogradLanes == 0;
  Conv2DGeometry g = ThreeByThree(14, 14, 1, 1, 1, 1);
  EXPECT_EQ(WinogradTileFor(g), panels ? 4 : 0);
  if (!panels) return;
  Conv2DGeometry strided = g;
  strided.stride_h = 2;
  EXPECT_EQ(WinogradTileFor(strided), 0);
  Conv2DGeometry dilated = g;
  dilated.dilation_w = 2;
  EXPECT_EQ(WinogradTileFor(dilated), 0);
  Conv2DGeometry five = g;
  five.kernel_h = five.kernel_w = 5;
  EXPECT_EQ(WinogradTileFor(five), 0);
  EXPECT_EQ(WinogradTileFor(ThreeByThree(8, 8, 1, 1, 1, 1)), 4);
  EXPECT_EQ(WinogradTileFor(ThreeByThree(7, 7, 1, 1, 1, 1)), 2);
  EXPECT_EQ(WinogradTileFor(ThreeByThree(40, 7, 1, 1, 1, 1)), 2);
  EXPECT_EQ(WinogradTileFor(ThreeByThree(6, 6, 1, 1, 1, 1)), 2);
  EXPECT_EQ(WinogradTileFor(ThreeByThree(5, 5, 1, 1, 1, 1)), 0);
  EXPECT_EQ(WinogradPoints(4), 36);
  EXPECT_EQ(WinogradPoints(2), 16);
}

TEST(WinogradTest, BlocksAreWholeTileRowsInWholePanels) {
  if (FloatMicroKernel().nr % kWinogradLanes != 0) GTEST_SKIP();
  for (int64_t side : {6, 7, 8, 14, 28, 56, 57, 112, 300}) {
    SCOPED_TRACE("plane " + std::to_string(side));
    const WinogradPlane p =
        WinogradPlane::Of(ThreeByThree(side, side, 1, 1, 1, 1));
    EXPECT_EQ(p.tiles_h, CeilDiv(side, p.tile));
    EXPECT_EQ(p.quads_w, CeilDiv(p.tiles_w, kWinogradQuad));
    int64_t rows = 0, pixels = 0;
    for (int64_t b = 0; b < p.blocks; ++b) {
      EXPECT_EQ(p.FirstPixel(b), pixels);
      rows += p.RowsOf(b);
      pixels += p.PixelsOf(b);
      EXPECT_EQ(p.ColumnsOf(b) % p.panel, 0);
      EXPECT_GE(p.ColumnsOf(b), kWinogradQuad * p.QuadsOf(b));
      EXPECT_LE(p.ColumnsOf(b), p.MaxColumns());
      EXPECT_TRUE(p.ColumnsOf(b) <= kWinogradMaxColumns || p.block_rows == 1);
    }
    EXPECT_EQ(rows, p.tiles_h);
    EXPECT_EQ(pixels, side * side);
  }
  // ResNet's planes: no column wasted but to whole quads and one panel.
  if (FloatMicroKernel().nr == 16) {
    for (int64_t side : {56, 28, 14, 7}) {
      const WinogradPlane p =
          WinogradPlane::Of(ThreeByThree(side, side, 1, 1, 1, 1));
      int64_t columns = 0;
      for (int64_t b = 0; b < p.blocks; ++b) columns += p.ColumnsOf(b);
      EXPECT_EQ(columns, RoundUp(p.tiles_h * kWinogradQuad * p.quads_w, 16));
    }
  }
}

}  // namespace
}  // namespace weft::internal
