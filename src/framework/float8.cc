#include "weft/float8.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "framework/float8_convert.h"
#include "weft/check.h"

// Decode and Encode are shared by weft's functions and weft::internal's.
namespace weft {
namespace {

// What tells the four formats apart.
struct Format {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;   // E5M2: exponent all ones is infinity or NaN.
  bool unsigned_zero;  // FNUZ: 0x80 is the only NaN, no -0.
};

constexpr Format kE4M3FN{4, 3, 7, false, false};
constexpr Format kE4M3FNUZ{4, 3, 8, false, true};
constexpr Format kE5M2{5, 2, 15, true, false};
constexpr Format kE5M2FNUZ{5, 2, 16, false, true};

constexpr uint8_t kSign = 0x80;

bool IsNanCode(uint8_t bits, const Format& f) {
  if (f.unsigned_zero) return bits == kSign;
  const int exponent = (bits & 0x7F) >> f.mantissa_bits;
  const int mantissa = bits & ((1 << f.mantissa_bits) - 1);
  const int all_ones = (1 << f.exponent_bits) - 1;
  if (f.has_infinity) return exponent == all_ones && mantissa != 0;
  return (bits & 0x7F) == 0x7F;  // E4M3FN: S.1111.111.
}

float DecodeByDefinition(uint8_t bits, const Format& f) {
  if (IsNanCode(bits, f)) return std::numeric_limits<float>::quiet_NaN();
  const float sign = (bits & kSign) ? -1.0f : 1.0f;
  const int exponent = (bits & 0x7F) >> f.mantissa_bits;
  const int mantissa = bits & ((1 << f.mantissa_bits) - 1);
  if (f.has_infinity && exponent == (1 << f.exponent_bits) - 1) {
    return sign * std::numeric_limits<float>::infinity();
  }
  if (exponent == 0) {  // Subnormal: mantissa * 2^(1 - bias - mantissa_bits).
    return sign * std::ldexp(static_cast<float>(mantissa),
                             1 - f.bias - f.mantissa_bits);
  }
  return sign *
         std::ldexp(static_cast<float>(mantissa + (1 << f.mantissa_bits)),
                    exponent - f.bias - f.mantissa_bits);
}

// The largest finite code's bits, without the sign.
uint8_t LargestCode(const Format& f) {
  if (f.has_infinity) {
    // Exponent all ones is taken: the one below, with a full mantissa.
    return static_cast<uint8_t>(
        (((1 << f.exponent_bits) - 2) << f.mantissa_bits) |
        ((1 << f.mantissa_bits) - 1));
  }
  if (f.unsigned_zero) return 0x7F;
  return 0x7E;  // E4M3FN: S.1111.111 is NaN.
}

// Each code's value, computed once per format: decoding is a lookup.
struct DecodeTable {
  explicit DecodeTable(const Format& f) {
    for (int code = 0; code < 256; ++code) {
      values[code] = DecodeByDefinition(static_cast<uint8_t>(code), f);
    }
  }
  float values[256];
};

float Decode(uint8_t bits, const Format& f) {
  static const DecodeTable e4m3fn(kE4M3FN), e4m3fnuz(kE4M3FNUZ), e5m2(kE5M2),
      e5m2fnuz(kE5M2FNUZ);
  // The bias tells the four formats apart.
  const DecodeTable& table = f.bias == kE4M3FN.bias     ? e4m3fn
                             : f.bias == kE4M3FNUZ.bias ? e4m3fnuz
                             : f.bias == kE5M2.bias     ? e5m2
                                                        : e5m2fnuz;
  return table.values[bits];
}

uint8_t NanCode(const Format& f, bool negative) {
  if (f.unsigned_zero) return kSign;
  return static_cast<uint8_t>((negative ? kSign : 0) | 0x7F);
}

uint8_t Encode(float value, const Format& f, bool saturate) {
  const bool negative = std::signbit(value);
  const uint8_t sign = negative ? kSign : 0;
  if (std::isnan(value)) return NanCode(f, negative);
  const uint8_t largest = LargestCode(f);
  const double largest_value = Decode(largest, f);
  const auto overflow = [&]() -> uint8_t {
    if (saturate) return sign | largest;
    if (f.has_infinity) {
      return static_cast<uint8_t>(
          sign | (((1 << f.exponent_bits) - 1) << f.mantissa_bits));
    }
    return NanCode(f, negative);
  };
  const double magnitude = std::fabs(static_cast<double>(value));
  if (std::isinf(magnitude)) return overflow();
  const uint8_t zero = f.unsigned_zero ? 0 : sign;
  if (magnitude == 0) return zero;
  // The spacing of representable values at this magnitude: that of the
  // subnormals below the smallest normal exponent.
  const int min_exponent = 1 - f.bias;
  int exponent = std::ilogb(magnitude);
  if (exponent < min_exponent) exponent = min_exponent;
  const double quantum = std::ldexp(1.0, exponent - f.mantissa_bits);
  // magnitude / quantum is exact (a power of two); nearbyint rounds ties
  // to even in the default rounding mode.
  const double steps = std::nearbyint(magnitude / quantum);
  const double rounded = steps * quantum;
  if (rounded > largest_value) return overflow();
  if (rounded == 0) return zero;
  const int rounded_exponent = std::ilogb(rounded);
  if (rounded_exponent < min_exponent) {  // Subnormal: exponent field 0.
    return static_cast<uint8_t>(
        sign |
        static_cast<int>(std::ldexp(rounded, f.bias - 1 + f.mantissa_bits)));
  }
  const int mantissa = static_cast<int>(std::ldexp(
                           rounded, f.mantissa_bits - rounded_exponent)) -
                       (1 << f.mantissa_bits);
  return static_cast<uint8_t>(
      sign | ((rounded_exponent + f.bias) << f.mantissa_bits) | mantissa);
}

}  // namespace

float Float8ToFloat(Float8E4M3FN v) {
  return Decode(static_cast<uint8_t>(v), kE4M3FN);
}
float Float8ToFloat(Float8E4M3FNUZ v) {
  return Decode(static_cast<uint8_t>(v), kE4M3FNUZ);
}
float Float8ToFloat(Float8E5M2 v) {
  return Decode(static_cast<uint8_t>(v), kE5M2);
}
float Float8ToFloat(Float8E5M2FNUZ v) {
  return Decode(static_cast<uint8_t>(v), kE5M2FNUZ);
}

template <>
Float8E4M3FN FloatToFloat8<Float8E4M3FN>(float f, bool saturate) {
  return static_cast<Float8E4M3FN>(Encode(f, kE4M3FN, saturate));
}
template <>
Float8E4M3FNUZ FloatToFloat8<Float8E4M3FNUZ>(float f, bool saturate) {
  return static_cast<Float8E4M3FNUZ>(Encode(f, kE4M3FNUZ, saturate));
}
template <>
Float8E5M2 FloatToFloat8<Float8E5M2>(float f, bool saturate) {
  return static_cast<Float8E5M2>(Encode(f, kE5M2, saturate));
}
template <>
Float8E5M2FNUZ FloatToFloat8<Float8E5M2FNUZ>(float f, bool saturate) {
  return static_cast<Float8E5M2FNUZ>(Encode(f, kE5M2FNUZ, saturate));
}

}  // namespace weft

namespace weft::internal {

float Float8Value(DataType dtype, uint8_t bits) {
  switch (dtype) {
    case DataType::kFloat8E4M3FN:
      return Decode(bits, kE4M3FN);
    case DataType::kFloat8E4M3FNUZ:
      return Decode(bits, kE4M3FNUZ);
    case DataType::kFloat8E5M2:
      return Decode(bits, kE5M2);
    default:
      WEFT_CHECK(dtype == DataType::kFloat8E5M2FNUZ, "not a float8 dtype");
      return Decode(bits, kE5M2FNUZ);
  }
}

uint8_t Float8Bits(DataType dtype, float value, bool saturate) {
  switch (dtype) {
    case DataType::kFloat8E4M3FN:
      return Encode(value, kE4M3FN, saturate);
    case DataType::kFloat8E4M3FNUZ:
      return Encode(value, kE4M3FNUZ, saturate);
    case DataType::kFloat8E5M2:
      return Encode(value, kE5M2, saturate);
    default:
      WEFT_CHECK(dtype == DataType::kFloat8E5M2FNUZ, "not a float8 dtype");
      return Encode(value, kE5M2FNUZ, saturate);
  }
}

}  // namespace weft::internal
