#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "test_support/session_util.h"

namespace weft {
namespace {

TEST(NormalizationTest, BatchNormTrainingUsesBatchStatistics) {
  // One channel over N = 2, 2 pixels: values 1 2 3 4, mean 2.5, variance
  // 1.25 (population). Running stats move 10% of the way (momentum 0.9).
  const Tensor x = Tensor::FromVector<float>({2, 1, 2}, {1, 2, 3, 4});
  auto out = test::RunOneNode(
      "BatchNormalizationTraining",
      {x, Tensor::FromVector<float>({1}, {2}),
       Tensor::FromVector<float>({1}, {1}), Tensor::FromVector<float>({1}, {0}),
       Tensor::FromVector<float>({1}, {1})},
      {{"epsilon", 0.0}}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> y = test::Values<float>((*out)[0]);
  const double sd = std::sqrt(1.25);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(y[i], 2 * (i + 1 - 2.5) / sd + 1, 1e-6) << i;
  }
  EXPECT_NEAR(test::Values<float>((*out)[1])[0], 0.25, 1e-6);
  EXPECT_NEAR(test::Values<float>((*out)[2])[0], 0.9 + 0.125, 1e-6);
}

// ONNX defines LayerNormalization as Mul and Add, which broadcast: a Scale
// of [2, 1] over X [1, 2, 3] normalised on its last two axes scales each
// row by its own value, and a B of [3] shifts each column. A Scale that
// does not broadcast is refused, naming the normalised shape.
TEST(NormalizationTest, LayerNormScaleAndBiasBroadcastToTheNormalisedShape) {
  const Tensor x = Tensor::FromVector<float>({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = test::RunOneNode("LayerNormalization",
                              {x, Tensor::FromVector<float>({2, 1}, {1, 10}),
                               Tensor::FromVector<float>({3}, {0, 100, 200})},
                              {{"axis", int64_t{-2}}, {"epsilon", 0.0}}, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> y = test::Values<float>((*out)[0]);
  const double sd = std::sqrt(35.0 / 12);  // Of 1..6 about 3.5.
  for (int i = 0; i < 6; ++i) {
    const double normalised = (i + 1 - 3.5) / sd;
    EXPECT_NEAR(y[i], normalised * (i < 3 ? 1 : 10) + 100 * (i % 3), 1e-4) << i;
  }
  auto wrong = test::RunOneNode("LayerNormalization",
                                {x, Tensor::FromVector<float>({2}, {1, 2})},
                                {{"axis", int64_t{-2}}}, 1);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(),
              testing::HasSubstr("broadcast to the normalised shape [2, 3]"));
}

}  // namespace
}  // namespace weft
