// How one ONNX node becomes weft nodes: a converter per op type, chosen by
// the model's opset, that fills a NodeDef (weft op, inputs, attributes).
// Inputs that an opset passes as tensors but weft's op takes as attributes
// (Slice's starts, ReduceSum's axes, Clip's min and max, ...) must be
// constants (initializers or Constant nodes); otherwise the node is
// Unimplemented, named.
#ifndef WEFT_SRC_IO_ONNX_ONNX_OPS_H_
#define WEFT_SRC_IO_ONNX_ONNX_OPS_H_

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::internal {

// What a converter sees of one ONNX node.
class OnnxNode {
 public:
  OnnxNode(const onnx::NodeProto& proto, int64_t opset, std::string name,
           std::vector<std::string> inputs,
           std::vector<const Tensor*> constants, std::vector<int32_t> types)
      : proto_(proto),
        opset_(opset),
        name_(std::move(name)),
        inputs_(std::move(inputs)),
        constants_(std::move(constants)),
        types_(std::move(types)) {}

  const onnx::NodeProto& proto() const { return proto_; }
  const std::string& op_type() const { return proto_.op_type(); }
  int64_t opset() const { return opset_; }
  // The weft node's name (unique in the graph).
  const std::string& name() const { return name_; }
  // "node 'n' (ONNX Foo)": the prefix of every error about this node.
  std::string Where() const;

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // The weft reference of input i ("node", "node:k"); "" when omitted.
  bool has_input(int i) const {
    return i < num_inputs() && !inputs_[i].empty();
  }
  // REQUIRES: 0 <= i < num_inputs(); checked (WEFT_CHECK).
  const std::string& input(int i) const {
    WEFT_CHECK(i >= 0 && i < num_inputs(), "OnnxNode::input out of range");
    return inputs_[i];
  }
  // Input i's value when it is a constant, else null.
  const Tensor* constant(int i) const {
    return i < num_inputs() ? constants_[i] : nullptr;
  }
  // Input i's ONNX element type as the file declares it; 0 when unknown.
  int32_t declared_type(int i) const {
    return i < num_inputs() ? types_[i] : 0;
  }
  int num_outputs() const { return proto_.output_size(); }
  // Output i is requested (named, not "").
  bool has_output(int i) const {
    return i < proto_.output_size() && !proto_.output(i).empty();
  }

  const onnx::AttributeProto* FindAttr(const std::string& name) const;

 private:
  const onnx::NodeProto& proto_;
  int64_t opset_;
  std::string name_;
  std::vector<std::string> inputs_;
  std::vector<const Tensor*> constants_;
  std::vector<int32_t> types_;
};

// Fills *out (name already set) for `node`. Unimplemented when weft lacks
// the op, an attribute value or the form the opset uses; InvalidArgument for
// a malformed node.
Status ConvertOnnxNode(const OnnxNode& node, NodeDef* out);

// Whether an op type of the default domain has a converter at all (for
// `weft info`'s histogram).
bool IsOnnxOpSupported(const std::string& op_type);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_ONNX_ONNX_OPS_H_
