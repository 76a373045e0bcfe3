// The machinery of expanding one ONNX node at load into other
// default-domain nodes of the same meaning: com.microsoft ops
// (contrib_ops.h) and the default-domain ops ONNX defines as functions of
// others (function_ops.h). An expansion's nodes write the node's outputs
// under their names and name everything else under a prefix of its own.
#ifndef WEFT_SRC_IO_ONNX_EXPANSION_H_
#define WEFT_SRC_IO_ONNX_EXPANSION_H_

#include <google/protobuf/repeated_ptr_field.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/status.h"

namespace weft::internal {

// What the model declares of a value: its ONNX element type (0: unknown)
// and, when it declares a shape, its dims (-1 for one that is not fixed).
struct DeclaredValue {
  int32_t elem_type = 0;
  std::optional<std::vector<int64_t>> dims;
};
using DeclaredFn = std::function<DeclaredValue(const std::string&)>;
// What an expansion declares of the node's outputs, by name (the rank of
// EmbedLayerNormalization's mask_index, which Attention reads).
using DeclaredOutputs = std::map<std::string, DeclaredValue>;

using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

// Attributes to give the nodes an expansion appends.
onnx::AttributeProto Named(const std::string& name,
                           onnx::AttributeProto::AttributeType type);
onnx::AttributeProto IntAttr(const std::string& name, int64_t value);
onnx::AttributeProto FloatAttr(const std::string& name, float value);
onnx::AttributeProto IntsAttr(const std::string& name,
                              const std::vector<int64_t>& values);
onnx::AttributeProto StringAttr(const std::string& name,
                                const std::string& value);

// The node's attribute `name`, or nullptr; its int or float value, or
// `value` when the node has none.
const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node,
                                     const std::string& name);
int64_t IntOr(const onnx::NodeProto& node, const std::string& name,
              int64_t value);
float FloatOr(const onnx::NodeProto& node, const std::string& name,
              float value);

// The node's attributes but those named in `dropped`.
std::vector<onnx::AttributeProto> AttrsBut(
    const onnx::NodeProto& node, const std::vector<std::string>& dropped);

// Builds one node's expansion: the nodes it appends read the node's inputs
// and write its outputs by their names; the values in between are named
// "<prefix><hint><count>".
class Expansion {
 public:
  Expansion(const onnx::NodeProto& node, int64_t opset, std::string prefix,
            const DeclaredFn& declared, Nodes* out,
            DeclaredOutputs* declared_outputs)
      : node_(node),
        opset_(opset),
        prefix_(std::move(prefix)),
        declared_(declared),
        out_(out),
        declared_outputs_(declared_outputs) {}

  const onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  // "com.microsoft X", or "ONNX X" for the default domain: the start of
  // every error about the node.
  std::string Where() const {
    return (node_.domain().empty() || node_.domain() == "ai.onnx"
                ? std::string("ONNX")
                : node_.domain()) +
           " " + node_.op_type();
  }

  // What the model declares of input i (which the node must have).
  DeclaredValue Declared(int i) const { return declared_(in(i)); }

  bool has_in(int i) const {
    return i < node_.input_size() && !node_.input(i).empty();
  }
  // Input i's name; "" when omitted.
  std::string in(int i) const { return has_in(i) ? node_.input(i) : ""; }
  int num_inputs() const { return node_.input_size(); }
  bool wants_out(int i) const {
    return i < node_.output_size() && !node_.output(i).empty();
  }
  // Output i's name: "" when the model does not ask for it.
  std::string out(int i) const { return wants_out(i) ? node_.output(i) : ""; }

  // Appends `op` with these inputs and outputs, of the default domain or
  // `domain` (a com.microsoft op weft converts as it is).
  void AddNode(const std::string& op, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs,
               const std::vector<onnx::AttributeProto>& attrs = {},
               const std::string& domain = "") {
    onnx::NodeProto* n = out_->Add();
    n->set_op_type(op);
    if (!domain.empty()) n->set_domain(domain);
    n->set_name(prefix_ + op + std::to_string(count_++));
    for (const std::string& i : inputs) n->add_input(i);
    for (const std::string& o : outputs) n->add_output(o);
    for (const onnx::AttributeProto& a : attrs) *n->add_attribute() = a;
  }

  // Appends `op` with one output, `output` or a new value; returns it.
  std::string Add(const std::string& op, const std::vector<std::string>& inputs,
                  const std::vector<onnx::AttributeProto>& attrs = {},
                  std::string output = "") {
    if (output.empty()) output = Fresh(op);
    AddNode(op, inputs, {output}, attrs);
    return output;
  }

  // A new value's name.
  std::string Fresh(const std::string& hint) {
    return prefix_ + hint + std::to_string(count_++);
  }

