#include "runtime/executor.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <new>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "framework/node_context.h"
#include "runtime/blocking_pool.h"
#include "runtime/clock.h"
#include "runtime/core_budget.h"
#include "runtime/node_run.h"
#include "threading/cpu_spread.h"
#include "threading/pool_core.h"
#include "threading/thread_pool_internal.h"

namespace weft::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Cost is measured on every 16th node a thread runs (and on every node when
// tracing): two clock reads per node would cost more than a cheap kernel.
bool ShouldSampleCost() {
  thread_local uint32_t counter = 0;
  return (++counter & 15) == 0;
}

std::string NodeContext(const CompiledNode& node) {
  return internal::NodeContext(node.name, node.op());
}

// Per-thread stacks of ready nodes, one per nesting level (a kernel may call
// Session::Run, which runs Process again on the same thread), kept between
// calls so that running a node allocates nothing.
class LocalStack {
 public:
  LocalStack() {
    if (depth_ == static_cast<int>(stacks_.size())) {
      stacks_.push_back(std::make_unique<std::vector<int>>());
    }
    nodes_ = stacks_[depth_++].get();
    nodes_->clear();
  }
  ~LocalStack() { --depth_; }
  LocalStack(const LocalStack&) = delete;
  LocalStack& operator=(const LocalStack&) = delete;

  std::vector<int>& nodes() { return *nodes_; }

 private:
  static thread_local std::vector<std::unique_ptr<std::vector<int>>> stacks_;
  static thread_local int depth_;
  std::vector<int>* nodes_;
};

thread_local std::vector<std::unique_ptr<std::vector<int>>> LocalStack::stacks_;
thread_local int LocalStack::depth_ = 0;

// Hands `node` to another thread: a blocking node to the blocking pool (it
// must not hold an inter-op worker while it waits), any other to the
// inter-op pool, or to the calling thread when the Run has no pool.
void Dispatch(RunState& run, int node) {
  run.AddOutstanding(1);
  if (node != NodeTask::kStart && run.graph().node(node).blocking) {
    // An inter_op_bound node without a place waits in the RunState (still
    // outstanding) until Process hands it the place of one that finished.
    if (run.graph().node(node).inter_op_bound && !run.TakeBoundPlace(node)) {
      return;
    }
    BlockingPool::Global().Schedule(&run.task(node));
  } else if (ThreadPool* pool = run.config().inter_pool) {
    ThreadPoolInternal::core(*pool).Schedule(&run.task(node));
  } else {
    run.PushCallerNode(node);
  }
}

void RecordTrace(RunState& run, int index, NodeRun& node_run, int64_t start,
                 int64_t end) {
  const CompiledNode& node = run.graph().node(index);
  NodeExecStats& stats = run.stats()[index];
  stats.node_name = node.name;
  stats.op = node.op();
  stats.device = node.device();
  stats.start_ns = start;
  stats.end_ns = end;
  ThreadPool* pool = run.config().inter_pool;
  stats.thread_index = pool ? pool->CurrentThreadIndex() : -1;
  stats.pool =
      stats.thread_index >= 0 ? run.config().inter_pool_name : "caller";
  stats.os_thread_id = CurrentOsThreadId();
  stats.thread_name = CurrentThreadName();
  stats.intra_op_shards = node_run.max_shards;
  {
    // Every shard has finished; the lock only states that to the analysis.
    MutexLock lock(node_run.shards_mu);
    stats.shards = std::move(node_run.shards);
  }
  stats.output_shapes.clear();
  for (size_t k = 0; k < node.output_dtypes.size(); ++k) {
    if (node_run.outputs[k].IsInitialized()) {
      stats.output_shapes.push_back(node_run.outputs[k].shape().dims());
    }
  }
  stats.input_nodes.clear();
  // A set, not a search of the list: a Concat may have thousands of inputs.
  std::unordered_set<int> seen;
  auto add_input = [&](int producer) {
    if (seen.insert(producer).second) {
      stats.input_nodes.push_back(run.graph().node(producer).name);
    }
  };
  for (const EdgeRef& edge : node.inputs) add_input(edge.node);
  for (int producer : node.control_inputs) add_input(producer);
  run.executed()[index] = 1;
}

// Runs node `index`'s kernel. Returns false when the Run is (now) aborted.
bool ExecuteNode(RunState& run, int index) {
  if (run.cancelled()) return false;
  const CompiledNode& node = run.graph().node(index);
  const bool trace = run.config().trace;
  const bool timed = trace || ShouldSampleCost();
  const int64_t start = timed ? NowNs() : 0;

  NodeRun node_run;
  node_run.node = &node;
  node_run.run = &run;
  // data() + offset, not &values[offset]: a node may have no outputs in a
  // graph with no values at all.
  node_run.values = run.values().data();
  node_run.outputs = run.values().data() + node.first_value;
  node_run.intra_pool = run.config().intra_pool;
  node_run.trace = trace;

  KernelContext ctx = KernelContextInternal::ContextFor(&node_run);
  Status status;
  try {
    status = node.kernel->Compute(ctx);
  } catch (const std::bad_alloc&) {
    // A kernel's working memory (tables, buffers) past what the machine
    // gives: the request's size, not a bug in weft.
    status = ResourceExhaustedError(
        "out of memory: the kernel's working memory for these inputs could "
        "not be allocated");
  } catch (const std::exception& e) {
    status = InternalError(std::string("the kernel threw: ") + e.what());
  } catch (...) {
    status = InternalError("the kernel threw a non-standard exception");
  }
  if (status.ok()) {
    for (size_t k = 0; k < node.output_dtypes.size(); ++k) {
      if (!node_run.outputs[k].IsInitialized()) {
        status = InternalError("the kernel did not produce output " +
                               std::to_string(k));
        break;
      }
    }
  }
  const int64_t end = timed ? NowNs() : 0;
  if (timed) run.graph().RecordCost(index, static_cast<double>(end - start));
  if (trace) RecordTrace(run, index, node_run, start, end);
  if (!status.ok()) {
    run.Abort(status.WithContext(NodeContext(node)));
    return false;
  }
  // Drop the Run's reference to inputs no later node reads, and to outputs
  // nothing reads.
  const ExecutionPlan& plan = run.plan();
  for (size_t k = 0; k < node.output_dtypes.size(); ++k) {
    if (plan.value_uses[node.first_value + k] == 0) {
      run.ReleaseBytes(static_cast<int64_t>(node_run.outputs[k].size_bytes()));
      node_run.outputs[k] = Tensor();
    }
  }
  for (size_t i = 0; i < node.input_values.size(); ++i) {
    const int value = node.input_values[i];
    if (plan.value_uses[value] == ExecutionPlan::kPinned) continue;
    if (plan.value_uses[value] == 1 ||
        run.uses(value).fetch_sub(1, std::memory_order_acq_rel) == 1) {
      Tensor& released = run.values()[value];
      // Only what nodes of this Run produced was counted (not feeds).
      if (plan.role[node.inputs[i].node] == ExecutionPlan::kRun) {
        run.ReleaseBytes(static_cast<int64_t>(released.size_bytes()));
      }
      released = Tensor();
    }
  }
  return true;
}

// True when `shorter`, made ready with the costlier `kept` that this thread
// keeps, should run here too rather than go to another inter-op worker: its
// cost estimate is below `join_inline_cost_ns` and it feeds nodes that all
// read `kept` too, so running it here delays nothing but that join, by less
// than a hand-off to another worker costs (SessionOptions). A node that
// feeds nothing joins nothing: it is handed over as before.
bool JoinsKeptNode(const CompiledGraph& graph, int shorter, int kept,
                   double join_inline_cost_ns) {
  if (graph.cost_ns(shorter) >= join_inline_cost_ns) return false;
  const CompiledNode& a = graph.node(shorter);
  const CompiledNode& b = graph.node(kept);
  if (a.consumers.empty() && a.control_consumers.empty()) return false;
  auto reads_kept = [&](int consumer) {
    for (const EdgeRef& edge : b.consumers) {
      if (edge.node == consumer) return true;
    }
    return std::find(b.control_consumers.begin(), b.control_consumers.end(),
                     consumer) != b.control_consumers.end();
  };
  for (const EdgeRef& edge : a.consumers) {
    if (!reads_kept(edge.node)) return false;
  }
  return std::all_of(a.control_consumers.begin(), a.control_consumers.end(),
                     reads_kept);
}

// One thread's work from one dispatched node (or, for NodeTask::kStart,
// from the Run's roots): the node, and the work it leads to on this
// thread. Of each batch of nodes a finished node makes ready, the cheap ones
// run here first (LIFO), then the costliest expensive node; another
// expensive one runs here too when it is short and joins the costliest at
// once (JoinsKeptNode), else it is dispatched. Nodes run here are covered
// by the one outstanding count `first` was dispatched with, released at
// the end. The state is the batch being built; each step is a method, so
// the loop reads as the three steps it takes per node.
class ThreadBatch {
 public:
  explicit ThreadBatch(RunState& run)
      : run_(run),
        graph_(run.graph()),
        plan_(run.plan()),
        inline_cost_(run.config().inline_node_cost_ns),
        join_inline_cost_(run.config().join_inline_cost_ns),
        trace_(run.config().trace),
        // A blocking-pool thread runs only its blocking node: what that
        // node makes ready goes back to the Run's own threads.
        on_blocking_thread_(BlockingPool::OnPoolThread()),
        pool_(run.config().inter_pool),
        on_inter_pool_(pool_ != nullptr && pool_->CurrentThreadIndex() >= 0),
        // The thread that called Run, when the Run has a pool, keeps only
        // cheap nodes (StartsOnCaller): expensive ones are the inter-op
        // pool's, so that inter_op_parallelism_threads still bounds how many
        // run at once.
        keeps_expensive_(pool_ == nullptr || on_inter_pool_),
        // Not on a blocking-pool thread, whose node mostly waits, nor when
        // the Run has no other thread to meet (see RunLocalNodes).
        may_claim_cpu_(
            !on_blocking_thread_ &&
            (pool_ != nullptr || run.config().intra_pool != nullptr)),
        local_(local_stack_.nodes()),
        others_(others_stack_.nodes()) {}

  // Makes every root of the Run ready, as one batch.
  void StartRun() {
    run_.ResetCounters();
    if (trace_) now_ = NowNs();
    for (int root : plan_.roots) Ready(root);
    EndBatch();
  }

  void Push(int node) { local_.push_back(node); }

  // Runs the nodes on this thread's stack, and those they make ready and
  // keep here, until none is left.
  void RunLocalNodes() {
    while (!local_.empty()) {
      const int index = local_.back();
      local_.pop_back();
      // This thread computes on its CPU, which a pool thread first leaves if
      // another weft thread computes there while a CPU is free
      // (threading/cpu_spread.h): a worker woken for this batch may have
      // been queued behind a busy thread. Claimed at the batch's first node
      // worth a move (a batch of cheap nodes, such as a one-node Run, ends
      // before a stacking matters), then held to the end, like the budget.
      if (may_claim_cpu_ && !on_cpu_ && graph_.cost_ns(index) >= kSpreadMinNs) {
        on_cpu_.emplace(/*may_move=*/PoolCore::OnAnyPoolThread());
      }
      const bool executed = ExecuteNode(run_, index);
      if (graph_.node(index).inter_op_bound) {
        // Its place goes to the next waiting node, which was counted
        // outstanding when it was dispatched. Even if cancelled: it then
        // returns at once.
        if (const int next = run_.ReleaseBoundPlace(); next >= 0) {
          BlockingPool::Global().Schedule(&run_.task(next));
        }
      }
      if (executed) ReleaseConsumers(index);
    }
  }

  // Gives this thread's core and CPU back, ends its share of the Run, and
  // helps a kernel that started short of intra-op helpers where one waits.
  void Finish() {
    // This thread's core is free again: a kernel that started with fewer
    // intra-op helpers than it could use may take one now, and this thread
    // becomes that helper. Waking an intra-op worker instead would hand the
    // core over while this thread still holds it (it spins for work before
    // parking), so the scheduler queues the woken worker behind a busy core
    // and the idle core does not pull it for milliseconds: a MatMul ran its
    // two tiles one after the other at (2, 2) (docs/BENCHMARKS.md). Taken
    // before FinishOutstanding, which may end the Run and with it the
    // session's pools; run after it, so that this Run's end never waits for
    // another Run's kernel. The task touches only its job, which its kernel
    // keeps alive until every claimed block has finished.
    //
    // Not on an inter-op worker while nodes wait in its pool: it runs those
    // first (it finds them once it returns to its pool), for a node run whole
    // costs less than a kernel's share split over two threads, and the
    // kernel's unclaimed blocks stay advertised for whichever thread next
    // frees a core with no node waiting. Helping first made (2, 2) slower
    // than (2, 1) on two chains of MatMuls: a thread helped one chain's
    // MatMul for 1 ms while the other chain's roots waited
    // (docs/BENCHMARKS.md). The advertisement board (one cache line) is read
    // before the pool's queues (a line per worker).
    computing_.reset();
    on_cpu_.reset();
    internal::Task* late_helper = nullptr;
    if (ThreadPool* intra = run_.config().intra_pool;
        intra != nullptr &&
        CoreBudget::HelpersAllowed(1, run_.config().intra_threads) > 0) {
      internal::PoolCore& intra_core = ThreadPoolInternal::core(*intra);
      if (intra_core.AnyAdvert() &&
          !(on_inter_pool_ &&
            ThreadPoolInternal::core(*pool_).AnyQueuedWork())) {
        late_helper = intra_core.TakeAdvert();
      }
    }
    run_.FinishOutstanding();
    if (late_helper != nullptr) late_helper->Run();
  }

 private:
  // A node whose inputs are all there: kept on this thread's stack,
  // dispatched to the inter-op or blocking pool, or held as this batch's
  // costliest expensive node until EndBatch decides the others.
  void Ready(int node) {
    if (trace_) run_.stats()[node].scheduled_ns = now_;
    const CompiledNode& next = graph_.node(node);
    if (on_blocking_thread_) {
      Dispatch(run_, node);
    } else if (!next.blocking && graph_.cost_ns(node) < inline_cost_) {
      local_.push_back(node);
    } else if (next.blocking || !keeps_expensive_) {
      Dispatch(run_, node);
    } else if (continuation_ < 0) {
      continuation_ = node;
    } else {
      // The costlier node stays: a dispatched one waits for a worker to
      // wake (tens of microseconds), better spent beside the long node than
      // before it.
      if (graph_.cost_ns(node) > graph_.cost_ns(continuation_)) {
        std::swap(node, continuation_);
      }
      others_.push_back(node);
    }
  }

  // The batch is complete: each expensive node but the costliest runs here
  // if it joins the costliest at once, else goes to another worker; the
  // costliest runs here after the batch's cheap nodes.
  void EndBatch() {
    for (int other : others_) {
      if (JoinsKeptNode(graph_, other, continuation_, join_inline_cost_)) {
        local_.push_back(other);
      } else {
        Dispatch(run_, other);
      }
    }
    others_.clear();
    if (continuation_ >= 0) {
      local_.insert(local_.begin() + static_cast<std::ptrdiff_t>(mark_),
                    continuation_);
      continuation_ = -1;
    }
  }

  // Counts `index`'s output in at each consumer; those it completes are the
  // next batch.
  void ReleaseConsumers(int index) {
    const CompiledNode& node = graph_.node(index);
    mark_ = local_.size();
    if (trace_) now_ = NowNs();
    for (const EdgeRef& edge : node.consumers) Release(edge.node);
    for (int consumer : node.control_consumers) Release(consumer);
    EndBatch();
  }

  void Release(int consumer) {
    if (plan_.role[consumer] != ExecutionPlan::kRun) return;
    // A node with one pending input has no other producer to race with.
    if (plan_.initial_pending[consumer] == 1 ||
        run_.pending(consumer).fetch_sub(1, std::memory_order_acq_rel) == 1) {
      Ready(consumer);
    }
  }

  RunState& run_;
  const CompiledGraph& graph_;
  const ExecutionPlan& plan_;
  const double inline_cost_;
  const double join_inline_cost_;
  const bool trace_;
  const bool on_blocking_thread_;
  ThreadPool* const pool_;
  const bool on_inter_pool_;
  const bool keeps_expensive_;
  const bool may_claim_cpu_;
  // This thread computes from here to the end of its batch: it counts
  // against the core budget once, not once per node (two shared atomic
  // updates per node would cost more than a cheap kernel).
  std::optional<CoreBudget::Running> computing_{std::in_place};
  std::optional<CpuClaim> on_cpu_;
  LocalStack local_stack_;
  std::vector<int>& local_;
  // This batch's expensive nodes other than the one kept: decided at the
  // batch's end, when the node kept (the costliest) is known.
  LocalStack others_stack_;
  std::vector<int>& others_;
  int64_t now_ = 0;        // When this batch became ready (tracing only).
  size_t mark_ = 0;        // Where this batch starts on the stack.
  int continuation_ = -1;  // This batch's expensive node kept here.
};

void Process(RunState& run, int first) {
  ThreadBatch batch(run);
  if (first == NodeTask::kStart) {
    batch.StartRun();
  } else {
    batch.Push(first);
  }
  batch.RunLocalNodes();
  batch.Finish();
}

}  // namespace

