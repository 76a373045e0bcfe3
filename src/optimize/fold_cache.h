// What constant folding computed for one session's graph, kept across the
// optimisations the session makes of it: the graph as given at creation,
// then again for each set of feed shapes (session.cc). A specialisation
// folds again whatever does not depend on the shapes (a decoder's
// dequantisation scales: ~15 ms of each first Run at a new prompt length,
// AMD EPYC Zen 4), and takes it from here instead.
//
// A folded node is known by what it computes: its op, device and
// attributes (TensorAttrs::kRefused: the key says all of it), and what
// each input is, down to the constants it starts from. Those are known by
// their buffer, dtype and shape; the cache pins them (holds a reference),
// so that no other tensor can take the address while an id names it. The
// pinned constants are the Consts of the graph as given and the values the
// cache holds; a node that reads any other constant (one a pass made for
// this compile, or a shape folded from the feeds) is not cached. A value
// the compile that folded it did not keep (a later pass replaced it: a
// weight cast from float16, then reordered for its convolution) is let go
// at the end of that compile (KeepOnlyWhatTheGraphHolds), so that the
// cache never holds memory no graph of the session does. Safe to use from
// concurrent optimisations.
#ifndef WEFT_SRC_OPTIMIZE_FOLD_CACHE_H_
#define WEFT_SRC_OPTIMIZE_FOLD_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "threading/mutex.h"
#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft::internal {

class FoldCache {
 public:
  // An id for what is not known here.
  static constexpr int64_t kUnknown = -1;

  // Pins the Consts of `graph`, the graph as given, which the session
  // keeps for as long as this cache.
  explicit FoldCache(const Graph& graph);

  // The id of a Const's value where it is pinned, else kUnknown.
  int64_t ConstantId(const Tensor& value) const WEFT_EXCLUDES(mu_);
  // The id of a node that computes `what` (op, device, attributes) from
  // inputs of the ids given, each with the output it reads; kUnknown if an
  // input is unknown or the attributes refuse a key.
  int64_t NodeId(const NodeDef& node,
                 const std::vector<std::pair<int64_t, int>>& inputs)
      WEFT_EXCLUDES(mu_);
  // The value folded before for `id`.
  std::optional<Tensor> Find(int64_t id) const WEFT_EXCLUDES(mu_);
  // Keeps `value` as what `id` computes, and pins it: nodes that read it
  // in a later compile are known too.
  void Insert(int64_t id, const Tensor& value) WEFT_EXCLUDES(mu_);

  // Of the values Inserted under `ids` (by one compile), lets go of those
  // whose buffer no Const of `graph` (that compile's result) holds.
  void KeepOnlyWhatTheGraphHolds(const std::vector<int64_t>& ids,
                                 const Graph& graph) WEFT_EXCLUDES(mu_);

  // How many Find calls found a value (for tests and the record).
  int64_t hits() const WEFT_EXCLUDES(mu_);
  // How many values it holds.
  size_t size() const WEFT_EXCLUDES(mu_);

 private:
  // Id of a pinned buffer (its address, dtype and shape as text).
  int64_t PinLocked(const Tensor& value) WEFT_REQUIRES(mu_);

  mutable Mutex mu_;
  int64_t next_id_ WEFT_GUARDED_BY(mu_) = 0;
  // Pinned constants by address/dtype/shape: their id and the reference.
  std::unordered_map<std::string, std::pair<int64_t, Tensor>> pinned_
      WEFT_GUARDED_BY(mu_);
  // Nodes by what they compute.
  std::unordered_map<std::string, int64_t> nodes_ WEFT_GUARDED_BY(mu_);
  std::unordered_map<int64_t, Tensor> values_ WEFT_GUARDED_BY(mu_);
  mutable int64_t hits_ WEFT_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_OPTIMIZE_FOLD_CACHE_H_
