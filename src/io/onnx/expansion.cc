#include "io/onnx/expansion.h"

#include <algorithm>

namespace weft::internal {

using onnx::AttributeProto;
using onnx::NodeProto;

AttributeProto Named(const std::string& name,
                     AttributeProto::AttributeType type) {
  AttributeProto a;
  a.set_name(name);
  a.set_type(type);
  return a;
}

AttributeProto IntAttr(const std::string& name, int64_t value) {
  AttributeProto a = Named(name, AttributeProto::INT);
  a.set_i(value);
  return a;
}

AttributeProto FloatAttr(const std::string& name, float value) {
  AttributeProto a = Named(name, AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}

AttributeProto IntsAttr(const std::string& name,
                        const std::vector<int64_t>& values) {
  AttributeProto a = Named(name, AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
  return a;
}

AttributeProto StringAttr(const std::string& name, const std::string& value) {
  AttributeProto a = Named(name, AttributeProto::STRING);
  a.set_s(value);
  return a;
}

const AttributeProto* FindAttr(const NodeProto& node, const std::string& name) {
  for (const AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t IntOr(const NodeProto& node, const std::string& name, int64_t value) {
  const AttributeProto* a = FindAttr(node, name);
  return a != nullptr ? a->i() : value;
}

float FloatOr(const NodeProto& node, const std::string& name, float value) {
  const AttributeProto* a = FindAttr(node, name);
  return a != nullptr ? a->f() : value;
}

// The node's attributes but those named in `dropped`.
std::vector<AttributeProto> AttrsBut(const NodeProto& node,
                                     const std::vector<std::string>& dropped) {
  std::vector<AttributeProto> kept;
  for (const AttributeProto& a : node.attribute()) {
    if (std::find(dropped.begin(), dropped.end(), a.name()) == dropped.end()) {
      kept.push_back(a);
    }
  }
  return kept;
}

Status NeedInputsAt(const Expansion& e, std::initializer_list<int> inputs) {
  for (int i : inputs) {
    if (!e.has_in(i)) {
      return InvalidArgumentError(e.Where() + ": input " + std::to_string(i) +
                                  " is required");
    }
  }
  return Status::OK();
}

Status NeedInputs(const Expansion& e, int count) {
  for (int i = 0; i < count; ++i) WEFT_RETURN_IF_ERROR(NeedInputsAt(e, {i}));
  return Status::OK();
}

std::string Heads(Expansion& e, const std::string& x, int64_t heads,
                  const std::vector<int64_t>& perm) {
  const std::string split = e.Add("Reshape", {x, e.Ints({0, 0, heads, -1})});
  return e.Add("Transpose", {split}, {IntsAttr("perm", perm)});
}

}  // namespace weft::internal
