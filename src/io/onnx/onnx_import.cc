// ModelProto -> Graph. One pass indexes every tensor's producer (graph input,
// initializer, or node output) and decodes constants; a second converts each
// node (onnx_ops.cc) with its inputs as weft references ("node:k").
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/large_buffer.h"
#include "io/onnx/contrib_ops.h"
#include "io/onnx/function_ops.h"
#include "io/onnx/lifted_raw_data.h"
#include "io/onnx/onnx_functions.h"
#include "io/onnx/onnx_ops.h"
#include "io/onnx/opset_versions.h"
#include "io/onnx/tensor_proto.h"
#include "runtime/kernel_services.h"
#include "weft/file_status.h"
#include "weft/onnx.h"

namespace weft {
namespace {

using internal::ExpandedNodes;
using internal::ExpandFunctions;
using internal::ExternalDataRoot;
using internal::FunctionSize;
using internal::FunctionTable;
using internal::IndexFunctions;
using internal::IsDefaultDomain;
using internal::IsTrainingOptimizer;
using internal::kFirstFullOpset;
using internal::kMaxOpset;
using internal::kMinOpset;
using internal::MeasureExpansion;
using internal::OnnxTensorTypeString;
using internal::OnnxTypeName;
using internal::VersionAtOpset7;

// A weft node name from an ONNX name: the characters weft reserves
// (":" for output indices, "^" for control inputs, white space) become "_".
std::string Sanitize(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (c == ':' || c == '^' || std::isspace(static_cast<unsigned char>(c))) {
      c = '_';
    }
  }
  return out;
}

// Hands out unique weft node names.
class NameAllocator {
 public:
  std::string Take(const std::string& wanted) {
    std::string base = Sanitize(wanted);
    if (base.empty()) base = "node";
    std::string name = base;
    for (int i = 2; !used_.insert(name).second; ++i) {
      name = base + "_" + std::to_string(i);
    }
    return name;
  }

 private:
  std::set<std::string> used_;
};

std::string Reference(const std::string& node, int output) {
  return output == 0 ? node : node + ":" + std::to_string(output);
}

StatusOr<OnnxValueInfo> ValueInfo(const onnx::ValueInfoProto& proto,
                                  const char* role) {
  OnnxValueInfo info;
  info.name = proto.name();
  const std::string what = std::string(role) + " '" + proto.name() + "'";
  if (proto.name().empty()) {
    return InvalidArgumentError(std::string("a graph ") + role +
                                " has an empty name");
  }
  if (!proto.has_type()) return info;  // Undeclared: anything goes.
  const onnx::TypeProto& type = proto.type();
  WEFT_ASSIGN_OR_RETURN(const int32_t code,
                        internal::OnnxValueTypeCode(type, what));
  info.onnx_type =
      code & ~(internal::kOnnxSequenceBit | internal::kOnnxOptionalBit);
  info.dtype = internal::FromOnnxValueType(code);
  info.type_name = internal::OnnxValueTypeString(code);
  if (!type.has_tensor_type()) return info;  // A container: no shape.
  const auto& tensor = type.tensor_type();
  if (tensor.has_shape()) {
    info.rank_known = true;
    for (const auto& dim : tensor.shape().dim()) {
      OnnxDim d;
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0) {
          return InvalidArgumentError(
              what + ": dimension " + std::to_string(info.dims.size()) +
              " is negative (" + std::to_string(dim.dim_value()) + ")");
        }
        d.size = dim.dim_value();
      } else if (dim.has_dim_param()) {
        d.symbol = dim.dim_param();
      }
      info.dims.push_back(std::move(d));
    }
  }
  return info;
}

// The dtype a subgraph's Placeholder declares when the file does not: the
// calling node binds the real one when it compiles the subgraph.
constexpr DataType kAnyDtype = DataType::kFloat32;

NodeDef PlaceholderNode(const std::string& name, DataType dtype) {
  return {name, "Placeholder", {}, {{"dtype", dtype}}, ""};
}

NodeDef ConstNode(const std::string& name, Tensor value) {
  const DataType dtype = value.dtype();
  return {
      name, "Const", {}, {{"value", std::move(value)}, {"dtype", dtype}}, ""};
}

int32_t OnnxTypeOf(DataType dtype) {
  for (int32_t t = 1; t <= onnx::TensorProto::DataType_MAX; ++t) {
    if (internal::FromOnnxType(t) == dtype) return t;
  }
  return 0;
}

PartialShape ToPartialShape(const OnnxValueInfo& info) {
  if (!info.rank_known) return PartialShape::UnknownRank();
  std::vector<int64_t> dims;
  for (const OnnxDim& d : info.dims) dims.push_back(d.fixed() ? d.size : -1);
  return PartialShape(std::move(dims));
}

// Decodes a Constant node's value into a tensor.
StatusOr<Tensor> ConstantValue(const onnx::NodeProto& node,
                               const ExternalDataRoot& root,
                               const std::string& where) {
  if (node.attribute_size() != 1) {
    return InvalidArgumentError(where + ": needs exactly one value attribute");
  }
  const onnx::AttributeProto& a = node.attribute(0);
  const std::string& key = a.name();
  if (key == "value") {
    return internal::TensorFromProto(a.t(), root,
                                     where + ", attribute 'value'");
  }
  if (key == "value_float") return Tensor::Scalar<float>(a.f());
  if (key == "value_int") return Tensor::Scalar<int64_t>(a.i());
  if (key == "value_floats") {
    std::vector<float> v(a.floats().begin(), a.floats().end());
    return Tensor::Create<float>(Shape{static_cast<int64_t>(v.size())}, v);
  }
  if (key == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    return Tensor::Create<int64_t>(Shape{static_cast<int64_t>(v.size())}, v);
  }
  if (key == "value_string") {
    WEFT_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(DataType::kString, Shape{}));
    *t.data<std::string>() = a.s();
    return t;
  }
  if (key == "value_strings") {
    WEFT_ASSIGN_OR_RETURN(
        Tensor t, Tensor::Create(DataType::kString, Shape{a.strings_size()}));
    std::copy(a.strings().begin(), a.strings().end(), t.data<std::string>());
    return t;
  }
  if (key == "sparse_value") {
    return UnimplementedError(where + ": attribute '" + key +
                              "' is not supported (sparse constants)");
  }
  return InvalidArgumentError(where + ": unknown attribute '" + key + "'");
}

