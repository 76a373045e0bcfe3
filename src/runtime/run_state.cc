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
  const ExecutionPlan& plan = *config_.plan;
  for (int i = 0; i < config_.graph->num_nodes(); ++i) {
    pending_[i].store(plan.initial_pending[i], std::memory_order_relaxed);
    tasks_[i].run = this;
    tasks_[i].node = i;
  }
  for (int v = 0; v < config_.graph->num_values(); ++v) {
    uses_[v].store(plan.value_uses[v], std::memory_order_relaxed);
  }
  if (config_.trace) {
    stats_.resize(config_.graph->num_nodes());
    executed_.assign(config_.graph->num_nodes(), 0);
  }
}

RunState::~RunState() {
  if (config_.on_destroy) config_.on_destroy();
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
  // Notify under the lock: once the waiter can see completion it may
  // destroy this RunState, so nothing may touch it after the unlock.
  std::lock_guard<std::mutex> lock(mu_);
  complete_ = true;
  complete_flag_.store(true, std::memory_order_release);
  cv_.notify_all();
}

bool RunState::SpinUntilComplete(int spin_us) const {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::microseconds(spin_us);
  for (uint32_t i = 1;; ++i) {
    if (complete_flag_.load(std::memory_order_acquire)) return true;
    if (cancelled()) return false;  // Let the caller handle it locked.
    CpuRelax();
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      // Give the core to a worker of this Run if one is waiting for it.
      std::this_thread::yield();
    }
  }
}

bool RunState::WaitForCompletion(
    std::chrono::steady_clock::time_point deadline, int spin_us) {
  if (SpinUntilComplete(spin_us)) {
    // Taking the lock once orders our return after Complete()'s unlock.
    std::lock_guard<std::mutex> lock(mu_);
    return true;
  }
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return complete_; });
}

void RunState::WaitForCompletion(int spin_us) {
  if (SpinUntilComplete(spin_us)) {
    // Taking the lock once orders our return after Complete()'s unlock.
    std::lock_guard<std::mutex> lock(mu_);
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return complete_; });
}

}  // namespace weft::internal
