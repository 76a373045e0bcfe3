// Calling code typed for a tensor's element type: the switch from a
// DataType to its C++ type that custom kernels and tools need as much as
// weft's own kernels do.
#ifndef WEFT_DTYPE_DISPATCH_H_
#define WEFT_DTYPE_DISPATCH_H_

#include <cstdint>

#include "weft/check.h"
#include "weft/float16.h"
#include "weft/tensor.h"

namespace weft {

// Calls fn(T{}) with the C++ type T of `dtype` and returns what it
// returns; bool tensors pass bool{}. A string or bfloat16 dtype, which has
// no arithmetic C++ type here, is a programming error (checked): test
// IsListedOnlyType first where such a tensor may arrive.
template <class Fn>
decltype(auto) DispatchDtype(DataType dtype, Fn&& fn) {
  // Signatures keep strings from ops that do not list them (signature.cc).
  WEFT_CHECK(!IsListedOnlyType(dtype),
             "DispatchDtype of a string or bfloat16 tensor");
  switch (dtype) {
    case DataType::kFloat32:
      return fn(float{});
    case DataType::kFloat64:
      return fn(double{});
    case DataType::kInt32:
      return fn(int32_t{});
    case DataType::kInt64:
      return fn(int64_t{});
    case DataType::kFloat16:
      return fn(Float16{});
    case DataType::kInt8:
      return fn(int8_t{});
    case DataType::kUInt8:
      return fn(uint8_t{});
    case DataType::kInt16:
      return fn(int16_t{});
    case DataType::kUInt16:
      return fn(uint16_t{});
    case DataType::kUInt32:
      return fn(uint32_t{});
    case DataType::kUInt64:
      return fn(uint64_t{});
    case DataType::kBool:
    case DataType::kString:
    case DataType::kBFloat16:
    case DataType::kInt4:
    case DataType::kUInt4:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      break;
  }
  return fn(bool{});
}

}  // namespace weft

#endif  // WEFT_DTYPE_DISPATCH_H_