class Importer {
 public:
  // `lifted`: the raw_data of the main graph's initializers that
  // LiftInitializerRawData took out of `model`'s bytes (nullptr: none).
  Importer(const onnx::ModelProto& model, std::string base_dir,
           const std::vector<std::optional<std::string_view>>* lifted = nullptr)
      : model_(model),
        root_{std::move(base_dir)},
        lifted_(lifted),
        functions_(std::make_shared<FunctionTable>(IndexFunctions(model))) {}

  // The importer of a subgraph (If's branches, Loop's and Scan's bodies)
  // of a node that `parent` converts. Names the subgraph reads from outer
  // scopes become its captures.
  explicit Importer(Importer* parent)
      : model_(parent->model_),
        root_(parent->root_),
        opset_(parent->opset_),
        parent_(parent),
        functions_(parent->functions_) {}

  StatusOr<OnnxModel> Import() {
    WEFT_RETURN_IF_ERROR(ReadHeader());
    const onnx::GraphProto& g = model_.graph();
    IndexDeclaredTypes(g);
    WEFT_RETURN_IF_ERROR(AddInitializers(g));
    WEFT_RETURN_IF_ERROR(AddInputs(g));
    WEFT_RETURN_IF_ERROR(AddNodes(g));
    WEFT_RETURN_IF_ERROR(AddOutputs(g));
    return std::move(result_);
  }

 private:
  Status ReadHeader() {
    result_.ir_version = model_.ir_version();
    result_.producer_name = model_.producer_name();
    result_.producer_version = model_.producer_version();
    if (!model_.has_graph()) {
      return InvalidArgumentError("the model has no graph");
    }
    OnnxModelMetadata& metadata = result_.metadata;
    metadata.domain = model_.domain();
    metadata.description = model_.doc_string();
    metadata.model_version = model_.model_version();
    metadata.graph_name = model_.graph().name();
    metadata.graph_description = model_.graph().doc_string();
    for (const auto& prop : model_.metadata_props()) {
      metadata.custom.emplace_back(prop.key(), prop.value());
    }
    bool has_default = false;
    for (const auto& opset : model_.opset_import()) {
      result_.opsets.emplace_back(opset.domain(), opset.version());
      if (IsDefaultDomain(opset.domain())) {
        has_default = true;
        opset_ = opset.version();
      }
    }
    if (model_.opset_import_size() == 0 && model_.ir_version() < 3) {
      has_default = true;  // IR 1-2 predate opset_import: opset 1.
      opset_ = 1;
    }
    // A model of other domains only (training ops, say) gets no default
    // opset; its nodes are refused by domain.
    if (has_default && (opset_ < kMinOpset || opset_ > kMaxOpset)) {
      return UnimplementedError("opset " + std::to_string(opset_) +
                                " of the default domain is not supported "
                                "(weft reads opsets " +
                                std::to_string(kMinOpset) + " to " +
                                std::to_string(kMaxOpset) + ")");
    }
    return Status::OK();
  }

  // The element type (and dims, where it declares a shape; -1 for a dim
  // that is not fixed) the file declares for a tensor: graph inputs and
  // outputs, value_info, initializers and Constant values. 0: unknown.
  void IndexDeclaredTypes(const onnx::GraphProto& g) {
    for (const auto* list : {&g.input(), &g.output(), &g.value_info()}) {
      for (const onnx::ValueInfoProto& v : *list) {
        // A type weft cannot hold is reported where the value is used.
        auto code = internal::OnnxValueTypeCode(v.type(), v.name());
        if (v.has_type() && code.ok()) declared_type_[v.name()] = *code;
        if (v.type().tensor_type().has_shape()) {
          std::vector<int64_t>& dims = declared_dims_[v.name()];
          for (const auto& d : v.type().tensor_type().shape().dim()) {
            dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
          }
        }
      }
    }
    for (const onnx::TensorProto& t : g.initializer()) {
      declared_type_[t.name()] = t.data_type();
      declared_dims_[t.name()].assign(t.dims().begin(), t.dims().end());
    }
  }

  // Converts a subgraph: its parameters become Placeholders, its nodes and
  // initializers nodes of its own graph. Finish() completes it.
  Status ImportSubgraph(const onnx::GraphProto& g) {
    IndexDeclaredTypes(g);
    WEFT_RETURN_IF_ERROR(AddInitializers(g));
    for (const onnx::ValueInfoProto& input : g.input()) {
      if (constants_.count(input.name())) continue;
      WEFT_ASSIGN_OR_RETURN(OnnxValueInfo info,
                            ValueInfo(input, "subgraph input"));
      // The calling node binds the dtype; a declared one only documents.
      const std::optional<DataType> dtype = info.dtype;
      if (input.has_type() && !dtype) {
        return UnimplementedError("subgraph input '" + info.name + "': dtype " +
                                  info.type_name + " is not supported");
      }
      const std::string name = names_.Take(info.name);
      WEFT_RETURN_IF_ERROR(
          graph().AddNode(PlaceholderNode(name, dtype.value_or(kAnyDtype))));
      WEFT_RETURN_IF_ERROR(
          Produce(info.name, name, "subgraph input '" + info.name + "'"));
      parameters_.push_back(name);
    }
    WEFT_RETURN_IF_ERROR(AddNodes(g));
    for (const onnx::ValueInfoProto& output : g.output()) {
      WEFT_ASSIGN_OR_RETURN(OnnxValueInfo info,
                            ValueInfo(output, "subgraph output"));
      WEFT_ASSIGN_OR_RETURN(std::string ref, Resolve(info.name));
      outputs_.push_back(std::move(ref));
      auto declared = declared_type_.find(info.name);
      output_types_.push_back(
          declared != declared_type_.end() ? declared->second : 0);
    }
    return Status::OK();
  }

