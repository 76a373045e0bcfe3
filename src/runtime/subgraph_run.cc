#include <set>

#include "runtime/compiled_graph.h"
#include "runtime/execution_plan.h"
#include "runtime/executor.h"
#include "runtime/kernel_services.h"
#include "runtime/node_run.h"
#include "runtime/run_state.h"
#include "weft/check.h"

namespace weft::internal {
namespace {

// The subgraph's graph with its parameters' dtypes and shapes replaced by
// the bindings.
StatusOr<Graph> BindParameters(const Subgraph& subgraph,
                               std::span<const CompiledSubgraph::Binding> in) {
  if (subgraph.inputs.size() != in.size()) {
    return InvalidArgumentError(
        "it has " + std::to_string(subgraph.inputs.size()) +
        " inputs, the node passes " + std::to_string(in.size()));
  }
  std::map<std::string, size_t> parameter;
  for (size_t i = 0; i < subgraph.inputs.size(); ++i) {
    const std::string& name = subgraph.inputs[i];
    const NodeDef* node = subgraph.graph.FindNode(name);
    if (node == nullptr || node->op != "Placeholder") {
      return InvalidArgumentError("input '" + name +
                                  "' is not a Placeholder of the subgraph");
    }
    if (!parameter.emplace(name, i).second) {
      return InvalidArgumentError("input '" + name + "' is listed twice");
    }
  }
  Graph bound;
  for (NodeDef node : subgraph.graph.nodes()) {
    if (auto it = parameter.find(node.name); it != parameter.end()) {
      node.attrs["dtype"] = in[it->second].dtype;
      node.attrs["shape"] = in[it->second].shape;
    }
    WEFT_RETURN_IF_ERROR(bound.AddNode(std::move(node)));
  }
  return bound;
}

}  // namespace

StatusOr<std::unique_ptr<CompiledSubgraph>> CompiledSubgraph::Compile(
    const Subgraph& subgraph, std::span<const Binding> inputs,
    const std::string& what) {
  auto compiled = std::unique_ptr<CompiledSubgraph>(new CompiledSubgraph());
  compiled->what_ = what;
  auto bound = BindParameters(subgraph, inputs);
  if (!bound.ok()) return bound.status().WithContext(what);
  auto graph = CompiledGraph::Compile(*std::move(bound), CompileOptions{});
  if (!graph.ok()) return graph.status().WithContext(what);
  compiled->graph_ = *std::move(graph);
  if (subgraph.outputs.empty()) {
    return InvalidArgumentError(what + ": the subgraph has no outputs");
  }
  auto plan = ExecutionPlan::Build(*compiled->graph_, subgraph.inputs,
                                   subgraph.outputs, {});
  if (!plan.ok()) return plan.status().WithContext(what);
  compiled->plan_ = *std::move(plan);
  return compiled;
}

int CompiledSubgraph::num_inputs() const {
  return static_cast<int>(plan_->feeds.size());
}

int CompiledSubgraph::num_outputs() const {
  return static_cast<int>(plan_->fetches.size());
}

DataType CompiledSubgraph::output_dtype(int i) const {
  const EdgeRef& ref = plan_->fetches[i];
  return graph_->node(ref.node).output_dtypes[ref.slot];
}

const PartialShape& CompiledSubgraph::output_shape(int i) const {
  const EdgeRef& ref = plan_->fetches[i];
  return graph_->node(ref.node).output_shapes[ref.slot];
}

SubgraphRunner::SubgraphRunner(KernelContext& ctx,
                               const CompiledSubgraph& subgraph)
    : ctx_(ctx),
      subgraph_(subgraph),
      parent_(KernelContextInternal::run_state(ctx)) {}

SubgraphRunner::~SubgraphRunner() = default;

Status SubgraphRunner::Run(std::span<const Tensor> inputs,
                           std::vector<Tensor>* outputs, int64_t iteration) {
  const std::optional<RunDeadline>& deadline = parent_.config().deadline;
  if (deadline && std::chrono::steady_clock::now() >= deadline->at) {
    // The waiter of a caller-thread Run is this thread: end the Run here.
    parent_.Abort(deadline->Exceeded());
  }
  if (ctx_.IsCancelled()) {
    Status status = parent_.status();
    if (status.ok()) status = CancelledError("the Run was cancelled");
    return status;
  }
  WEFT_CHECK(static_cast<int>(inputs.size()) == subgraph_.num_inputs(),
             "SubgraphRunner::Run: wrong number of inputs");
  RunState::Config config = parent_.config();
  config.graph = subgraph_.graph_.get();
  config.plan = subgraph_.plan_.get();
  if (run_ == nullptr) {
    run_ = std::make_unique<RunState>(std::move(config));
  } else {
    run_->Reset(std::move(config));
  }
  const CompiledGraph& graph = *subgraph_.graph_;
  const ExecutionPlan& plan = *subgraph_.plan_;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const EdgeRef& ref = plan.feeds[i];
    run_->values()[graph.node(ref.node).first_value + ref.slot] = inputs[i];
  }
  ExecuteNestedRun(*run_);
  if (run_->config().trace) {
    // Body nodes are named under the calling node, and so are their inputs.
    auto qualify = [this](NodeExecStats& s) {
      s.node_name = ctx_.node_name() + "/" + s.node_name;
      for (std::string& input : s.input_nodes) {
        input = ctx_.node_name() + "/" + input;
      }
    };
    std::vector<NodeExecStats> stats;
    for (size_t i = 0; i < run_->stats().size(); ++i) {
      if (!run_->executed()[i]) continue;
      NodeExecStats s = std::move(run_->stats()[i]);
      qualify(s);
      s.iteration = iteration;
      stats.push_back(std::move(s));
    }
    for (NodeExecStats& s : run_->TakeNestedStats()) {
      qualify(s);
      stats.push_back(std::move(s));
    }
    parent_.AddNestedStats(std::move(stats));
  }
  Status status = run_->status();
  if (!status.ok()) {
    run_.reset();  // A failed Run leaves its RunState unfit for reuse.
    return status.WithContext(subgraph_.what() + ", iteration " +
                              std::to_string(iteration));
  }
  outputs->clear();
  for (const EdgeRef& fetch : plan.fetches) {
    outputs->push_back(
        run_->values()[graph.node(fetch.node).first_value + fetch.slot]);
  }
  run_->ReleaseValues();
  return Status::OK();
}

}  // namespace weft::internal
