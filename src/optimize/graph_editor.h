// GraphEditor: the view of a graph the passes work on. It indexes names and
// uses, compiles the graph on demand for dtypes and inferred shapes, and
// records the nodes it removes.
//
// A pass reads the index, decides its rewrites, applies them (replacing,
// adding and removing nodes, re-pointing inputs), then calls Commit(),
// which rebuilds the index. Between two Commits the index describes the
// graph as it was at the first: a pass must not match a node it has
// already rewritten (claim nodes, see Claim()).
#ifndef WEFT_SRC_OPTIMIZE_GRAPH_EDITOR_H_
#define WEFT_SRC_OPTIMIZE_GRAPH_EDITOR_H_

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/compiled_graph.h"
#include "weft/graph.h"
#include "weft/graph_passes.h"

namespace weft::internal {

class FoldCache;

// One input of a consumer that reads a node: consumer and input position.
struct NodeUse {
  int node = -1;
  int input = 0;
  int slot = 0;          // The output read (0 for a control input).
  bool control = false;  // "^name".
};

class GraphEditor {
 public:
  GraphEditor(const Graph& graph, CompileOptions compile);

  int size() const { return static_cast<int>(nodes_.size()); }
  bool alive(int i) const { return alive_[i] != 0; }
  const NodeDef& node(int i) const { return nodes_[i]; }
  // Replaces node i's definition; the name must stay.
  void Replace(int i, NodeDef node);
  // Re-points input `input` of node i.
  void SetInput(int i, int input, std::string value);
  // Appends a node, named by the caller with UniqueName. Its index is valid
  // at once; uses of it are indexed at the next Commit.
  int Add(NodeDef node);
  // Takes node i out of the graph.
  void Remove(int i, RemovedNode why);
  // Rebuilds the index and forgets the compiled shapes, where anything
  // changed since the last Commit; clears the claims.
  void Commit();

  // -1 when no live node has the name.
  int Find(const std::string& name) const;
  // The live node and output a data input ("n", "n:k") reads; node -1 for
  // a control input or an unknown name.
  NodeUse Producer(const std::string& input) const;
  // Every input of a live node that reads node i.
  const std::vector<NodeUse>& uses(int i) const { return uses_[i]; }
  // The one consumer of node i when node i's outputs are read exactly once,
  // by a data input reading output 0, and node i has no control inputs;
  // else -1. The pattern a fusion needs to take node i over.
  int SoleConsumer(int i) const;
  bool HasControlInputs(int i) const;

  // The value of a Const node's output a data input reads, else null.
  const Tensor* Constant(const std::string& input) const;
  // Dtype and inferred shape of what a data input reads, from compiling the
  // graph (on the first call after a Commit); nullopt when unknown.
  std::optional<DataType> Dtype(const std::string& input);
  std::optional<PartialShape> Shape(const std::string& input);

  // A node name not used by any node, live or removed: `stem` with any
  // character a node name cannot hold (':', '^', white space) as '_',
  // and a number appended where that is taken.
  std::string UniqueName(const std::string& stem);

  // Claims: a pass marks the nodes a rewrite takes, so that no other match
  // in the same pass takes them too. Cleared by Commit.
  bool claimed(int i) const { return claimed_[i] != 0; }
  void Claim(int i) { claimed_[i] = 1; }

  const CompileOptions& compile_options() const { return compile_; }
  // Constant folding's values from the session's earlier compiles of the
  // same graph (fold_cache.h), or null.
  FoldCache* fold_cache() const { return fold_cache_; }
  void set_fold_cache(FoldCache* cache) { fold_cache_ = cache; }
  // The ids this editor's folding added to the cache, for the end of the
  // compile (FoldCache::KeepOnlyWhatTheGraphHolds).
  std::vector<int64_t>& folds_cached() { return folds_cached_; }
  // The graph as it now is (live nodes, in order).
  Graph Snapshot() const;
  std::map<std::string, RemovedNode>& removed() { return removed_; }

 private:
  const CompiledGraph* Compiled();
  // The compiled node a data input reads and the output (`slot`), or null.
  const CompiledNode* CompiledProducer(const std::string& input, int* slot);

  // A deque: Add keeps references to other nodes valid, so a pass may hold
  // one while it adds constants.
  std::deque<NodeDef> nodes_;
  std::vector<char> alive_;
  std::vector<char> claimed_;
  std::unordered_map<std::string, int> index_;
  std::vector<std::vector<NodeUse>> uses_;
  std::map<std::string, RemovedNode> removed_;
  CompileOptions compile_;
  // The compiled graph for shapes: null until asked for; `compile_failed_`
  // when the current graph does not compile.
  std::shared_ptr<const CompiledGraph> compiled_;
  bool compile_failed_ = false;
  // Whether the graph changed since the last Commit (Replace, SetInput,
  // Add, Remove).
  bool changed_ = true;
  int next_name_ = 0;
  FoldCache* fold_cache_ = nullptr;
  std::vector<int64_t> folds_cached_;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_OPTIMIZE_GRAPH_EDITOR_H_
