#include "weft/session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "framework/node_context.h"
#include "kernels/bf16_gemm.h"
#include "kernels/gemm_tile.h"
#include "kernels/int8_gemm.h"
#include "kernels/math_rows.h"
#include "ops/kernel_switches.h"
#include "optimize/fold_cache.h"
#include "optimize/passes.h"
#include "runtime/clock.h"
#include "runtime/compiled_graph.h"
#include "runtime/execution_plan.h"
#include "runtime/executor.h"
#include "runtime/run_cancellation.h"
#include "runtime/run_state.h"
#include "session/pools.h"
#include "session/session_options.h"
#include "threading/cpu_spread.h"
#include "threading/mutex.h"
#include "weft/graph_passes.h"
#include "weft/warnings.h"

namespace weft {
namespace internal {
namespace {

// REQUIRES: ValidateSessionOptions(options) is OK.
CompileOptions DeviceOptions(const SessionOptions& options) {
  CompileOptions compile;
  if (auto it = options.device_count.find("CPU");
      it != options.device_count.end()) {
    compile.num_cpu_devices = it->second;
  }
  compile.allow_soft_placement = options.allow_soft_placement;
  compile.log_device_placement = options.log_device_placement;
  compile.batch_invariant = options.batch_invariant;
  compile.bf16 = options.precision == "bf16";
  // One cache for every graph the session compiles: the graphs it compiles
  // for each set of feed shapes find the weights the first one prepared.
  compile.prepared_weights = std::make_shared<PreparedWeights>();
  return compile;
}

// A node whose output size is known when the graph is compiled and alone
// exceeds the Run's memory limit can never run: say so at load, naming it,
// instead of in the middle of a Run.
Status CheckStaticSizes(const CompiledGraph& graph, int64_t limit) {
  if (limit <= 0) return Status::OK();
  for (int i = 0; i < graph.num_nodes(); ++i) {
    const CompiledNode& node = graph.node(i);
    for (size_t k = 0; k < node.output_shapes.size(); ++k) {
      const PartialShape& shape = node.output_shapes[k];
      if (!shape.IsFullyDefined()) continue;
      const int64_t n = shape.ToShape().NumElements();
      const int64_t element =
          static_cast<int64_t>(DataTypeSize(node.output_dtypes[k]));
      if (n < 0 || (element > 0 && n > limit / element)) {
        return ResourceExhaustedError(
            NodeContext(node.name, node.op()) + ": output " +
            std::to_string(k) + " of shape " + shape.ToString() +
            " needs more than SessionOptions.memory_limit_bytes = " +
            std::to_string(limit) + " bytes");
      }
    }
  }
  return Status::OK();
}

std::string PlanKey(const NamedTensors& feeds,
                    const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets) {
  // '\0' cannot appear in a node name; '\1' separates the three lists.
  std::string key;
  for (const auto& feed : feeds) key += feed.first + '\0';
  key += '\1';
  for (const auto& fetch : fetches) key += fetch + '\0';
  key += '\1';
  for (const auto& target : targets) key += target + '\0';
  return key;
}

}  // namespace

// The graph a session runs: the graph the passes made, and, when they
// changed anything, the graph as given, compiled when a Run first needs it
// (a Run that names a node the passes removed, or feeds anything but a
// Placeholder).
//
// A graph whose placeholders leave dimensions open (an ONNX model's batch
// and sequence) is also optimised again for each set of feed shapes, with
// its placeholders declaring them (ExecutionPlan for that signature): the
// shape arithmetic folds and the fusions that need shapes apply. At most
// kMaxSpecializations of them; later shapes run the general graph. A
// session whose shapes are new at kMaxNewShapeRuns Runs in a row (a
// decoder, whose cache grows at every step and whose shapes never come
// back) specialises no more: it runs new shapes on the general graph
// rather than compiling at every token (milliseconds to tens of them a
// step, where the step itself may take one). A batch-invariant session
// (a server's) keeps specialising up to the limit, so that a request's
// bits do not depend on which graph its batch size ran on. Either way a
// set of shapes runs on the same graph at every Run.
struct SessionGraphs {
  std::shared_ptr<const CompiledGraph> optimized;
  // None: the passes changed nothing, and there is nothing to specialise.
  std::optional<Graph> as_given;
  CompileOptions compile;
  std::set<std::string> removed;  // Nodes the passes removed.
  bool specialize = false;
  // What constant folding computed, for the specialisations to reuse
  // (where specialize).
  std::shared_ptr<FoldCache> fold_cache;
};

// The graph optimised for one set of feed shapes.
struct SpecializedGraph {
  std::shared_ptr<const CompiledGraph> graph;
  std::set<std::string> removed;  // Nodes its passes removed.
};

// Whether some placeholder of `graph` leaves its shape open.
bool HasOpenPlaceholders(const Graph& graph) {
  for (const NodeDef& node : graph.nodes()) {
    if (node.op != "Placeholder") continue;
    auto it = node.attrs.find("shape");
    const PartialShape* shape =
        it == node.attrs.end() ? nullptr : it->second.get_if<PartialShape>();
    if (shape == nullptr || !shape->IsFullyDefined()) return true;
  }
  return false;
}

// `graph` with every fed placeholder declaring its feed's shape.
Graph WithFeedShapes(const Graph& graph, const NamedTensors& feeds) {
  std::map<std::string, Shape> fed;
  for (const auto& [name, value] : feeds) {
    auto spec = ParseInput(name);
    if (spec.ok() && spec->output == 0) fed[spec->node] = value.shape();
  }
  Graph out;
  for (NodeDef node : graph.nodes()) {
    auto it = fed.find(node.name);
    if (node.op == "Placeholder" && it != fed.end()) {
      node.attrs["shape"] = PartialShape(it->second);
    }
    (void)out.AddNode(std::move(node));
  }
  return out;
}

// The feeds' names and shapes, as a cache key.
std::string ShapeKey(const NamedTensors& feeds) {
  std::string key;
  for (const auto& [name, value] : feeds) {
    key += name + '\0';
    for (int64_t d : value.shape().dims()) key += std::to_string(d) + ',';
    key += '\0';
  }
  return key;
}

class SessionImpl {
 public:
  SessionImpl(SessionGraphs graphs, SessionPools pools, SessionOptions options)
      : graph_(std::move(graphs.optimized)),
        as_given_(std::move(graphs.as_given)),
        compile_(graphs.compile),
        removed_(std::move(graphs.removed)),
        specialize_(graphs.specialize),
        fold_cache_(std::move(graphs.fold_cache)),
        keeps_as_given_(as_given_.has_value()),
        options_(std::move(options)),
        pools_(std::move(pools)) {}

