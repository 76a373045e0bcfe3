// The graph passes. Each rewrites what it matches through the editor,
// commits, and returns how many rewrites it made. The pipeline and the
// order they run in are in optimizer.cc; what each does is in
// docs/graph-passes.md.
#ifndef WEFT_SRC_OPTIMIZE_PASSES_H_
#define WEFT_SRC_OPTIMIZE_PASSES_H_

#include <string>
#include <vector>

#include "optimize/graph_editor.h"

namespace weft::internal {

int EliminateIdentities(GraphEditor& graph);
int EliminateCommonSubexpressions(GraphEditor& graph);
int FuseQdqGroups(GraphEditor& graph);
int FuseIntegerProducts(GraphEditor& graph);
int FoldStaticShapes(GraphEditor& graph);
StatusOr<int> FoldConstants(GraphEditor& graph);
int RecognizeLayerNorm(GraphEditor& graph);
int RecognizeGelu(GraphEditor& graph);
int FoldBatchNorm(GraphEditor& graph);
int FuseMatMulScales(GraphEditor& graph);
int FuseAttention(GraphEditor& graph);
int FuseMatMulAdd(GraphEditor& graph);
int FuseConvResidual(GraphEditor& graph);
int FuseActivations(GraphEditor& graph);
int ConvertToNhwc(GraphEditor& graph);

// OptimizeGraph (weft/graph_passes.h) with constant folding's cache across
// a session's compiles of one graph (fold_cache.h); null for none.
StatusOr<OptimizedGraph> OptimizeGraph(const Graph& graph,
                                       const GraphPassOptions& options,
                                       FoldCache* fold_cache);

// Removes the nodes in `candidates` that nothing reads any more, then
// whatever they alone read, as long as it is a Const or in `removable`
// (never a Placeholder or a stateful node). Commits; returns how many it
// removed.
int SweepUnused(GraphEditor& graph, std::vector<int> candidates,
                const std::vector<char>& removable, const std::string& pass);

// Whether a rewrite may take node i: a live node no other rewrite of this
// pass has claimed, without control inputs.
bool Takeable(const GraphEditor& graph, int i);

// Appends the live nodes node i reads (data or control).
void AddProducers(const GraphEditor& graph, int node, std::vector<int>* out);

// Live nodes, each after the nodes it reads (iterative: graphs may be long
// chains).
std::vector<int> DependencyOrder(const GraphEditor& graph);

// Attribute `name` of a node when the node sets it as a T, else
// `fallback` (the op's default, which a pass has to know).
template <class T>
T AttrOr(const NodeDef& node, const std::string& name, T fallback) {
  StatusOr<const T*> found = FindAttr<T>(node.attrs, name);
  return found.ok() ? **found : std::move(fallback);
}

// A float scalar constant (any single-element float tensor), else nullopt.
std::optional<double> ScalarConstant(const GraphEditor& graph,
                                     const std::string& input);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPTIMIZE_PASSES_H_