  // The ONNX names this subgraph reads from outer scopes, in first-read
  // order.
  const std::vector<std::string>& captures() const { return captures_; }
  // The element types its outputs declare (0: undeclared).
  const std::vector<int32_t>& output_types() const { return output_types_; }

  // The converted subgraph. Its inputs are its parameters, then one
  // Placeholder per name of `captures` (a superset of captures(), in the
  // calling node's order).
  StatusOr<SubgraphPtr> Finish(const std::vector<std::string>& captures) {
    auto sub = std::make_shared<Subgraph>();
    sub->inputs = parameters_;
    for (const std::string& name : captures) {
      WEFT_ASSIGN_OR_RETURN(std::string ref, CapturePlaceholder(name));
      sub->inputs.push_back(std::move(ref));
    }
    sub->outputs = outputs_;
    sub->graph = std::move(graph());
    return SubgraphPtr(std::move(sub));
  }

  Status Produce(const std::string& tensor, std::string reference,
                 const std::string& by) {
    if (tensor.empty()) return Status::OK();
    auto [it, inserted] = producer_.emplace(tensor, std::move(reference));
    if (!inserted) {
      return InvalidArgumentError("tensor '" + tensor +
                                  "' is produced twice (again by " + by + ")");
    }
    return Status::OK();
  }

  // g's initializers, with their raw_data from lifted_ where it was lifted
  // (the main graph's only: a subgraph's importer has none).
  Status AddInitializers(const onnx::GraphProto& g) {
    if (lifted_ != nullptr &&
        lifted_->size() != static_cast<size_t>(g.initializer_size())) {
      return InternalError(
          "the raw data lifted out of the model's bytes are for " +
          std::to_string(lifted_->size()) + " initializers; the graph has " +
          std::to_string(g.initializer_size()));
    }
    for (int i = 0; i < g.initializer_size(); ++i) {
      const onnx::TensorProto& init = g.initializer(i);
      const std::string what = "initializer '" + init.name() + "'";
      if (init.name().empty()) {
        return InvalidArgumentError("an initializer has an empty name");
      }
      WEFT_ASSIGN_OR_RETURN(
          Tensor value, internal::TensorFromProto(
                            init, root_, what,
                            lifted_ != nullptr ? (*lifted_)[i] : std::nullopt));
      const std::string name = names_.Take(init.name());
      WEFT_RETURN_IF_ERROR(Produce(init.name(), name, what));
      constants_[init.name()] = value;
      WEFT_RETURN_IF_ERROR(graph().AddNode(ConstNode(name, std::move(value))));
    }
    if (g.sparse_initializer_size() > 0) {
      return UnimplementedError("sparse initializers are not supported");
    }
    return Status::OK();
  }

  Status AddInputs(const onnx::GraphProto& g) {
    for (const onnx::ValueInfoProto& input : g.input()) {
      if (auto constant = constants_.find(input.name());
          constant != constants_.end()) {
        AddOverridable(input, constant->second);
        continue;
      }
      WEFT_ASSIGN_OR_RETURN(OnnxValueInfo info, ValueInfo(input, "input"));
      if (input.has_type()) {
        const std::optional<DataType> dtype = info.dtype;
        if (!dtype) {
          return UnimplementedError("input '" + info.name + "': dtype " +
                                    OnnxTypeName(info.onnx_type) +
                                    " is not supported");
        }
        info.tensor = names_.Take(info.name);
        WEFT_RETURN_IF_ERROR(graph().AddNode(
            {info.tensor,
             "Placeholder",
             {},
             {{"dtype", *dtype}, {"shape", ToPartialShape(info)}},
             ""}));
      } else {
        return InvalidArgumentError("input '" + info.name +
                                    "' has no type; weft needs its dtype");
      }
      WEFT_RETURN_IF_ERROR(
          Produce(info.name, info.tensor, "input '" + info.name + "'"));
      result_.inputs.push_back(std::move(info));
    }
    return Status::OK();
  }

  // A graph input with an initializer: the initializer is its default (a
  // Const), listed among the overridable initializers with the initializer's
  // dtype and shape (which a feed must have). An input whose declaration
  // does not read stays a plain constant, as before there was this list.
  void AddOverridable(const onnx::ValueInfoProto& input, const Tensor& value) {
    StatusOr<OnnxValueInfo> info = ValueInfo(input, "input");
    auto producer = producer_.find(input.name());
    if (!info.ok() || producer == producer_.end()) return;
    info->tensor = producer->second;
    info->dtype = value.dtype();
    info->rank_known = true;
    info->dims.clear();
    for (int64_t d : value.shape().dims()) info->dims.push_back({d, ""});
    result_.overridable_initializers.push_back(*std::move(info));
  }

  // The graph's nodes, calls of model-local functions expanded, indexed
  // and converted.
  Status AddNodes(const onnx::GraphProto& g) {
    int64_t calls = 0;
    nodes_ = {};
    std::map<const onnx::FunctionProto*, FunctionSize> sizes;
    WEFT_RETURN_IF_ERROR(
        MeasureExpansion(g.node(), *functions_, 0, &sizes).status());
    ExpandFunctions(g.node(), *functions_, &nodes_, &calls);
    WEFT_RETURN_IF_ERROR(ExpandOpsByDefinition());
    WEFT_RETURN_IF_ERROR(IndexNodes(nodes_.nodes));
    for (size_t i = 0; i < nodes_.nodes.size(); ++i) {
      WEFT_RETURN_IF_ERROR(AddNode(*nodes_.nodes[i], static_cast<int>(i)));
    }
    return Status::OK();
  }

