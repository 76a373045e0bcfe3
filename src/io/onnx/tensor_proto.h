// onnx::TensorProto <-> weft Tensor, and ONNX's dtype codes.
#ifndef WEFT_SRC_IO_ONNX_TENSOR_PROTO_H_
#define WEFT_SRC_IO_ONNX_TENSOR_PROTO_H_

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::internal {

// ONNX element types newer than the onnx.proto weft compiles against.
inline constexpr int32_t kOnnxFloat8E4M3FN = 17;
inline constexpr int32_t kOnnxFloat8E4M3FNUZ = 18;
inline constexpr int32_t kOnnxFloat8E5M2 = 19;
inline constexpr int32_t kOnnxFloat8E5M2FNUZ = 20;
inline constexpr int32_t kOnnxUInt4 = 21;
inline constexpr int32_t kOnnxInt4 = 22;

// The weft dtype of an ONNX element type, or nullopt when weft has none.
std::optional<DataType> FromOnnxType(int32_t onnx_type);
// "FLOAT16", "UINT8", ...; "UNDEFINED(99)" for a code ONNX does not define.
std::string OnnxTypeName(int32_t onnx_type);
// "tensor(float)", "tensor(int64)", ... as ONNX Runtime prints a type.
std::string OnnxTensorTypeString(int32_t onnx_type);

// The importer's codes for ONNX value types: a tensor's element type, or
// that element type with one of these bits for seq(tensor(T)),
// optional(tensor(T)) and (both) optional(seq(tensor(T))).
inline constexpr int32_t kOnnxSequenceBit = 1 << 16;
inline constexpr int32_t kOnnxOptionalBit = 1 << 17;
// The code of a declared type; InvalidArgument for a malformed one,
// Unimplemented (naming it) for a map, a sparse tensor, or a container of
// containers other than optional(seq(tensor)). `what` names the value.
StatusOr<int32_t> OnnxValueTypeCode(const onnx::TypeProto& type,
                                    const std::string& what);
// FromOnnxType for a code with the container bits (weft/tensor.h's
// container dtypes); nullopt when weft has no such dtype.
std::optional<DataType> FromOnnxValueType(int32_t code);
// OnnxTensorTypeString for a code: "seq(tensor(float))",
// "optional(seq(tensor(int64)))".
std::string OnnxValueTypeString(int32_t code);

// Where a TensorProto's external data may come from: files under `dir` (the
// model's folder). Empty: external data is refused.
struct ExternalDataRoot {
  std::string dir;
};

// The tensor a TensorProto holds: its dims, element type and data from
// raw_data, the typed field, or external data under root.dir. `what` names it
// in errors ("initializer 'w'"). An element type weft lacks is Unimplemented;
// dims that are negative or overflow, data whose size does not match the
// dims, or external data that is missing or outside root.dir is
// InvalidArgument. Allocates only once the sizes agree.
// `lifted_raw_data`: the tensor's raw_data where it was lifted out of the
// message before parsing (lifted_raw_data.h); read as the proto's own.
StatusOr<Tensor> TensorFromProto(
    const onnx::TensorProto& proto, const ExternalDataRoot& root,
    const std::string& what,
    std::optional<std::string_view> lifted_raw_data = std::nullopt);

// The value an ONNX test file holds (a TensorProto, SequenceProto or
// OptionalProto) as a weft value of dtype `expected`, which says which of
// them the bytes are. Fails when they do not parse as it, or their types
// differ from `expected`, naming `what`.
StatusOr<Tensor> ValueFromBytes(std::string_view bytes, DataType expected,
                                const std::string& what, std::string* name);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_ONNX_TENSOR_PROTO_H_
