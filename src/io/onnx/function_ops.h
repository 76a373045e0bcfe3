// The default-domain ops that ONNX defines as functions of other ops and
// that weft reads by expanding each node at load into those ops, as the
// ONNX function bodies do: RMSNormalization, RotaryEmbedding and Attention,
// new at opset 23, and ONNX Runtime's SimplifiedLayerNormalization, which
// it registers in the default domain. The graph passes then see ordinary
// nodes (an Attention with 3-D inputs becomes the chain that
// attention-fusion makes one FusedAttention again).
#ifndef WEFT_SRC_IO_ONNX_FUNCTION_OPS_H_
#define WEFT_SRC_IO_ONNX_FUNCTION_OPS_H_

#include <cstdint>
#include <string>

#include "io/onnx/expansion.h"
#include "weft/status.h"

namespace weft::internal {

// Whether `op_type` of the default domain is read by expansion.
bool IsFunctionOpExpanded(const std::string& op_type);

// Appends to `out` the default-domain nodes that compute `node` (an op
// IsFunctionOpExpanded names), under the contract of ExpandContribOp
// (contrib_ops.h). Unimplemented, naming the op and what is missing, for
// an attribute value or form weft does not expand; InvalidArgument for a
// malformed node or one the model's `opset` does not define yet.
Status ExpandFunctionOp(const onnx::NodeProto& node, int64_t opset,
                        const std::string& prefix, const DeclaredFn& declared,
                        Nodes* out, DeclaredOutputs* declared_outputs);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_ONNX_FUNCTION_OPS_H_