  // Names every node and its outputs before any is converted, so that a
  // node may come before its producer in the file (ONNX asks for
  // topological order, but a cycle or a misordered file should get a clear
  // error from the compiler, not "undefined tensor").
  Status IndexNodes(const std::vector<const onnx::NodeProto*>& nodes) {
    node_names_.resize(nodes.size());
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      const onnx::NodeProto& node = *nodes[i];
      std::string wanted = node.name();
      for (const std::string& out : node.output()) {
        if (!out.empty()) {
          wanted = out;
          break;
        }
      }
      if (wanted.empty()) wanted = node.op_type();
      node_names_[i] = names_.Take(wanted);
      const std::string where = Where(node, i);
      for (int k = 0; k < node.output_size(); ++k) {
        WEFT_RETURN_IF_ERROR(
            Produce(node.output(k), Reference(node_names_[i], k), where));
      }
      if (IsDefaultDomain(node.domain()) && node.op_type() == "Constant" &&
          node.output_size() == 1) {
        auto value = ConstantValue(node, root_, where);
        if (value.ok()) {
          declared_type_[node.output(0)] = OnnxTypeOf(value->dtype());
          constants_[node.output(0)] = *std::move(value);
        }
      }
    }
    return Status::OK();
  }

  // The weft reference of ONNX tensor `name` in this graph. In a subgraph, a
  // name of an outer scope becomes a copy of the constant or a capture.
  StatusOr<std::string> Resolve(const std::string& name) {
    if (auto it = producer_.find(name); it != producer_.end()) {
      return it->second;
    }
    if (parent_ == nullptr) {
      return InvalidArgumentError("input '" + name +
                                  "' is not produced by any node, input or "
                                  "initializer");
    }
    if (const Tensor* value = parent_->FindConstant(name)) {
      const std::string node = names_.Take(name);
      WEFT_RETURN_IF_ERROR(graph().AddNode(ConstNode(node, *value)));
      producer_[name] = node;
      constants_[name] = *value;
      return node;
    }
    auto outer = parent_->Resolve(name);
    if (!outer.ok()) return outer.status();
    return CapturePlaceholder(name);
  }

  // The Placeholder standing for outer-scope tensor `name`, made on first
  // use.
  StatusOr<std::string> CapturePlaceholder(const std::string& name) {
    if (auto it = captured_.find(name); it != captured_.end()) {
      return it->second;
    }
    const std::string node = names_.Take(name);
    WEFT_RETURN_IF_ERROR(graph().AddNode(PlaceholderNode(node, kAnyDtype)));
    producer_.emplace(name, node);
    captured_[name] = node;
    captures_.push_back(name);
    return node;
  }

  const Tensor* FindConstant(const std::string& name) const {
    if (auto it = constants_.find(name); it != constants_.end()) {
      return &it->second;
    }
    // A name this scope produces hides an outer constant of that name.
    if (producer_.count(name) || parent_ == nullptr) return nullptr;
    return parent_->FindConstant(name);
  }

  int32_t FindDeclaredType(const std::string& name) const {
    if (auto it = declared_type_.find(name); it != declared_type_.end()) {
      return it->second;
    }
    return parent_ == nullptr ? 0 : parent_->FindDeclaredType(name);
  }

  std::optional<std::vector<int64_t>> FindDeclaredDims(
      const std::string& name) const {
    if (auto it = declared_dims_.find(name); it != declared_dims_.end()) {
      return it->second;
    }
    if (declared_type_.count(name) || parent_ == nullptr) return std::nullopt;
    return parent_->FindDeclaredDims(name);
  }

  // Output dtypes a subgraph does not declare, found by compiling it with
  // its parameters bound to the declared types of what the node passes
  // (Loop's iteration and condition: int64 and bool). Fails, naming the
  // output, when one of those is not declared either.
  Status InferOutputDtypes(const onnx::NodeProto& node,
                           const SubgraphPtr& subgraph,
                           const std::vector<std::string>& captures,
                           size_t skip, size_t undeclared,
                           const std::string& where,
                           std::vector<DataType>& tout) {
    const std::string& op = node.op_type();
    std::vector<std::string> passed;  // ONNX names bound to parameters.
    if (op == "Loop") {
      for (int i = 2; i < node.input_size(); ++i)
        passed.push_back(node.input(i));
    } else if (op == "Scan") {
      // Opset 8's sequence_lens is no parameter; it is empty (checked).
      for (int i = opset_ < 9 ? 1 : 0; i < node.input_size(); ++i) {
        passed.push_back(node.input(i));
      }
    } else if (op == "SequenceMap") {
      passed.assign(node.input().begin(), node.input().end());
    }
    passed.insert(passed.end(), captures.begin(), captures.end());
    std::vector<internal::CompiledSubgraph::Binding> bindings;
    if (op == "Loop") {
      bindings.push_back({DataType::kInt64, {}});
      bindings.push_back({DataType::kBool, {}});
    }
    for (size_t i = 0; i < passed.size(); ++i) {
      const std::string& name = passed[i];
      auto dtype = internal::FromOnnxValueType(FindDeclaredType(name));
      if (!dtype) {
        return UnimplementedError(where + ": subgraph output " +
                                  std::to_string(undeclared) +
                                  " declares no type, nor does '" + name +
                                  "', from which weft would infer it");
      }
      // SequenceMap's body takes one item of each sequence it is given.
      const bool per_item = op == "SequenceMap" &&
                            i < static_cast<size_t>(node.input_size()) &&
                            IsSequenceType(*dtype);
      bindings.push_back({per_item ? ContainedType(*dtype) : *dtype, {}});
    }
    auto compiled = internal::CompiledSubgraph::Compile(*subgraph, bindings,
                                                        "the subgraph");
    if (!compiled.ok()) return compiled.status().WithContext(where);
    for (size_t k = 0; k < tout.size(); ++k) {
      tout[k] = (*compiled)->output_dtype(static_cast<int>(k + skip));
      if (op == "SequenceMap") tout[k] = SequenceOf(tout[k]);
    }
    return Status::OK();
  }

  // A control-flow node's graph attributes (If's branches, the body of
  // Loop, Scan or SequenceMap), imported, and the outer-scope names they
  // read, in order of first use.
  struct ControlFlowBodies {
    std::vector<std::unique_ptr<Importer>> importers;
    std::vector<std::string> attr_names;  // One per importer.
    std::vector<std::string> captures;
  };

  // What the subgraph outputs declare, past Loop's condition: a node's Tout.
  struct ControlFlowOutputs {
    std::vector<DataType> tout;
    size_t skip = 0;                   // 1 for Loop (its condition).
    std::optional<size_t> undeclared;  // The first output with no type.
  };

  // If, Loop, Scan and SequenceMap: their graph attributes become kGraph
  // attributes, and what the subgraphs read of outer scopes becomes extra
  // inputs after the node's own (num_captures of them but for If). Four
  // steps: import the bodies, read their output types, infer the ones not
  // declared, then bind the op's inputs and attributes.
  Status AddControlFlow(const onnx::NodeProto& node, NodeDef& def,
                        std::vector<std::string> inputs,
                        const std::string& where) {
    const std::string& op = node.op_type();
    // Scan before opset 9: a batch axis first on every state and scan
    // input, and sequence_lens first among the inputs.
    const bool batched_scan = op == "Scan" && opset_ < 9;
    if (batched_scan && node.input_size() > 0 && !node.input(0).empty()) {
      return UnimplementedError(where +
                                ": Scan's sequence_lens (opset 8) is not "
                                "supported");
    }
    WEFT_ASSIGN_OR_RETURN(ControlFlowBodies bodies,
                          ImportControlFlowBodies(node, where));
    WEFT_ASSIGN_OR_RETURN(
        ControlFlowOutputs outputs,
        ControlFlowOutputTypes(node, bodies, inputs.size(), where));
    for (size_t s = 0; s < bodies.importers.size(); ++s) {
      WEFT_ASSIGN_OR_RETURN(SubgraphPtr graph,
                            bodies.importers[s]->Finish(bodies.captures));
      def.attrs[bodies.attr_names[s]] = std::move(graph);
    }
    if (outputs.undeclared) {
      WEFT_RETURN_IF_ERROR(InferOutputDtypes(
          node, *def.attrs[bodies.attr_names[0]].get_if<SubgraphPtr>(),
          bodies.captures, outputs.skip, *outputs.undeclared, where,
          outputs.tout));
    }
    for (const std::string& name : bodies.captures) {
      WEFT_ASSIGN_OR_RETURN(std::string ref, Resolve(name));
      inputs.push_back(std::move(ref));
    }
    def.op = op;
    def.attrs["Tout"] = outputs.tout;
    WEFT_RETURN_IF_ERROR(BindControlFlowInputs(
        node, bodies.captures.size(), batched_scan, where, def, inputs));
    for (const std::string& input : inputs) {
      if (input.empty()) {
        return InvalidArgumentError(where + ": an input is empty");
      }
    }
    def.inputs = std::move(inputs);
    return graph().AddNode(std::move(def)).WithContext(where);
  }

  StatusOr<ControlFlowBodies> ImportControlFlowBodies(
      const onnx::NodeProto& node, const std::string& where) {
    const std::string& op = node.op_type();
    ControlFlowBodies bodies;
    std::vector<std::unique_ptr<Importer>>& subs = bodies.importers;
    std::vector<std::string>& attr_names = bodies.attr_names;
    std::vector<std::string>& captures = bodies.captures;
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.type() != onnx::AttributeProto::GRAPH) continue;
      auto sub = std::make_unique<Importer>(this);
      Status status = sub->ImportSubgraph(a.g());
      if (!status.ok()) {
        return status.WithContext(where + ", attribute '" + a.name() + "'");
      }
      for (const std::string& name : sub->captures()) {
        if (std::find(captures.begin(), captures.end(), name) ==
            captures.end()) {
          captures.push_back(name);
        }
      }
      attr_names.push_back(a.name());
      subs.push_back(std::move(sub));
    }
    const std::vector<std::string> wanted =
        op == "If" ? std::vector<std::string>{"then_branch", "else_branch"}
                   : std::vector<std::string>{"body"};
    for (const std::string& name : wanted) {
      if (std::find(attr_names.begin(), attr_names.end(), name) ==
          attr_names.end()) {
        return InvalidArgumentError(where + ": graph attribute '" + name +
                                    "' is missing");
      }
    }
    return bodies;
  }

  StatusOr<ControlFlowOutputs> ControlFlowOutputTypes(
      const onnx::NodeProto& node, const ControlFlowBodies& bodies,
      size_t num_inputs, const std::string& where) const {
    const std::string& op = node.op_type();
    const std::vector<std::unique_ptr<Importer>>& subs = bodies.importers;
    ControlFlowOutputs outputs;
    std::vector<DataType>& tout = outputs.tout;
    std::optional<size_t>& undeclared = outputs.undeclared;
    const Importer& first = *subs[0];
    outputs.skip = op == "Loop" ? 1 : 0;
    for (size_t i = outputs.skip; i < first.output_types().size(); ++i) {
      int32_t type = first.output_types()[i];
      if (type == 0 && subs.size() > 1 && i < subs[1]->output_types().size()) {
        type = subs[1]->output_types()[i];
      }
      auto dtype = internal::FromOnnxValueType(type);
      if (!dtype && type != 0) {
        return UnimplementedError(
            where + ": subgraph output " + std::to_string(i) + " has dtype " +
            internal::OnnxValueTypeString(type) + ", which is not supported");
      }
      if (!dtype && !undeclared) undeclared = i;
      // SequenceMap collects each body output into a sequence.
      if (dtype && op == "SequenceMap") {
        if (IsContainerType(*dtype)) {
          return UnimplementedError(
              where + ": body output " + std::to_string(i) + " is " +
              DataTypeName(*dtype) + "; SequenceMap's outputs must be tensors");
        }
        dtype = SequenceOf(*dtype);
      }
      tout.push_back(dtype.value_or(DataType::kFloat32));
    }
    if (op == "Loop" && num_inputs >= 2 &&
        first.output_types().size() < num_inputs - 1) {
      return InvalidArgumentError(
          where + ": the body has " +
          std::to_string(first.output_types().size()) +
          " outputs; it must give the condition and the " +
          std::to_string(num_inputs - 2) +
          " loop-carried values, then any scan outputs");
    }
    if (static_cast<size_t>(node.output_size()) > tout.size()) {
      return InvalidArgumentError(
          where + ": the node has " + std::to_string(node.output_size()) +
          " outputs; its subgraph gives " + std::to_string(tout.size()));
    }
    return outputs;
  }

  // The op's own inputs and attributes: Loop's optional M and cond, Scan's
  // scan attributes (and opset 8's batch axis), the capture count.
  Status BindControlFlowInputs(const onnx::NodeProto& node, size_t num_captures,
                               bool batched_scan, const std::string& where,
                               NodeDef& def, std::vector<std::string>& inputs) {
    const std::string& op = node.op_type();
    if (op == "If") {
      if (inputs.empty() || inputs[0].empty()) {
        return InvalidArgumentError(where + ": input 'cond' is missing");
      }
    } else if (op == "Loop") {
      if (inputs.size() < 2 + num_captures) {
        return InvalidArgumentError(where +
                                    ": Loop needs inputs M and cond (either "
                                    "may be empty)");
      }
      def.attrs["has_trip_count"] = !inputs[0].empty();
      def.attrs["has_condition"] = !inputs[1].empty();
      def.attrs["num_captures"] = static_cast<int64_t>(num_captures);
      std::vector<std::string> present;
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].empty()) {
          present.push_back(inputs[i]);
        } else if (i >= 2) {
          return InvalidArgumentError(where + ": loop-carried input " +
                                      std::to_string(i) + " is empty");
        }
      }
      inputs = std::move(present);
    } else if (op == "SequenceMap") {
      def.attrs["num_captures"] = static_cast<int64_t>(num_captures);
      if (inputs.empty() || inputs[0].empty()) {
        return InvalidArgumentError(where +
                                    ": input 'input_sequence' is missing");
      }
    } else {  // Scan
      def.attrs["num_captures"] = static_cast<int64_t>(num_captures);
      if (batched_scan) {
        inputs.erase(inputs.begin());  // The omitted sequence_lens.
        def.attrs["batched"] = true;
      }
      for (const onnx::AttributeProto& a : node.attribute()) {
        if (a.name() == "num_scan_inputs" &&
            a.type() == onnx::AttributeProto::INT) {
          def.attrs[a.name()] = a.i();
        } else if (batched_scan && a.name() == "directions" &&
                   a.type() == onnx::AttributeProto::INTS) {
          def.attrs["scan_input_directions"] =
              std::vector<int64_t>(a.ints().begin(), a.ints().end());
        } else if (a.name().starts_with("scan_") &&
                   a.type() == onnx::AttributeProto::INTS) {
          def.attrs[a.name()] =
              std::vector<int64_t>(a.ints().begin(), a.ints().end());
        } else if (a.type() != onnx::AttributeProto::GRAPH) {
          return InvalidArgumentError(where + ": unexpected attribute '" +
                                      a.name() + "'");
        }
      }
    }
    return Status::OK();
  }

  // Replaces each node of domain com.microsoft, and each default-domain
  // node ONNX defines as a function (function_ops.h), in nodes_ by the
  // default-domain nodes that compute it (contrib_ops.h).
  Status ExpandOpsByDefinition() {
    std::vector<const onnx::NodeProto*> nodes;
    int64_t expanded = 0;
    const internal::DeclaredFn declared = [this](const std::string& name) {
      return internal::DeclaredValue{FindDeclaredType(name),
                                     FindDeclaredDims(name)};
    };
    for (const onnx::NodeProto* node : nodes_.nodes) {
      const bool contrib = node->domain() == internal::kMicrosoftDomain;
      const bool function = IsDefaultDomain(node->domain()) &&
                            internal::IsFunctionOpExpanded(node->op_type());
      if (!contrib && !function) {
        nodes.push_back(node);
        continue;
      }
      const std::string name =
          node->name().empty() ? node->op_type() : node->name();
      google::protobuf::RepeatedPtrField<onnx::NodeProto>& body =
          nodes_.bodies.emplace_back();
      internal::DeclaredOutputs outputs;
      const std::string prefix = name + "/" + std::to_string(expanded++) + "/";
      WEFT_RETURN_IF_ERROR(
          (contrib ? internal::ExpandContribOp(*node, opset_, prefix, declared,
                                               &body, &outputs)
                   : internal::ExpandFunctionOp(*node, opset_, prefix, declared,
                                                &body, &outputs))
              .WithContext("node '" + name + "'"));
      for (auto& [output, value] : outputs) {
        declared_type_[output] = value.elem_type;
        if (value.dims) declared_dims_[output] = *std::move(value.dims);
      }
      for (const onnx::NodeProto& n : body) nodes.push_back(&n);
    }
    nodes_.nodes = std::move(nodes);
    return Status::OK();
  }

  std::string Where(const onnx::NodeProto& node, int index) const {
    return "node '" + (node.name().empty() ? node_names_[index] : node.name()) +
           "' (ONNX " + node.op_type() + ")";
  }

  Status AddNode(const onnx::NodeProto& node, int index) {
    const std::string where = Where(node, index);
    // Nodes of another domain that weft converts (only an expansion writes
    // the com.microsoft ones: every com.microsoft node of the model was
    // expanded), exempt from the default domain's opset checks.
    const bool training =
        IsTrainingOptimizer(node.domain(), node.op_type()) ||
        internal::IsConvertedContribOp(node.domain(), node.op_type());
    if (!IsDefaultDomain(node.domain()) && !training) {
      if (node.domain() == "ai.onnx.preview.training") {
        return UnimplementedError(where + ": op '" + node.op_type() +
                                  "' of domain 'ai.onnx.preview.training' is "
                                  "not supported (weft imports Adagrad, "
                                  "Adam and Momentum)");
      }
      return UnimplementedError(where + ": domain '" + node.domain() +
                                "' is not supported");
    }
    // The opset checks concern the default domain's definitions.
    if (opset_ == 0 && !training) {
      return InvalidArgumentError(
          where + ": the model imports no opset of the default ONNX domain");
    }
    if (opset_ < kFirstFullOpset && !training) {
      const std::optional<int64_t> version = VersionAtOpset7(node.op_type());
      if (!version || *version > opset_) {
        return UnimplementedError(where + ": opset " + std::to_string(opset_) +
                                  " defines it differently from opset " +
                                  std::to_string(kFirstFullOpset) +
                                  ", the oldest definition weft implements");
      }
    }
    NodeDef def;
    def.name = node_names_[index];
    if (node.op_type() == "Constant") {
      WEFT_ASSIGN_OR_RETURN(Tensor value, ConstantValue(node, root_, where));
      return graph().AddNode(ConstNode(def.name, std::move(value)));
    }
    std::vector<std::string> inputs;
    std::vector<const Tensor*> constants;
    std::vector<int32_t> types;
    for (const std::string& input : node.input()) {
      types.push_back(FindDeclaredType(input));
      if (input.empty()) {
        inputs.emplace_back();
        constants.push_back(nullptr);
        continue;
      }
      auto resolved = Resolve(input);
      if (!resolved.ok()) return resolved.status().WithContext(where);
      inputs.push_back(*std::move(resolved));
      auto c = constants_.find(input);
      constants.push_back(c == constants_.end() ? nullptr : &c->second);
    }
    if (node.op_type() == "If" || node.op_type() == "Loop" ||
        node.op_type() == "Scan" || node.op_type() == "SequenceMap") {
      return AddControlFlow(node, def, std::move(inputs), where);
    }
    internal::OnnxNode onnx_node(node, opset_, def.name, std::move(inputs),
                                 std::move(constants), std::move(types));
    WEFT_RETURN_IF_ERROR(internal::ConvertOnnxNode(onnx_node, &def));
    return graph().AddNode(std::move(def)).WithContext(where);
  }

  Status AddOutputs(const onnx::GraphProto& g) {
    std::set<std::string> seen;
    for (const onnx::ValueInfoProto& output : g.output()) {
      WEFT_ASSIGN_OR_RETURN(OnnxValueInfo info, ValueInfo(output, "output"));
      if (!seen.insert(info.name).second) {
        return InvalidArgumentError("output '" + info.name +
                                    "' is listed twice");
      }
      auto it = producer_.find(info.name);
      if (it == producer_.end()) {
        return InvalidArgumentError("output '" + info.name +
                                    "' is not produced by any node, input "
                                    "or initializer");
      }
      info.tensor = it->second;
      result_.file.outputs.push_back(info.tensor);
      result_.outputs.push_back(std::move(info));
    }
    return Status::OK();
  }

  Graph& graph() { return result_.file.graph; }

  const onnx::ModelProto& model_;
  ExternalDataRoot root_;
  // The main graph's lifted raw_data (in a subgraph's importer: nullptr).
  const std::vector<std::optional<std::string_view>>* lifted_ = nullptr;
  int64_t opset_ = 0;
  Importer* parent_ = nullptr;  // The enclosing graph's, in a subgraph.
  std::shared_ptr<const FunctionTable> functions_;
  ExpandedNodes nodes_;  // The graph's, functions expanded.
  // In a subgraph: its parameters (weft names), outputs (references) and
  // their declared element types, and the outer-scope names it reads.
  std::vector<std::string> parameters_;
  std::vector<std::string> outputs_;
  std::vector<int32_t> output_types_;
  std::vector<std::string> captures_;
  std::map<std::string, std::string> captured_;  // ONNX name -> placeholder.
  NameAllocator names_;
  std::vector<std::string> node_names_;
  std::map<std::string, std::string> producer_;   // ONNX name -> reference.
  std::map<std::string, Tensor> constants_;       // ONNX name -> value.
  std::map<std::string, int32_t> declared_type_;  // ONNX name -> elem type.
  std::map<std::string, std::vector<int64_t>> declared_dims_;
  OnnxModel result_;
};

