#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "test_support/session_util.h"

namespace weft {
namespace {

Tensor FloatVector(const std::vector<float>& v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromVector<float>({n}, v);
}

// One optimizer step on one tensor of two elements: R = 0.1, T = 1.
std::vector<Tensor> Step(const std::string& op, std::vector<Tensor> tensors,
                         int outputs, AttrMap attrs) {
  std::vector<Tensor> inputs = {Tensor::FromVector<float>({}, {0.1f}),
                                Tensor::FromVector<int64_t>({}, {1})};
  for (Tensor& t : tensors) inputs.push_back(std::move(t));
  attrs["num_inputs"] = static_cast<int64_t>(inputs.size() - 2);
  attrs["num_outputs"] = static_cast<int64_t>(outputs);
  auto out = test::RunOneNode(op, inputs, attrs, outputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>{};
}

TEST(OptimizerOpsTest, AdamFollowsTheOnnxRuleWithBiasCorrection) {
  const double alpha = 0.9, beta = 0.999, eps = 1e-6, r = 0.1, t = 1;
  const float x = 1.0f, g = -2.0f, v = 0.5f, h = 0.25f;
  auto out = Step("Adam",
                  {FloatVector({x, x}), FloatVector({g, g}),
                   FloatVector({v, v}), FloatVector({h, h})},
                  3, {{"alpha", alpha}, {"beta", beta}, {"epsilon", eps}});
  ASSERT_EQ(out.size(), 3u);
  const double v_new = alpha * v + (1 - alpha) * g;
  const double h_new = beta * h + (1 - beta) * g * g;
  const double rate =
      r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t));
  const double x_new = x - rate * v_new / (std::sqrt(h_new) + eps);
  EXPECT_NEAR(out[0].data<float>()[1], x_new, 1e-6);
  EXPECT_NEAR(out[1].data<float>()[1], v_new, 1e-6);
  EXPECT_NEAR(out[2].data<float>()[1], h_new, 1e-6);
}

TEST(OptimizerOpsTest, NesterovStepsAlongGradientPlusMomentum) {
  // v_new = 0.5 * 1 + 0.2 * 3 = 1.1; x_new = 2 - 0.1 * (3 + 0.5 * 1.1).
  auto out =
      Step("Momentum",
           {FloatVector({2, 2}), FloatVector({3, 3}), FloatVector({1, 1})}, 2,
           {{"alpha", 0.5}, {"beta", 0.2}, {"mode", "nesterov"}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(out[0].data<float>()[0], 2 - 0.1 * (3 + 0.5 * 1.1), 1e-6);
  EXPECT_NEAR(out[1].data<float>()[0], 1.1, 1e-6);
}

}  // namespace
}  // namespace weft
