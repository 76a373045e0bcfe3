// Map with calls in flight on the pipeline's pool, and Prefetch, whose
// driver runs on the blocking pool. Neither holds an inter-op worker while
// it waits: a map call is a task that never waits, and the consumer waits
// on its own thread.
#include <deque>

#include "data/autotune.h"
#include "data/dataset_node.h"
#include "runtime/blocking_pool.h"
#include "threading/mutex.h"
#include "threading/task.h"
#include "weft/machine.h"

namespace weft::data {
namespace {

using Clock = std::chrono::steady_clock;
using internal::IteratorEnv;
using internal::StageIterator;
using internal::StageOr;
using internal::Stages;
using internal::TunedStage;
using weft::internal::CondVar;
using weft::internal::Mutex;
using weft::internal::MutexLock;

std::chrono::nanoseconds Since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() -
                                                              start);
}

// The threads kAutotune may give a stage of a pass on env's pool.
int AutotuneLimit(const IteratorEnv& env) {
  return env.pool == nullptr ? 1 : std::max(1, env.pool->NumThreads());
}

class ParallelMapStage final : public StageIterator {
 public:
  // parallelism: calls in flight, or kAutotune (env's autotuner chooses,
  // starting from one call per pool thread).
  ParallelMapStage(Stages inputs, MapFn fn, const IteratorEnv& env,
                   int parallelism, bool deterministic, bool blocking)
      : StageIterator("ParallelMap", std::move(inputs)),
        fn_(std::move(fn)),
        pool_(env.pool),
        parallelism_(parallelism),
        deterministic_(deterministic),
        blocking_(blocking) {
    if (parallelism == kAutotune) {
      const int limit = AutotuneLimit(env);
      tuned_ = env.autotuner->Register(TunedStage::Kind::kParallelism,
                                       shared_counters(), limit, limit);
    } else {
      counters().SetParallelism(parallelism);
    }
  }

  ~ParallelMapStage() override {
    MutexLock lock(mu_);
    while (running_ > 0) changed_.Wait(lock);
  }

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    while (!input_done_ && static_cast<int>(slots_.size()) < Parallelism()) {
      Element in;
      bool input_end = false;
      Status s = InputNext(0, &in, &input_end);
      if (input_end) {
        input_done_ = true;
        break;
      }
      auto slot = std::make_shared<Slot>();
      slots_.push_back(slot);
      if (!s.ok()) {
        MutexLock lock(mu_);
        slot->result = s;
        slot->done = true;
        continue;
      }
      Launch(slot, std::move(in));
    }
    if (slots_.empty()) {
      *end = true;
      return Status::OK();
    }
    MutexLock lock(mu_);
    auto ready = slots_.end();
    const Clock::time_point wait_start = Clock::now();
    bool waited = false;
    while ((ready = ReadySlot()) == slots_.end()) {
      waited = true;
      changed_.Wait(lock);
    }
    if (waited) ReportWait(Since(wait_start));
    std::shared_ptr<Slot> slot = *ready;
    slots_.erase(ready);
    if (!slot->result.ok()) return slot->result.status();
    *out = std::move(slot->result).value();
    return Status::OK();
  }

 private:
  struct Slot {
    bool done = false;
    StatusOr<Element> result = Element{};
  };

  int Parallelism() const {
    return tuned_ != nullptr ? tuned_->value.load(std::memory_order_relaxed)
                             : parallelism_;
  }

  // The slot to hand out next, or end(): the oldest when deterministic,
  // else the oldest finished one.
  std::deque<std::shared_ptr<Slot>>::iterator ReadySlot() WEFT_REQUIRES(mu_) {
    if (deterministic_) {
      return slots_.front()->done ? slots_.begin() : slots_.end();
    }
    for (auto it = slots_.begin(); it != slots_.end(); ++it) {
      if ((*it)->done) return it;
    }
    return slots_.end();
  }

  void Launch(const std::shared_ptr<Slot>& slot, Element in) {
    // With no pool, or when the consumer is itself one of the pool's
    // workers (waiting there for a task queued behind it could wait
    // forever), the call runs here.
    if (!blocking_ && (pool_ == nullptr || pool_->NumThreads() == 0 ||
                       pool_->CurrentThreadIndex() >= 0)) {
      StatusOr<Element> result = fn_(std::move(in));
      MutexLock lock(mu_);
      slot->result = std::move(result);
      slot->done = true;
      return;
    }
    {
      MutexLock lock(mu_);
      ++running_;
    }
    std::function<void()> call = [this, slot, in = std::move(in)]() mutable {
      const Clock::time_point start = Clock::now();
      StatusOr<Element> result = fn_(std::move(in));
      counters().AddBusy(Since(start));
      MutexLock lock(mu_);
      slot->result = std::move(result);
      slot->done = true;
      --running_;
      changed_.NotifyAll();
    };
    if (blocking_) {
      weft::internal::BlockingPool::Global().Schedule(
          new FunctionTask(std::move(call)));
    } else {
      pool_->Schedule(std::move(call));
    }
  }

  class FunctionTask final : public weft::internal::Task {
   public:
    explicit FunctionTask(std::function<void()> fn) : fn_(std::move(fn)) {}
    void Run() override {
      fn_();
      delete this;
    }

   private:
    std::function<void()> fn_;
  };

  MapFn fn_;
  std::shared_ptr<ThreadPool> pool_;
  int parallelism_;
  std::shared_ptr<TunedStage> tuned_;  // Set when autotuned.
  bool deterministic_;
  bool blocking_;
  bool input_done_ = false;
  // In input order; only the consumer adds and removes entries, the tasks
  // fill them in under mu_.
  std::deque<std::shared_ptr<Slot>> slots_;
  Mutex mu_;
  CondVar changed_;
  int running_ WEFT_GUARDED_BY(mu_) = 0;
};

