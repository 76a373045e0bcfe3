#include "runtime/execution_plan.h"

#include <set>

#include "runtime/memory_plan.h"

namespace weft::internal {
namespace {

StatusOr<EdgeRef> ResolveTensorName(const CompiledGraph& graph,
                                    const std::string& text, const char* what) {
  WEFT_ASSIGN_OR_RETURN(InputSpec spec, ParseInput(text));
  if (spec.control) {
    return InvalidArgumentError(std::string(what) + " '" + text +
                                "' must name a tensor, not a control input");
  }
  const int node = graph.FindNode(spec.node);
  if (node < 0) {
    return NotFoundError(std::string(what) + " '" + text +
                         "' refers to node '" + spec.node +
                         "', which does not exist");
  }
  const int outputs = static_cast<int>(graph.node(node).output_dtypes.size());
  if (spec.output >= outputs) {
    return InvalidArgumentError(std::string(what) + " '" + text + "': node '" +
                                spec.node + "' has " + std::to_string(outputs) +
                                " outputs");
  }
  return EdgeRef{node, spec.output};
}

}  // namespace

StatusOr<std::shared_ptr<const ExecutionPlan>> ExecutionPlan::Build(
    const CompiledGraph& graph, const std::vector<std::string>& feed_names,
    const std::vector<std::string>& fetch_names,
    const std::vector<std::string>& target_names) {
  auto plan = std::make_shared<ExecutionPlan>();
  plan->graph = &graph;
  const int n = graph.num_nodes();
  plan->role.assign(n, kSkip);
  plan->initial_pending.assign(n, 0);

  std::set<std::pair<int, int>> fed_outputs;
  for (const std::string& name : feed_names) {
    WEFT_ASSIGN_OR_RETURN(EdgeRef ref, ResolveTensorName(graph, name, "feed"));
    if (!fed_outputs.insert({ref.node, ref.slot}).second) {
      return InvalidArgumentError("tensor '" + name + "' is fed twice");
    }
    plan->feeds.push_back(ref);
    plan->role[ref.node] = kFed;
  }
  std::vector<int> stack;
  for (const std::string& name : fetch_names) {
    WEFT_ASSIGN_OR_RETURN(EdgeRef ref, ResolveTensorName(graph, name, "fetch"));
    plan->fetches.push_back(ref);
    stack.push_back(ref.node);
  }
  for (const std::string& name : target_names) {
    const int node = graph.FindNode(name[0] == '^' ? name.substr(1) : name);
    if (node < 0) {
      return NotFoundError("target '" + name + "' does not exist");
    }
    stack.push_back(node);
  }
  if (stack.empty()) {
    return InvalidArgumentError("Run needs at least one fetch or target");
  }

  // Everything the fetches and targets depend on, not looking behind feeds.
  std::vector<char> seen(n, 0);
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (seen[i]) continue;
    seen[i] = 1;
    if (plan->role[i] == kFed) continue;
    const CompiledNode& node = graph.node(i);
    if (node.constant) {
      plan->role[i] = kConstant;
      plan->constants.push_back(i);
      continue;
    }
    plan->role[i] = kRun;
    for (const EdgeRef& in : node.inputs) stack.push_back(in.node);
    for (int c : node.control_inputs) stack.push_back(c);
  }

  for (int i = 0; i < n; ++i) {
    if (plan->role[i] != kRun) continue;
    const CompiledNode& node = graph.node(i);
    if (node.is_placeholder) {
      return InvalidArgumentError(
          "you must feed a value for placeholder '" + node.name + "' (" +
          DataTypeName(node.output_dtypes[0]) + ", shape " +
          node.output_shapes[0].ToString() + ")");
    }
    int32_t pending = 0;
    for (const EdgeRef& in : node.inputs) {
      if (plan->role[in.node] == kFed) {
        if (fed_outputs.count({in.node, in.slot}) == 0) {
          return InvalidArgumentError(
              "node '" + node.name + "' reads '" + graph.node(in.node).name +
              ":" + std::to_string(in.slot) +
              "', which is not fed although other outputs of that node are");
        }
      } else if (plan->role[in.node] == kRun) {
        ++pending;
      }
    }
    for (int c : node.control_inputs) {
      if (plan->role[c] == kRun) ++pending;
    }
    plan->initial_pending[i] = pending;
    if (pending == 0) plan->roots.push_back(i);
  }
  plan->value_uses.assign(graph.num_values(), 0);
  for (int i = 0; i < n; ++i) {
    if (plan->role[i] != kRun) continue;
    for (int value : graph.node(i).input_values) ++plan->value_uses[value];
  }
  for (int c : plan->constants) {
    plan->value_uses[graph.node(c).first_value] = kPinned;
  }
  for (const EdgeRef& fetch : plan->fetches) {
    int32_t& uses =
        plan->value_uses[graph.node(fetch.node).first_value + fetch.slot];
    if (uses != kPinned) ++uses;
    if (plan->role[fetch.node] == kFed &&
        fed_outputs.count({fetch.node, fetch.slot}) == 0) {
      return InvalidArgumentError(
          "fetch '" + graph.node(fetch.node).name + ":" +
          std::to_string(fetch.slot) +
          "' is not fed although other outputs of its node are");
    }
  }
  for (int i = 0; i < n; ++i) {
    if (plan->role[i] == kRun && plan->initial_pending[i] >= 2) {
      plan->counted_nodes.push_back(i);
    }
  }
  for (int v = 0; v < graph.num_values(); ++v) {
    if (plan->value_uses[v] >= 2) plan->counted_values.push_back(v);
  }
  return std::shared_ptr<const ExecutionPlan>(std::move(plan));
}

std::shared_ptr<const MemoryPlan> ExecutionPlan::memory_plan(
    bool* tried) const {
  MutexLock lock(memory_mu_);
  *tried = memory_tried_;
  return memory_;
}

void ExecutionPlan::SetMemoryPlan(
    std::shared_ptr<const MemoryPlan> plan) const {
  MutexLock lock(memory_mu_);
  if (memory_tried_) return;
  memory_tried_ = true;
  memory_ = std::move(plan);
}

}  // namespace weft::internal