  Status Run(const RunOptions& run_options, const NamedTensors& feeds,
             const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata);
  Status Close();
  Status Prepare(const NamedTensors& feeds,
                 const std::vector<std::string>& fetches,
                 const std::vector<std::string>& targets) {
    WEFT_ASSIGN_OR_RETURN(
        const ExecutionPlan* plan,
        GetPlan(PlanKey(feeds, fetches, targets), feeds, fetches, targets));
    return CheckFeeds(*plan, feeds);
  }

  int inter_op_threads() const {
    MutexLock lock(mu_);
    return pools_.inter[0].threads;
  }
  int64_t prepared_bytes() const {
    int64_t bytes = 0;
    for (int i = 0; i < graph_->num_nodes(); ++i) {
      if (const OpKernel* kernel = graph_->node(i).kernel.get()) {
        bytes += kernel->prepared_bytes();
      }
    }
    return bytes;
  }
  int intra_op_threads() const {
    MutexLock lock(mu_);
    return pools_.intra_threads;
  }
  // A copy: Close() replaces pools_.
  SessionPools pools() const {
    MutexLock lock(mu_);
    return pools_;
  }

 private:
  // The plan of a signature (`key`: its PlanKey), built on first use; the
  // session keeps every plan it built for its lifetime.
  StatusOr<const ExecutionPlan*> GetPlan(
      const std::string& key, const NamedTensors& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets);
  Status CheckFeeds(const ExecutionPlan& plan, const NamedTensors& feeds) const;
  StatusOr<RunState::Config> MakeConfig(const RunOptions& run_options,
                                        const ExecutionPlan* plan)
      WEFT_REQUIRES(mu_);
  // A RunState for `config`: a recycled one when there is one.
  std::unique_ptr<RunState> AcquireRunState(RunState::Config config)
      WEFT_REQUIRES(mu_);
  // Ends a Run: no longer active; its RunState is kept for reuse.
  void ReleaseRunState(std::unique_ptr<RunState> run);
  static void FillMetadata(RunState& run, int64_t start_ns,
                           RunMetadata* metadata);

