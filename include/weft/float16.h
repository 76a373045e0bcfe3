// weft::Float16: IEEE 754 binary16, the storage type of DataType::kFloat16;
// weft::BFloat16, that of DataType::kBFloat16.
//
// weft stores float16 tensors as such and computes in float32: a Float16
// converts implicitly to float (exactly) and from float (rounding to
// nearest, ties to even, as hardware does), so arithmetic on two Float16
// values is float32 arithmetic rounded once when stored.
#ifndef WEFT_FLOAT16_H_
#define WEFT_FLOAT16_H_

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace weft {

class Float16 {
 public:
  constexpr Float16() = default;
  // From any arithmetic value, through float.
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  Float16(T value)  // NOLINT: implicit, as a built-in floating type.
      : bits_(FromFloat(static_cast<float>(value))) {}

  operator float() const { return ToFloat(bits_); }  // NOLINT

  static constexpr Float16 FromBits(uint16_t bits) {
    Float16 h;
    h.bits_ = bits;
    return h;
  }
  constexpr uint16_t bits() const { return bits_; }

 private:
  static uint16_t FromFloat(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // Inf or NaN (keeping NaN quiet).
      return static_cast<uint16_t>(sign | 0x7c00u |
                                   (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) {  // Rounds past 65504: infinity.
      return static_cast<uint16_t>(sign | 0x7c00u);
    }
    if (abs < 0x38800000u) {  // Below 2^-14: a subnormal half (or zero).
      // Scale into units of 2^-24 and round to nearest even.
      const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
      const int shift = 126 - static_cast<int>(abs >> 23);  // 14 + 23 - exp
      if (shift > 24) return static_cast<uint16_t>(sign);
      const uint32_t value = mantissa >> shift;
      const uint32_t rest = mantissa & ((1u << shift) - 1);
      const uint32_t half = 1u << (shift - 1);
      const uint32_t rounded =
          value + (rest > half || (rest == half && (value & 1u)) ? 1u : 0u);
      return static_cast<uint16_t>(sign | rounded);
    }
    // Normal: rebias the exponent, round the mantissa's low 13 bits.
    const uint32_t value = abs - 0x38000000u;  // (127 - 15) << 23
    const uint32_t rounded =
        (value + 0xfffu + ((value >> 13) & 1u)) >> 13;  // Ties to even.
    return static_cast<uint16_t>(sign | rounded);
  }

  static float ToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1f) {
      x = sign | 0x7f800000u | (mantissa << 13);
    } else if (exp != 0) {
      x = sign | ((exp + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
      x = sign;
    } else {  // Subnormal: normalise.
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      x = sign | static_cast<uint32_t>(112 - e) << 23 |
          ((mantissa & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &x, sizeof f);
    return f;
  }

  uint16_t bits_ = 0;
};

// weft::BFloat16: bfloat16 (float32's sign, exponent and top 7 mantissa
// bits), the storage type of DataType::kBFloat16. Only Cast reads and
// writes it: it converts exactly to float, and from float rounding to
// nearest even (FromFloat) or, as ONNX's reference before opset 19 does,
// by truncation (FromFloatTruncated).
class BFloat16 {
 public:
  constexpr BFloat16() = default;
  static constexpr BFloat16 FromBits(uint16_t bits) {
    BFloat16 b;
    b.bits_ = bits;
    return b;
  }
  static BFloat16 FromFloat(float f) {
    const uint32_t x = Bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it a quiet NaN.
      return FromBits(static_cast<uint16_t>((x >> 16) | 0x40u));
    }
    const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // Ties to even.
    return FromBits(static_cast<uint16_t>((x + rounding) >> 16));
  }
  static BFloat16 FromFloatTruncated(float f) {
    return FromBits(static_cast<uint16_t>(Bits(f) >> 16));
  }
  explicit operator float() const {
    const uint32_t x = static_cast<uint32_t>(bits_) << 16;
    float f;
    std::memcpy(&f, &x, sizeof f);
    return f;
  }
  constexpr uint16_t bits() const { return bits_; }

 private:
  static uint32_t Bits(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    return x;
  }

  uint16_t bits_ = 0;
};

}  // namespace weft

template <>
class std::numeric_limits<weft::Float16> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_infinity = true;
  static constexpr weft::Float16 lowest() {
    return weft::Float16::FromBits(0xfbffu);  // -65504
  }
  static constexpr weft::Float16 max() {
    return weft::Float16::FromBits(0x7bffu);  // 65504
  }
  static constexpr weft::Float16 infinity() {
    return weft::Float16::FromBits(0x7c00u);
  }
  static constexpr weft::Float16 quiet_NaN() {
    return weft::Float16::FromBits(0x7e00u);
  }
};

#endif  // WEFT_FLOAT16_H_
