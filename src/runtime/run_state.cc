#include "runtime/run_state.h"

#include <utility>

namespace weft::internal {

RunState::RunState(Config config)
    : config_(std::move(config)),
      values_(config_.graph->num_values()),
      pending_(new std::atomic<int32_t>[config_.graph->num_nodes()]) {
  const ExecutionPlan& plan = *config_.plan;
  for (int i = 0; i < config_.graph->num_nodes(); ++i) {
    pending_[i].store(plan.initial_pending[i], std::memory_order_relaxed);
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

void RunState::FinishOutstanding() {
  if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      complete_ = true;
    }
    cv_.notify_all();
  }
}

bool RunState::WaitForCompletion(
    std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return complete_; });
}

bool RunState::WaitForCompletion() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return complete_; });
  return true;
}

}  // namespace weft::internal
