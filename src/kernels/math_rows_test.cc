// Every row path gives, element for element, the bits of the scalar
// functions (GeluF, vmath::ExpF) over every 251st float bit pattern, in rows
// whose lengths leave every tail, and in place.
#include "kernels/math_rows.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace weft::internal {
namespace {

constexpr uint32_t kMathRowsStep = 251;
constexpr int64_t kRow = 4099;  // Not a multiple of 16: each row has a tail.

// The paths this build and CPU run; the portable one always does.
std::vector<MathRowsPath> RunnablePaths() {
  std::vector<MathRowsPath> paths = {MathRowsPath::kPortable};
  for (const MathRowsPath path : {MathRowsPath::kAvx2, MathRowsPath::kAvx512}) {
    if (MathRowsPathRuns(path)) paths.push_back(path);
  }
  return paths;
}

bool MathRowsSameBits(float a, float b) {
  // NaN payloads are not part of the contract; that a NaN is one is.
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// Calls row(in, out) over every kMathRowsStep-th bit pattern in rows of kRow,
// and counts the elements whose bits differ from scalar(x).
template <class Row, class Scalar>
int64_t CountMismatches(Row row, Scalar scalar) {
  std::vector<float> in(kRow), out(kRow);
  int64_t mismatches = 0;
  uint64_t bits = 0;
  while (bits < (uint64_t{1} << 32)) {
    int64_t n = 0;
    for (; n < kRow && bits < (uint64_t{1} << 32); ++n, bits += kMathRowsStep) {
      in[n] = std::bit_cast<float>(static_cast<uint32_t>(bits));
    }
    row(in.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      if (!MathRowsSameBits(out[i], scalar(in[i]))) {
        ADD_FAILURE_AT(__FILE__, __LINE__)
            << "x = " << in[i] << " (bits " << std::bit_cast<uint32_t>(in[i])
            << "): row " << out[i] << ", scalar " << scalar(in[i]);
        if (++mismatches > 5) return mismatches;
      }
    }
  }
  return mismatches;
}

TEST(MathRowsTest, GeluRowsGiveTheScalarBitsOnEveryPath) {
  for (const MathRowsPath path : RunnablePaths()) {
    SCOPED_TRACE(std::string(MathRowsPathName(path)));
    EXPECT_EQ(CountMismatches(
                  [path](const float* x, float* y, int64_t n) {
                    GeluRowsOn(path, x, n, y, n, 1, n);
                  },
                  GeluF),
              0);
  }
}

TEST(MathRowsTest, ExpRowsGiveTheScalarBitsOnEveryPath) {
  for (const MathRowsPath path : RunnablePaths()) {
    for (const float shift : {0.0f, 3.25f, -60.5f}) {
      SCOPED_TRACE(std::string(MathRowsPathName(path)) + ", shift " +
                   std::to_string(shift));
      EXPECT_EQ(CountMismatches(
                    [path, shift](const float* x, float* y, int64_t n) {
                      ExpShiftedRowOn(path, x, shift, y, n);
                    },
                    [shift](float x) { return vmath::ExpF(x - shift); }),
                0);
    }
  }
}

TEST(MathRowsTest, EveryRowLengthAndInPlace) {
  std::vector<float> x(53);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = -7.5f + 0.29f * static_cast<float>(i);
  }
  for (const MathRowsPath path : RunnablePaths()) {
    for (int64_t n = 0; n <= 53; ++n) {
      std::vector<float> gelu(x.begin(), x.begin() + n);
      std::vector<float> exp(x.begin(), x.begin() + n);
      GeluRowsOn(path, gelu.data(), n, gelu.data(), n, 1, n);
      ExpShiftedRowOn(path, exp.data(), 1.5f, exp.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_TRUE(MathRowsSameBits(gelu[i], GeluF(x[i])))
            << MathRowsPathName(path) << " n " << n << " i " << i;
        EXPECT_TRUE(MathRowsSameBits(exp[i], vmath::ExpF(x[i] - 1.5f)))
            << MathRowsPathName(path) << " n " << n << " i " << i;
      }
    }
  }
}

// A tile of rows inside a wider matrix, in place and into another matrix:
// each row gets the scalar bits, and what lies between the rows is left.
TEST(MathRowsTest, GeluRowsOfATileLeaveTheRestAlone) {
  constexpr int64_t kRows = 7, kCols = 83, kLd = 100;
  std::vector<float> x(kRows * kLd);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = -9.0f + 0.0137f * static_cast<float>(i);
  }
  for (const MathRowsPath path : RunnablePaths()) {
    std::vector<float> in_place = x, out(kRows * kLd, 42.0f);
    GeluRowsOn(path, in_place.data(), kLd, in_place.data(), kLd, kRows, kCols);
    GeluRowsOn(path, x.data(), kLd, out.data(), kLd, kRows, kCols);
    for (int64_t r = 0; r < kRows; ++r) {
      for (int64_t j = 0; j < kLd; ++j) {
        const int64_t i = r * kLd + j;
        const bool inside = j < kCols;
        EXPECT_TRUE(MathRowsSameBits(in_place[i], inside ? GeluF(x[i]) : x[i]))
            << MathRowsPathName(path) << " row " << r << " column " << j;
        EXPECT_TRUE(MathRowsSameBits(out[i], inside ? GeluF(x[i]) : 42.0f))
            << MathRowsPathName(path) << " row " << r << " column " << j;
      }
    }
  }
}

