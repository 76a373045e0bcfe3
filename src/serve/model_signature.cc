#include "serve/model_signature.h"

#include <algorithm>
#include <utility>

#include "weft/attr.h"

namespace weft::serve {
namespace {

struct DatatypeName {
  DataType dtype;
  std::string_view name;
};
// The protocol's names (its "Tensor Data Types" table).
constexpr DatatypeName kDatatypeNames[] = {
    {DataType::kBool, "BOOL"},     {DataType::kUInt8, "UINT8"},
    {DataType::kUInt16, "UINT16"}, {DataType::kUInt32, "UINT32"},
    {DataType::kUInt64, "UINT64"}, {DataType::kInt8, "INT8"},
    {DataType::kInt16, "INT16"},   {DataType::kInt32, "INT32"},
    {DataType::kInt64, "INT64"},   {DataType::kFloat16, "FP16"},
    {DataType::kBFloat16, "BF16"}, {DataType::kFloat32, "FP32"},
    {DataType::kFloat64, "FP64"},  {DataType::kString, "BYTES"},
};

StatusOr<TensorSignature> FromOnnx(const OnnxValueInfo& info,
                                   const char* what) {
  TensorSignature out;
  out.name = info.name;
  out.tensor = info.tensor;
  if (!info.dtype || !ProtocolDatatype(*info.dtype)) {
    return InvalidArgumentError(
        std::string(what) + " '" + info.name + "' is " +
        (info.type_name.empty() ? "of no declared type" : info.type_name) +
        ", which the inference protocol cannot carry (it carries tensors of "
        "its datatypes, BOOL to BYTES; Cast the value to one in the model)");
  }
  out.dtype = info.dtype;
  if (info.rank_known) {
    std::vector<int64_t> dims;
    for (const OnnxDim& dim : info.dims) dims.push_back(dim.size);
    out.shape = std::move(dims);
  }
  return out;
}

// ModelSignature::batch_variance. DynamicQuantizeLinear takes its scale and
// zero point from the minimum and maximum of its whole input, so in a
// batch a request's values are quantized on the range of all the
// requests' (quantize_dynamic's transformers start each MatMul with one).
// An op reducing over the batch axis would mix rows too; exported
// inference models have none, and SessionOptions::batch_invariant keeps
// every other kernel's rows apart.
std::string BatchVarianceOf(const Graph& graph) {
  for (const NodeDef& node : graph.nodes()) {
    if (node.op == "DynamicQuantizeLinear") {
      return "DynamicQuantizeLinear '" + node.name +
             "' quantizes on the range of its whole input, so a request's "
             "outputs depend on the other requests of its batch";
    }
  }
  return "";
}

}  // namespace

std::optional<std::string_view> ProtocolDatatype(DataType dtype) {
  for (const DatatypeName& entry : kDatatypeNames) {
    if (entry.dtype == dtype) return entry.name;
  }
  return std::nullopt;
}

std::optional<DataType> DtypeOfProtocolDatatype(std::string_view name) {
  for (const DatatypeName& entry : kDatatypeNames) {
    if (entry.name == name) return entry.dtype;
  }
  return std::nullopt;
}

const TensorSignature* ModelSignature::FindInput(std::string_view name) const {
  for (const TensorSignature& input : inputs) {
    if (input.name == name) return &input;
  }
  return nullptr;
}

const TensorSignature* ModelSignature::FindOutput(std::string_view name) const {
  for (const TensorSignature& output : outputs) {
    if (output.name == name) return &output;
  }
  return nullptr;
}

bool ModelSignature::FirstDimensionOpen() const {
  if (inputs.empty()) return false;
  for (const TensorSignature& input : inputs) {
    if (!input.shape || input.shape->empty() || (*input.shape)[0] >= 0) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> ModelSignature::OutputTensors() const {
  std::vector<std::string> tensors;
  for (const TensorSignature& output : outputs)
    tensors.push_back(output.tensor);
  return tensors;
}

bool ModelSignature::OnlyFirstDimensionOpen() const {
  if (!FirstDimensionOpen()) return false;
  for (const TensorSignature& input : inputs) {
    if (std::any_of(input.shape->begin() + 1, input.shape->end(),
                    [](int64_t d) { return d < 0; })) {
      return false;
    }
  }
  return true;
}

StatusOr<ModelSignature> SignatureOf(const OnnxModel& model) {
  ModelSignature signature;
  signature.batch_variance = BatchVarianceOf(model.file.graph);
  if (!model.inputs.empty() || !model.outputs.empty()) {
    for (const OnnxValueInfo& input : model.inputs) {
      WEFT_ASSIGN_OR_RETURN(TensorSignature s, FromOnnx(input, "input"));
      signature.inputs.push_back(std::move(s));
    }
    for (const OnnxValueInfo& output : model.outputs) {
      WEFT_ASSIGN_OR_RETURN(TensorSignature s, FromOnnx(output, "output"));
      signature.outputs.push_back(std::move(s));
    }
    return signature;
  }
  // A weft JSON graph: its placeholders are its inputs.
  for (const NodeDef& node : model.file.graph.nodes()) {
    if (node.op != "Placeholder") continue;
    TensorSignature input;
    input.name = node.name;
    input.tensor = node.name;
    auto dtype = FindAttr<DataType>(node.attrs, "dtype");
    if (!dtype.ok() || !ProtocolDatatype(**dtype)) {
      return InvalidArgumentError("placeholder '" + node.name +
                                  "' has no dtype the inference protocol "
                                  "can carry");
    }
    input.dtype = **dtype;
    if (auto shape = FindAttr<PartialShape>(node.attrs, "shape");
        shape.ok() && (*shape)->rank_known()) {
      input.shape = (*shape)->dims();
    }
    signature.inputs.push_back(std::move(input));
  }
  for (const std::string& output : model.file.outputs) {
    TensorSignature out;
    out.name = output;
    out.tensor = output;
    signature.outputs.push_back(std::move(out));
  }
  return signature;
}

std::string ShapeText(const std::optional<std::vector<int64_t>>& shape) {
  if (!shape) return "<unknown rank>";
  std::string text = "[";
  for (size_t i = 0; i < shape->size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string((*shape)[i]);
  }
  return text + "]";
}

std::optional<NamedTensors> ZeroFeeds(const ModelSignature& signature,
                                      int64_t rows) {
  NamedTensors feeds;
  for (const TensorSignature& input : signature.inputs) {
    if (!input.shape || !input.dtype) return std::nullopt;
    std::vector<int64_t> dims = *input.shape;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0) dims[i] = i == 0 ? rows : 1;
    }
    auto zeros = Tensor::Create(*input.dtype, Shape(dims));
    if (!zeros.ok()) return std::nullopt;
    feeds.emplace_back(input.tensor, std::move(*zeros));
  }
  return feeds;
}

}  // namespace weft::serve
