#include "runtime/run_state.h"

#include <thread>
#include <utility>

#include "threading/spin.h"

namespace weft::internal {

RunState::RunState(Config config)
    : config_(std::move(config)),
      values_(config_.graph->num_values()),
      pending_(new std::atomic<int32_t>[config_.graph->num_nodes()]),
      uses_(new std::atomic<int32_t>[config_.graph->num_values()]),
      tasks_(new NodeTask[config_.graph->num_nodes()]) {
  start_task_.run = this;
  for (int i = 0; i < config_.graph->num_nodes(); ++i) {
    tasks_[i].run = this;
    tasks_[i].node = i;
  }
  Initialize();
}

void RunState::Reset(Config config) {
  config_ = std::move(config);
  outstanding_.store(0, std::memory_order_relaxed);
  live_bytes_.store(0, std::memory_order_relaxed);
  cancelled_.store(false, std::memory_order_relaxed);
  completion_.store(kRunning, std::memory_order_relaxed);
  sleep_announced_ = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = Status::OK();
    complete_ = false;
  }
  stats_.clear();
  executed_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    caller_queue_.clear();
  }
  Initialize();
}

void RunState::ReleaseValues() {
  const ExecutionPlan& plan = *config_.plan;
  const CompiledGraph& graph = *config_.graph;
  for (const EdgeRef& ref : plan.feeds) {
    values_[graph.node(ref.node).first_value + ref.slot] = Tensor();
  }
  for (const EdgeRef& ref : plan.fetches) {
    values_[graph.node(ref.node).first_value + ref.slot] = Tensor();
  }
  for (int c : plan.constants) values_[graph.node(c).first_value] = Tensor();
}

void RunState::ResetCounters() {
  const ExecutionPlan& plan = *config_.plan;
  for (int node : plan.counted_nodes) {
    pending_[node].store(plan.initial_pending[node], std::memory_order_relaxed);
  }
  for (int value : plan.counted_values) {
    uses_[value].store(plan.value_uses[value], std::memory_order_relaxed);
  }
}

void RunState::Initialize() {
  const ExecutionPlan& plan = *config_.plan;
  for (int c : plan.constants) {
    const CompiledNode& node = config_.graph->node(c);
    values_[node.first_value] = *node.constant;
  }
  if (config_.trace) {
    stats_.resize(config_.graph->num_nodes());
    executed_.assign(config_.graph->num_nodes(), 0);
  }
}

void RunState::Abort(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = status;
    cancelled_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

Status RunState::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

bool RunState::WaitUnlessCancelled(std::chrono::nanoseconds duration) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, duration, [&] { return cancelled(); });
}

void RunState::Complete() {
  if (completion_.exchange(kDone, std::memory_order_acq_rel) != kSleeping) {
    return;  // The waiter spins and may free this RunState any moment now.
  }
  // The waiter sleeps and cannot return before this unlock.
  std::lock_guard<std::mutex> lock(mu_);
  complete_ = true;
  cv_.notify_all();
}

bool RunState::SpinUntilComplete(int spin_us) const {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (uint32_t i = 1;; ++i) {
    if (completion_.load(std::memory_order_acquire) == kDone) return true;
    if (cancelled()) return false;  // Let the caller handle it locked.
    CpuRelax();
    if (i % 8 == 0) {
      // Offer the core to a thread of this Run that may be waiting for it
      // (with as many threads as cores, this one is in the way). Measured:
      // spinning without yielding for the first 10 us was no faster for
      // one-node Runs and slower for long ones.
      std::this_thread::yield();
      if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) {
        return false;
      }
    }
  }
}

bool RunState::PrepareToSleep() {
  if (sleep_announced_) return true;  // Complete() will notify under mu_.
  uint32_t state = kRunning;
  sleep_announced_ = completion_.compare_exchange_strong(
      state, kSleeping, std::memory_order_acq_rel);
  return sleep_announced_;
}

bool RunState::WaitForCompletion(std::chrono::steady_clock::time_point deadline,
                                 int spin_us) {
  // Once a sleeper is announced, completion is only safe to observe under
  // mu_ (Complete() may still be notifying), so no more spinning.
  if (!sleep_announced_ && SpinUntilComplete(spin_us)) return true;
  if (!PrepareToSleep()) return true;
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return complete_; });
}

void RunState::WaitForCompletion(int spin_us) {
  if (!sleep_announced_ && SpinUntilComplete(spin_us)) return;
  if (!PrepareToSleep()) return;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return complete_; });
}

void RunState::PushCallerNode(int node) {
  std::lock_guard<std::mutex> lock(mu_);
  caller_queue_.push_back(node);
  cv_.notify_all();
}

Status RunDeadline::Exceeded() const {
  return DeadlineExceededError("the Run exceeded its deadline of " +
                               std::to_string(timeout_ms) + " ms");
}

int RunState::NextCallerNode(std::optional<RunDeadline> deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return !caller_queue_.empty() || complete_; };
  for (;;) {
    if (deadline && std::chrono::steady_clock::now() > deadline->at) {
      const Status exceeded = deadline->Exceeded();
      deadline.reset();
      lock.unlock();
      Abort(exceeded);
      lock.lock();
    }
    if (!caller_queue_.empty()) {
      const int node = caller_queue_.back();
      caller_queue_.pop_back();
      return node;
    }
    if (complete_) return kRunComplete;
    if (deadline) {
      cv_.wait_until(lock, deadline->at, ready);
    } else {
      cv_.wait(lock, ready);
    }
  }
}

}  // namespace weft::internal
