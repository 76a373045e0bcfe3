// Constant folding: every node computed from constants alone is computed
// once, when the session is created, and replaced by a Const of its value.
// Shape and Size of a tensor whose shape inference knows the whole shape
// fold first, so that the shape arithmetic exporters write (Shape → Gather →
// Unsqueeze → Concat → Reshape) folds with them.
//
// The values come from running the constant part of the graph once on the
// calling thread (runtime/evaluate.h), not through a session, which sits
// above the passes: by weft's determinism rule they are the bits any
// thread setting would compute at Run.
#include <algorithm>

#include "optimize/passes.h"
#include "runtime/evaluate.h"
#include "weft/op_registry.h"

namespace weft::internal {
namespace {

// The largest value folding writes into the graph; a larger one (an Expand
// or ConstantOfShape of constants) stays computed at Run.
constexpr size_t kMaxFoldedBytes = size_t{64} << 20;

NodeDef ConstNode(const NodeDef& replaced, Tensor value) {
  const DataType dtype = value.dtype();
  return {replaced.name,
          "Const",
          {},
          {{"value", std::move(value)}, {"dtype", dtype}},
          replaced.device};
}

// Whether running the node once at load gives what every Run would: a
// pure function of its inputs with one output.
bool IsFoldableOp(const std::string& op) {
  if (op == "Const" || op == "Placeholder" || op == "Spin" ||
      op.find("Random") != std::string::npos || op == "Multinomial" ||
      op == "Bernoulli") {
    return false;
  }
  const OpDef* def = FindOpDef(op);
  if (def == nullptr || def->stateful || def->blocking) return false;
  return def->outputs.size() == 1 &&
         (def->outputs[0].kind == ArgDef::Kind::kFixed ||
          def->outputs[0].kind == ArgDef::Kind::kTypeAttr);
}

}  // namespace

int FoldStaticShapes(GraphEditor& graph) {
  int rewrites = 0;
  for (int i = 0; i < graph.size(); ++i) {
    const NodeDef& node = graph.node(i);
    if (!graph.alive(i) || (node.op != "Shape" && node.op != "Size") ||
        node.inputs.size() != 1 || graph.HasControlInputs(i)) {
      continue;
    }
    const std::optional<PartialShape> shape = graph.Shape(node.inputs[0]);
    if (!shape || !shape->IsFullyDefined()) continue;
    const std::vector<int64_t> dims = shape->ToShape().dims();
    Tensor value;
    if (node.op == "Size") {
      int64_t count = 1;
      for (int64_t d : dims) count *= d;
      value = Tensor::Scalar<int64_t>(count);
    } else {  // ONNX Shape-15's start and end, clamped to the rank.
      const int64_t rank = static_cast<int64_t>(dims.size());
      auto clamp = [rank](int64_t v) {
        return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank);
      };
      const int64_t begin = clamp(AttrOr<int64_t>(node, "start", 0));
      const int64_t end =
          std::max(begin, clamp(AttrOr<int64_t>(node, "end", rank)));
      value = Tensor::FromVector<int64_t>(
          weft::Shape{end - begin},
          std::vector<int64_t>(dims.begin() + begin, dims.begin() + end));
    }
    graph.Replace(i, ConstNode(node, std::move(value)));
    ++rewrites;
  }
  graph.Commit();
  return rewrites;
}

StatusOr<int> FoldConstants(GraphEditor& graph) {
  const int n = graph.size();
  // Kahn's order from the constants: a node folds when every input comes
  // from a Const or a node that folds.
  std::vector<char> foldable(n, 0);
  std::vector<int> pending(n, -1), ready;
  for (int i = 0; i < n; ++i) {
    if (!graph.alive(i)) continue;
    const NodeDef& node = graph.node(i);
    if (node.op == "Const" && !graph.HasControlInputs(i)) {
      ready.push_back(i);
    } else if (!node.inputs.empty() && !graph.HasControlInputs(i) &&
               IsFoldableOp(node.op)) {
      pending[i] = static_cast<int>(node.inputs.size());
    }
  }
  while (!ready.empty()) {
    const int p = ready.back();
    ready.pop_back();
    for (const NodeUse& use : graph.uses(p)) {
      if (!use.control && pending[use.node] > 0 && --pending[use.node] == 0) {
        foldable[use.node] = 1;
        ready.push_back(use.node);
      }
    }
  }
  // Compute the folded nodes something else reads (or nothing reads).
  std::vector<int> frontier;
  std::vector<std::string> fetches;
  for (int i = 0; i < n; ++i) {
    if (!foldable[i]) continue;
    bool read_outside = graph.uses(i).empty();
    for (const NodeUse& use : graph.uses(i)) {
      read_outside = read_outside || use.control || !foldable[use.node];
    }
    if (read_outside) {
      frontier.push_back(i);
      fetches.push_back(graph.node(i).name);
    }
  }
  if (frontier.empty()) return 0;
  // A constant part that fails keeps failing at Run, with the node's own
  // name in the error: leave it to that.
  auto values = EvaluateOnCallingThread(graph.Snapshot(),
                                        graph.compile_options(), fetches);
  if (!values.ok()) return 0;
  int rewrites = 0;
  std::vector<int> read;
  for (size_t f = 0; f < frontier.size(); ++f) {
    // A container has no Const form (graph JSON stores tensors only).
    if ((*values)[f].size_bytes() > kMaxFoldedBytes ||
        IsContainerType((*values)[f].dtype())) {
      continue;
    }
    const int i = frontier[f];
    AddProducers(graph, i, &read);
    graph.Replace(i, ConstNode(graph.node(i), std::move((*values)[f])));
    ++rewrites;
  }
  rewrites += SweepUnused(graph, read, foldable, "constant-folding");
  return rewrites;
}

}  // namespace weft::internal
