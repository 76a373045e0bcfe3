// common-subexpression-elimination: nodes that compute the same thing (one
// op, device and attributes, reading the same tensors) become one, the
// first in dependency order; readers of the others read it. Constants of
// equal value count as the same, so the nodes that read them merge next.
// What an expansion repeats per layer (a decoder's GroupQueryAttention
// works out the same cache positions from the same mask in every layer)
// then runs once. Stateful, blocking and random ops, Placeholders and nodes
// with control inputs or graph attributes are left alone; a node nothing
// reads (a graph end) is kept, so that fetching it stays on this graph.
#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "framework/op_registry_impl.h"
#include "optimize/passes.h"

namespace weft::internal {
namespace {

constexpr char kPass[] = "common-subexpression-elimination";

bool IsMergeableOp(const std::string& op) {
  if (op == "Placeholder" || op == "Spin" ||
      op.find("Random") != std::string::npos || op == "Multinomial" ||
      op == "Bernoulli") {
    return false;
  }
  const OpDef* def = FindOpDef(op);
  return def != nullptr && !def->stateful && !def->blocking;
}

// "n:0" and "n" read the same tensor.
std::string Canonical(const std::string& input) {
  if (input.size() > 2 && input.compare(input.size() - 2, 2, ":0") == 0) {
    return input.substr(0, input.size() - 2);
  }
  return input;
}

// Constants past this size are left alone: each round would hash a
// model's weights again, and equal large weights are rare.
constexpr size_t kMaxHashedBytes = 64 * 1024;

// A tensor's dtype, shape and a hash of its bytes; nullopt for one whose
// bytes are not its value (strings, containers) or too large to hash.
std::optional<std::string> TensorKey(const Tensor& t) {
  if (t.dtype() == DataType::kString || IsContainerType(t.dtype()) ||
      t.size_bytes() > kMaxHashedBytes) {
    return std::nullopt;
  }
  const std::string_view bytes(static_cast<const char*>(t.raw_data()),
                               t.size_bytes());
  return std::string(DataTypeName(t.dtype())) + t.shape().ToString() + "#" +
         std::to_string(std::hash<std::string_view>{}(bytes));
}

// The attributes written exactly (tensors as TensorKey, whose hash the
// merge checks with SameTensors); nullopt where a node must not merge.
std::optional<std::string> AttrKey(const AttrMap& attrs) {
  std::string key;
  for (const auto& [name, value] : attrs) {
    key += name;
    key += '\1';
    key += std::to_string(value.variant().index());
    key += '\1';
    if (const Tensor* t = value.get_if<Tensor>()) {
      std::optional<std::string> tensor = TensorKey(*t);
      if (!tensor) return std::nullopt;
      key += *tensor;
    } else if (const auto* tensors = value.get_if<std::vector<Tensor>>()) {
      for (const Tensor& each : *tensors) {
        std::optional<std::string> tensor = TensorKey(each);
        if (!tensor) return std::nullopt;
        key += *tensor + ',';
      }
    } else if (value.type() == AttrType::kGraph) {
      return std::nullopt;
    } else if (const double* d = value.get_if<double>()) {
      uint64_t bits = 0;  // Exact: 0.1 and its neighbour differ.
      std::memcpy(&bits, d, sizeof(bits));
      key += std::to_string(bits);
    } else if (const auto* ds = value.get_if<std::vector<double>>()) {
      for (double each : *ds) {
        uint64_t bits = 0;
        std::memcpy(&bits, &each, sizeof(bits));
        key += std::to_string(bits) + ',';
      }
    } else if (const std::string* s = value.get_if<std::string>()) {
      key += std::to_string(s->size()) + ':' + *s;
    } else if (const auto* ss = value.get_if<std::vector<std::string>>()) {
      for (const std::string& each : *ss) {
        key += std::to_string(each.size()) + ':' + each;
      }
    } else {
      // Integers, bools, dtypes and shapes print exactly.
      key += value.DebugString();
    }
    key += '\2';
  }
  return key;
}

// Whether the tensors of two nodes' attributes (equal AttrKeys) are equal
// bit for bit: the check on AttrKey's hash.
bool SameTensors(const AttrMap& a, const AttrMap& b) {
  for (const auto& [name, value] : a) {
    const AttrValue& other = b.at(name);
    if (const Tensor* t = value.get_if<Tensor>()) {
      if (!t->BitwiseEqual(*other.get_if<Tensor>())) return false;
    } else if (const auto* ts = value.get_if<std::vector<Tensor>>()) {
      const auto& os = *other.get_if<std::vector<Tensor>>();
      for (size_t i = 0; i < ts->size(); ++i) {
        if (!(*ts)[i].BitwiseEqual(os[i])) return false;
      }
    }
  }
  return true;
}

}  // namespace

int EliminateCommonSubexpressions(GraphEditor& graph) {
  // Nodes kept so far, by what they compute.
  std::unordered_map<std::string, std::vector<int>> kept;
  int rewrites = 0;
  for (int i : DependencyOrder(graph)) {
    const NodeDef& node = graph.node(i);
    if (!IsMergeableOp(node.op) || graph.HasControlInputs(i)) continue;
    std::optional<std::string> attrs = AttrKey(node.attrs);
    if (!attrs) continue;
    // Inputs as they read now: readers of a node merged earlier in this
    // walk were re-pointed to the node kept.
    std::string key = node.op + '\0' + node.device + '\0' + *attrs + '\0';
    for (const std::string& input : node.inputs) {
      key += Canonical(input) + '\0';
    }
    std::vector<int>& same = kept[key];
    int into = -1;
    for (int k : same) {
      if (SameTensors(graph.node(k).attrs, node.attrs)) {
        into = k;
        break;
      }
    }
    if (into < 0 || graph.uses(i).empty()) {
      if (into < 0) same.push_back(i);
      continue;
    }
    const std::string& target = graph.node(into).name;
    for (const NodeUse& use : graph.uses(i)) {
      graph.SetInput(use.node, use.input,
                     use.control     ? "^" + target
                     : use.slot == 0 ? target
                                     : target + ":" + std::to_string(use.slot));
    }
    graph.Remove(i, {kPass, target});
    ++rewrites;
  }
  graph.Commit();
  return rewrites;
}

}  // namespace weft::internal