  // Constants: a float32 scalar, an int64 scalar and vector, a scalar 0
  // of ONNX element type `type`.
  std::string Scalar(float value) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_float_data(value);
    return Constant(t);
  }
  std::string Int(int64_t value) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_int64_data(value);
    return Constant(t);
  }
  std::string Ints(const std::vector<int64_t>& values) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t.add_int64_data(v);
    return Constant(t);
  }
  // A uint8 vector, or a uint8 scalar from one value when `scalar`.
  std::string UInt8s(const std::vector<int>& values, bool scalar = false) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::UINT8);
    if (!scalar) t.add_dims(static_cast<int64_t>(values.size()));
    for (int v : values) t.add_int32_data(v);
    return Constant(t);
  }
  std::string ZeroOf(int32_t type) {
    onnx::TensorProto t;
    t.set_data_type(type);
    t.add_int32_data(0);
    return Constant(t);
  }

  // The zero point an 8-bit output gets when the node omits it: 0 of the
  // dtype of input `like`, from `like`'s zero point `like_zero` when given
  // (x - x has its dtype), else from `like`'s declared type.
  StatusOr<std::string> OutputZero(int zero, int like, int like_zero) {
    if (has_in(zero)) return in(zero);
    if (has_in(like_zero)) {
      return Add("Sub", {in(like_zero), in(like_zero)});
    }
    const int32_t type = declared_(in(like)).elem_type;
    if (type == onnx::TensorProto::UINT8 || type == onnx::TensorProto::INT8) {
      return ZeroOf(type);
    }
    return UnimplementedError(Where() +
                              ": an omitted output zero point needs "
                              "the input's zero point or its declared type "
                              "(uint8 or int8)");
  }

  // The dims the model declares for input i; nullopt when it declares no
  // shape.
  std::optional<std::vector<int64_t>> DeclaredDims(int i) const {
    return declared_(in(i)).dims;
  }
  // Dimension `axis` of input i as the model declares it, when fixed.
  std::optional<int64_t> DeclaredDim(int i, size_t axis) const {
    const std::optional<std::vector<int64_t>> dims = DeclaredDims(i);
    if (!dims || axis >= dims->size() || (*dims)[axis] < 0) return std::nullopt;
    return (*dims)[axis];
  }
  // Records what the expansion knows of output i.
  void DeclareOutput(int i, DeclaredValue value) {
    if (wants_out(i)) (*declared_outputs_)[out(i)] = std::move(value);
  }

  // Ops whose axes moved from an attribute to an input at some opset,
  // in the form the model's opset takes: ReduceMean and ReduceSum (axes an
  // input from 18 and 13), Unsqueeze (13), Split's sizes (13).
  std::string ReduceSum(const std::string& x, const std::vector<int64_t>& axes,
                        int64_t keepdims) {
    if (opset_ >= 13) {
      return Add("ReduceSum", {x, Ints(axes)}, {IntAttr("keepdims", keepdims)});
    }
    return Add("ReduceSum", {x},
               {IntsAttr("axes", axes), IntAttr("keepdims", keepdims)});
  }
  std::string Unsqueeze(const std::string& x,
                        const std::vector<int64_t>& axes) {
    if (opset_ >= 13) return Add("Unsqueeze", {x, Ints(axes)});
    return Add("Unsqueeze", {x}, {IntsAttr("axes", axes)});
  }
  std::vector<std::string> Split(const std::string& x, int64_t axis,
                                 const std::vector<int64_t>& sizes) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < sizes.size(); ++i) parts.push_back(Fresh("Split"));
    if (opset_ >= 13) {
      AddNode("Split", {x, Ints(sizes)}, parts, {IntAttr("axis", axis)});
    } else {
      AddNode("Split", {x}, parts,
              {IntAttr("axis", axis), IntsAttr("split", sizes)});
    }
    return parts;
  }
  // Dimension `axis` of x's shape, an int64 scalar.
  std::string Dim(const std::string& x, int64_t axis) {
    return Add("Gather", {Add("Shape", {x}), Int(axis)}, {IntAttr("axis", 0)});
  }
  // 0, 1, ..., Dim(x, axis) - 1 as int64.
  std::string Positions(const std::string& x, int64_t axis) {
    return Add("Range", {Int(0), Dim(x, axis), Int(1)});
  }

  // ReduceMean over `axes` (kept when `keepdims`), in the form the opset
  // takes.
  std::string ReduceMean(const std::string& x, const std::vector<int64_t>& axes,
                         int64_t keepdims) {
    if (opset_ >= 18) {
      return Add("ReduceMean", {x, Ints(axes)},
                 {IntAttr("keepdims", keepdims)});
    }
    return Add("ReduceMean", {x},
               {IntsAttr("axes", axes), IntAttr("keepdims", keepdims)});
  }

 private:
  std::string Constant(const onnx::TensorProto& value) {
    onnx::AttributeProto a = Named("value", onnx::AttributeProto::TENSOR);
    *a.mutable_t() = value;
    return Add("Constant", {}, {a});
  }

  const onnx::NodeProto& node_;
  int64_t opset_;
  std::string prefix_;
  const DeclaredFn& declared_;
  Nodes* out_;
  DeclaredOutputs* declared_outputs_;
  int count_ = 0;
};

// [batch, sequence, heads * size] as [batch, heads, sequence, size], or
// [batch, heads, size, sequence] for keys (`perm`).
std::string Heads(Expansion& e, const std::string& x, int64_t heads,
                  const std::vector<int64_t>& perm);

// InvalidArgument naming the first of `inputs` the node omits.
Status NeedInputsAt(const Expansion& e, std::initializer_list<int> inputs);

// The same for inputs 0 to count - 1.
Status NeedInputs(const Expansion& e, int count);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_ONNX_EXPANSION_H_
