// weft's 8-bit float types, the storage types of ONNX's FLOAT8E4M3FN,
// FLOAT8E4M3FNUZ, FLOAT8E5M2 and FLOAT8E5M2FNUZ (opset 19): one byte each,
// the format's own bits. Listed-only like bfloat16: Cast, QuantizeLinear and
// DequantizeLinear read and write them, the ops that move or view elements
// (Identity, Reshape, Transpose, ...) pass them on, every other op refuses
// them.
//
//   format    exponent  bias  mantissa  largest  infinity    NaN         -0
//   E4M3FN    4         7     3         448      none        S.1111.111  yes
//   E4M3FNUZ  4         8     3         240      none        1.0000.000  no
//   E5M2      5         15    2         57344    S.11111.00  S.11111.xx  yes
//   E5M2FNUZ  5         16    2         57344    none        1.00000.00  no
#ifndef WEFT_FLOAT8_H_
#define WEFT_FLOAT8_H_

#include <cstdint>

namespace weft {

enum class Float8E4M3FN : uint8_t {};
enum class Float8E4M3FNUZ : uint8_t {};
enum class Float8E5M2 : uint8_t {};
enum class Float8E5M2FNUZ : uint8_t {};

// The value a float8 holds, exactly (NaN for the format's NaN codes,
// +-infinity for E5M2's).
float Float8ToFloat(Float8E4M3FN v);
float Float8ToFloat(Float8E4M3FNUZ v);
float Float8ToFloat(Float8E5M2 v);
float Float8ToFloat(Float8E5M2FNUZ v);

// f rounded to the nearest float8 of type F8, ties to even, as ONNX's Cast
// defines it: with `saturate`, infinities and values that round past the
// largest become the largest of their sign; without, they become infinity
// (E5M2) or NaN (the others). NaN stays NaN; -0 is +0 in the FNUZ types.
template <class F8>
F8 FloatToFloat8(float f, bool saturate);

}  // namespace weft

#endif  // WEFT_FLOAT8_H_