// kAutotune's Prefetch: the buffer it starts with, and the most it may
// grow to (elements are often whole batches: the bound is on memory).
constexpr int kAutotuneBufferStart = 2;
constexpr int kAutotuneBufferMax = 16;

class PrefetchStage final : public StageIterator {
 public:
  // capacity: elements ahead, or kAutotune (env's autotuner chooses).
  PrefetchStage(Stages inputs, const IteratorEnv& env, int capacity)
      : StageIterator("Prefetch", std::move(inputs)), capacity_(capacity) {
    if (capacity == kAutotune) {
      tuned_ =
          env.autotuner->Register(TunedStage::Kind::kBuffer, shared_counters(),
                                  kAutotuneBufferStart, kAutotuneBufferMax);
    } else {
      counters().SetParallelism(capacity);
    }
  }

  ~PrefetchStage() override {
    MutexLock lock(mu_);
    cancelled_ = true;
    changed_.NotifyAll();
    while (driver_running_) changed_.Wait(lock);
  }

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    MutexLock lock(mu_);
    if (!started_) {
      started_ = true;
      driver_running_ = true;
      weft::internal::BlockingPool::Global().Schedule(new DriverTask(this));
    }
    const Clock::time_point wait_start = Clock::now();
    bool waited = false;
    while (buffer_.empty() && !input_done_) {
      waited = true;
      changed_.Wait(lock);
    }
    if (waited) ReportWait(Since(wait_start));
    if (buffer_.empty()) {
      *end = true;
      return Status::OK();
    }
    StatusOr<Element> next = std::move(buffer_.front());
    buffer_.pop_front();
    changed_.NotifyAll();
    if (!next.ok()) return next.status();
    *out = std::move(next).value();
    return Status::OK();
  }

 private:
  class DriverTask final : public weft::internal::Task {
   public:
    explicit DriverTask(PrefetchStage* stage) : stage_(stage) {}
    void Run() override {
      stage_->Drive();
      delete this;
    }

   private:
    PrefetchStage* stage_;
  };

  // Fills the buffer until the input ends or the iterator goes away.
  void Drive() {
    while (true) {
      {
        MutexLock lock(mu_);
        if (static_cast<int>(buffer_.size()) >= Capacity() && !cancelled_) {
          const Clock::time_point full = Clock::now();
          while (static_cast<int>(buffer_.size()) >= Capacity() &&
                 !cancelled_) {
            changed_.Wait(lock);
          }
          if (tuned_ != nullptr) tuned_->AddIdle(Since(full));
        }
        if (cancelled_) break;
      }
      Element element;
      bool input_end = false;
      Status s = input(0).GetNext(&element, &input_end);
      MutexLock lock(mu_);
      if (input_end) {
        input_done_ = true;
        break;
      }
      if (s.ok()) {
        buffer_.emplace_back(std::move(element));
      } else {
        buffer_.emplace_back(std::move(s));
      }
      changed_.NotifyAll();
    }
    MutexLock lock(mu_);
    driver_running_ = false;
    changed_.NotifyAll();
  }

  int Capacity() const {
    return tuned_ != nullptr ? tuned_->value.load(std::memory_order_relaxed)
                             : capacity_;
  }

  const int capacity_;
  std::shared_ptr<TunedStage> tuned_;  // Set when autotuned.
  Mutex mu_;
  CondVar changed_;
  std::deque<StatusOr<Element>> buffer_ WEFT_GUARDED_BY(mu_);
  bool started_ WEFT_GUARDED_BY(mu_) = false;
  bool driver_running_ WEFT_GUARDED_BY(mu_) = false;
  bool input_done_ WEFT_GUARDED_BY(mu_) = false;
  bool cancelled_ WEFT_GUARDED_BY(mu_) = false;
};

}  // namespace

