#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// One window op of `size`, at one and two threads (bitwise equal).
StatusOr<Tensor> Window(const std::string& op, Tensor size, AttrMap attrs) {
  return test::RunOneOutput(op, {std::move(size)}, std::move(attrs));
}

// The cosine sums of the ONNX definitions, periodic (N = size) and
// symmetric (N = size - 1), against the formulas written out.
TEST(SignalOpsTest, WindowsAreTheirCosineSums) {
  constexpr double kPi = std::numbers::pi;
  const int size = 10;
  struct Case {
    const char* op;
    double (*w)(double n, double period);
  };
  const Case cases[] = {
      {"HannWindow",
       [](double n, double p) { return std::pow(std::sin(kPi * n / p), 2); }},
      {"HammingWindow",
       [](double n, double p) {
         return 25.0 / 46 - 21.0 / 46 * std::cos(2 * kPi * n / p);
       }},
      {"BlackmanWindow",
       [](double n, double p) {
         return 0.42 - 0.5 * std::cos(2 * kPi * n / p) +
                0.08 * std::cos(4 * kPi * n / p);
       }},
  };
  for (const Case& c : cases) {
    for (int periodic : {1, 0}) {
      auto w = Window(c.op, Tensor::FromVector<int32_t>({}, {size}),
                      {{"periodic", int64_t{periodic}}});
      ASSERT_TRUE(w.ok()) << c.op << ": " << w.status().ToString();
      ASSERT_EQ(w->dtype(), DataType::kFloat32);
      ASSERT_EQ(w->shape(), (Shape{size}));
      const double period = periodic ? size : size - 1;
      for (int n = 0; n < size; ++n) {
        EXPECT_NEAR(w->data<float>()[n], c.w(n, period), 1e-6)
            << c.op << " periodic=" << periodic << " n=" << n;
      }
    }
  }
}

TEST(SignalOpsTest, WindowDtypeAndSizeEdges) {
  auto doubles = Window("HannWindow", test::Scalar<int64_t>(4),
                        {{"output_datatype", DataType::kFloat64}});
  ASSERT_TRUE(doubles.ok());
  EXPECT_EQ(doubles->dtype(), DataType::kFloat64);
  EXPECT_DOUBLE_EQ(doubles->data<double>()[2], 1.0);  // sin^2(pi/2)

  auto empty = Window("HammingWindow", test::Scalar<int64_t>(0), {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->NumElements(), 0);
  // One symmetric point (period 0): 1, as PyTorch's windows give.
  auto one = Window("HannWindow", test::Scalar<int64_t>(1),
                    {{"periodic", int64_t{0}}});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->NumElements(), 1);
  EXPECT_EQ(one->data<float>()[0], 1.0f);

  EXPECT_THAT(
      Window("HannWindow", test::Scalar<int64_t>(-1), {}).status().message(),
      HasSubstr("size -1 is out of range"));
  EXPECT_THAT(Window("HannWindow", Tensor::FromVector<int64_t>({2}, {3, 4}), {})
                  .status()
                  .message(),
              HasSubstr("size must be a scalar"));
}

}  // namespace
}  // namespace weft
