// AUTOTUNE: a performance model over one pass of a pipeline (tf.data's
// idea, written here). The stages marked kAutotune register a knob: a
// parallel Map its calls in flight, a Prefetch its buffer. Period by period
// the pass's Autotuner reads what each stage cost per element and how fast
// the consumer takes elements, and sets the knobs: enough parallelism for
// the consumer never to wait when the pool's threads allow it, otherwise
// the threads shared by the stages' work, the slowest getting the most.
#ifndef WEFT_SRC_DATA_AUTOTUNE_H_
#define WEFT_SRC_DATA_AUTOTUNE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "data/dataset_node.h"
#include "threading/mutex.h"

namespace weft::data::internal {

// What the plan knows of one parallel stage over a period.
struct StageLoad {
  // The stage's busy seconds (its own work, summed over threads) per
  // element the consumer took: its cost per element times its elements
  // per consumed element.
  double work_per_output = 0;
  int max_parallelism = 1;
};

// Calls in flight for each stage. When the consumer takes an element every
// consumer_seconds and the stages' needs (work_per_output /
// consumer_seconds, a quarter over for the calls' spread, rounded up) fit
// in budget threads, each gets its need; otherwise the budget is shared in
// proportion to the stages' work (the slowest gets the most). Every stage
// gets at least 1 and at most its max_parallelism.
std::vector<int> PlanParallelism(const std::vector<StageLoad>& stages,
                                 double consumer_seconds, int budget);

// A Prefetch's next buffer size: doubled, up to max, when the consumer
// waited on it in the period although its producer found the buffer full
// at times (the waits came from the producer's spread, which a deeper
// buffer absorbs, not from its rate, which it cannot change); else kept.
int PlanBuffer(int current, int max, bool consumer_waited, bool producer_idled);

// One autotuned stage, shared by the stage (which reads the knob and
// reports) and the tuner, which may outlive it (Repeat remakes its input's
// stages every round).
struct TunedStage {
  enum class Kind { kParallelism, kBuffer };
  TunedStage(Kind kind, std::shared_ptr<StageCounters> counters, int initial,
             int max);

  const Kind kind;
  const std::shared_ptr<StageCounters> counters;
  const int max;
  std::atomic<int> value;
  // A Prefetch's producer waiting on a full buffer (nothing to do).
  std::atomic<int64_t> idle_ns{0};
  void AddIdle(std::chrono::nanoseconds ns) {
    idle_ns.fetch_add(ns.count(), std::memory_order_relaxed);
  }
};

class Autotuner {
 public:
  // budget: the threads of the pool the pass runs on (at least 1);
  // !enabled: Tune() leaves every knob at its start.
  Autotuner(int budget, bool enabled);

  int budget() const { return budget_; }

  // A knob starting at `initial`, never above `max`.
  std::shared_ptr<TunedStage> Register(TunedStage::Kind kind,
                                       std::shared_ptr<StageCounters> counters,
                                       int initial, int max);

  // The consumer took `elements` since the last call, and spent
  // `consumer_seconds` of its own work between them (not waiting for the
  // pipeline): sets every live knob from what its stage did meanwhile.
  void Tune(int64_t elements, double consumer_seconds);

 private:
  struct Entry {
    std::weak_ptr<TunedStage> stage;
    StageStats last;  // The stage's counters at the last Tune.
    int64_t last_idle_ns = 0;
  };

  const int budget_;
  const bool enabled_;
  weft::internal::Mutex mu_;
  std::vector<Entry> entries_ WEFT_GUARDED_BY(mu_);
};

// Marks the bottleneck in `stats` (a pass's stages, the consumer's last):
// the stage with the most busy time per consumed element per thread it
// may use (its parallelism, at most budget), if that exceeds
// consumer_seconds_per_element (else the consumer is the bottleneck and no
// stage is marked).
void MarkBottleneck(std::vector<StageStats>* stats, int budget,
                    double consumer_seconds_per_element);

// A pass as its consumer sees it, over `root` (the last stage): times the
// consumer's own work between elements, has `tuner` set the knobs every
// period, and marks the bottleneck in Stats().
std::unique_ptr<Iterator> MakeTunedIterator(std::unique_ptr<StageIterator> root,
                                            std::shared_ptr<Autotuner> tuner);

}  // namespace weft::data::internal

#endif  // WEFT_SRC_DATA_AUTOTUNE_H_
