#include "weft/attr.h"

#include <cstdio>

#include "weft/graph.h"

namespace weft {
namespace {

std::string FormatDouble(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string Describe(int64_t v) { return std::to_string(v); }
std::string Describe(double v) { return FormatDouble(v); }
std::string Describe(bool v) { return v ? "true" : "false"; }
std::string Describe(const std::string& v) { return "\"" + v + "\""; }
std::string Describe(DataType v) { return DataTypeName(v); }
std::string Describe(const PartialShape& v) { return v.ToString(); }
std::string Describe(const Tensor& v) { return v.DebugString(); }
std::string Describe(const SubgraphPtr& v) {
  if (v == nullptr) return "<no graph>";
  return "<graph of " + std::to_string(v->graph.nodes().size()) + " nodes, " +
         std::to_string(v->inputs.size()) + " inputs, " +
         std::to_string(v->outputs.size()) + " outputs>";
}
template <class T>
std::string Describe(const std::vector<T>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ", ";
    if constexpr (std::is_same_v<T, bool>) {
      out += Describe(static_cast<bool>(v[i]));
    } else {
      out += Describe(v[i]);
    }
  }
  return out + "]";
}

}  // namespace

const char* AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kBool:
      return "bool";
    case AttrType::kString:
      return "string";
    case AttrType::kType:
      return "type";
    case AttrType::kShape:
      return "shape";
    case AttrType::kTensor:
      return "tensor";
    case AttrType::kGraph:
      return "graph";
    case AttrType::kListInt:
      return "list(int)";
    case AttrType::kListFloat:
      return "list(float)";
    case AttrType::kListBool:
      return "list(bool)";
    case AttrType::kListString:
      return "list(string)";
    case AttrType::kListType:
      return "list(type)";
    case AttrType::kListShape:
      return "list(shape)";
    case AttrType::kListTensor:
      return "list(tensor)";
  }
  return "invalid";
}

std::string AttrValue::DebugString() const {
  return std::visit([](const auto& v) { return Describe(v); }, value_);
}

}  // namespace weft
