// The losses' mean reduction: the weighted sum over the weight of the
// targets not ignored, as ONNX's function body and PyTorch define it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "test_support/session_util.h"

namespace weft {
namespace {

// Scores of two rows over three classes, targets 2 and 0.
const Tensor kScores = Tensor::FromVector<float>(
    {2, 3}, {-1.0f, -2.0f, -3.0f, -4.0f, -5.0f, -6.0f});
const Tensor kTargets = Tensor::FromVector<int64_t>({2}, {2, 0});

TEST(LossTest, TheMeanDividesByTheWeightOfTheTargetsNotIgnored) {
  // Class weights 1, 1, 0.5: row 0 (class 2) counts 0.5, row 1 (class 0) 1.
  auto mean = test::RunOneOutput(
      "NegativeLogLikelihoodLoss",
      {kScores, kTargets, Tensor::FromVector<float>({3}, {1, 1, 0.5f})},
      {{"reduction", std::string("mean")}});
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_NEAR(test::Values<float>(*mean)[0], (0.5 * 3 + 4) / 1.5, 1e-6);
  // Row 1 ignored: row 0 alone.
  auto one = test::RunOneOutput(
      "NegativeLogLikelihoodLoss", {kScores, kTargets},
      {{"reduction", std::string("mean")}, {"ignore_index", int64_t{0}}});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_FLOAT_EQ(test::Values<float>(*one)[0], 3.0f);
}

// With every target ignored the mean is 0 / 0: NaN, as in ONNX's function
// body and PyTorch, not a 0 that reads as a perfect fit.
TEST(LossTest, TheMeanOfEveryTargetIgnoredIsNaN) {
  const Tensor all_ignored = Tensor::FromVector<int64_t>({2}, {1, 1});
  for (const char* op :
       {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
    SCOPED_TRACE(op);
    auto mean = test::RunOneOutput(
        op, {kScores, all_ignored},
        {{"reduction", std::string("mean")}, {"ignore_index", int64_t{1}}});
    ASSERT_TRUE(mean.ok()) << mean.status();
    EXPECT_TRUE(std::isnan(test::Values<float>(*mean)[0]));
    auto sum = test::RunOneOutput(
        op, {kScores, all_ignored},
        {{"reduction", std::string("sum")}, {"ignore_index", int64_t{1}}});
    ASSERT_TRUE(sum.ok()) << sum.status();
    EXPECT_EQ(test::Values<float>(*sum)[0], 0.0f);
  }
}

}  // namespace
}  // namespace weft
