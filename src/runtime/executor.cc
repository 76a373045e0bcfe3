#include "runtime/executor.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "runtime/node_run.h"

namespace weft::internal {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Clock::now().time_since_epoch())
      .count();
}

// Cost is measured on every 8th node a thread runs (and on every node when
// tracing): two clock reads per node would cost more than a cheap kernel.
bool ShouldSampleCost() {
  thread_local uint32_t counter = 0;
  return (++counter & 7) == 0;
}

std::string NodeContext(const CompiledNode& node) {
  return "node '" + node.name + "' (op " + node.op + ")";
}

void Dispatch(const std::shared_ptr<RunState>& run, int node);

// Runs node `index`'s kernel and appends the consumers it made ready.
void ExecuteNode(RunState& run, int index, std::vector<int>* ready) {
  if (run.cancelled()) return;
  const CompiledGraph& graph = run.graph();
  const CompiledNode& node = graph.node(index);
  const bool trace = run.config().trace;
  const bool timed = trace || ShouldSampleCost();
  const int64_t start = timed ? NowNs() : 0;

  NodeRun node_run;
  node_run.node = &node;
  node_run.run = &run;
  node_run.inputs.reserve(node.inputs.size());
  for (const EdgeRef& in : node.inputs) {
    node_run.inputs.push_back(
        &run.values()[graph.node(in.node).first_value + in.slot]);
  }
  // data() + offset, not &values[offset]: a node may have no outputs in a
  // graph with no values at all.
  node_run.outputs = run.values().data() + node.first_value;
  node_run.intra_pool = run.config().intra_pool;
  node_run.trace = trace;

  KernelContext ctx(&node_run);
  Status status;
  try {
    status = node.kernel->Compute(ctx);
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
  if (timed) graph.RecordCost(index, static_cast<double>(end - start));
  if (trace) {
    NodeExecStats& stats = run.stats()[index];
    stats.node_name = node.name;
    stats.op = node.op;
    stats.device = node.device;
    stats.start_ns = start;
    stats.end_ns = end;
    ThreadPool* pool = run.config().inter_pool;
    stats.thread_index = pool ? pool->CurrentThreadIndex() : -1;
    stats.pool =
        stats.thread_index >= 0 ? run.config().inter_pool_name : "caller";
    stats.os_thread_id = CurrentOsThreadId();
    stats.thread_name = CurrentThreadName();
    stats.intra_op_shards = node_run.max_shards;
    stats.shards = std::move(node_run.shards);
    stats.output_shapes.clear();
    for (size_t k = 0; k < node.output_dtypes.size(); ++k) {
      if (node_run.outputs[k].IsInitialized()) {
        stats.output_shapes.push_back(node_run.outputs[k].shape().dims());
      }
    }
    run.executed()[index] = 1;
  }
  if (!status.ok()) {
    run.Abort(status.WithContext(NodeContext(node)));
    return;
  }

  const ExecutionPlan& plan = run.plan();
  auto release = [&](int consumer) {
    if (plan.role[consumer] == ExecutionPlan::kRun &&
        run.pending(consumer).fetch_sub(1, std::memory_order_acq_rel) == 1) {
      ready->push_back(consumer);
    }
  };
  for (const EdgeRef& edge : node.consumers) release(edge.node);
  for (int consumer : node.control_consumers) release(consumer);
}

// Runs `first` and, on this thread, the chain of work it leads to.
void Process(const std::shared_ptr<RunState>& run, int first) {
  RunState& state = *run;
  const CompiledGraph& graph = state.graph();
  const double inline_cost = state.config().inline_node_cost_ns;
  std::vector<int> local = {first};
  std::vector<int> ready;
  while (!local.empty()) {
    const int node = local.back();
    local.pop_back();
    ready.clear();
    ExecuteNode(state, node, &ready);
    if (!ready.empty()) {
      if (state.config().trace) {
        const int64_t now = NowNs();
        for (int r : ready) state.stats()[r].scheduled_ns = now;
      }
      int continuation = -1;
      std::vector<int> cheap;
      for (int r : ready) {
        const CompiledNode& n = graph.node(r);
        if (!n.blocking && graph.cost_ns(r) < inline_cost) {
          cheap.push_back(r);
        } else if (continuation < 0 && !n.blocking) {
          continuation = r;
        } else {
          Dispatch(run, r);
        }
      }
      // LIFO: the cheap nodes run first, then the continuation.
      state.AddOutstanding(static_cast<int64_t>(cheap.size()) +
                           (continuation >= 0 ? 1 : 0));
      if (continuation >= 0) local.push_back(continuation);
      local.insert(local.end(), cheap.rbegin(), cheap.rend());
    }
    state.FinishOutstanding();
  }
}

void Dispatch(const std::shared_ptr<RunState>& run, int node) {
  run->AddOutstanding(1);
  if (ThreadPool* pool = run->config().inter_pool) {
    pool->Schedule([run, node] { Process(run, node); });
  } else {
    run->caller_queue().push_back(node);
  }
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

void ExecuteRun(const std::shared_ptr<RunState>& run,
                std::optional<Clock::time_point> deadline) {
  const ExecutionPlan& plan = run->plan();
  if (plan.roots.empty()) return;  // Everything fetched was fed.
  if (run->config().trace) {
    const int64_t now = NowNs();
    for (int r : plan.roots) run->stats()[r].scheduled_ns = now;
  }
  // Hold one count while dispatching so that the Run cannot complete before
  // every root is out.
  run->AddOutstanding(1);
  for (int root : plan.roots) Dispatch(run, root);
  if (run->config().inter_pool == nullptr) {
    std::vector<int>& queue = run->caller_queue();
    while (!queue.empty()) {
      const int node = queue.back();
      queue.pop_back();
      if (deadline && Clock::now() > *deadline) {
        run->Abort(DeadlineExceededError("the Run exceeded its deadline"));
      }
      Process(run, node);
    }
  }
  run->FinishOutstanding();
  if (deadline && !run->WaitForCompletion(*deadline)) {
    run->Abort(DeadlineExceededError("the Run exceeded its deadline"));
  }
  run->WaitForCompletion();
}

}  // namespace weft::internal