int64_t CurrentOsThreadId() {
  thread_local const int64_t tid = static_cast<int64_t>(syscall(SYS_gettid));
  return tid;
}

const std::string& CurrentThreadName() {
  thread_local const std::string name = [] {
    char buf[16] = {};
    pthread_getname_np(pthread_self(), buf, sizeof(buf));
    return std::string(buf);
  }();
  return name;
}

void NodeTask::Run() { Process(*run, node); }

namespace {

// A Run whose roots are all cheap (below inline_node_cost_ns, not blocking)
// starts on the calling thread, which would otherwise only wait: handing
// the start to a worker and the end back costs two cross-core hand-offs
// (about 1.5 us, measured on a 2-vCPU Intel Xeon guest; docs/BENCHMARKS.md),
// more than such nodes. The caller runs cheap nodes
// only: every expensive node it makes ready goes to the pool (Process).
bool StartsOnCaller(const RunState& run) {
  const double inline_cost = run.config().inline_node_cost_ns;
  for (int root : run.plan().roots) {
    if (run.graph().node(root).blocking ||
        !(run.graph().cost_ns(root) < inline_cost)) {
      return false;
    }
  }
  return true;
}

}  // namespace

void ExecuteRun(RunState& run, std::optional<RunDeadline> deadline) {
  const ExecutionPlan& plan = run.plan();
  if (plan.roots.empty()) return;  // Everything fetched was fed.
  ThreadPool* pool = run.config().inter_pool;
  if (pool == nullptr) {
    // Every node but blocking ones runs here; those run on the blocking
    // pool and hand their successors back through the caller queue.
    run.AnnounceCallerWaits();
    Dispatch(run, NodeTask::kStart);
    for (int node;
         (node = run.NextCallerNode(deadline)) != RunState::kRunComplete;) {
      Process(run, node);
    }
    return;
  }
  if (StartsOnCaller(run)) {
    run.AddOutstanding(1);  // Released by Process.
    Process(run, NodeTask::kStart);
  } else {
    // One start task makes the roots ready on a worker, which runs the
    // cheap ones and pushes the rest onto its own deque: far cheaper than
    // injecting every root into the pool from outside.
    run.AddOutstanding(1);  // Held while starting: the Run cannot end early.
    Dispatch(run, NodeTask::kStart);
    run.FinishOutstanding();
  }
  const int spin_us = pool->options().spin_us;
  if (deadline && !run.WaitForCompletion(deadline->at, spin_us)) {
    run.Abort(deadline->Exceeded());
  }
  run.WaitForCompletion(spin_us);
}

