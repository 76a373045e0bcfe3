// RunState: everything one Run owns — pending counts, produced tensors, the
// first error, cancellation, completion, trace records. Never shared between
// Runs; the CompiledGraph and ExecutionPlan it points to are.
#ifndef WEFT_SRC_RUNTIME_RUN_STATE_H_
#define WEFT_SRC_RUNTIME_RUN_STATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/resources.h"
#include "runtime/compiled_graph.h"
#include "runtime/execution_plan.h"
#include "runtime/memory_plan.h"
#include "threading/mutex.h"
#include "threading/task.h"
#include "weft/options.h"
#include "weft/status.h"
#include "weft/thread_pool.h"

namespace weft::internal {

class RunState;

// When a Run must end, and the status it ends with then. The timeout is
// named in the message; a DeadlineExceeded a kernel returns itself keeps
// its own message and node.
struct RunDeadline {
  std::chrono::steady_clock::time_point at;
  int64_t timeout_ms;

  Status Exceeded() const;
};

// The queue entry that runs one node of one Run on a pool: one per node,
// owned by the RunState, so dispatching allocates nothing. Safe because a
// node is dispatched at most once per Run and the RunState outlives every
// dispatched node (its Run waits for all of them, see FinishOutstanding).
class NodeTask final : public Task {
 public:
  // The node of the task that starts a Run: it makes every root ready.
  static constexpr int kStart = -1;

  void Run() override;  // executor.cc
  RunState* run = nullptr;
  int node = kStart;
};

class RunState {
 public:
  struct Config {
    // Owned by the session, which outlives its RunStates.
    const CompiledGraph* graph = nullptr;
    const ExecutionPlan* plan = nullptr;
    // Null: every node runs in the calling thread. The session keeps the
    // pools alive while any Run is active.
    ThreadPool* inter_pool = nullptr;
    std::string inter_pool_name;
    // Null: kernels run serially.
    ThreadPool* intra_pool = nullptr;
    int intra_threads = 1;  // The session's setting, caller included.
    ResourceMgr* resources = nullptr;  // The session's queues.
    int64_t memory_limit_bytes = 0;    // 0: none.
    // How many inter_op_bound blocking nodes may run at once: the inter-op
    // pool's threads, 1 in the caller-thread mode.
    int inter_op_bound_places = 1;
    bool trace = false;
    double inline_node_cost_ns = 0;
    double join_inline_cost_ns = 0;  // SessionOptions' field.
    // When the Run must end. Its waiter enforces it; a subgraph run inside
    // a kernel (runtime/kernel_services.h) checks it between runs, and passes
    // it on to a nested Run in the calling thread, whose waiter is busy.
    std::optional<RunDeadline> deadline;
    // SessionOptions::enable_mem_pattern: intermediate tensors go into an
    // arena laid out by the plan's MemoryPlan (runtime/memory_plan.h); the
    // plan's first Run records the sizes it is built from.
    bool memory_pattern = false;
  };

  explicit RunState(Config config);
  ~RunState();
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  // Prepares a RunState whose Run succeeded for another Run of the same
  // graph (the plan may differ): the session recycles them, so a Run does
  // not allocate its arrays again. REQUIRES: ReleaseValues() was called and
  // no node of the previous Run is still running.
  void Reset(Config config);
  // After a successful Run: drops the values it still holds. Every other
  // value was released by the executor when its last reader ran, so only
  // feeds, fetches and constants are left.
  void ReleaseValues();
  // Resets the pending and use counters the plan decrements atomically.
  // Called by the Run's start task, on the thread that then runs the first
  // nodes, so the counters' cache lines start out where they are used.
  void ResetCounters();

