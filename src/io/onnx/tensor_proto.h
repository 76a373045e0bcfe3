// onnx::TensorProto <-> weft Tensor, and ONNX's dtype codes.
#ifndef WEFT_SRC_IO_ONNX_TENSOR_PROTO_H_
#define WEFT_SRC_IO_ONNX_TENSOR_PROTO_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>

#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::internal {

// The weft dtype of an ONNX element type, or nullopt when weft has none.
std::optional<DataType> FromOnnxType(int32_t onnx_type);
// "FLOAT16", "UINT8", ...; "UNDEFINED(99)" for a code ONNX does not define.
std::string OnnxTypeName(int32_t onnx_type);
// "tensor(float)", "tensor(int64)", ... as ONNX Runtime prints a type.
std::string OnnxTensorTypeString(int32_t onnx_type);

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
StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto,
                                 const ExternalDataRoot& root,
                                 const std::string& what);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_ONNX_TENSOR_PROTO_H_
