// LpPool, GlobalLpPool and LpNormalization: p-norms over windows, planes
// and one axis, against sums written out here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

Tensor LpOpsFloats(const Shape& shape, const std::vector<float>& values) {
  return Tensor::FromVector<float>(shape, values);
}

// One plane 2 x 3, windows 2 x 2 at stride 1 with the left column padded:
// the padding adds nothing to a norm.
TEST(LpPoolTest, EachWindowIsThePNormOfTheValuesInside) {
  const Tensor x = LpOpsFloats({1, 1, 2, 3}, {1, -2, 3, -4, 5, -6});
  for (int64_t p : {1, 2, 3}) {
    SCOPED_TRACE(p);
    auto y = test::RunOneOutput("LpPool", {x},
                                {{"kernel_shape", std::vector<int64_t>{2, 2}},
                                 {"pads", std::vector<int64_t>{0, 1, 0, 0}},
                                 {"p", p}});
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->shape(), (Shape{1, 1, 1, 3}));
    auto norm = [p](const std::vector<double>& v) {
      double sum = 0;
      for (double e : v) sum += std::pow(std::fabs(e), static_cast<double>(p));
      return std::pow(sum, 1.0 / static_cast<double>(p));
    };
    const std::vector<double> want = {norm({1, -4}), norm({1, -2, -4, 5}),
                                      norm({-2, 3, 5, -6})};
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(y->data<float>()[i], want[i], 1e-5 * want[i]) << i;
    }
  }
}

TEST(LpPoolTest, GlobalLpPoolTakesEachPlanesNorm) {
  auto y = test::RunOneOutput(
      "GlobalLpPool", {LpOpsFloats({1, 2, 2, 2}, {3, 0, 0, 4, 1, -1, 1, -1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(test::Values<float>(*y), (std::vector<float>{5, 2}));
  auto l1 =
      test::RunOneOutput("GlobalLpPool", {LpOpsFloats({1, 1, 3}, {1, -2, 3})},
                         {{"p", int64_t{1}}});
  ASSERT_TRUE(l1.ok()) << l1.status();
  EXPECT_EQ(test::Values<float>(*l1), (std::vector<float>{6}));
  // The norm of no values is 0.
  auto empty = test::RunOneOutput("GlobalLpPool",
                                  {Tensor::FromVector<float>({1, 2, 0}, {})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(test::Values<float>(*empty), (std::vector<float>{0, 0}));
  EXPECT_THAT(test::RunOneOutput("GlobalLpPool", {LpOpsFloats({1, 1, 1}, {1})},
                                 {{"p", int64_t{0}}})
                  .status()
                  .message(),
              HasSubstr("p must be >= 1, got 0"));
}

// Rows of [[3, 4], [0, 0], [NaN, 1]] along the last axis: a zero row stays
// zeros, a NaN makes its row NaN (ONNX Runtime's answers).
TEST(LpNormalizationTest, DividesEachLineByItsNorm) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = LpOpsFloats({3, 2}, {3, 4, 0, 0, nan, 1});
  auto l2 = test::RunOneOutput("LpNormalization", {x});
  ASSERT_TRUE(l2.ok()) << l2.status();
  const std::vector<float> got = test::Values<float>(*l2);
  EXPECT_FLOAT_EQ(got[0], 0.6f);
  EXPECT_FLOAT_EQ(got[1], 0.8f);
  EXPECT_EQ(got[2], 0.0f);
  EXPECT_EQ(got[3], 0.0f);
  EXPECT_TRUE(std::isnan(got[4]) && std::isnan(got[5]));
  // Along axis 0, p = 1: columns (3, 0, 1) and (4, 0, 2) of a finite x.
  auto l1 = test::RunOneOutput("LpNormalization",
                               {LpOpsFloats({3, 2}, {3, 4, 0, 0, 1, -2})},
                               {{"axis", int64_t{0}}, {"p", int64_t{1}}});
  ASSERT_TRUE(l1.ok()) << l1.status();
  EXPECT_EQ(test::Values<float>(*l1),
            (std::vector<float>{0.75f, 4.0f / 6, 0, 0, 0.25f, -2.0f / 6}));
  EXPECT_THAT(test::RunOneOutput("LpNormalization", {x}, {{"p", int64_t{3}}})
                  .status()
                  .message(),
              HasSubstr("p must be 1 or 2, got 3"));
}

}  // namespace
}  // namespace weft
