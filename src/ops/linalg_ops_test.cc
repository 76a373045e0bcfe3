#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

StatusOr<Tensor> LinalgOpsRunOne(const std::string& op, Tensor x,
                                 AttrMap attrs = {}) {
  return test::RunOneOutput(op, {std::move(x)}, std::move(attrs));
}

TEST(LinalgOpsTest, DetOfABatchNeedsPivotingAndKeepsTheSwapSign) {
  // [[0, 1], [1, 0]] needs a row swap: det -1; [[2, 4], [1, 2]] is
  // singular.
  auto two = LinalgOpsRunOne(
      "Det", Tensor::FromVector<float>({3, 2, 2},
                                       {0, 1, 1, 0, 1, 2, 3, 4, 2, 4, 1, 2}));
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->shape(), (Shape{3}));
  EXPECT_EQ(test::Values<float>(*two), (std::vector<float>{-1, -2, 0}));

  auto three = LinalgOpsRunOne(
      "Det", Tensor::FromVector<double>({3, 3}, {2, 0, 1, 1, 3, 2, 1, 1, 2}));
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->shape(), Shape{});
  // 2 (3*2 - 2*1) - 0 + 1 (1*1 - 3*1) = 8 - 2.
  EXPECT_NEAR(three->data<double>()[0], 6.0, 1e-12);

  EXPECT_THAT(LinalgOpsRunOne(
                  "Det", Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}))
                  .status()
                  .message(),
              HasSubstr("needs square matrices"));
}

// Einsum against the same products written out: explicit and implicit
// outputs, a repeated label (trace), an ellipsis that broadcasts.
TEST(LinalgOpsTest, EinsumEquations) {
  auto run = [](const std::string& equation, std::vector<Tensor> inputs) {
    return test::RunOneOutput("Einsum", std::move(inputs),
                              {{"equation", equation}});
  };
  const Tensor a = Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::FromVector<float>({2, 2}, {5, 6, 7, 8});
  auto product = run("ij,jk->ik", {a, b});
  ASSERT_TRUE(product.ok()) << product.status().ToString();
  EXPECT_EQ(test::Values<float>(*product),
            (std::vector<float>{19, 22, 43, 50}));
  auto implicit = run("ij, jk", {a, b});  // Output "ik": letters used once.
  ASSERT_TRUE(implicit.ok());
  EXPECT_EQ(test::Values<float>(*implicit), test::Values<float>(*product));
  auto trace = run("ii", {a});
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->shape(), Shape{});
  EXPECT_EQ(trace->data<float>()[0], 5);
  // "...j,j->..." over a [2, 2] and a [2]: a matrix-vector product.
  auto broadcast =
      run("...j,j->...", {a, Tensor::FromVector<float>({2}, {1, 1})});
  ASSERT_TRUE(broadcast.ok());
  EXPECT_EQ(test::Values<float>(*broadcast), (std::vector<float>{3, 7}));
  EXPECT_THAT(run("ij,jk->ik", {a}).status().message(),
              HasSubstr("has 2 input terms for 1 inputs"));
  EXPECT_THAT(run("ij,ij->i",
                  {a, Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6})})
                  .status()
                  .message(),
              HasSubstr("label 'j' is 2 in one place and 3 in another"));
  EXPECT_THAT(run("i1->i", {a}).status().message(),
              HasSubstr("'1' is not a letter"));
}

TEST(LinalgOpsTest, MeanVarianceNormalizationOverTheGivenAxes) {
  // Over axis 1 of [[1, 3], [2, 2]]: row 0 has mean 2, std 1; row 1 has
  // std 0, so it becomes 0 (the 1e-9 keeps it finite).
  auto y = LinalgOpsRunOne("MeanVarianceNormalization",
                           Tensor::FromVector<float>({2, 2}, {1, 3, 2, 2}),
                           {{"axes", std::vector<int64_t>{1}}});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  const std::vector<float> v = test::Values<float>(*y);
  EXPECT_NEAR(v[0], -1, 1e-6);
  EXPECT_NEAR(v[1], 1, 1e-6);
  EXPECT_EQ(v[2], 0);
  EXPECT_EQ(v[3], 0);
  EXPECT_THAT(LinalgOpsRunOne("MeanVarianceNormalization",
                              Tensor::FromVector<float>({2}, {1, 2}),
                              {{"axes", std::vector<int64_t>{3}}})
                  .status()
                  .message(),
              HasSubstr("axis"));
}

}  // namespace
}  // namespace weft