TEST(MathRowsTest, GeluKeepsItsSpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (const MathRowsPath path : RunnablePaths()) {
    const std::vector<float> x = {
        0.0f,   -0.0f, kInf,   -kInf, std::numeric_limits<float>::quiet_NaN(),
        -20.0f, 20.0f, -1e-30f};
    std::vector<float> y(x.size());
    GeluRowsOn(path, x.data(), 0, y.data(), 0, 1,
               static_cast<int64_t>(x.size()));
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_TRUE(std::signbit(y[1]));
    EXPECT_EQ(y[2], kInf);
    EXPECT_TRUE(std::isnan(y[3]));  // -inf * 0, as 0.5 x (1 + erf) gives.
    EXPECT_TRUE(std::isnan(y[4]));
    EXPECT_EQ(y[5], 0.0f);  // Below the smallest subnormal.
    EXPECT_EQ(y[6], 20.0f);
    EXPECT_NEAR(y[7], -0.5e-30f, 1e-36f);
  }
}

TEST(MathRowsTest, PathNamesAndTheRule) {
  EXPECT_EQ(ParseMathRowsPath("portable"), MathRowsPath::kPortable);
  EXPECT_EQ(ParseMathRowsPath("avx2"), MathRowsPath::kAvx2);
  EXPECT_EQ(ParseMathRowsPath("avx512"), MathRowsPath::kAvx512);
  EXPECT_EQ(ParseMathRowsPath("sse"), std::nullopt);
  for (const MathRowsPath path :
       {MathRowsPath::kPortable, MathRowsPath::kAvx2, MathRowsPath::kAvx512}) {
    EXPECT_EQ(ParseMathRowsPath(MathRowsPathName(path)), path);
  }
  EXPECT_TRUE(MathRowsPathRuns(MathRowsPath::kPortable));
  // A CPU with AVX-512F has AVX2 and FMA: the AVX2 path runs wherever the
  // wider one does.
  if (MathRowsPathRuns(MathRowsPath::kAvx512)) {
    EXPECT_TRUE(MathRowsPathRuns(MathRowsPath::kAvx2));
  }
  // The active path is one that runs: the widest that does, unless
  // WEFT_MATH_ROWS (the kernel-choice runs) names another.
  EXPECT_TRUE(MathRowsPathRuns(ActiveMathRowsPath()));
  if (std::getenv("WEFT_MATH_ROWS") == nullptr) {
    const MathRowsPath widest =
        MathRowsPathRuns(MathRowsPath::kAvx512) ? MathRowsPath::kAvx512
        : MathRowsPathRuns(MathRowsPath::kAvx2) ? MathRowsPath::kAvx2
                                                : MathRowsPath::kPortable;
    EXPECT_EQ(ActiveMathRowsPath(), widest);
  }
}

}  // namespace
}  // namespace weft::internal
