#include "runtime/evaluate.h"

#include <optional>
#include <utility>

#include "runtime/execution_plan.h"
#include "runtime/executor.h"
#include "runtime/run_state.h"

namespace weft::internal {

StatusOr<std::vector<Tensor>> EvaluateOnCallingThread(
    Graph graph, const CompileOptions& options,
    const std::vector<std::string>& fetches) {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGraph> compiled,
                        CompiledGraph::Compile(std::move(graph), options));
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const ExecutionPlan> plan,
                        ExecutionPlan::Build(*compiled, {}, fetches, {}));
  RunState::Config config;  // No pools: the caller's thread, serial kernels.
  config.graph = compiled.get();
  config.plan = plan.get();
  RunState run(std::move(config));
  ExecuteRun(run, std::nullopt);
  WEFT_RETURN_IF_ERROR(run.status());
  std::vector<Tensor> values;
  values.reserve(plan->fetches.size());
  for (const EdgeRef& fetch : plan->fetches) {
    values.push_back(
        run.values()[compiled->node(fetch.node).first_value + fetch.slot]);
  }
  return values;
}

}  // namespace weft::internal