  // Memory accounting (SessionOptions::memory_limit_bytes, and the peak a
  // traced Run reports in RunMetadata::peak_bytes): reserves `bytes` for an
  // output about to be allocated; false (nothing reserved) if that would
  // pass the limit. `held` receives the bytes held before. Without a limit
  // or a trace nothing is counted: a shared counter would cost every node an
  // atomic on a contended cache line.
  bool ReserveBytes(int64_t bytes, int64_t* held) {
    *held = 0;
    if (!counting_bytes()) return true;
    const int64_t before =
        live_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    *held = before;
    if (config_.memory_limit_bytes > 0 &&
        before + bytes > config_.memory_limit_bytes) {
      live_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
      return false;
    }
    int64_t peak = peak_bytes_.load(std::memory_order_relaxed);
    while (before + bytes > peak &&
           !peak_bytes_.compare_exchange_weak(peak, before + bytes,
                                              std::memory_order_relaxed)) {
    }
    return true;
  }
  void ReleaseBytes(int64_t bytes) {
    if (!counting_bytes()) return;
    live_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  }
  // A tensor of `bytes` allocated from the heap (counted as bytes are).
  void CountHeapTensor(int64_t bytes) {
    if (!counting_bytes()) return;
    heap_tensors_.fetch_add(1, std::memory_order_relaxed);
    heap_tensor_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  int64_t heap_tensors() const {
    return heap_tensors_.load(std::memory_order_relaxed);
  }
  int64_t heap_tensor_bytes() const {
    return heap_tensor_bytes_.load(std::memory_order_relaxed);
  }
  int64_t arena_bytes() const {
    return arena_ != nullptr ? arena_->plan().total_bytes() : 0;
  }
  // The most bytes ReserveBytes saw held at once (0 when not counting).
  int64_t peak_bytes() const {
    return peak_bytes_.load(std::memory_order_relaxed);
  }

  // The memory pattern. Where output tensor `value` of `bytes` data bytes
  // goes: a header address in this Run's arena, or null (the heap). In a
  // recording Run, notes the size instead. Called by the value's producer.
  void* PlaceValue(int value, int64_t bytes) {
    if (arena_ != nullptr) return arena_->Take(value, bytes);
    if (!observed_bytes_.empty()) observed_bytes_[value] = bytes;
    return nullptr;
  }
  MemoryArena* arena() { return arena_; }
  bool recording_memory() const { return !observed_bytes_.empty(); }
  // In a recording Run: output `value` is input `of`'s buffer.
  void ObserveAlias(int value, int of) { observed_alias_[value] = of; }
  int arena_slot(int value) const { return arena_->plan().slot_of(value); }
  // After a successful recording Run: builds the plan's MemoryPlan from the
  // sizes seen, unless another Run did first.
  void LearnMemoryPlan();

  const CompiledGraph& graph() const { return *config_.graph; }
  const ExecutionPlan& plan() const { return *config_.plan; }
  const Config& config() const { return config_; }

  // Produced (or fed) tensors, indexed by CompiledNode::first_value + output.
  // Each is written once, by its producer, before any consumer is ready.
  std::vector<Tensor>& values() { return values_; }
  std::atomic<int32_t>& pending(int node) { return pending_[node]; }
  // Reads of value v still to come (ExecutionPlan::value_uses).
  std::atomic<int32_t>& uses(int value) { return uses_[value]; }
  // The task of `node`, or the start task for NodeTask::kStart.
  NodeTask& task(int node) {
    return node == NodeTask::kStart ? start_task_ : tasks_[node];
  }

  // Ends the Run with `status` unless it already has an error: no node
  // starts afterwards, and waiting kernels (KernelContext::WaitFor) wake.
  void Abort(const Status& status);
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  Status status() const;

  // Waits up to `duration` or until Abort; false if aborted.
  bool WaitUnlessCancelled(std::chrono::nanoseconds duration);

  // Nodes made ready but not yet finished. The Run is complete when it drops
  // to zero. The call that completes it is the last touch of this RunState
  // by a pool thread: the waiter may destroy it as soon as it sees that.
  void AddOutstanding(int64_t n) {
    outstanding_.fetch_add(n, std::memory_order_relaxed);
  }
  void FinishOutstanding() {
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) Complete();
  }
  // Blocks until complete or `deadline`; false on deadline. Spins for
  // `spin_us` first: a short Run then costs no futex wake-up.
  bool WaitForCompletion(std::chrono::steady_clock::time_point deadline,
                         int spin_us);
  void WaitForCompletion(int spin_us);
  // Whether the Run is complete, without waiting. Once true, the RunState
  // is the caller's again (as after WaitForCompletion). Waiting thread only.
  bool IsComplete();