  // Whether a Run with these names must run the graph as given rather than
  // `graph`, from which the passes removed the nodes `removed`.
  static bool NeedsGraphAsGiven(const CompiledGraph& graph,
                                const std::set<std::string>& removed,
                                const NamedTensors& feeds,
                                const std::vector<std::string>& fetches,
                                const std::vector<std::string>& targets);
  StatusOr<const CompiledGraph*> GraphAsGiven();
  // The plan over the graph optimised for these feed shapes; null when the
  // Run should keep the general plan (too many shapes seen, a name the
  // specialised passes removed, or specialising failed).
  const ExecutionPlan* GetSpecializedPlan(
      const std::string& plan_key, const NamedTensors& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets);
  static constexpr size_t kMaxSpecializations = 8;
  static constexpr int kMaxNewShapeRuns = 3;

  const std::shared_ptr<const CompiledGraph> graph_;
  Mutex as_given_mu_;
  std::optional<Graph> as_given_ WEFT_GUARDED_BY(as_given_mu_);
  std::shared_ptr<const CompiledGraph> as_given_compiled_
      WEFT_GUARDED_BY(as_given_mu_);
  const CompileOptions compile_;
  const std::set<std::string> removed_;
  const bool specialize_;
  const std::shared_ptr<FoldCache> fold_cache_;
  const bool keeps_as_given_;  // as_given_ holds a graph (never changes).
  const SessionOptions options_;

