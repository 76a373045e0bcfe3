#include "runtime/run_state.h"

#include <algorithm>
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

RunState::~RunState() {
  if (arena_ != nullptr) arena_->Unhold();
}

void RunState::Reset(Config config) {
  config_ = std::move(config);
  outstanding_.store(0, std::memory_order_relaxed);
  live_bytes_.store(0, std::memory_order_relaxed);
  peak_bytes_.store(0, std::memory_order_relaxed);
  heap_tensors_.store(0, std::memory_order_relaxed);
  heap_tensor_bytes_.store(0, std::memory_order_relaxed);
  cancelled_.store(false, std::memory_order_relaxed);
  completion_.store(kRunning, std::memory_order_relaxed);
  sleep_announced_ = false;
  {
    MutexLock lock(mu_);
    status_ = Status::OK();
    complete_ = false;
    caller_queue_.clear();
    bound_running_ = 0;
    bound_waiting_.clear();
  }
  stats_.clear();
  executed_.clear();
  {
    MutexLock lock(nested_mu_);
    nested_stats_.clear();
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

void RunState::PrepareMemory() {
  std::shared_ptr<const MemoryPlan> memory;
  bool tried = false;
  if (config_.memory_pattern) memory = config_.plan->memory_plan(&tried);
  if (arena_ != nullptr &&
      (memory == nullptr || &arena_->plan() != memory.get())) {
    arena_->Unhold();
    arena_ = nullptr;
  }
  if (memory != nullptr && arena_ == nullptr) {
    arena_ = MemoryArena::Create(std::move(memory));
  }
  // A plan without a MemoryPlan yet: this Run records the sizes.
  const bool record = config_.memory_pattern && !tried;
  if (record) {
    observed_bytes_.assign(config_.graph->num_values(), 0);
    observed_alias_.assign(config_.graph->num_values(), -1);
  } else {
    observed_bytes_.clear();
    observed_alias_.clear();
  }
}

void RunState::LearnMemoryPlan() {
  if (observed_bytes_.empty()) return;
  config_.plan->SetMemoryPlan(MemoryPlan::Build(
      *config_.graph, *config_.plan, observed_bytes_, observed_alias_));
  observed_bytes_.clear();
  observed_alias_.clear();
}

void RunState::Initialize() {
  PrepareMemory();
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
    MutexLock lock(mu_);
    if (status_.ok()) status_ = status;
    cancelled_.store(true, std::memory_order_release);
  }
  cv_.NotifyAll();
}

Status RunState::status() const {
  MutexLock lock(mu_);
  return status_;
}

bool RunState::WaitUnlessCancelled(std::chrono::nanoseconds duration) {
  // At most a year: steady_clock's now() + the largest duration overflows.
  const auto until = std::chrono::steady_clock::now() +
                     std::min<std::chrono::nanoseconds>(
                         duration, std::chrono::hours(24 * 365));
  MutexLock lock(mu_);
  while (!cancelled()) {
    if (!cv_.WaitUntil(lock, until)) return !cancelled();
  }
  return false;
}

void RunState::Complete() {
  if (completion_.exchange(kDone, std::memory_order_acq_rel) != kSleeping) {
    return;  // The waiter spins and may free this RunState any moment now.
  }
  // The waiter sleeps and cannot return before this unlock.
  MutexLock lock(mu_);
  complete_ = true;
  cv_.NotifyAll();
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
      // (with as many threads as cores, this one is in the way). Measured on
      // a 2-vCPU Intel Xeon guest: spinning without yielding for the first
      // 10 us was no faster for one-node Runs and slower for long ones.
      std::this_thread::yield();
      // The clock after every yield: a yield that hands the core over comes
      // back only when the scheduler next picks this thread (a time slice,
      // milliseconds, later), so counting rounds would keep this thread
      // runnable, taking turns on a worker's core, through a whole long Run.
      if (std::chrono::steady_clock::now() > deadline) return false;
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
  MutexLock lock(mu_);
  while (!complete_) {
    if (!cv_.WaitUntil(lock, deadline)) return complete_;
  }
  return true;
}

void RunState::AddNestedStats(std::vector<NodeExecStats> stats) {
  MutexLock lock(nested_mu_);
  for (NodeExecStats& s : stats) nested_stats_.push_back(std::move(s));
}

std::vector<NodeExecStats> RunState::TakeNestedStats() {
  MutexLock lock(nested_mu_);
  return std::move(nested_stats_);
}

bool RunState::IsComplete() {
  if (!sleep_announced_) {
    return completion_.load(std::memory_order_acquire) == kDone;
  }
  MutexLock lock(mu_);  // Complete() may still be notifying.
  return complete_;
}

void RunState::WaitForCompletion(int spin_us) {
  if (!sleep_announced_ && SpinUntilComplete(spin_us)) return;
  if (!PrepareToSleep()) return;
  MutexLock lock(mu_);
  while (!complete_) cv_.Wait(lock);
}

void RunState::PushCallerNode(int node) {
  MutexLock lock(mu_);
  caller_queue_.push_back(node);
  cv_.NotifyAll();
}

bool RunState::TakeBoundPlace(int node) {
  MutexLock lock(mu_);
  if (bound_running_ < config_.inter_op_bound_places) {
    ++bound_running_;
    return true;
  }
  bound_waiting_.push_back(node);
  return false;
}

int RunState::ReleaseBoundPlace() {
  MutexLock lock(mu_);
  if (bound_waiting_.empty()) {
    --bound_running_;
    return -1;
  }
  const int next = bound_waiting_.front();  // Takes the place over.
  bound_waiting_.pop_front();
  return next;
}

Status RunDeadline::Exceeded() const {
  return DeadlineExceededError("the Run exceeded its deadline of " +
                               std::to_string(timeout_ms) + " ms");
}

int RunState::NextCallerNode(std::optional<RunDeadline> deadline) {
  MutexLock lock(mu_);
  for (;;) {
    if (deadline && std::chrono::steady_clock::now() > deadline->at) {
      const Status exceeded = deadline->Exceeded();
      deadline.reset();
      lock.Unlock();
      Abort(exceeded);
      lock.Lock();
    }
    if (!caller_queue_.empty()) {
      const int node = caller_queue_.back();
      caller_queue_.pop_back();
      return node;
    }
    if (complete_) return kRunComplete;
    // Spurious wake-ups and timeouts alike go round the loop again.
    if (deadline) {
      cv_.WaitUntil(lock, deadline->at);
    } else {
      cv_.Wait(lock);
    }
  }
}

}  // namespace weft::internal
