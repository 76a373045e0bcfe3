// DeformConv's kernel: taps read at known offsets, what lies outside or is
// not a number, and the errors that name a wrong shape. Its values against
// ONNX Runtime and a NumPy reference are the newer-opset suite's
// (tests/onnx/newer_opsets, ctest onnx.newer_opsets).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// The 2 x 2 image [[0, 1], [2, 3]] under a 1 x 1 kernel of weight 1: each
// output pixel is X read at its own place moved by the offset.
StatusOr<Tensor> ReadAt(const std::vector<float>& offsets) {
  const int64_t pixels = 4;
  EXPECT_EQ(offsets.size(), size_t{2 * pixels});
  return test::RunOneOutput(
      "DeformConv", {Tensor::FromVector<float>({1, 1, 2, 2}, {0, 1, 2, 3}),
                     Tensor::FromVector<float>({1, 1, 1, 1}, {1}),
                     Tensor::FromVector<float>({1, 2, 2, 2}, offsets)});
}

TEST(DeformConvTest, TapsReadBilinearlyAtTheirOffsets) {
  // Rows of offsets: dy for the four pixels, then dx.
  auto moved = ReadAt({0.5f, 0, 0, -1, 0.5f, 0, -0.5f, -1});
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  // (0, 0) + (0.5, 0.5): the centre, 1.5. (0, 1) unmoved: 1. (1, 0) +
  // (0, -0.5): half of pixel (1, 0) and half outside, 1. (1, 1) + (-1, -1):
  // pixel (0, 0), 0.
  EXPECT_EQ(test::Values<float>(*moved), (std::vector<float>{1.5f, 1, 1, 0}));
}

TEST(DeformConvTest, FarInfiniteAndNaNOffsetsStayDefined) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto read = ReadAt({1e30f, -inf, nan, 0, 0, 0, 0, 9e18f});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  const std::vector<float> values = test::Values<float>(*read);
  EXPECT_EQ(values[0], 0);
  EXPECT_EQ(values[1], 0);
  EXPECT_TRUE(std::isnan(values[2]));
  EXPECT_EQ(values[3], 0);
}

TEST(DeformConvTest, AMaskScalesAndBiasAddsPerTapAndChannel) {
  // Two taps (1 x 2 kernel, weights 1 and 10) over a 1 x 3 image, offsets
  // zero, mask 0.5 on the second tap, bias 100: y = x0 + 10 * 0.5 * x1 + 100.
  const Tensor x = Tensor::FromVector<float>({1, 1, 1, 3}, {1, 2, 3});
  const Tensor w = Tensor::FromVector<float>({1, 1, 1, 2}, {1, 10});
  const Tensor offset =
      Tensor::FromVector<float>({1, 4, 1, 2}, std::vector<float>(8, 0));
  const Tensor bias = Tensor::FromVector<float>({1}, {100});
  const Tensor mask =
      Tensor::FromVector<float>({1, 2, 1, 2}, {1, 1, 0.5f, 0.5f});
  auto y = test::RunOneOutput("DeformConv", {x, w, offset, bias, mask},
                              {{"has_bias", true}, {"has_mask", true}});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(test::Values<float>(*y), (std::vector<float>{111, 117}));
  auto no_bias = test::RunOneOutput("DeformConv", {x, w, offset, mask},
                                    {{"has_mask", true}});
  ASSERT_TRUE(no_bias.ok()) << no_bias.status().ToString();
  EXPECT_EQ(test::Values<float>(*no_bias), (std::vector<float>{11, 17}));
}

// Many bands of output pixels per image, split over threads: RunOneOutput
// checks that one and two threads give the same bits.
TEST(DeformConvTest, BandsGiveTheSameBitsAtAnyThreadCount) {
  std::vector<float> x(2 * 3 * 20 * 20), w(4 * 3 * 3 * 3),
      offset(2 * 18 * 18 * 18);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * i);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.3f * i);
  for (size_t i = 0; i < offset.size(); ++i) offset[i] = std::sin(0.7f * i);
  auto y = test::RunOneOutput(
      "DeformConv", {Tensor::FromVector<float>({2, 3, 20, 20}, x),
                     Tensor::FromVector<float>({4, 3, 3, 3}, w),
                     Tensor::FromVector<float>({2, 18, 18, 18}, offset)});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->shape(), (Shape{2, 4, 18, 18}));
}

TEST(DeformConvTest, WrongShapesAreNamed) {
  const Tensor x = Tensor::FromVector<float>({1, 1, 2, 2}, {0, 1, 2, 3});
  const Tensor w = Tensor::FromVector<float>({1, 1, 1, 1}, {1});
  auto offset = test::RunOneOutput(
      "DeformConv",
      {x, w, Tensor::FromVector<float>({1, 1, 2, 2}, {0, 0, 0, 0})});
  ASSERT_FALSE(offset.ok());
  EXPECT_THAT(offset.status().message(),
              HasSubstr("offset must be [1, 2, 2, 2]"));
  auto groups = test::RunOneOutput(
      "DeformConv",
      {x, w, Tensor::FromVector<float>({1, 2, 2, 2}, std::vector<float>(8))},
      {{"offset_group", int64_t{2}}});
  ASSERT_FALSE(groups.ok());
  EXPECT_THAT(groups.status().message(), HasSubstr("offset_group 2"));
  auto volumetric = test::RunOneOutput(
      "DeformConv",
      {Tensor::FromVector<float>({1, 1, 1, 2, 2}, {0, 1, 2, 3}), w,
       Tensor::FromVector<float>({1, 2, 2, 2}, std::vector<float>(8))});
  ASSERT_FALSE(volumetric.ok());
  EXPECT_EQ(volumetric.status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace weft
