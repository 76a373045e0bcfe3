// common-subexpression-elimination: nodes that compute the same thing (one
// op, device and attributes, reading the same tensors) become one, the
// first in dependency order; readers of the others read it. Constants of
// equal value count as the same, so the nodes that read them merge next.
// What an expansion repeats per layer (a decoder's GroupQueryAttention
// works out the same cache positions from the same mask in every layer)
// then runs once. Stateful, blocking and random ops, Placeholders and nodes
// with control inputs or graph attributes are left alone; a node nothing
// reads (a graph end) is kept, so that fetching it stays on this graph.
#include <functional>
#include <unordered_map>

#include "framework/op_registry_impl.h"
#include "optimize/attr_key.h"
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
    std::optional<std::string> attrs =
        AttrKey(node.attrs, TensorAttrs::kHashedUpTo64KiB);
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
