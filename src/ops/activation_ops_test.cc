// The element-wise activations keep NaN: each is arithmetic on its input,
// so a NaN input gives a NaN output (numpy's and PyTorch's answers), never
// the 0 that a max(0, x) or min(0, x) written with std::max would give.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "test_support/session_util.h"

namespace weft {
namespace {

TEST(ActivationOpsTest, ANaNInputGivesANaNOutput) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* op :
       {"Relu", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish",
        "Softplus", "Softsign", "Sigmoid", "Tanh", "Sign"}) {
    auto y = test::RunOneOutput(
        op, {Tensor::FromVector<float>({3}, {nan, -2.0f, 2.0f})});
    ASSERT_TRUE(y.ok()) << op << ": " << y.status();
    EXPECT_TRUE(std::isnan(y->data<float>()[0])) << op;
    EXPECT_FALSE(std::isnan(y->data<float>()[1])) << op;
    EXPECT_FALSE(std::isnan(y->data<float>()[2])) << op;
  }
}

// Celu is max(0, x) + min(0, alpha (e^(x / alpha) - 1)) on both sides of 0.
TEST(ActivationOpsTest, CeluFollowsItsDefinition) {
  const std::vector<float> x = {-3.0f, -0.5f, 0.0f, 0.5f, 3.0f};
  for (float alpha : {1.0f, 2.0f}) {
    auto y =
        test::RunOneOutput("Celu", {Tensor::FromVector<float>({5}, x)},
                           {{"alpha", AttrValue(static_cast<double>(alpha))}});
    ASSERT_TRUE(y.ok()) << y.status();
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      const double want =
          std::max(0.0, v) + std::min(0.0, alpha * std::expm1(v / alpha));
      EXPECT_NEAR(y->data<float>()[i], want, 1e-6) << x[i] << " " << alpha;
    }
  }
}

}  // namespace
}  // namespace weft
