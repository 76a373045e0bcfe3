// weft::Int4 and weft::UInt4: the storage types of DataType::kInt4 and
// DataType::kUInt4 (ONNX's INT4 and UINT4, opset 21). A file packs them two
// to a byte; a weft tensor holds one per byte, the value itself (Int4
// sign-extended, -8 to 7; UInt4 0 to 15), so that a kernel indexes them as
// any other element. Only the ops that list them take them (Cast,
// QuantizeLinear, DequantizeLinear, and those that move or view elements:
// Identity, Reshape, Transpose, ...).
#ifndef WEFT_INT4_H_
#define WEFT_INT4_H_

#include <cstdint>

namespace weft {

enum class Int4 : int8_t {};
enum class UInt4 : uint8_t {};

// The low four bits of v as a 4-bit integer: what ONNX's Cast does with an
// integer out of range ("discard higher bits and reinterpret").
constexpr Int4 WrapToInt4(int64_t v) {
  const int low = static_cast<int>(static_cast<uint64_t>(v) & 0xF);
  return static_cast<Int4>(low >= 8 ? low - 16 : low);
}
constexpr UInt4 WrapToUInt4(int64_t v) {
  return static_cast<UInt4>(static_cast<uint64_t>(v) & 0xF);
}

constexpr int ValueOf(Int4 v) { return static_cast<int8_t>(v); }
constexpr int ValueOf(UInt4 v) { return static_cast<uint8_t>(v); }

}  // namespace weft

#endif  // WEFT_INT4_H_
