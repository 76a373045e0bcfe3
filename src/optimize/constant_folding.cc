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

#include "optimize/fold_cache.h"
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

// What each Const and foldable node (`order`: producers first) computes,
// as the session's fold cache knows it (FoldCache::kUnknown where it does
// not, and for every node without a cache).
std::vector<int64_t> FoldIds(const GraphEditor& graph,
                             const std::vector<int>& order) {
  std::vector<int64_t> ids(graph.size(), FoldCache::kUnknown);
  FoldCache* cache = graph.fold_cache();
  if (cache == nullptr) return ids;
  std::vector<std::pair<int64_t, int>> inputs;
  for (int i : order) {
    const NodeDef& node = graph.node(i);
    if (node.op == "Const") {
      if (const Tensor* value = graph.Constant(node.name)) {
        ids[i] = cache->ConstantId(*value);
      }
      continue;
    }
    inputs.clear();
    for (const std::string& input : node.inputs) {
      const NodeUse producer = graph.Producer(input);
      inputs.emplace_back(
          producer.node < 0 ? FoldCache::kUnknown : ids[producer.node],
          producer.slot);
    }
    ids[i] = cache->NodeId(node, inputs);
  }
  return ids;
}

StatusOr<int> FoldConstants(GraphEditor& graph) {
  const int n = graph.size();
  // Kahn's order from the constants: a node folds when every input comes
  // from a Const or a node that folds.
  std::vector<char> foldable(n, 0);
  std::vector<int> pending(n, -1), ready, order;
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
    order.push_back(p);
    for (const NodeUse& use : graph.uses(p)) {
      if (!use.control && pending[use.node] > 0 && --pending[use.node] == 0) {
        foldable[use.node] = 1;
        ready.push_back(use.node);
      }
    }
  }
  const std::vector<int64_t> ids = FoldIds(graph, order);
  // The folded nodes something else reads (or nothing reads): those an
  // earlier compile of the session folded come from its cache, the rest
  // are computed.
  std::vector<std::pair<int, Tensor>> folded;
  std::vector<int> frontier;
  std::vector<std::string> fetches;
  for (int i = 0; i < n; ++i) {
    if (!foldable[i]) continue;
    bool read_outside = graph.uses(i).empty();
    for (const NodeUse& use : graph.uses(i)) {
      read_outside = read_outside || use.control || !foldable[use.node];
    }
    if (!read_outside) continue;
    std::optional<Tensor> cached;
    if (ids[i] != FoldCache::kUnknown)
      cached = graph.fold_cache()->Find(ids[i]);
    if (cached) {
      folded.emplace_back(i, *std::move(cached));
    } else {
      frontier.push_back(i);
      fetches.push_back(graph.node(i).name);
    }
  }
  if (frontier.empty() && folded.empty()) return 0;
  // A constant part that fails keeps failing at Run, with the node's own
  // name in the error: leave it to that.
  if (!frontier.empty()) {
    auto values = EvaluateOnCallingThread(graph.Snapshot(),
                                          graph.compile_options(), fetches);
    for (size_t f = 0; values.ok() && f < frontier.size(); ++f) {
      // A container has no Const form (graph JSON stores tensors only).
      Tensor& value = (*values)[f];
      if (value.size_bytes() > kMaxFoldedBytes ||
          IsContainerType(value.dtype())) {
        continue;
      }
      const int i = frontier[f];
      if (ids[i] != FoldCache::kUnknown) {
        graph.fold_cache()->Insert(ids[i], value);
        graph.folds_cached().push_back(ids[i]);
      }
      folded.emplace_back(i, std::move(value));
    }
  }
  int rewrites = 0;
  std::vector<int> read;
  for (auto& [i, value] : folded) {
    AddProducers(graph, i, &read);
    graph.Replace(i, ConstNode(graph.node(i), std::move(value)));
    ++rewrites;
  }
  rewrites += SweepUnused(graph, read, foldable, "constant-folding");
  return rewrites;
}

}  // namespace weft::internal
