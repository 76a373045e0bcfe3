#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

StatusOr<Tensor> Sample(Tensor x, Tensor grid, AttrMap attrs) {
  return test::RunOneOutput("GridSample", {std::move(x), std::move(grid)},
                            std::move(attrs));
}

// A 1 x 1 x 2 x 2 image [[0, 1], [2, 3]] sampled at its centre, at a pixel
// centre and outside on the right, with align_corners = 1 (-1 and 1 are
// the corner pixels' centres).
TEST(GridSampleTest, ModesAndPaddingAtKnownPoints) {
  const Tensor image = Tensor::FromVector<float>({1, 1, 2, 2}, {0, 1, 2, 3});
  const Tensor grid = Tensor::FromVector<float>(
      {1, 1, 3, 2}, {0, 0, /*pixel (1, 0)*/ 1, -1, /*outside*/ 3, -1});
  auto bilinear = Sample(image, grid, {{"align_corners", int64_t{1}}});
  ASSERT_TRUE(bilinear.ok()) << bilinear.status().ToString();
  EXPECT_EQ(bilinear->shape(), (Shape{1, 1, 1, 3}));
  EXPECT_EQ(test::Values<float>(*bilinear), (std::vector<float>{1.5f, 1, 0}));
  auto border = Sample(
      image, grid,
      {{"align_corners", int64_t{1}}, {"padding_mode", std::string("border")}});
  ASSERT_TRUE(border.ok());
  EXPECT_EQ(test::Values<float>(*border), (std::vector<float>{1.5f, 1, 1}));
  // x = 3 reflects about the right edge (x = 1) to x = -1: pixel (0, 0).
  auto reflection = Sample(image, grid,
                           {{"align_corners", int64_t{1}},
                            {"padding_mode", std::string("reflection")}});
  ASSERT_TRUE(reflection.ok());
  EXPECT_EQ(test::Values<float>(*reflection), (std::vector<float>{1.5f, 1, 0}));
  // Nearest: the centre (0.5, 0.5) rounds to even, pixel (0, 0).
  auto nearest =
      Sample(image, grid,
             {{"align_corners", int64_t{1}}, {"mode", std::string("nearest")}});
  ASSERT_TRUE(nearest.ok());
  EXPECT_EQ(test::Values<float>(*nearest), (std::vector<float>{0, 1, 0}));
  // Bicubic reproduces a pixel exactly at its centre.
  auto bicubic =
      Sample(image, grid,
             {{"align_corners", int64_t{1}}, {"mode", std::string("bicubic")}});
  ASSERT_TRUE(bicubic.ok());
  EXPECT_NEAR(test::Values<float>(*bicubic)[1], 1.0f, 1e-6);
}

// Grid points that are NaN, infinite or past int64's range: far outside
// the image in every mode and padding (zeros padding gives 0 there, NaN
// where NaN weighs the taps), never an undefined integer conversion (the
// sanitizer build checks that).
TEST(GridSampleTest, NonFiniteAndHugeGridPointsStayDefined) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor image = Tensor::FromVector<float>({1, 1, 2, 2}, {0, 1, 2, 3});
  const Tensor grid = Tensor::FromVector<float>(
      {1, 1, 4, 2}, {nan, 0, inf, -inf, 1e30f, -1e30f, 0, 3e38f});
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      auto y = Sample(image, grid,
                      {{"mode", std::string(mode)},
                       {"padding_mode", std::string(padding)}});
      ASSERT_TRUE(y.ok()) << mode << " " << padding << ": " << y.status();
      if (std::string(padding) == "zeros" && std::string(mode) != "bicubic") {
        EXPECT_EQ(test::Values<float>(*y)[2], 0) << mode;  // (1e30, -1e30)
      }
    }
  }
}

TEST(GridSampleTest, BadShapesAndModesAreErrors) {
  const Tensor image = Tensor::FromVector<float>({1, 1, 2, 2}, {0, 1, 2, 3});
  EXPECT_THAT(
      Sample(image, Tensor::FromVector<float>({1, 1, 1, 3}, {0, 0, 0}), {})
          .status()
          .message(),
      HasSubstr("grid [N, H_out, W_out, 2]"));
  EXPECT_THAT(Sample(image, Tensor::FromVector<float>({1, 1, 1, 2}, {0, 0}),
                     {{"mode", std::string("linear")}})
                  .status()
                  .message(),
              HasSubstr("mode 'linear' is not bilinear, nearest or bicubic"));
}

// A volume [1, 1, 2, 2, 2] holding 0..7 (x fastest, then y, then z),
// sampled with align_corners = 1 at its centre (the mean, 3.5), at corner
// voxel (x, y, z) = (1, 0, 1) (value 5) and outside; nearest rounds the
// point (0.2, -0.9, 0.6) to voxel (1, 0, 1) too.
TEST(GridSampleTest, VolumesTrilinearAndNearest) {
  const Tensor volume =
      Tensor::FromVector<float>({1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor grid = Tensor::FromVector<float>(
      {1, 1, 1, 3, 3}, {0, 0, 0, /*voxel*/ 1, -1, 1, /*outside*/ 0, 0, 5});
  auto linear = Sample(volume, grid, {{"align_corners", int64_t{1}}});
  ASSERT_TRUE(linear.ok()) << linear.status().ToString();
  EXPECT_EQ(linear->shape(), (Shape{1, 1, 1, 1, 3}));
  EXPECT_EQ(test::Values<float>(*linear), (std::vector<float>{3.5f, 5, 0}));
  auto nearest = Sample(
      volume, Tensor::FromVector<float>({1, 1, 1, 1, 3}, {0.2f, -0.9f, 0.6f}),
      {{"align_corners", int64_t{1}}, {"mode", std::string("nearest")}});
  ASSERT_TRUE(nearest.ok()) << nearest.status().ToString();
  EXPECT_EQ(test::Values<float>(*nearest), (std::vector<float>{5}));
  auto cubic = Sample(volume, grid, {{"mode", std::string("bicubic")}});
  ASSERT_FALSE(cubic.ok());
  EXPECT_THAT(cubic.status().message(),
              HasSubstr("cubic sampling of a volume (X of rank 5)"));
  auto mismatched =
      Sample(volume, Tensor::FromVector<float>({1, 1, 1, 1, 2}, {0, 0}), {});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_THAT(mismatched.status().message(),
              HasSubstr("grid [N, D_out, H_out, W_out, 3]"));
}

}  // namespace
}  // namespace weft
