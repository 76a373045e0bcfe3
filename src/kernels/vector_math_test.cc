// The vectorisable float32 functions against libm in double, over every
// 97th float of their useful range, and at the special values.
#include "kernels/vector_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

namespace weft::internal::vmath {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr uint32_t kVectorMathStep =
    389;  // Bit patterns between tested floats.

// The largest relative error of f against `reference` over floats in
// [low, high] (stepping through bit patterns), ignoring results below the
// smallest normal float, where relative accuracy is not defined.
template <class F, class R>
double WorstRelativeError(float low, float high, F f, R reference) {
  double worst = 0;
  for (float x = low; x <= high;
       x = std::bit_cast<float>(std::bit_cast<uint32_t>(x) +
                                (x < 0 ? -kVectorMathStep : kVectorMathStep))) {
    const double expected = reference(static_cast<double>(x));
    if (std::abs(expected) >= std::numeric_limits<float>::min()) {
      worst = std::max(worst, std::abs(f(x) - expected) / std::abs(expected));
    }
    if (x < 0 && x > -1e-30f) x = 1e-30f;  // Step over zero.
  }
  return worst;
}

TEST(VectorMathTest, ExpIsWithinTwoUlp) {
  EXPECT_LT(WorstRelativeError(-87.0f, 88.7f, ExpF,
                               [](double x) { return std::exp(x); }),
            2.4e-7);
}

TEST(VectorMathTest, ExpSpecialValues) {
  EXPECT_EQ(ExpF(0.0f), 1.0f);
  EXPECT_EQ(ExpF(kInf), kInf);
  EXPECT_EQ(ExpF(89.0f), kInf);  // Overflows.
  EXPECT_EQ(ExpF(-kInf), 0.0f);
  EXPECT_EQ(ExpF(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(ExpF(kNaN)));
  // Subnormal results keep their absolute accuracy.
  EXPECT_NEAR(ExpF(-100.0f), std::exp(-100.0), 1.5e-45);
  EXPECT_GT(ExpF(-100.0f), 0.0f);
  // Either side of the selects that stand for clamps: the smallest
  // subnormal just above -104, 0 below (exp(-104) rounds to 0); inf above
  // 89, a finite value below 88.72; and far beyond, where the polynomial's
  // bits are meaningless and only the select decides.
  EXPECT_EQ(ExpF(-103.5f), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(ExpF(-104.0f), 0.0f);
  EXPECT_EQ(ExpF(-104.5f), 0.0f);
  EXPECT_EQ(ExpF(-1e30f), 0.0f);
  EXPECT_TRUE(std::isfinite(ExpF(88.7f)));
  EXPECT_EQ(ExpF(89.5f), kInf);
  EXPECT_EQ(ExpF(1e30f), kInf);
}

TEST(VectorMathTest, LogIsWithinTwoUlp) {
  EXPECT_LT(WorstRelativeError(1e-37f, 1e37f, LogF,
                               [](double x) { return std::log(x); }),
            2.4e-7);
}

TEST(VectorMathTest, LogSpecialValues) {
  EXPECT_EQ(LogF(1.0f), 0.0f);
  EXPECT_EQ(LogF(0.0f), -kInf);
  EXPECT_EQ(LogF(-0.0f), -kInf);
  EXPECT_EQ(LogF(kInf), kInf);
  EXPECT_TRUE(std::isnan(LogF(-1.0f)));
  EXPECT_TRUE(std::isnan(LogF(-kInf)));
  EXPECT_TRUE(std::isnan(LogF(kNaN)));
  const float subnormal = 1e-40f;
  EXPECT_NEAR(LogF(subnormal), std::log(double{subnormal}), 1e-5);
}

TEST(VectorMathTest, TanhIsAccurateAndSaturates) {
  EXPECT_LT(WorstRelativeError(-20.0f, 20.0f, TanhF,
                               [](double x) { return std::tanh(x); }),
            3e-7);
  EXPECT_EQ(TanhF(0.0f), 0.0f);
  EXPECT_EQ(TanhF(kInf), 1.0f);
  EXPECT_EQ(TanhF(-kInf), -1.0f);
  EXPECT_TRUE(std::isnan(TanhF(kNaN)));
}

TEST(VectorMathTest, ErfcIsAccurateOverTheWholeLine) {
  // Up to 9, where erfc drops below the smallest normal float.
  EXPECT_LT(WorstRelativeError(-10.0f, 9.0f, ErfcF,
                               [](double x) { return std::erfc(x); }),
            1e-6);
  EXPECT_EQ(ErfcF(kInf), 0.0f);
  EXPECT_EQ(ErfcF(-kInf), 2.0f);
  EXPECT_TRUE(std::isnan(ErfcF(kNaN)));
}

TEST(VectorMathTest, LaneReduceCombinesInAFixedOrderAndCoversTheTail) {
  std::vector<double> x(37);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i + 1);
  const double sum = LaneReduce<double>(
      static_cast<int64_t>(x.size()), 0.0, [&](int64_t i) { return x[i]; },
      [](double a, double b) { return a + b; });
  EXPECT_EQ(sum, 37.0 * 38.0 / 2.0);
  x[20] = kNaN;
  std::vector<float> f(x.begin(), x.end());
  EXPECT_TRUE(std::isnan(MaxOf(f.data(), 37)));
  f[20] = 100.0f;
  EXPECT_EQ(MaxOf(f.data(), 37), 100.0f);
  EXPECT_EQ(MaxOf(f.data(), 1), 1.0f);
}

}  // namespace
}  // namespace weft::internal::vmath