void ExecuteNestedRun(RunState& run) {
  ThreadPool* pool = run.config().inter_pool;
  if (pool == nullptr || pool->CurrentThreadIndex() < 0) {
    CoreBudget::Waiting waiting;
    // In the caller-thread mode the outer Run's waiter is this very thread,
    // busy in the calling kernel: the nested Run enforces the deadline.
    ExecuteRun(run, pool == nullptr ? run.config().deadline : std::nullopt);
    return;
  }
  if (run.plan().roots.empty()) return;  // Everything fetched was fed.
  CoreBudget::Waiting waiting;
  run.AddOutstanding(1);  // Released by Process.
  Process(run, NodeTask::kStart);
  PoolCore& core = ThreadPoolInternal::core(*pool);
  // What Process handed to the pool sits on this worker's deque unless
  // another worker took it; either way the Run completes without this
  // thread sleeping while a task it could run is queued. A node finishing
  // on the blocking pool hands its successors to the pool from outside:
  // the bounded wait below finds them within one period.
  constexpr auto kPollPeriod = std::chrono::microseconds(100);
  while (!run.IsComplete()) {
    if (core.RunOneQueuedTask()) continue;
    if (run.WaitForCompletion(Clock::now() + kPollPeriod, 0)) break;
  }
}

}  // namespace weft::internal
