// What the floors below the runtime may use of it: the one runtime header
// that kernels (src/ops/) and the ONNX importer (src/io/) include
// (tests/layering/check_floors.py). It offers what a kernel needs of the Run
// it executes in beyond its KernelContext:
//   - subgraphs run from inside a kernel (If's branches, Loop's, Scan's and
//     SequenceMap's bodies): compiled once, with the node that calls them,
//     and run on the pools of the calling node's Run under the same core
//     budget; the importer compiles them too, to learn their output dtypes;
//   - the session's named resources (queues);
//   - the session's memory limit;
//   - giving the kernel's core back while it blocks.
// Everything else of the runtime stays behind this header, so a change to
// the executor, the run state or the plan rebuilds no kernel.
#ifndef WEFT_SRC_RUNTIME_KERNEL_SERVICES_H_
#define WEFT_SRC_RUNTIME_KERNEL_SERVICES_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/kernel.h"

namespace weft::internal {

class CompiledGraph;
struct ExecutionPlan;
class ResourceMgr;
class RunState;

// A Subgraph bound to the dtypes of the node that calls it, compiled, with
// the plan of a Run from its inputs to its outputs. Immutable: concurrent
// Runs of the calling node share it.
class CompiledSubgraph {
 public:
  // How a parameter is bound: the calling node's dtype always; its shape
  // only where every call passes that shape (an If's inputs), not where a
  // loop may change it from one iteration to the next.
  struct Binding {
    DataType dtype = DataType::kFloat32;
    PartialShape shape = PartialShape::UnknownRank();
  };
  // `what` names the subgraph in errors ("node 'loop', attribute 'body'").
  static StatusOr<std::unique_ptr<CompiledSubgraph>> Compile(
      const Subgraph& subgraph, std::span<const Binding> inputs,
      const std::string& what);

  int num_inputs() const;
  int num_outputs() const;
  DataType output_dtype(int i) const;
  const PartialShape& output_shape(int i) const;
  const std::string& what() const { return what_; }

 private:
  friend class SubgraphRunner;
  CompiledSubgraph() = default;
  std::shared_ptr<const CompiledGraph> graph_;
  std::shared_ptr<const ExecutionPlan> plan_;
  std::string what_;
};

// Runs a CompiledSubgraph any number of times inside one execution of the
// calling kernel, reusing one RunState between runs.
class SubgraphRunner {
 public:
  SubgraphRunner(KernelContext& ctx, const CompiledSubgraph& subgraph);
  ~SubgraphRunner();
  SubgraphRunner(const SubgraphRunner&) = delete;
  SubgraphRunner& operator=(const SubgraphRunner&) = delete;

  // One run: `inputs` bind the parameters in order; `outputs` receives the
  // results. `iteration` labels the trace records and errors. Fails with
  // the first error of a subgraph node, or with the calling Run's error
  // when that Run is cancelled or past its deadline (checked before the
  // run starts).
  Status Run(std::span<const Tensor> inputs, std::vector<Tensor>* outputs,
             int64_t iteration);

 private:
  KernelContext& ctx_;
  const CompiledSubgraph& subgraph_;
  RunState& parent_;
  std::unique_ptr<RunState> run_;  // Kept between successful runs.
};

// The named resources (framework/resources.h) of the session running the
// kernel; null outside a session.
ResourceMgr* SessionResources(const KernelContext& ctx);

// The session's memory limit in bytes (SessionOptions::memory_limit_bytes);
// 0 where it sets none.
int64_t SessionMemoryLimitBytes(const KernelContext& ctx);

// For its lifetime, the calling kernel holds no core of the core budget
// (runtime/core_budget.h): a kernel that blocks on something other than
// KernelContext::WaitFor (a queue's condition variable) takes one, so that
// the intra-op work of other kernels may use the core it is not using.
class CoreReleasedWhileBlocked {
 public:
  CoreReleasedWhileBlocked();
  ~CoreReleasedWhileBlocked();
  CoreReleasedWhileBlocked(const CoreReleasedWhileBlocked&) = delete;
  CoreReleasedWhileBlocked& operator=(const CoreReleasedWhileBlocked&) = delete;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_KERNEL_SERVICES_H_
