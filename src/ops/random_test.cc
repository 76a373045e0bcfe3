#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

TEST(RandomOpsTest, BernoulliDrawsZerosAndOnesAtTheGivenRates) {
  // 20,000 draws at p = 0.25, then the edges 0 and 1, with seed 7.
  const int64_t n = 20'000;
  std::vector<float> p(n + 2, 0.25f);
  p[n] = 0.0f;
  p[n + 1] = 1.0f;
  auto y =
      test::RunOneOutput("Bernoulli", {Tensor::FromVector<float>({n + 2}, p)},
                         {{"dtype", DataType::kInt32}, {"seed", int64_t{7}}});
  ASSERT_TRUE(y.ok()) << y.status();
  const std::vector<int32_t> v = test::Values<int32_t>(*y);
  int64_t ones = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(v[i] == 0 || v[i] == 1) << i;
    ones += v[i];
  }
  EXPECT_NEAR(static_cast<double>(ones) / n, 0.25, 0.01);
  EXPECT_EQ(v[n], 0);
  EXPECT_EQ(v[n + 1], 1);
}

TEST(RandomOpsTest, BernoulliRefusesAValueThatIsNoProbability) {
  auto y = test::RunOneOutput("Bernoulli",
                              {Tensor::FromVector<float>({2}, {0.5f, 1.5f})},
                              {{"dtype", DataType::kFloat32}});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(),
              HasSubstr("input element 1 is 1.500000, not a probability"));
}

TEST(RandomOpsTest, LikeOpsTakeTheInputsShapeAndTheirSeed) {
  const Tensor x(DataType::kInt64, Shape{100, 50});
  auto draw = [&](int64_t seed) {
    return test::RunOneOutput("RandomUniformLike", {x},
                              {{"dtype", DataType::kFloat64},
                               {"low", -2.0},
                               {"high", 3.0},
                               {"seed", seed}});
  };
  auto a = draw(1), b = draw(1), c = draw(2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->shape(), (Shape{100, 50}));
  EXPECT_TRUE(a->BitwiseEqual(*b));
  EXPECT_FALSE(a->BitwiseEqual(*c));
  for (double v : test::Values<double>(*a)) {
    ASSERT_GE(v, -2.0);
    ASSERT_LT(v, 3.0);
  }
  auto normal = test::RunOneOutput(
      "RandomNormalLike", {x},
      {{"dtype", DataType::kFloat32}, {"mean", 1.0}, {"scale", 2.0}});
  ASSERT_TRUE(normal.ok()) << normal.status();
  double sum = 0, squares = 0;
  for (float v : test::Values<float>(*normal)) {
    sum += v;
    squares += static_cast<double>(v) * v;
  }
  const double mean = sum / 5000, var = squares / 5000 - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.1);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.1);
}

TEST(RandomOpsTest, TrainingDropoutKeepsAndScalesOnlyInTraining) {
  const int64_t n = 10'000;
  const Tensor x = Tensor::FromVector<float>({n}, std::vector<float>(n, 3.0f));
  for (bool training : {true, false}) {
    auto y = test::RunOneNode("TrainingDropout",
                              {x, Tensor::Scalar<bool>(training),
                               Tensor::FromVector<float>({}, {0.75f})},
                              {{"seed", int64_t{5}}}, 2);
    ASSERT_TRUE(y.ok()) << y.status();
    const std::vector<float> out = test::Values<float>((*y)[0]);
    const bool* keep = (*y)[1].data<bool>();
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      kept += keep[i];
      // Kept elements are scaled by 1 / (1 - 0.75) in training.
      ASSERT_EQ(out[i], keep[i] ? (training ? 12.0f : 3.0f) : 0.0f) << i;
    }
    if (training) {
      EXPECT_NEAR(static_cast<double>(kept) / n, 0.25, 0.02);
    } else {
      EXPECT_EQ(kept, n);
    }
  }
}

}  // namespace
}  // namespace weft