  mutable Mutex mu_;
  CondVar runs_done_;
  SessionPools pools_ WEFT_GUARDED_BY(mu_);  // Released by Close().
  bool closed_ WEFT_GUARDED_BY(mu_) = false;
  std::vector<RunState*> active_ WEFT_GUARDED_BY(mu_);  // Runs in flight.
  // Finished RunStates kept for reuse (at most kMaxIdleRunStates).
  static constexpr size_t kMaxIdleRunStates = 8;
  std::vector<std::unique_ptr<RunState>> idle_runs_ WEFT_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const ExecutionPlan>> plans_
      WEFT_GUARDED_BY(mu_);
  // By ShapeKey (null: specialising these shapes failed), and their plans
  // by ShapeKey + PlanKey. Kept for the session's lifetime: plans point
  // into the graphs.
  std::map<std::string, std::shared_ptr<const SpecializedGraph>> specialized_
      WEFT_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const ExecutionPlan>> specialized_plans_
      WEFT_GUARDED_BY(mu_);
  // Runs in a row whose feed shapes were new, and whether the session has
  // stopped specialising for that (see SessionGraphs).
  int new_shape_runs_ WEFT_GUARDED_BY(mu_) = 0;
  bool shapes_churn_ WEFT_GUARDED_BY(mu_) = false;
  ResourceMgr resources_;  // Queues shared by every Run; thread-safe.
};

StatusOr<const ExecutionPlan*> SessionImpl::GetPlan(
    const std::string& key, const NamedTensors& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  {
    MutexLock lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second.get();
  }
  std::vector<std::string> feed_names;
  for (const auto& feed : feeds) feed_names.push_back(feed.first);
  const CompiledGraph* graph = graph_.get();
  if (keeps_as_given_ &&
      NeedsGraphAsGiven(*graph_, removed_, feeds, fetches, targets)) {
    WEFT_ASSIGN_OR_RETURN(graph, GraphAsGiven());
  }
  WEFT_ASSIGN_OR_RETURN(
      std::shared_ptr<const ExecutionPlan> plan,
      ExecutionPlan::Build(*graph, feed_names, fetches, targets));
  MutexLock lock(mu_);
  // A concurrent Run may have built the same plan: keep the first.
  return plans_.emplace(key, std::move(plan)).first->second.get();
}

bool SessionImpl::NeedsGraphAsGiven(const CompiledGraph& graph,
                                    const std::set<std::string>& removed,
                                    const NamedTensors& feeds,
                                    const std::vector<std::string>& fetches,
                                    const std::vector<std::string>& targets) {
  auto gone = [&](const std::string& name) {
    auto spec = ParseInput(name[0] == '^' ? name.substr(1) : name);
    return spec.ok() && removed.count(spec->node) > 0;
  };
  for (const auto& feed : feeds) {
    // A fed intermediate may not have the shape the passes inferred for it.
    auto spec = ParseInput(feed.first);
    const int node = spec.ok() ? graph.FindNode(spec->node) : -1;
    if (gone(feed.first) || (node >= 0 && !graph.node(node).is_placeholder)) {
      return true;
    }
  }
  return std::any_of(fetches.begin(), fetches.end(), gone) ||
         std::any_of(targets.begin(), targets.end(), gone);
}

const ExecutionPlan* SessionImpl::GetSpecializedPlan(
    const std::string& plan_key, const NamedTensors& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  const std::string shapes = ShapeKey(feeds);
  const std::string key = shapes + '\2' + plan_key;
  std::shared_ptr<const SpecializedGraph> graph;
  {
    MutexLock lock(mu_);
    if (auto it = specialized_plans_.find(key);
        it != specialized_plans_.end()) {
      new_shape_runs_ = 0;
      return it->second.get();
    }
    if (auto it = specialized_.find(shapes); it != specialized_.end()) {
      new_shape_runs_ = 0;
      graph = it->second;
      if (graph == nullptr) return nullptr;
    } else if (specialized_.size() >= kMaxSpecializations || shapes_churn_) {
      return nullptr;
    } else if (!compile_.batch_invariant &&
               ++new_shape_runs_ > kMaxNewShapeRuns) {
      shapes_churn_ = true;
      return nullptr;
    }
  }
  if (graph == nullptr) {
    Graph shaped;
    {
      MutexLock lock(as_given_mu_);
      shaped = WithFeedShapes(*as_given_, feeds);
    }
    GraphPassOptions passes;
    passes.disabled = options_.disabled_graph_passes;
    passes.num_cpu_devices = compile_.num_cpu_devices;
    passes.allow_soft_placement = compile_.allow_soft_placement;
    auto optimized = OptimizeGraph(shaped, passes, fold_cache_.get());
    std::shared_ptr<SpecializedGraph> made;
    if (optimized.ok()) {
      auto compiled =
          CompiledGraph::Compile(std::move(optimized->graph), compile_);
      if (compiled.ok()) {
        made = std::make_shared<SpecializedGraph>();
        made->graph = *std::move(compiled);
        for (const auto& entry : optimized->removed) {
          made->removed.insert(entry.first);
        }
      }
    }
    MutexLock lock(mu_);
    // A concurrent Run may have made it first: keep that one.
    graph = specialized_.emplace(shapes, std::move(made)).first->second;
    if (graph == nullptr) return nullptr;
  }
  if (NeedsGraphAsGiven(*graph->graph, graph->removed, feeds, fetches,
                        targets)) {
    return nullptr;
  }
  std::vector<std::string> feed_names;
  for (const auto& feed : feeds) feed_names.push_back(feed.first);
  auto plan = ExecutionPlan::Build(*graph->graph, feed_names, fetches, targets);
  if (!plan.ok()) return nullptr;
  MutexLock lock(mu_);
  return specialized_plans_.emplace(key, *std::move(plan)).first->second.get();
}

StatusOr<const CompiledGraph*> SessionImpl::GraphAsGiven() {
  MutexLock lock(as_given_mu_);
  if (as_given_compiled_ == nullptr) {
    WEFT_ASSIGN_OR_RETURN(as_given_compiled_,
                          CompiledGraph::Compile(*as_given_, compile_));
  }
  return as_given_compiled_.get();
}

Status SessionImpl::CheckFeeds(const ExecutionPlan& plan,
                               const NamedTensors& feeds) const {
  for (size_t i = 0; i < feeds.size(); ++i) {
    const Tensor& value = feeds[i].second;
    const CompiledNode& node = plan.graph->node(plan.feeds[i].node);
    const int slot = plan.feeds[i].slot;
    if (!value.IsInitialized()) {
      return InvalidArgumentError("feed '" + feeds[i].first +
                                  "' is an uninitialized tensor");
    }
    if (value.dtype() != node.output_dtypes[slot]) {
      return InvalidArgumentError("feed '" + feeds[i].first + "' is " +
                                  DataTypeName(value.dtype()) +
                                  " but the tensor it replaces is " +
                                  DataTypeName(node.output_dtypes[slot]));
    }
    const PartialShape& declared = node.output_shapes[slot];
    if (!declared.IsCompatibleWith(value.shape())) {
      std::string why;
      if (declared.rank_known() && declared.rank() != value.shape().rank()) {
        why = "rank " + std::to_string(value.shape().rank()) +
              ", the graph declares rank " + std::to_string(declared.rank());
      } else {
        for (int d = 0; why.empty() && d < declared.rank(); ++d) {
          if (declared.dim(d) >= 0 && declared.dim(d) != value.shape().dim(d)) {
            why = "dimension " + std::to_string(d) + " is " +
                  std::to_string(value.shape().dim(d)) +
                  ", the graph declares " + std::to_string(declared.dim(d));
          }
        }
      }
      return InvalidArgumentError("feed '" + feeds[i].first + "' has shape " +
                                  value.shape().ToString() + ": " + why +
                                  " (declared " + declared.ToString() + ")");
    }
  }
  return Status::OK();
}

StatusOr<RunState::Config> SessionImpl::MakeConfig(
    const RunOptions& run_options, const ExecutionPlan* plan) {
  RunState::Config config;
  config.graph = plan->graph;
  config.plan = plan;
  const int index = run_options.inter_op_thread_pool;
  if (index < -1 || index >= static_cast<int>(pools_.inter.size())) {
    return InvalidArgumentError(
        "RunOptions.inter_op_thread_pool = " + std::to_string(index) +
        " is out of range: this session has " +
        std::to_string(pools_.inter.size()) +
        " inter-op pool(s); -1 runs in the caller's thread");
  }
  if (index >= 0) {
    config.inter_pool = pools_.inter[index].pool.get();
    config.inter_pool_name = pools_.inter[index].name;
    if (config.inter_pool != nullptr) {  // Null: inter = -1 (the caller).
      config.inter_op_bound_places = config.inter_pool->NumThreads();
    }
  }
  config.intra_pool = pools_.intra.get();
  config.intra_threads = pools_.intra_threads;
  config.resources = &resources_;
  config.memory_limit_bytes = options_.memory_limit_bytes;
  config.trace = run_options.trace_level == RunOptions::TraceLevel::kFull;
  config.inline_node_cost_ns = options_.inline_node_cost_ns;
  config.join_inline_cost_ns = options_.join_inline_cost_ns;
  config.memory_pattern = options_.enable_mem_pattern;
  return config;
}

std::unique_ptr<RunState> SessionImpl::AcquireRunState(
    RunState::Config config) {
  std::unique_ptr<RunState> run;
  // Only one of the same graph: its arrays are sized for that graph (a
  // session may run its optimised graph, the graph as given and graphs
  // specialised per feed shape). One of the same plan first, whose arena
  // (runtime/memory_plan.h) it keeps; newest first.
  auto reusable = std::find_if(
      idle_runs_.rbegin(), idle_runs_.rend(),
      [&](const auto& idle) { return &idle->plan() == config.plan; });
  if (reusable == idle_runs_.rend()) {
    reusable = std::find_if(
        idle_runs_.rbegin(), idle_runs_.rend(),
        [&](const auto& idle) { return &idle->graph() == config.graph; });
  }
  if (reusable != idle_runs_.rend()) {
    run = std::move(*reusable);
    idle_runs_.erase(std::next(reusable).base());
    run->Reset(std::move(config));
  } else {
    run = std::make_unique<RunState>(std::move(config));
  }
  active_.push_back(run.get());
  return run;
}

void SessionImpl::ReleaseRunState(std::unique_ptr<RunState> run) {
  // Only a RunState whose Run succeeded is clean enough to recycle (a failed
  // Run may have left values and counters anywhere); the others go.
  const bool reusable = run->status().ok();
  if (reusable) {  // Outside the lock.
    run->ReleaseValues();
    run->LearnMemoryPlan();
  }
  MutexLock lock(mu_);
  active_.erase(std::find(active_.begin(), active_.end(), run.get()));
  if (reusable && !closed_) {
    // The oldest goes when full, so that the plans in use keep theirs.
    if (idle_runs_.size() >= kMaxIdleRunStates)
      idle_runs_.erase(idle_runs_.begin());
    idle_runs_.push_back(std::move(run));
  }
  runs_done_.NotifyAll();
}

void SessionImpl::FillMetadata(RunState& run, int64_t start_ns,
                               RunMetadata* metadata) {
  metadata->run_start_ns = start_ns;
  metadata->run_end_ns = NowNs();
  metadata->peak_bytes = run.peak_bytes();
  metadata->heap_tensors = run.heap_tensors();
  metadata->heap_tensor_bytes = run.heap_tensor_bytes();
  metadata->arena_bytes = run.arena_bytes();
  metadata->node_stats.clear();
  if (!run.config().trace) return;
  for (size_t i = 0; i < run.stats().size(); ++i) {
    if (run.executed()[i]) metadata->node_stats.push_back(run.stats()[i]);
  }
  for (NodeExecStats& nested : run.TakeNestedStats()) {
    metadata->node_stats.push_back(std::move(nested));
  }
  std::sort(metadata->node_stats.begin(), metadata->node_stats.end(),
            [](const NodeExecStats& a, const NodeExecStats& b) {
              return a.start_ns < b.start_ns;
            });
}

Status SessionImpl::Run(const RunOptions& run_options,
                        const NamedTensors& feeds,
                        const std::vector<std::string>& fetches,
                        const std::vector<std::string>& targets,
                        std::vector<Tensor>* outputs, RunMetadata* metadata) {
  const auto start = std::chrono::steady_clock::now();
  if (outputs == nullptr && !fetches.empty()) {
    return InvalidArgumentError("Run has fetches but outputs is null");
  }
  if (outputs != nullptr) outputs->clear();
  if (run_options.timeout_ms < 0) {
    return InvalidArgumentError(
        "RunOptions.timeout_ms = " + std::to_string(run_options.timeout_ms) +
        " must be >= 0");
  }
  const std::string plan_key = PlanKey(feeds, fetches, targets);
  WEFT_ASSIGN_OR_RETURN(const ExecutionPlan* plan,
                        GetPlan(plan_key, feeds, fetches, targets));
  WEFT_RETURN_IF_ERROR(CheckFeeds(*plan, feeds));
  if (specialize_ && plan->graph == graph_.get() && !feeds.empty()) {
    if (const ExecutionPlan* specialized =
            GetSpecializedPlan(plan_key, feeds, fetches, targets)) {
      plan = specialized;
    }
  }

  const int64_t timeout_ms = run_options.timeout_ms > 0
                                 ? run_options.timeout_ms
                                 : options_.operation_timeout_ms;
  std::optional<RunDeadline> deadline;
  if (timeout_ms > 0) {
    deadline =
        RunDeadline{start + std::chrono::milliseconds(timeout_ms), timeout_ms};
  }
  std::unique_ptr<RunState> run;
  {
    // Under mu_: Close() releases the pools the config takes.
    MutexLock lock(mu_);
    if (closed_) return FailedPreconditionError("the session is closed");
    WEFT_ASSIGN_OR_RETURN(RunState::Config config,
                          MakeConfig(run_options, plan));
    config.deadline = deadline;
    run = AcquireRunState(std::move(config));
  }
  RunCancellation* cancellation = run_options.cancellation.get();
  if (cancellation != nullptr &&
      !RunCancellationInternal::Register(*cancellation, run.get())) {
    ReleaseRunState(std::move(run));
    return CancelledError(
        "the Run was cancelled before it started (RunCancellation)");
  }
  for (size_t i = 0; i < feeds.size(); ++i) {
    const EdgeRef& ref = run->plan().feeds[i];
    run->values()[plan->graph->node(ref.node).first_value + ref.slot] =
        feeds[i].second;
  }
  ExecuteRun(*run, deadline);
  if (cancellation != nullptr) {
    RunCancellationInternal::Unregister(*cancellation, run.get());
  }

  if (metadata != nullptr) {
    FillMetadata(*run, ToNs(start), metadata);
  }
  Status status = run->status();
  if (status.ok()) {
    for (const EdgeRef& fetch : run->plan().fetches) {
      outputs->push_back(
          run->values()[plan->graph->node(fetch.node).first_value +
                        fetch.slot]);
    }
  }
  ReleaseRunState(std::move(run));
  return status;
}

Status SessionImpl::Close() {
  MutexLock lock(mu_);
  if (!closed_) {
    closed_ = true;
    for (const auto& run : active_) {
      run->Abort(CancelledError("the session was closed during the Run"));
    }
  }
  while (!active_.empty()) runs_done_.Wait(lock);
  idle_runs_.clear();
  pools_.inter = {InterPool{}};  // Releases the pools; keeps the facts.
  pools_.intra = nullptr;
  return Status::OK();
}

}  // namespace internal

class Session::Impl : public internal::SessionImpl {
 public:
  using SessionImpl::SessionImpl;
};

StatusOr<std::unique_ptr<Session>> Session::Create(
    Graph graph, const SessionOptions& options) {
  WEFT_RETURN_IF_ERROR(internal::ValidateSessionOptions(options));
  WEFT_RETURN_IF_ERROR(internal::CheckGemmKernelEnvironment());
  WEFT_RETURN_IF_ERROR(internal::CheckInt8KernelEnvironment());
  WEFT_RETURN_IF_ERROR(internal::CheckMathRowsEnvironment());
  WEFT_RETURN_IF_ERROR(internal::CheckBf16UnitsEnvironment());
  WEFT_RETURN_IF_ERROR(internal::CheckCpuSpreadEnvironment());
  WEFT_RETURN_IF_ERROR(internal::CheckKernelSwitchEnvironment());
  if (auto it = options.device_count.find("CPU");
      it != options.device_count.end() && it->second > 1) {
    // TensorFlow users expect more devices to mean more speed; say once
    // per session that here they do not.
    const std::string count = std::to_string(it->second);
    EmitWarning(WarningCategory::kPerformance,
                "device_count {\"CPU\": " + count + "}: the " + count +
                    " CPU devices share this session's pools; placement is "
                    "recorded in RunMetadata, but gives no speed-up");
  }
  if (options.precision == "bf16" &&
      internal::ThisCpuBf16Support() ==
          internal::Bf16Support::kSlowerThanFp32) {
    // It runs as asked (the user may want bf16's numbers), but a user who
    // chose it for speed must hear that here it costs speed.
    EmitWarning(WarningCategory::kPerformance,
                std::string("SessionOptions.precision = bf16 runs slower "
                            "than fp32 on this CPU: ") +
                    internal::kBf16SlowerThanFp32Reason +
                    " (ResNet-18 took 1.7-2.1x fp32's time on an Emerald "
                    "Rapids guest); use precision fp32 for speed "
                    "(docs/kernels.md, \"bf16 mode\")");
  }
  internal::SessionGraphs graphs;
  graphs.compile = internal::DeviceOptions(options);
  if (options.optimize_graph) {
    GraphPassOptions passes;
    passes.disabled = options.disabled_graph_passes;
    passes.num_cpu_devices = graphs.compile.num_cpu_devices;
    passes.allow_soft_placement = graphs.compile.allow_soft_placement;
    graphs.specialize = internal::HasOpenPlaceholders(graph);
    if (graphs.specialize) {
      graphs.fold_cache = std::make_shared<internal::FoldCache>(graph);
    }
    WEFT_ASSIGN_OR_RETURN(
        OptimizedGraph optimized,
        internal::OptimizeGraph(graph, passes, graphs.fold_cache.get()));
    for (const auto& entry : optimized.removed) {
      graphs.removed.insert(entry.first);
    }
    int rewrites = 0;
    for (const GraphPassResult& pass : optimized.passes) {
      rewrites += pass.rewrites;
    }
    if (rewrites > 0 || graphs.specialize) {
      graphs.as_given = std::move(graph);
      graph = std::move(optimized.graph);
    }
  }
  auto compiled =
      internal::CompiledGraph::Compile(std::move(graph), graphs.compile);
  if (!compiled.ok() && graphs.as_given) {
    // The graph as given may not compile either (a dtype an op does not
    // take, with the shapes left open): then that is the user's error.
    WEFT_RETURN_IF_ERROR(
        internal::CompiledGraph::Compile(*graphs.as_given, graphs.compile)
            .status());
    // Else a pass broke it: say so, and how to go on.
    return InternalError(
        "the graph passes made a graph that does not compile (" +
        compiled.status().message() +
        "); create the session with optimize_graph = false (--no-optimize) "
        "and report this");
  }
  WEFT_RETURN_IF_ERROR(compiled.status());
  graphs.optimized = *std::move(compiled);
  WEFT_RETURN_IF_ERROR(internal::CheckStaticSizes(*graphs.optimized,
                                                  options.memory_limit_bytes));
  WEFT_ASSIGN_OR_RETURN(internal::SessionPools pools,
                        internal::AcquireSessionPools(options));
  return std::unique_ptr<Session>(new Session(
      std::make_unique<Impl>(std::move(graphs), std::move(pools), options)));
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Session::~Session() { (void)impl_->Close(); }

Status Session::Run(const NamedTensors& feeds,
                    const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets,
                    std::vector<Tensor>* outputs) {
  return impl_->Run(RunOptions{}, feeds, fetches, targets, outputs, nullptr);
}

Status Session::Run(const RunOptions& run_options, const NamedTensors& feeds,
                    const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets,
                    std::vector<Tensor>* outputs, RunMetadata* metadata) {
  return impl_->Run(run_options, feeds, fetches, targets, outputs, metadata);
}

Status Session::Prepare(const NamedTensors& feeds,
                        const std::vector<std::string>& fetches,
                        const std::vector<std::string>& targets) {
  return impl_->Prepare(feeds, fetches, targets);
}

Status Session::Close() { return impl_->Close(); }

int Session::inter_op_threads() const { return impl_->inter_op_threads(); }

int Session::intra_op_threads() const { return impl_->intra_op_threads(); }

int64_t Session::prepared_bytes() const { return impl_->prepared_bytes(); }

int Session::inter_op_spin_us() const { return impl_->pools().inter_spin_us; }

int Session::intra_op_spin_us() const { return impl_->pools().intra_spin_us; }

std::vector<int> Session::inter_op_pin_cpus() const {
  return impl_->pools().inter_pin_cpus;
}

std::vector<int> Session::intra_op_pin_cpus() const {
  return impl_->pools().intra_pin_cpus;
}

}  // namespace weft
