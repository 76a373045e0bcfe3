#include "weft/float8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "framework/float8_convert.h"
#include "weft/tensor.h"

namespace weft {
namespace {

using internal::Float8Bits;
using internal::Float8Value;

constexpr DataType kFloat8Types[] = {
    DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
    DataType::kFloat8E5M2FNUZ};

// The largest finite value of each format (its definition's table).
double Largest(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat8E4M3FN:
      return 448;
    case DataType::kFloat8E4M3FNUZ:
      return 240;
    default:
      return 57344;
  }
}

// The nearest finite code to v by search over all 256, ties to the even
// code: a reference written apart from Encode's arithmetic.
uint8_t NearestBySearch(DataType dtype, float v) {
  int best = -1;
  double best_distance = 0;
  for (int code = 0; code < 256; ++code) {
    const float value = Float8Value(dtype, static_cast<uint8_t>(code));
    if (!std::isfinite(value)) continue;
    const double distance = std::fabs(static_cast<double>(value) - v);
    if (best < 0 || distance < best_distance ||
        (distance == best_distance && (code & 1) == 0 && (best & 1) == 1)) {
      best = code;
      best_distance = distance;
    }
  }
  return static_cast<uint8_t>(best);
}

TEST(Float8Test, EveryFiniteCodeRoundTripsAndNaNStaysNaN) {
  for (DataType dtype : kFloat8Types) {
    SCOPED_TRACE(DataTypeName(dtype));
    int nans = 0;
    for (int code = 0; code < 256; ++code) {
      const float value = Float8Value(dtype, static_cast<uint8_t>(code));
      if (std::isnan(value)) {
        ++nans;
        EXPECT_TRUE(
            std::isnan(Float8Value(dtype, Float8Bits(dtype, value, false))));
        continue;
      }
      if (std::isinf(value)) continue;
      const bool fnuz = dtype == DataType::kFloat8E4M3FNUZ ||
                        dtype == DataType::kFloat8E5M2FNUZ;
      // -0 is +0 in the FNUZ types (0x80 is their NaN).
      const uint8_t want = (fnuz && value == 0) ? 0 : code;
      EXPECT_EQ(Float8Bits(dtype, value, true), want) << code;
    }
    // E4M3FN: S.1111.111; E5M2: S.11111.{01,10,11}; FNUZ: 0x80 alone.
    const int want_nans = dtype == DataType::kFloat8E4M3FN ? 2
                          : dtype == DataType::kFloat8E5M2 ? 6
                                                           : 1;
    EXPECT_EQ(nans, want_nans);
    float largest = 0;
    for (int code = 0; code < 128; ++code) {
      const float value = Float8Value(dtype, static_cast<uint8_t>(code));
      if (std::isfinite(value)) largest = std::max(largest, value);
    }
    EXPECT_EQ(largest, Largest(dtype));
  }
}

// Random values across the range (and past it) round to the nearest code,
// ties to even; past the largest they saturate or become infinity / NaN.
TEST(Float8Test, RoundsToNearestEvenAndOverflowsAsOnnxSays) {
  std::mt19937 rng(7);
  for (DataType dtype : kFloat8Types) {
    SCOPED_TRACE(DataTypeName(dtype));
    const double largest = Largest(dtype);
    std::uniform_real_distribution<double> exponent(-22, std::log2(largest));
    std::vector<float> values;
    for (int i = 0; i < 4000; ++i) {
      const double magnitude = std::exp2(exponent(rng));
      values.push_back(static_cast<float>(i % 2 ? -magnitude : magnitude));
    }
    // Every midpoint between neighbouring codes: the ties.
    for (int code = 0; code < 127; ++code) {
      const float a = Float8Value(dtype, static_cast<uint8_t>(code));
      const float b = Float8Value(dtype, static_cast<uint8_t>(code + 1));
      if (std::isfinite(a) && std::isfinite(b)) values.push_back((a + b) / 2);
    }
    for (float v : values) {
      const uint8_t bits = Float8Bits(dtype, v, true);
      const uint8_t nearest = NearestBySearch(dtype, v);
      const float got = Float8Value(dtype, bits);
      const float want = Float8Value(dtype, nearest);
      EXPECT_EQ(got, want) << v;
    }
    // Past the largest.
    const bool has_infinity = dtype == DataType::kFloat8E5M2;
    for (float v : {static_cast<float>(largest * 1.2),
                    std::numeric_limits<float>::infinity()}) {
      EXPECT_EQ(Float8Value(dtype, Float8Bits(dtype, v, true)), largest);
      EXPECT_EQ(Float8Value(dtype, Float8Bits(dtype, -v, true)), -largest);
      const float unsaturated = Float8Value(dtype, Float8Bits(dtype, v, false));
      if (has_infinity) {
        EXPECT_EQ(unsaturated, std::numeric_limits<float>::infinity());
      } else {
        EXPECT_TRUE(std::isnan(unsaturated));
      }
    }
  }
  // E4M3FN: 464 is the tie between 448 and the first value past it (480,
  // the NaN code): even, so 448; 465 is past.
  EXPECT_EQ(Float8Value(DataType::kFloat8E4M3FN,
                        Float8Bits(DataType::kFloat8E4M3FN, 464, false)),
            448);
  EXPECT_TRUE(
      std::isnan(Float8Value(DataType::kFloat8E4M3FN,
                             Float8Bits(DataType::kFloat8E4M3FN, 465, false))));
}

TEST(Float8Test, TheTypedFunctionsAgreeWithTheDtypeOnes) {
  const Float8E5M2 v = FloatToFloat8<Float8E5M2>(-3.3f, true);
  EXPECT_EQ(Float8ToFloat(v), -3.5f);
  EXPECT_EQ(static_cast<uint8_t>(v),
            Float8Bits(DataType::kFloat8E5M2, -3.3f, true));
  EXPECT_EQ(Float8ToFloat(FloatToFloat8<Float8E4M3FNUZ>(-0.0f, true)), 0.0f);
  EXPECT_FALSE(
      std::signbit(Float8ToFloat(FloatToFloat8<Float8E4M3FNUZ>(-0.0f, true))));
  EXPECT_TRUE(
      std::signbit(Float8ToFloat(FloatToFloat8<Float8E4M3FN>(-0.0f, true))));
}

}  // namespace
}  // namespace weft
