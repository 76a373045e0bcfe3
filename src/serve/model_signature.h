// What a served model takes and gives, in the protocol's terms: each input
// and output with its name, the tensor behind it in the graph, its dtype,
// its shape (-1 for a dimension left open) and the protocol's datatype name.
#ifndef WEFT_SRC_SERVE_MODEL_SIGNATURE_H_
#define WEFT_SRC_SERVE_MODEL_SIGNATURE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/onnx.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::serve {

// The protocol's datatype of a weft dtype ("FP32", "INT64", "BYTES", ...);
// nullopt for what it has no name for (sequences, optionals).
std::optional<std::string_view> ProtocolDatatype(DataType dtype);
// The weft dtype of a protocol datatype name; nullopt for an unknown name.
std::optional<DataType> DtypeOfProtocolDatatype(std::string_view name);

struct TensorSignature {
  std::string name;    // What clients call it.
  std::string tensor;  // What the graph feeds or fetches: "node" or "node:k".
  // nullopt only for a weft JSON graph's output before its first Run.
  std::optional<DataType> dtype;
  // -1 for an open dimension; nullopt when even the rank is open.
  std::optional<std::vector<int64_t>> shape;
};

struct ModelSignature {
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> outputs;
  // Why a row's outputs can depend on the other rows of its batch: the
  // first node that computes over the whole of a tensor, whatever its
  // rows ("DynamicQuantizeLinear 'q' quantizes ..."); "" when no node
  // does, and the batcher's bitwise promise holds (docs/serving.md).
  std::string batch_variance;

  const TensorSignature* FindInput(std::string_view name) const;
  const TensorSignature* FindOutput(std::string_view name) const;
  // Every input's first dimension is open, so requests can be stacked
  // along it.
  bool FirstDimensionOpen() const;
  // What a Run fetches for every output, in the signature's order.
  std::vector<std::string> OutputTensors() const;
  // FirstDimensionOpen, and every other dimension of every input known: a
  // batch's feed shapes follow from its rows alone.
  bool OnlyFirstDimensionOpen() const;
};

// The signature of a loaded model: an ONNX model's declared inputs and
// outputs; for a weft JSON graph, its Placeholders and its listed outputs
// (an output's shape is then unknown); and its batch_variance. Fails
// naming the input or output whose type the protocol cannot carry.
StatusOr<ModelSignature> SignatureOf(const OnnxModel& model);

// Zeros of each input's shape, its open first dimension taken as `rows`
// and its other open dimensions as 1; nullopt when an input's rank or dtype
// is unknown. What a warm-up Run and the serving tuner's timed Runs feed.
std::optional<NamedTensors> ZeroFeeds(const ModelSignature& signature,
                                      int64_t rows);

// "[-1, 3, 224, 224]", as the metadata route prints a shape.
std::string ShapeText(const std::optional<std::vector<int64_t>>& shape);

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_MODEL_SIGNATURE_H_