StatusOr<std::string> ReadFile(const std::string& path) {
  return ReadFileBytes(path, "cannot open the file");
}

// A model file's bytes: `length` bytes at the start of `buffer`.
struct ModelBytes {
  internal::LargeBuffer buffer;
  size_t length = 0;
  std::string_view view() const { return {buffer.data(), length}; }
};

// The whole file at `path` in a LargeBuffer, so that the model's bytes land
// in huge pages (framework/large_buffer.h). A regular file is read straight
// into a buffer of the size stat gives (what it gains after that is not
// read; a file shorter by then is parsed as it is); anything else (a pipe,
// whose size is not known before it is read) through ReadFile, then copied.
StatusOr<ModelBytes> ReadModelFile(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    WEFT_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
    ModelBytes out{internal::LargeBuffer(bytes.size()), bytes.size()};
    if (out.buffer.data() == nullptr) {
      return ResourceExhaustedError("no memory for the model's " +
                                    std::to_string(bytes.size()) + " bytes");
    }
    std::memcpy(out.buffer.data(), bytes.data(), bytes.size());
    return out;
  }
  WEFT_RETURN_IF_ERROR(CheckReadableFile(path, "cannot open the file"));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "cannot open the file");
  const auto size = static_cast<size_t>(info.st_size);
  ModelBytes out{internal::LargeBuffer(size), 0};
  Status read_status;
  if (out.buffer.data() == nullptr) {
    read_status = ResourceExhaustedError("no memory for the model's " +
                                         std::to_string(size) + " bytes");
  }
  while (read_status.ok() && out.length < size) {
    const ssize_t got =
        read(fd, out.buffer.data() + out.length, size - out.length);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) read_status = ErrnoToStatus(errno, "cannot read the file");
    if (got <= 0) break;
    out.length += static_cast<size_t>(got);
  }
  close(fd);
  WEFT_RETURN_IF_ERROR(read_status);
  return out;
}

}  // namespace

