// For the tests of the importer's expansions alone (contrib_ops,
// function_ops): a node, an int attribute, no declared values, and the ops
// an expansion appended.
#ifndef WEFT_SRC_IO_ONNX_EXPANSION_TESTING_H_
#define WEFT_SRC_IO_ONNX_EXPANSION_TESTING_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/onnx/expansion.h"

namespace weft::testing {

// A node of `op` in `domain` ("" for the default one).
inline onnx::NodeProto OnnxNodeOf(const std::string& op,
                                  const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& outputs,
                                  const std::string& domain = "") {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_domain(domain);
  for (const std::string& i : inputs) n.add_input(i);
  for (const std::string& o : outputs) n.add_output(o);
  return n;
}

inline void SetIntAttribute(onnx::NodeProto* n, const std::string& name,
                            int64_t value) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

// A model that declares nothing of its values.
inline internal::DeclaredValue Undeclared(const std::string&) { return {}; }

// The op types of `nodes` but Constant, in order.
inline std::vector<std::string> OpsOf(const internal::Nodes& nodes) {
  std::vector<std::string> ops;
  for (const onnx::NodeProto& n : nodes) {
    if (n.op_type() != "Constant") ops.push_back(n.op_type());
  }
  return ops;
}

}  // namespace weft::testing

#endif  // WEFT_SRC_IO_ONNX_EXPANSION_TESTING_H_
