// Element-wise conversion between float32 and a float8 DataType chosen at
// run time, for the kernels that list the float8 types (Cast,
// QuantizeLinear, DequantizeLinear).
#ifndef WEFT_FRAMEWORK_FLOAT8_CONVERT_H_
#define WEFT_FRAMEWORK_FLOAT8_CONVERT_H_

#include <cstdint>

#include "weft/tensor.h"

namespace weft::internal {

// The value of one float8 of `dtype` held in `bits`.
// REQUIRES: IsFloat8Type(dtype).
float Float8Value(DataType dtype, uint8_t bits);
// The bits of `value` as a float8 of `dtype` (weft::FloatToFloat8's rules).
// REQUIRES: IsFloat8Type(dtype).
uint8_t Float8Bits(DataType dtype, float value, bool saturate);

}  // namespace weft::internal

#endif  // WEFT_FRAMEWORK_FLOAT8_CONVERT_H_
