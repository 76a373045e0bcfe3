// The inside of a Dataset: a chain (or tree, for Zip) of immutable nodes,
// each making the iterator of its stage over its inputs' iterators.
#ifndef WEFT_SRC_DATA_DATASET_NODE_H_
#define WEFT_SRC_DATA_DATASET_NODE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "threading/mutex.h"
#include "weft/data.h"
#include "weft/thread_pool.h"

namespace weft::data::internal {

class Autotuner;

// What every iterator of one pass shares.
struct IteratorEnv {
  std::shared_ptr<ThreadPool> pool;  // Null: run parallel work inline.
  // Sets the knobs of the pass's kAutotune stages (never null in a pass
  // Dataset::MakeIterator made).
  std::shared_ptr<Autotuner> autotuner;
};

// Counters of one stage, updated by its iterator and by the tasks it
// launches; read by Stats() from the consumer's thread.
class StageCounters {
 public:
  void AddElement() { elements_.fetch_add(1, std::memory_order_relaxed); }
  void AddBusy(std::chrono::nanoseconds ns) {
    busy_ns_.fetch_add(ns.count(), std::memory_order_relaxed);
  }
  void AddWait(std::chrono::nanoseconds ns) {
    wait_ns_.fetch_add(ns.count(), std::memory_order_relaxed);
  }
  void AddSkipped() { skipped_.fetch_add(1, std::memory_order_relaxed); }
  void SetParallelism(int p) { parallelism_.store(p); }
  void SetAutotuned() { autotuned_.store(true); }
  StageStats Snapshot(const std::string& stage) const;

 private:
  std::atomic<int64_t> elements_{0}, busy_ns_{0}, wait_ns_{0}, skipped_{0};
  std::atomic<int> parallelism_{1};
  std::atomic<bool> autotuned_{false};
};

// Base of every stage's iterator. GetNext times the stage: the time in
// DoGetNext, less what its inputs took (InputNext) and what it waited
// (ReportWait), is the stage's own busy time.
class StageIterator : public Iterator {
 public:
  StageIterator(std::string stage,
                std::vector<std::unique_ptr<StageIterator>> inputs)
      : stage_(std::move(stage)), inputs_(std::move(inputs)) {}

  Status GetNext(Element* out, bool* end_of_sequence) final;
  std::vector<StageStats> Stats() const final;

 protected:
  virtual Status DoGetNext(Element* out, bool* end_of_sequence) = 0;
  // Next element of input i, its time kept out of this stage's busy time.
  Status InputNext(size_t i, Element* out, bool* end_of_sequence);
  // Time this stage spent waiting for work it launched (not busy).
  void ReportWait(std::chrono::nanoseconds ns);
  StageCounters& counters() { return *counters_; }
  // The counters as the autotuner keeps them (it may outlive the stage).
  const std::shared_ptr<StageCounters>& shared_counters() { return counters_; }
  size_t num_inputs() const { return inputs_.size(); }
  // Input i itself, for a stage that drives it from another thread (whose
  // time is then not this stage's: InputNext would race on the timing).
  StageIterator& input(size_t i) { return *inputs_[i]; }
  // Starts input i over with a fresh iterator (Repeat's next round). Only
  // the thread that drives this stage replaces inputs; Stats() may read them
  // from another (the consumer of a Prefetch above).
  void ReplaceInput(size_t i, std::unique_ptr<StageIterator> input) {
    std::unique_ptr<StageIterator> old;  // Destroyed after the unlock.
    weft::internal::MutexLock lock(inputs_mu_);
    old = std::exchange(inputs_[i], std::move(input));
  }

 private:
  std::string stage_;
  // Written under inputs_mu_ by the driving thread, which alone also reads
  // them without it; Stats() reads them under it.
  mutable weft::internal::Mutex inputs_mu_;
  std::vector<std::unique_ptr<StageIterator>> inputs_;
  std::shared_ptr<StageCounters> counters_ = std::make_shared<StageCounters>();
  std::chrono::nanoseconds excluded_{0};  // In the current GetNext.
};

// What a stage is made over (its inputs' iterators), and what every stage
// maker returns.
using Stages = std::vector<std::unique_ptr<StageIterator>>;
using StageOr = StatusOr<std::unique_ptr<StageIterator>>;

// A new stage, as the StatusOr every stage maker returns.
template <class Stage, class... Args>
StatusOr<std::unique_ptr<StageIterator>> NewStage(Args&&... args) {
  return std::unique_ptr<StageIterator>(
      std::make_unique<Stage>(std::forward<Args>(args)...));
}

}  // namespace weft::data::internal

namespace weft::data {

class DatasetNode {
 public:
  DatasetNode(std::string name,
              std::vector<std::shared_ptr<const DatasetNode>> inputs)
      : name_(std::move(name)), inputs_(std::move(inputs)) {}
  virtual ~DatasetNode() = default;

  // A fresh iterator for one pass, over fresh iterators of the inputs.
  StatusOr<std::unique_ptr<internal::StageIterator>> MakeIterator(
      const internal::IteratorEnv& env) const;

  const std::string& name() const { return name_; }
  const std::vector<std::shared_ptr<const DatasetNode>>& inputs() const {
    return inputs_;
  }

 protected:
  virtual StatusOr<std::unique_ptr<internal::StageIterator>> MakeStage(
      const internal::IteratorEnv& env,
      std::vector<std::unique_ptr<internal::StageIterator>> inputs) const = 0;

 private:
  std::string name_;
  std::vector<std::shared_ptr<const DatasetNode>> inputs_;
};

}  // namespace weft::data

namespace weft::data::internal {

using weft::data::DatasetNode;

// A node whose stage is made by a function (most stages need no more).
using StageMaker = std::function<StatusOr<std::unique_ptr<StageIterator>>(
    const IteratorEnv&, std::vector<std::unique_ptr<StageIterator>>)>;
std::shared_ptr<const DatasetNode> MakeNode(
    std::string name, std::vector<std::shared_ptr<const DatasetNode>> inputs,
    StageMaker maker);

// The inter-op pool a session made with `options` runs on (the
// process-wide one unless the options ask for pools of their own): where a
// pass runs when IteratorOptions names no pool (with default options).
StatusOr<std::shared_ptr<ThreadPool>> DefaultPipelinePool(
    const SessionOptions& options = {});

}  // namespace weft::data::internal

#endif  // WEFT_SRC_DATA_DATASET_NODE_H_