std::string OnnxValueInfo::ShapeString() const {
  if (!rank_known) return "<unknown rank>";
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += dims[i].fixed()           ? std::to_string(dims[i].size)
           : !dims[i].symbol.empty() ? dims[i].symbol
                                     : "?";
  }
  return out + "]";
}

namespace {

// Initializers' raw_data from this size are lifted out of the model's
// bytes before protobuf parses them (lifted_raw_data.h); smaller ones cost
// protobuf's parse little.
constexpr size_t kLiftRawDataFrom = 4096;

// Refuses what protobuf cannot parse by its size alone.
Status CheckModelSize(std::string_view bytes) {
  if (bytes.empty()) return InvalidArgumentError("the model file is empty");
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return UnimplementedError(
        "models over 2 GiB must keep their weights in "
        "external data");
  }
  return Status::OK();
}

// `bytes` parsed as an onnx.ModelProto into `model`.
Status ParseModelProto(std::string_view bytes, onnx::ModelProto* model) {
  WEFT_RETURN_IF_ERROR(CheckModelSize(bytes));
  if (!model->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidArgumentError(
        "not an ONNX model: the bytes do not parse as onnx.ModelProto "
        "(truncated or not protobuf)");
  }
  return Status::OK();
}

// The model serialized in `bytes`, whose external data is under `dir`. Its
// large weights are copied from `bytes` themselves, never through strings
// of protobuf's: `bytes` must outlive the call, not the model.
StatusOr<OnnxModel> ImportModelBytes(std::string_view bytes,
                                     const std::string& dir) {
  // The whole model's size, lifted or not.
  WEFT_RETURN_IF_ERROR(CheckModelSize(bytes));
  std::optional<internal::LiftedModel> lifted =
      internal::LiftInitializerRawData(bytes, kLiftRawDataFrom);
  onnx::ModelProto proto;
  WEFT_RETURN_IF_ERROR(
      ParseModelProto(lifted ? lifted->stripped : bytes, &proto));
  if (lifted) lifted->stripped = std::string();  // Parsed: not needed.
  return Importer(proto, dir, lifted ? &lifted->raw_data : nullptr).Import();
}

}  // namespace

