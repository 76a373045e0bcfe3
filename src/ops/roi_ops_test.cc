#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// A 1 x 1 x 4 x 4 ramp: value = 4 * row + column.
Tensor Ramp() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  return Tensor::FromVector<float>({1, 1, 4, 4}, v);
}

TEST(RoiAlignTest, AveragesBilinearSamplesOfEachBin) {
  // One roi over the whole map in half-pixel coordinates, 2 x 2 bins of
  // 2 x 2 samples each: on a linear ramp a bin's average is the ramp at
  // the bin's centre, shifted by the half pixel: (2 i + 0.5) * 4 +
  // (2 j + 0.5).
  auto y =
      test::RunOneNode("RoiAlign",
                       {Ramp(), Tensor::FromVector<float>({1, 4}, {0, 0, 4, 4}),
                        Tensor::FromVector<int64_t>({1}, {0})},
                       {{"output_height", int64_t{2}},
                        {"output_width", int64_t{2}},
                        {"sampling_ratio", int64_t{2}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 1, 2, 2}));
  const std::vector<float> got = test::Values<float>((*y)[0]);
  const std::vector<float> want = {2.5f, 4.5f, 10.5f, 12.5f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

TEST(RoiAlignTest, MaxModeTakesTheLargestWeightedNeighbour) {
  // One sample at the centre of pixel (1, 1) (half-pixel coordinates):
  // its weight is 1 on that pixel, so max gives the pixel's value.
  auto y = test::RunOneNode(
      "RoiAlign",
      {Ramp(), Tensor::FromVector<float>({1, 4}, {1, 1, 2, 2}),
       Tensor::FromVector<int64_t>({1}, {0})},
      {{"mode", std::string("max")}, {"sampling_ratio", int64_t{1}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_FLOAT_EQ(test::Values<float>((*y)[0])[0], 5.0f);
}

TEST(RoiAlignTest, ABatchIndexOutsideTheBatchIsAnError) {
  auto y = test::RunOneNode(
      "RoiAlign", {Ramp(), Tensor::FromVector<float>({1, 4}, {0, 0, 1, 1}),
                   Tensor::FromVector<int64_t>({1}, {3})});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(),
              HasSubstr("batch_indices[0] = 3 is outside [0, 1)"));
}

TEST(RoiAlignTest, AHugeOrNonFiniteRoiIsRefusedBeforeSampling) {
  auto refusal = [](Tensor x, Tensor rois) {
    auto y = test::RunOneNode(
        "RoiAlign",
        {std::move(x), std::move(rois), Tensor::FromVector<int64_t>({1}, {0})});
    return y.ok() ? std::string("ran") : y.status().message();
  };
  EXPECT_THAT(
      refusal(Ramp(), Tensor::FromVector<float>({1, 4}, {0, 0, 1e30f, 1e30f})),
      HasSubstr("samples per bin"));
  EXPECT_THAT(
      refusal(Ramp(),
              Tensor::FromVector<float>(
                  {1, 4}, {0, 0, std::numeric_limits<float>::infinity(), 1})),
      HasSubstr("rois[0] holds a value that is not finite"));
  // Finite coordinates whose extent overflows float.
  EXPECT_THAT(
      refusal(Ramp(), Tensor::FromVector<float>({1, 4}, {-3e38f, 0, 3e38f, 1})),
      HasSubstr("samples per bin"));
  // No samples across (end before start), far too many down: refused
  // before the count down is converted to an integer.
  EXPECT_THAT(
      refusal(Ramp(), Tensor::FromVector<float>({1, 4}, {0.5f, 0, 0, 1e30f})),
      HasSubstr("samples per bin"));
  // A float64 roi beyond float's range.
  Tensor ramp64 =
      Tensor::FromVector<double>({1, 1, 4, 4}, std::vector<double>(16, 1.0));
  EXPECT_THAT(
      refusal(ramp64, Tensor::FromVector<double>({1, 4}, {0, 0, 1e300, 1})),
      HasSubstr("samples per bin"));
}

TEST(MaxUnpoolTest, PutsValuesWhereMaxPoolFoundThem) {
  const Tensor x = Tensor::FromVector<float>({1, 1, 2, 2}, {5, 6, 7, 8});
  const Tensor i = Tensor::FromVector<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15});
  const AttrMap attrs = {{"kernel_shape", std::vector<int64_t>{2, 2}},
                         {"strides", std::vector<int64_t>{2, 2}}};
  auto y = test::RunOneNode("MaxUnpool", {x, i}, attrs);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(
      test::Values<float>((*y)[0]),
      (std::vector<float>{0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}));
  // A larger output_shape keeps the coordinates; a smaller one is refused.
  auto big = test::RunOneNode(
      "MaxUnpool", {x, i, Tensor::FromVector<int64_t>({4}, {1, 1, 5, 5})},
      attrs);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(test::Values<float>((*big)[0])[6], 5.0f);   // (1, 1)
  EXPECT_EQ(test::Values<float>((*big)[0])[18], 8.0f);  // (3, 3)
  auto small = test::RunOneNode(
      "MaxUnpool", {x, i, Tensor::FromVector<int64_t>({4}, {1, 1, 3, 3})},
      attrs);
  ASSERT_FALSE(small.ok());
  EXPECT_THAT(small.status().message(), HasSubstr("does not hold"));
  auto wild = test::RunOneNode(
      "MaxUnpool",
      {x, Tensor::FromVector<int64_t>({1, 1, 2, 2}, {5, 7, 13, 99})}, attrs);
  ASSERT_FALSE(wild.ok());
  EXPECT_THAT(wild.status().message(), HasSubstr("I[3] = 99 is outside"));
}

}  // namespace
}  // namespace weft
