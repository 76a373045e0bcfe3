// CompiledGraph: a Graph checked and prepared for execution. Immutable once
// built (but for cost estimates, which are statistics) and shared by every
// concurrent Run of a session.
#ifndef WEFT_SRC_RUNTIME_COMPILED_GRAPH_H_
#define WEFT_SRC_RUNTIME_COMPILED_GRAPH_H_

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "framework/name_index.h"
#include "weft/graph.h"
#include "weft/kernel.h"
#include "weft/op_registry.h"

namespace weft::internal {

// A node output (node, output index) or a consumer input (node, input slot).
struct EdgeRef {
  int node = -1;
  int slot = 0;
};

// One node, as every Run sees it. The lists are views into arrays the
// CompiledGraph owns (one flat array per kind of list for the whole graph:
// a million-node graph would otherwise cost millions of small allocations).
struct CompiledNode {
  std::string name;
  const OpDef* def = nullptr;
  std::unique_ptr<OpKernel> kernel;
  std::span<const EdgeRef> inputs;    // Producer (node, output) of each input.
  std::span<const int> input_values;  // Value index of each data input.
  std::span<const int> control_inputs;
  std::span<const EdgeRef> consumers;  // (consumer, input slot) per edge.
  std::span<const int> control_consumers;
  std::span<const DataType> output_dtypes;
  std::span<const PartialShape> output_shapes;
  int first_value = 0;  // Index of output 0 in a Run's value array.
  int cpu = 0;          // Placed on /cpu:<cpu>.
  bool blocking = false;
  // A blocking node whose body computes (CustomOp's inter_op_bound, set by
  // Python's py_function): a Run lets at most as many of them run at once as
  // it has inter-op threads (RunState::TakeBoundPlace).
  bool inter_op_bound = false;
  bool is_placeholder = false;
  // Set for a Const without control inputs: its output is the same in every
  // Run, so Runs take it as given instead of running the node.
  std::unique_ptr<Tensor> constant;

  const std::string& op() const { return def->name; }
  std::string device() const { return "/cpu:" + std::to_string(cpu); }
};

struct CompileOptions {
  int num_cpu_devices = 1;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  // False: kernels are built as if no input were a constant, so that none
  // prepares one (packs a weight). For compiles whose kernels never run:
  // the graph passes' shape and dtype queries (src/optimize/), which
  // otherwise packed every weight again at each query.
  bool prepare_constants = true;
  // SessionOptions::batch_invariant, for KernelConstruction.
  bool batch_invariant = false;
  // SessionOptions::precision == "bf16", for KernelConstruction.
  bool bf16 = false;
  // The session's prepared constants, shared by the graphs it compiles (one
  // for each set of feed shapes); null: each kernel prepares its own.
  std::shared_ptr<PreparedWeights> prepared_weights;
};

class CompiledGraph {
 public:
  // Checks every node (op, inputs, cycle, device, attributes, dtypes, shapes)
  // and instantiates the kernels. Errors name the node.
  static StatusOr<std::shared_ptr<const CompiledGraph>> Compile(
      const Graph& graph, const CompileOptions& options);
  // The same for a graph the caller gives up: its name index is taken over
  // instead of rebuilt (a third of the time for a million-node graph).
  static StatusOr<std::shared_ptr<const CompiledGraph>> Compile(
      Graph&& graph, const CompileOptions& options);

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const CompiledNode& node(int i) const { return nodes_[i]; }
  // -1 when there is no such node.
  int FindNode(const std::string& name) const;
  // Total outputs over all nodes: the size of a Run's value array.
  int num_values() const { return num_values_; }

  // The estimated cost of one execution of node i, in ns; refined by
  // RecordCost. Thread-safe (relaxed: a statistic, not a synchronisation).
  double cost_ns(int i) const {
    return cost_ns_[i].load(std::memory_order_relaxed);
  }
  void RecordCost(int i, double measured_ns) const;

 private:
  // Compile with `index` (node name -> position in graph.nodes()).
  static StatusOr<std::shared_ptr<const CompiledGraph>> CompileWithIndex(
      const Graph& graph, NameIndex index, const CompileOptions& options);
  class Builder;  // The compilation steps (compiled_graph.cc).
  CompiledGraph() = default;
  CompiledGraph(const CompiledGraph&) = delete;  // Nodes point into it.
  CompiledGraph& operator=(const CompiledGraph&) = delete;

  std::vector<CompiledNode> nodes_;
  NameIndex index_;  // Name -> node, over nodes_[i].name.
  int num_values_ = 0;
  std::unique_ptr<std::atomic<double>[]> cost_ns_;
  // What the nodes' lists view: inputs and input_values share one layout.
  std::vector<EdgeRef> inputs_;
  std::vector<int> input_values_;
  std::vector<int> control_inputs_;
  std::vector<EdgeRef> consumers_;
  std::vector<int> control_consumers_;
  // Per value (first_value + output index).
  std::vector<DataType> value_dtypes_;
  std::vector<PartialShape> value_shapes_;
};

// Parses "name", "name:k" and "^name" (control) input strings.
struct InputSpec {
  std::string node;
  int output = 0;
  bool control = false;
};
StatusOr<InputSpec> ParseInput(const std::string& text);

// Parses a device string: "", "/cpu:1", "/device:CPU:1",
// "/job:localhost/replica:0/task:0/device:CPU:1". Returns the CPU index, or
// nullopt when the string names no CPU device.
std::optional<int> ParseCpuDevice(const std::string& device);

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_COMPILED_GRAPH_H_