StatusOr<OnnxModel> ParseOnnxModel(std::string_view bytes,
                                   const std::string& base_dir) {
  return ImportModelBytes(bytes, base_dir);
}

StatusOr<OnnxModel> LoadOnnxModel(const std::string& path) {
  auto bytes = ReadModelFile(path);
  if (!bytes.ok()) return bytes.status().WithContext(path);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  // The file's bytes stay until the weights are copied out of them.
  auto model = ImportModelBytes(bytes->view(), dir);
  if (!model.ok()) return model.status().WithContext(path);
  return model;
}

namespace {

// Counts the nodes of `g` and its subgraphs by (domain, op type).
void CountOps(const onnx::GraphProto& g,
              std::map<std::pair<std::string, std::string>, int64_t>* counts) {
  for (const onnx::NodeProto& node : g.node()) {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    ++(*counts)[{domain, node.op_type()}];
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) CountOps(a.g(), counts);
      for (const onnx::GraphProto& sub : a.graphs()) CountOps(sub, counts);
    }
  }
}

}  // namespace

StatusOr<OnnxModelSummary> InspectOnnxModel(const std::string& path) {
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status().WithContext(path);
  onnx::ModelProto model;
  if (bytes->size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes->data(), static_cast<int>(bytes->size()))) {
    return InvalidArgumentError(
        path +
        ": not an ONNX model: the bytes do not parse as "
        "onnx.ModelProto (truncated or not protobuf)");
  }
  OnnxModelSummary summary;
  summary.ir_version = model.ir_version();
  summary.producer_name = model.producer_name();
  summary.producer_version = model.producer_version();
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    summary.opsets.emplace_back(opset.domain(), opset.version());
  }
  const onnx::GraphProto& g = model.graph();
  std::set<std::string> initializers;
  for (const onnx::TensorProto& t : g.initializer()) {
    initializers.insert(t.name());
    int64_t count = 1;
    for (int64_t d : t.dims()) {
      if (d < 0 || (d > 0 && count > std::numeric_limits<int64_t>::max() / d)) {
        return InvalidArgumentError(path + ": initializer '" + t.name() +
                                    "' has invalid dims");
      }
      count *= d;
    }
    const auto dtype = internal::FromOnnxType(t.data_type());
    summary.parameter_count += count;
    summary.parameter_bytes +=
        count * static_cast<int64_t>(dtype ? DataTypeSize(*dtype) : 0);
  }
  for (const onnx::ValueInfoProto& v : g.input()) {
    if (initializers.count(v.name())) continue;
    auto info = ValueInfo(v, "input");
    if (!info.ok()) return info.status().WithContext(path);
    summary.inputs.push_back(*std::move(info));
  }
  for (const onnx::ValueInfoProto& v : g.output()) {
    auto info = ValueInfo(v, "output");
    if (!info.ok()) return info.status().WithContext(path);
    summary.outputs.push_back(*std::move(info));
  }
  std::map<std::pair<std::string, std::string>, int64_t> counts;
  CountOps(g, &counts);
  // A call of a model-local function is expanded at load: supported when
  // its body is, which the load itself checks.
  const FunctionTable functions = IndexFunctions(model);
  for (const auto& [key, count] : counts) {
    const bool local = functions.count(key) > 0;
    summary.ops.push_back({key.first, key.second, count,
                           local ||
                               (key.first.empty() &&
                                (internal::IsOnnxOpSupported(key.second) ||
                                 internal::IsFunctionOpExpanded(key.second))) ||
                               (key.first == internal::kMicrosoftDomain &&
                                internal::IsContribOpSupported(key.second))});
  }
  std::stable_sort(
      summary.ops.begin(), summary.ops.end(),
      [](const OnnxOpUse& a, const OnnxOpUse& b) { return a.count > b.count; });
  return summary;
}

StatusOr<Tensor> ParseOnnxTensor(std::string_view bytes, std::string* name) {
  onnx::TensorProto proto;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidArgumentError("not an ONNX TensorProto");
  }
  if (name != nullptr) *name = proto.name();
  const std::string what =
      proto.name().empty() ? "tensor" : "tensor '" + proto.name() + "'";
  return internal::TensorFromProto(proto, ExternalDataRoot{}, what);
}

StatusOr<Tensor> LoadOnnxValue(const std::string& path, DataType dtype,
                               std::string* name) {
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status().WithContext(path);
  auto value = internal::ValueFromBytes(*bytes, dtype, "the value", name);
  if (!value.ok()) return value.status().WithContext(path);
  return value;
}

StatusOr<Tensor> LoadOnnxTensor(const std::string& path, std::string* name) {
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status().WithContext(path);
  auto tensor = ParseOnnxTensor(*bytes, name);
  if (!tensor.ok()) return tensor.status().WithContext(path);
  return tensor;
}

}  // namespace weft
