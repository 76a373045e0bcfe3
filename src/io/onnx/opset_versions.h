// Which opsets and domains the importer reads, as data: the opset range,
// and the ops an opset 1-6 model may use because they are defined at
// opset 7 as they were then.
#ifndef WEFT_SRC_IO_ONNX_OPSET_VERSIONS_H_
#define WEFT_SRC_IO_ONNX_OPSET_VERSIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft::internal {

// The opsets the importer reads.
constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 23;

// weft's op conversions follow the ONNX definitions of opset 7 onwards. A
// model of opset 1 to 6 is read when each of its ops is defined at opset 7
// as it was at the model's opset: these are the ops whose version at
// opset 7 dates from opset 6 or earlier, with that version (from
// onnx.defs.get_schema(op, 7).since_version, python3-onnx 1.12). Any other
// op (Add, BatchNormalization, Gemm, ... changed at opset 7) is refused.
constexpr int64_t kFirstFullOpset = 7;

// The version an op of the default domain has at opset 7, if it is one of
// those (the table in opset_versions.cc).
std::optional<int64_t> VersionAtOpset7(std::string_view op);

// "" or "ai.onnx".
bool IsDefaultDomain(const std::string& domain);

// ONNX's training domain (version 1): weft imports its three optimizers,
// Adagrad, Adam and Momentum; the domain's gradient ops are refused.
bool IsTrainingOptimizer(const std::string& domain, const std::string& op);

// A com.microsoft op that weft converts as it is, to its weft op of the
// same name, rather than expanding it: MatMulNBits, which only the
// expansion of a model's MatMulNBits writes (contrib_ops.cc), with its
// scales and zero points made float32; CheckInRange, which only the
// expansion of GroupQueryAttention writes (decoder_ops.cc). A model's own
// com.microsoft nodes are all expanded first, so it cannot name either.
bool IsConvertedContribOp(const std::string& domain, const std::string& op);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_ONNX_OPSET_VERSIONS_H_
