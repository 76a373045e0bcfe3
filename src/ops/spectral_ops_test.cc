#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// The direct definition in double: X[k] = sum_j x[j] e^(-2 pi i j k / n).
std::vector<double> DirectDft(const std::vector<double>& x, int64_t n) {
  std::vector<double> out;
  for (int64_t k = 0; k < n; ++k) {
    double re = 0, im = 0;
    for (int64_t j = 0; j < static_cast<int64_t>(x.size()) && j < n; ++j) {
      const double a = -2 * std::numbers::pi * static_cast<double>(j * k) /
                       static_cast<double>(n);
      re += x[j] * std::cos(a);
      im += x[j] * std::sin(a);
    }
    out.push_back(re);
    out.push_back(im);
  }
  return out;
}

// DFT of a real [1, n, 1] signal, padded or cut to `length`.
StatusOr<Tensor> Dft(const std::vector<double>& x, int64_t length,
                     AttrMap attrs = {}) {
  const int64_t n = static_cast<int64_t>(x.size());
  return test::RunOneOutput("DFT",
                            {Tensor::FromVector<double>({1, n, 1}, x),
                             Tensor::FromVector<int64_t>({}, {length})},
                            std::move(attrs));
}

TEST(SpectralOpsTest, DftMatchesTheDefinitionForEveryLength) {
  std::vector<double> x;
  for (int i = 0; i < 12; ++i) x.push_back(std::sin(i * 0.7) + 0.1 * i);
  // 16 and 8 take the radix-2 path, 12 and 7 the direct sum; 16 pads, 7
  // and 8 cut.
  for (int64_t length : {16, 12, 8, 7}) {
    SCOPED_TRACE("length " + std::to_string(length));
    auto y = Dft(x, length);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), (Shape{1, length, 2}));
    const std::vector<double> want = DirectDft(x, length);
    const std::vector<double> got = test::Values<double>(*y);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-9) << i;
    }
  }
}

TEST(SpectralOpsTest, OnesidedKeepsHalfTheBinsAndInverseUndoesTheForward) {
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8};
  auto half = Dft(x, 8, {{"onesided", int64_t{1}}});
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->shape(), (Shape{1, 5, 2}));
  auto full = Dft(x, 8);
  ASSERT_TRUE(full.ok());
  auto back = test::RunOneOutput("DFT", {*full}, {{"inverse", int64_t{1}}});
  ASSERT_TRUE(back.ok()) << back.status();
  const std::vector<double> v = test::Values<double>(*back);
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(v[2 * i], x[i], 1e-12);
    EXPECT_NEAR(v[2 * i + 1], 0, 1e-12);
  }
  auto bad = test::RunOneOutput("DFT", {*full}, {{"onesided", int64_t{1}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("onesided needs a real"));
}

TEST(SpectralOpsTest, StftNeedsAFrameThatFitsTheSignal) {
  const Tensor signal = Tensor::FromVector<float>({1, 4, 1}, {1, 2, 3, 4});
  auto y = test::RunOneOutput("STFT",
                              {signal, Tensor::FromVector<int64_t>({}, {2}),
                               Tensor::FromVector<int64_t>({}, {8})},
                              {{"has_frame_length", true}});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(),
              HasSubstr("frame_length 8 is longer than the signal (4)"));
  auto ok = test::RunOneOutput("STFT",
                               {signal, Tensor::FromVector<int64_t>({}, {2}),
                                Tensor::FromVector<int64_t>({}, {2})},
                               {{"has_frame_length", true}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  // Frames [1, 2] and [3, 4]: bins 0 and 1 are the sum and the difference.
  EXPECT_EQ(ok->shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(test::Values<float>(*ok),
            (std::vector<float>{3, 0, -1, 0, 7, 0, -1, 0}));
}

TEST(SpectralOpsTest, MelWeightMatrixRefusesEdgesBeyondNyquist) {
  auto y = test::RunOneOutput("MelWeightMatrix",
                              {Tensor::FromVector<int32_t>({}, {8}),
                               Tensor::FromVector<int32_t>({}, {16}),
                               Tensor::FromVector<int32_t>({}, {8000}),
                               Tensor::FromVector<float>({}, {0}),
                               Tensor::FromVector<float>({}, {20000})});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("beyond the Nyquist"));
  // An edge so high its bin would not fit int64: refused the same way.
  auto huge = test::RunOneOutput("MelWeightMatrix",
                                 {Tensor::FromVector<int32_t>({}, {8}),
                                  Tensor::FromVector<int32_t>({}, {16}),
                                  Tensor::FromVector<int32_t>({}, {8000}),
                                  Tensor::FromVector<float>({}, {0}),
                                  Tensor::FromVector<float>({}, {3e38f})});
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(), HasSubstr("beyond the Nyquist"));
}

}  // namespace
}  // namespace weft