namespace internal {
StageOr MakeSequentialMap(Stages inputs, MapFn fn);
}  // namespace internal

Dataset Dataset::Map(MapFn fn, int num_parallel_calls, bool deterministic,
                     bool blocking) const {
  if (!blocking) {
    // A call computes where it runs: it counts against the core budget as
    // a kernel does (not twice on a kernel's thread, as IteratorGetNext's).
    // A blocking fn waits (for I/O, for Python's GIL) and counts itself
    // where it computes, as the Python binding's functions do.
    fn = [inner = std::move(fn)](Element in) -> StatusOr<Element> {
      ComputingScope computing;
      return inner(std::move(in));
    };
  }
  return Dataset(internal::MakeNode(
      num_parallel_calls == 0 ? "Map" : "ParallelMap", {node()},
      [fn = std::move(fn), num_parallel_calls, deterministic, blocking](
          const IteratorEnv& env, Stages in) -> StageOr {
        if (num_parallel_calls == 0) {
          return internal::MakeSequentialMap(std::move(in), fn);
        }
        if (num_parallel_calls < 0 && num_parallel_calls != kAutotune) {
          return InvalidArgumentError(
              "map: num_parallel_calls must be positive or AUTOTUNE, not " +
              std::to_string(num_parallel_calls));
        }
        return internal::NewStage<ParallelMapStage>(std::move(in), fn, env,
                                                    num_parallel_calls,
                                                    deterministic, blocking);
      }));
}

Dataset Dataset::Prefetch(int64_t buffer_size) const {
  return Dataset(internal::MakeNode(
      "Prefetch", {node()}, [=](const IteratorEnv& env, Stages in) -> StageOr {
        if (buffer_size <= 0 && buffer_size != kAutotune) {
          return InvalidArgumentError(
              "prefetch: buffer_size must be positive or AUTOTUNE, not " +
              std::to_string(buffer_size));
        }
        const int capacity =
            buffer_size == kAutotune
                ? kAutotune
                : static_cast<int>(std::min<int64_t>(buffer_size, 1 << 20));
        return internal::NewStage<PrefetchStage>(std::move(in), env, capacity);
      }));
}

}  // namespace weft::data
