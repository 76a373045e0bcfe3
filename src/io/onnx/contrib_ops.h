// ONNX Runtime's com.microsoft ops that models carry: those of the QOperator
// quantized form (QLinearAdd, QLinearConcat, QGemm, ...) and those ONNX
// Runtime's transformer optimizer writes (EmbedLayerNormalization,
// Attention, MultiHeadAttention, SkipLayerNormalization, BiasGelu,
// FastGelu, FusedMatMul, ...). Each is expanded at load into default-domain
// ONNX nodes of the same meaning, which the importer then converts like any
// other, so the graph passes see them (a QLinearAdd becomes
// DequantizeLinear -> Add -> QuantizeLinear, which qdq-fusion makes an
// integer QLinearAdd again). MatMulNBits is the one exception: its scales
// and zero points become float32 by default-domain nodes, and the node
// itself stays a com.microsoft MatMulNBits that the importer converts to
// weft's op of that name, which keeps the weight's codes. A decoder's
// GroupQueryAttention and RotaryEmbedding are expanded in decoder_ops.h.
// The others of the domain are refused by name.
#ifndef WEFT_SRC_IO_ONNX_CONTRIB_OPS_H_
#define WEFT_SRC_IO_ONNX_CONTRIB_OPS_H_

#include <google/protobuf/repeated_ptr_field.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/onnx/expansion.h"
#include "weft/status.h"

namespace weft::internal {

inline constexpr char kMicrosoftDomain[] = "com.microsoft";

// Whether weft expands com.microsoft op `op_type`.
bool IsContribOpSupported(const std::string& op_type);

// The com.microsoft ops weft expands, sorted (for messages and docs).
std::vector<std::string> SupportedContribOps();

// Appends to `out` the default-domain nodes that compute com.microsoft node
// `node`: they write the node's outputs under its names, and name their
// other values and nodes "<prefix>..." (unique in the graph when `prefix`
// is). Forms that changed between opsets follow `opset`, the model's
// default-domain opset. Unimplemented, naming the op and what is missing,
// for an op or an attribute value weft does not expand; InvalidArgument
// for a malformed node.
// What it knows of the node's outputs' types and shapes goes into
// `declared_outputs`.
Status ExpandContribOp(const onnx::NodeProto& node, int64_t opset,
                       const std::string& prefix, const DeclaredFn& declared,
                       google::protobuf::RepeatedPtrField<onnx::NodeProto>* out,
                       DeclaredOutputs* declared_outputs);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_ONNX_CONTRIB_OPS_H_
