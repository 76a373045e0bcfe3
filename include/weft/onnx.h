// ONNX models: a .onnx file becomes the same GraphFile the JSON loader gives.
//
//   auto model = weft::LoadOnnxModel("resnet18.onnx");
//   if (!model.ok()) ...  // names the node, tensor or field at fault
//   auto session = weft::Session::Create(std::move(model->file.graph));
//   // Feed model->inputs[i].tensor, fetch model->outputs[i].tensor.
//
// The file is parsed with the ONNX project's own protobuf definitions
// (onnx::ModelProto). Initializers become Const nodes; external data
// (data_location = EXTERNAL) is read relative to the model's folder and may
// not leave it. The default domain's opsets 7 to 17 are accepted. An op,
// attribute, opset or dtype that weft does not implement is an Unimplemented
// status naming it; anything malformed is InvalidArgument.
#ifndef WEFT_ONNX_H_
#define WEFT_ONNX_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/graph_io.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

// One dimension of a declared shape: a size, a symbol ("batch") or unknown.
struct OnnxDim {
  int64_t size = -1;   // >= 0 when fixed.
  std::string symbol;  // Set for a symbolic dimension.
  bool fixed() const { return size >= 0; }
};

// A declared graph input or output.
struct OnnxValueInfo {
  std::string name;  // The ONNX tensor name.
  std::string
      tensor;  // What to feed or fetch in the Graph: "node" or "node:k".
  // onnx::TensorProto::DataType of the tensor, or of the tensors a
  // sequence or optional holds; 0 when undeclared.
  int32_t onnx_type = 0;
  // weft's dtype for the value, containers included (weft/tensor.h);
  // nullopt when undeclared or when weft has none.
  std::optional<DataType> dtype;
  // "tensor(float)", "seq(tensor(float))", as ONNX Runtime prints it.
  std::string type_name;
  bool rank_known = false;
  std::vector<OnnxDim> dims;
  // "[batch, 3, 224, 224]", "[?, 10]", "<unknown rank>".
  std::string ShapeString() const;
};

// What a ModelProto says about itself, as ONNX Runtime's ModelMetadata
// reports it: the model's domain, doc string and version, its graph's name
// and doc string, and the metadata_props map (custom keys, in file order).
struct OnnxModelMetadata {
  std::string domain, description;  // ModelProto.domain, .doc_string.
  int64_t model_version = 0;
  std::string graph_name, graph_description;  // GraphProto.name, .doc_string.
  std::vector<std::pair<std::string, std::string>> custom;
};

struct OnnxModel {
  GraphFile file;  // file.outputs lists outputs[i].tensor in order.
  std::vector<OnnxValueInfo> inputs;  // Initializers are not inputs.
  std::vector<OnnxValueInfo> outputs;
  // Graph inputs that also have an initializer: a default value a Run may
  // feed instead (ONNX Runtime's overridable initializers). .tensor is the
  // Const node that holds the default.
  std::vector<OnnxValueInfo> overridable_initializers;
  int64_t ir_version = 0;
  std::string producer_name, producer_version;
  std::vector<std::pair<std::string, int64_t>> opsets;  // domain, version
  OnnxModelMetadata metadata;
};

// Parses a serialized ModelProto. External data resolves against base_dir.
StatusOr<OnnxModel> ParseOnnxModel(std::string_view bytes,
                                   const std::string& base_dir);

// Reads and parses a .onnx file; errors start with the path.
StatusOr<OnnxModel> LoadOnnxModel(const std::string& path);

// What a model holds, read without converting it (so a model with ops weft
// lacks can still be described): for `weft info MODEL.onnx`.
struct OnnxOpUse {
  std::string domain;  // "" for the default domain.
  std::string op_type;
  int64_t count = 0;       // Nodes of this op, subgraphs included.
  bool supported = false;  // weft converts it (default domain only).
};
struct OnnxModelSummary {
  int64_t ir_version = 0;
  std::string producer_name, producer_version;
  std::vector<std::pair<std::string, int64_t>> opsets;  // domain, version
  std::vector<OnnxValueInfo> inputs;   // Initializers are not inputs.
  std::vector<OnnxValueInfo> outputs;  // .tensor is empty here.
  int64_t parameter_count = 0;         // Elements of all initializers.
  int64_t parameter_bytes = 0;         // Their size in memory.
  std::vector<OnnxOpUse> ops;          // Most used first, then by name.
};
StatusOr<OnnxModelSummary> InspectOnnxModel(const std::string& path);

// A serialized onnx::TensorProto (the input_K.pb / output_K.pb files of the
// ONNX test cases) as a Tensor. Its name, when it has one, goes to *name.
// For a model's sequence or optional values, LoadOnnxValue below.
StatusOr<Tensor> ParseOnnxTensor(std::string_view bytes,
                                 std::string* name = nullptr);
StatusOr<Tensor> LoadOnnxTensor(const std::string& path,
                                std::string* name = nullptr);
// A test file holding a value of dtype `dtype`: a TensorProto for a tensor
// dtype, a SequenceProto for a sequence, an OptionalProto for an optional.
// Fails when the file holds something else.
StatusOr<Tensor> LoadOnnxValue(const std::string& path, DataType dtype,
                               std::string* name = nullptr);

}  // namespace weft

#endif  // WEFT_ONNX_H_