  // Places for inter_op_bound nodes (CompiledNode::inter_op_bound), so that
  // inter_op_parallelism_threads bounds how many of a Run's blocking nodes
  // that compute run at once, as it bounds its other nodes, while a node
  // waiting for a place holds no thread. TakeBoundPlace: true if `node` may
  // be scheduled now; otherwise it is queued and a later ReleaseBoundPlace
  // hands it out. ReleaseBoundPlace: frees a place, returning the queued
  // node that takes it over (to be scheduled by the caller), or -1.
  bool TakeBoundPlace(int node);
  int ReleaseBoundPlace();

  // Trace records of subgraph nodes (If's branches, Loop's and Scan's
  // bodies) that this Run's kernels ran; config().trace only. Any thread.
  void AddNestedStats(std::vector<NodeExecStats> stats);
  std::vector<NodeExecStats> TakeNestedStats();
  // Trace records (config().trace only), indexed by node.
  std::vector<NodeExecStats>& stats() { return stats_; }
  std::vector<char>& executed() { return executed_; }

  // The caller-thread mode (no inter-op pool): nodes for the calling thread.
  // Any thread may push (a blocking node finishing on the blocking pool
  // hands its successors back); the caller takes them in NextCallerNode.
  void PushCallerNode(int node);
  // The next node for the calling thread; kRunComplete once the Run is
  // complete. At `deadline` (if any) the Run is aborted with
  // deadline->Exceeded() and the wait goes on until it completes.
  // REQUIRES: AnnounceCallerWaits() was called.
  static constexpr int kRunComplete = -2;
  int NextCallerNode(std::optional<RunDeadline> deadline);
  // Caller-thread mode: completion will be signalled under mu_, because the
  // caller waits on cv_ for nodes and completion alike.
  void AnnounceCallerWaits() { PrepareToSleep(); }

 private:
  void Initialize();
  void PrepareMemory();

  Config config_;
  // This Run's arena (held), when its plan has a MemoryPlan; else, in a
  // recording Run, each value's allocated bytes (indexed by value).
  MemoryArena* arena_ = nullptr;
  std::vector<int64_t> observed_bytes_;
  std::vector<int> observed_alias_;  // Per value: the value it aliases, or -1.
  std::vector<Tensor> values_;
  std::unique_ptr<std::atomic<int32_t>[]> pending_;
  std::unique_ptr<std::atomic<int32_t>[]> uses_;
  std::unique_ptr<NodeTask[]> tasks_;
  NodeTask start_task_;
  std::atomic<int64_t> outstanding_{0};
  bool counting_bytes() const {
    return config_.memory_limit_bytes > 0 || config_.trace;
  }

  std::atomic<int64_t> live_bytes_{0};  // Produced tensors held (accounting).
  std::atomic<int64_t> peak_bytes_{0};
  std::atomic<int64_t> heap_tensors_{0};
  std::atomic<int64_t> heap_tensor_bytes_{0};
  std::atomic<bool> cancelled_{false};
  // Completion handshake. The waiter spins on it; before sleeping it moves
  // kRunning -> kSleeping. Complete() exchanges in kDone and, only if it saw
  // kSleeping, sets complete_ and notifies under mu_. So a spinning waiter
  // that sees kDone may return at once (Complete() touches nothing after
  // the exchange), and a sleeping one returns only after Complete() has
  // released mu_.
  enum : uint32_t { kRunning = 0, kSleeping = 1, kDone = 2 };
  std::atomic<uint32_t> completion_{kRunning};
  bool sleep_announced_ = false;  // Only the waiting thread touches it.

  void Complete();
  bool SpinUntilComplete(int spin_us) const;
  // Announces a sleeping waiter (once); false if the Run completed before
  // any announcement, in which case Complete() will not touch mu_.
  bool PrepareToSleep();

  mutable Mutex mu_;
  CondVar cv_;  // Completion and cancellation.
  Status status_ WEFT_GUARDED_BY(mu_);
  bool complete_ WEFT_GUARDED_BY(mu_) = false;  // See completion_.

  std::vector<NodeExecStats> stats_;
  std::vector<char> executed_;
  Mutex nested_mu_;
  std::vector<NodeExecStats> nested_stats_ WEFT_GUARDED_BY(nested_mu_);
  std::vector<int> caller_queue_ WEFT_GUARDED_BY(mu_);
  int bound_running_ WEFT_GUARDED_BY(mu_) = 0;
  std::deque<int> bound_waiting_ WEFT_GUARDED_BY(mu_);  // First come first.
};

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_RUN_STATE_H_
