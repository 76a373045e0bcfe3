// ExecutionPlan: which nodes one (feeds, fetches, targets) signature runs, and
// their initial pending-input counts. Built once per signature, cached by the
// session, shared by every Run with that signature.
#ifndef WEFT_SRC_RUNTIME_EXECUTION_PLAN_H_
#define WEFT_SRC_RUNTIME_EXECUTION_PLAN_H_

#include <memory>
#include <string>
#include <vector>

#include "runtime/compiled_graph.h"
#include "threading/mutex.h"

namespace weft::internal {

class MemoryPlan;

struct ExecutionPlan {
  enum Role : char { kSkip = 0, kRun = 1, kFed = 2, kConstant = 3 };

  // The graph the plan runs (a session may hold two: the optimised graph
  // and the graph as given); it outlives the plan.
  const CompiledGraph* graph = nullptr;

  // Per node: skipped (not needed), run, fed (its outputs come from feeds)
  // or constant (CompiledNode::constant: its output is set, not computed;
  // consumers do not wait for it).
  std::vector<char> role;
  // Per node: data and control inputs from nodes that run.
  std::vector<int32_t> initial_pending;
  std::vector<int> roots;        // Run nodes with nothing pending.
  std::vector<EdgeRef> feeds;    // Per feed: the output it replaces.
  std::vector<EdgeRef> fetches;  // Per fetch: the output it reads.
  // Per value (CompiledNode::first_value + output): how many data inputs of
  // run nodes read it, plus one if it is fetched. A Run drops its reference
  // to a value when the count reaches zero, so an intermediate tensor is
  // freed as soon as its last consumer has run.
  std::vector<int32_t> value_uses;
  // value_uses of a value the Run never releases (a constant's).
  static constexpr int32_t kPinned = -1;
  std::vector<int> constants;  // Nodes with role kConstant.
  // The counters a Run decrements atomically, and so must reset: nodes with
  // at least two pending inputs and values with at least two uses (a count
  // of one is settled without touching the counter).
  std::vector<int> counted_nodes;
  std::vector<int> counted_values;

  // The MemoryPlan learned from this plan's first successful recording Run
  // (runtime/memory_plan.h): null before, and after when no value needed
  // one; `tried` tells the two apart. Any thread.
  std::shared_ptr<const MemoryPlan> memory_plan(bool* tried) const;
  // Keeps the first plan set; later ones are dropped.
  void SetMemoryPlan(std::shared_ptr<const MemoryPlan> plan) const;

  // Only nodes needed for the fetches and targets run; a fed node does not
  // run, nor do nodes needed only by it. Errors name the fetch, feed or
  // placeholder at fault (an unfed placeholder that would run is one).
  static StatusOr<std::shared_ptr<const ExecutionPlan>> Build(
      const CompiledGraph& graph, const std::vector<std::string>& feed_names,
      const std::vector<std::string>& fetch_names,
      const std::vector<std::string>& target_names);

 private:
  mutable Mutex memory_mu_;
  mutable bool memory_tried_ WEFT_GUARDED_BY(memory_mu_) = false;
  mutable std::shared_ptr<const MemoryPlan> memory_ WEFT_GUARDED_BY(memory_mu_);
};

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_EXECUTION_PLAN_H_
