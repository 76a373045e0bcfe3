#include "runtime/compiled_graph.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <exception>
#include <limits>
#include <set>
#include <span>
#include <utility>

#include "framework/graph_internal.h"
#include "framework/op_registry_impl.h"
#include "runtime/signature.h"

namespace weft::internal {
namespace {

std::string NodeContext(const NodeDef& node) {
  return "node '" + node.name + "' (op " + node.op + ")";
}

std::optional<int64_t> ParseNonNegative(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0) {
    return std::nullopt;
  }
  return value;
}

// Per-node lists in two flat arrays (compressed rows): a graph of a million
// nodes would otherwise cost a million small vectors.
struct Adjacency {
  std::vector<int>
      offsets;  // Node i's list is items[offsets[i], offsets[i+1]).
  std::vector<int> items;
  std::span<const int> of(int i) const {
    return {items.data() + offsets[i], items.data() + offsets[i + 1]};
  }
};

// Names a node on a cycle among `unsorted` (nodes Kahn's algorithm could not
// order): walking inputs from any of them must revisit a node.
std::string FindNodeOnCycle(const Adjacency& producers,
                            const std::vector<char>& unsorted,
                            const Graph& graph) {
  int start = 0;
  while (!unsorted[start]) ++start;
  std::vector<char> seen(unsorted.size(), 0);
  int current = start;
  while (!seen[current]) {
    seen[current] = 1;
    for (int p : producers.of(current)) {
      if (unsorted[p]) {
        current = p;
        break;
      }
    }
  }
  return graph.nodes()[current].name;
}

// The op's estimate, else about 1 ns per output element; a node whose size
// is unknown is assumed worth a thread of its own until measured.
double InitialCostNs(const OpDef& def, const InferenceContext& ctx) {
  if (def.cost_fn) return def.cost_fn(ctx);
  double elements = 0;
  for (const PartialShape& shape : ctx.output_shapes()) {
    if (!shape.IsFullyDefined()) return 1e4;
    elements += static_cast<double>(shape.ToShape().NumElements());
  }
  return elements;
}

}  // namespace

StatusOr<InputSpec> ParseInput(const std::string& text) {
  InputSpec spec;
  std::string_view rest = text;
  if (!rest.empty() && rest.front() == '^') {
    spec.control = true;
    rest.remove_prefix(1);
  }
  const auto colon = rest.find(':');
  if (colon != std::string_view::npos) {
    if (spec.control) {
      return InvalidArgumentError("control input '" + text +
                                  "' must not name an output");
    }
    const auto index = ParseNonNegative(rest.substr(colon + 1));
    if (!index || *index > 1'000'000) {
      return InvalidArgumentError("input '" + text +
                                  "': output index is not a number >= 0");
    }
    spec.output = static_cast<int>(*index);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) {
    return InvalidArgumentError("input '" + text + "' names no node");
  }
  spec.node = std::string(rest);
  return spec;
}

std::optional<int> ParseCpuDevice(const std::string& device) {
  if (device.empty()) return 0;
  std::string lower;
  for (char c : device) {
    lower.push_back(
        static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  std::string_view last = lower;
  const auto slash = last.rfind('/');
  if (slash != std::string_view::npos) last = last.substr(slash + 1);
  if (last.rfind("device:", 0) == 0) last.remove_prefix(7);
  if (last.rfind("cpu:", 0) != 0) return std::nullopt;
  const auto index = ParseNonNegative(last.substr(4));
  if (!index || *index > 1'000'000) return std::nullopt;
  return static_cast<int>(*index);
}

void CompiledGraph::RecordCost(int i, double measured_ns) const {
  // Exponential moving average: follows the measurements both ways. A
  // sample counts for at most 4x the estimate (+1 us): a cheap node whose
  // thread was preempted mid-kernel once must not look expensive (and be
  // handed between threads) for the next dozens of Runs, while a node that
  // really got costlier still gets there within a few samples.
  const double old = cost_ns_[i].load(std::memory_order_relaxed);
  const double sample = std::min(measured_ns, 4 * old + 1000);
  cost_ns_[i].store(0.75 * old + 0.25 * sample, std::memory_order_relaxed);
}

int CompiledGraph::FindNode(const std::string& name) const {
  return index_.Find(name, NameMember(nodes_));
}

StatusOr<std::shared_ptr<const CompiledGraph>> CompiledGraph::Compile(
    const Graph& graph, const CompileOptions& options) {
  // The caller keeps its graph: the name index is built anew (a duplicate
  // name, which Graph::AddNode refuses, is left out and caught below).
  const std::vector<NodeDef>& defs = graph.nodes();
  NameIndex index;
  index.Reserve(defs.size());  // At most Graph::kMaxNodes: AddNode checks.
  for (size_t i = 0; i < defs.size(); ++i) {
    index.Insert(defs[i].name, static_cast<int>(i), NameMember(defs));
  }
  return CompileWithIndex(graph, std::move(index), options);
}

StatusOr<std::shared_ptr<const CompiledGraph>> CompiledGraph::Compile(
    Graph&& graph, const CompileOptions& options) {
  internal::NameIndex index = GraphInternal::TakeIndex(std::move(graph));
  return CompileWithIndex(graph, std::move(index), options);
}

StatusOr<std::shared_ptr<const CompiledGraph>> CompiledGraph::CompileWithIndex(
    const Graph& graph, NameIndex index, const CompileOptions& options) {
  WEFT_RETURN_IF_ERROR(graph.status());
  std::shared_ptr<CompiledGraph> out(new CompiledGraph());
  const std::vector<NodeDef>& defs = graph.nodes();
  // Fits: Graph::AddNode refuses more than Graph::kMaxNodes nodes.
  const int n = static_cast<int>(defs.size());

  // Names, ops, inputs, devices. Graph::AddNode refuses duplicate names, so
  // a well-formed graph's index has one entry per node.
  out->index_ = std::move(index);
  if (out->index_.size() != defs.size()) {
    return InvalidArgumentError("the graph has duplicate node names");
  }
  out->nodes_.resize(n);
  Adjacency producers;  // Data and control, in input order.
  producers.offsets.reserve(n + 1);
  producers.offsets.push_back(0);
  for (const NodeDef& def : defs) {
    producers.offsets.push_back(producers.offsets.back() +
                                static_cast<int>(def.inputs.size()));
  }
  producers.items.reserve(producers.offsets.back());
  out->inputs_.reserve(producers.offsets.back());
  std::vector<int> input_offsets(n + 1, 0);
  std::vector<int> control_offsets(n + 1, 0);
  const OpDef* last_def = nullptr;  // Neighbours often share an op.
  for (int i = 0; i < n; ++i) {
    const NodeDef& def = defs[i];
    CompiledNode& node = out->nodes_[i];
    node.name = def.name;
    node.def = last_def != nullptr && last_def->name == def.op
                   ? last_def
                   : OpRegistry::Global().FindOp(def.op);
    if (node.def == nullptr) {
      return NotFoundError(NodeContext(def) + ": unknown op '" + def.op + "'");
    }
    last_def = node.def;
    for (const std::string& text : def.inputs) {
      auto spec = ParseInput(text);
      if (!spec.ok()) return spec.status().WithContext(NodeContext(def));
      // Inputs may name nodes not reached yet: look names up in the graph.
      const int producer = out->index_.Find(spec->node, NameMember(defs));
      if (producer < 0) {
        return InvalidArgumentError(NodeContext(def) + ": input '" + text +
                                    "' refers to node '" + spec->node +
                                    "', which does not exist");
      }
      if (spec->control) {
        out->control_inputs_.push_back(producer);
      } else {
        out->inputs_.push_back({producer, spec->output});
      }
      producers.items.push_back(producer);
    }
    input_offsets[i + 1] = static_cast<int>(out->inputs_.size());
    control_offsets[i + 1] = static_cast<int>(out->control_inputs_.size());
    // Device placement.
    const auto cpu = ParseCpuDevice(def.device);
    if (!cpu || *cpu >= options.num_cpu_devices) {
      if (!options.allow_soft_placement) {
        return InvalidArgumentError(
            NodeContext(def) + ": device '" + def.device +
            "' does not exist (this session has /cpu:0 to /cpu:" +
            std::to_string(options.num_cpu_devices - 1) +
            "; set allow_soft_placement to place it on /cpu:0)");
      }
      node.cpu = 0;
    } else {
      node.cpu = *cpu;
    }
    if (options.log_device_placement) {
      std::fprintf(stderr, "weft: %s placed on %s\n", NodeContext(def).c_str(),
                   node.device().c_str());
    }
  }
  // Row i of a compressed-rows array.
  const auto view = [](const auto& items, const std::vector<int>& offsets,
                       int i) {
    return std::span(items.data() + offsets[i], items.data() + offsets[i + 1]);
  };

  // Topological order (Kahn); what is left over lies on or behind a cycle.
  std::vector<int> order;
  order.reserve(n);
  {
    std::vector<int> missing(n);
    Adjacency successors;
    successors.offsets.assign(n + 1, 0);
    for (int p : producers.items) ++successors.offsets[p + 1];
    for (int i = 0; i < n; ++i) {
      successors.offsets[i + 1] += successors.offsets[i];
      missing[i] = static_cast<int>(producers.of(i).size());
    }
    successors.items.resize(producers.items.size());
    std::vector<int> fill(successors.offsets.begin(),
                          successors.offsets.end() - 1);
    for (int i = 0; i < n; ++i) {
      for (int p : producers.of(i)) successors.items[fill[p]++] = i;
    }
    for (int i = 0; i < n; ++i) {
      if (missing[i] == 0) order.push_back(i);
    }
    for (size_t k = 0; k < order.size(); ++k) {
      for (int s : successors.of(order[k])) {
        if (--missing[s] == 0) order.push_back(s);
      }
    }
    if (static_cast<int>(order.size()) != n) {
      std::vector<char> unsorted(n, 1);
      for (int i : order) unsorted[i] = 0;
      return InvalidArgumentError("the graph has a cycle through node '" +
                                  FindNodeOnCycle(producers, unsorted, graph) +
                                  "'");
    }
  }

  // Signatures, attributes, shapes and kernels, producers first. Values are
  // numbered in this order, so a node's inputs are known when it is reached.
  // The buffers below are per node, reused.
  const OpDef* const_def = OpRegistry::Global().FindOp("Const");
  std::vector<double> costs(n);
  std::vector<int> num_outputs(n, 0);
  std::vector<DataType> input_dtypes;
  std::vector<PartialShape> input_shapes;
  std::vector<const Tensor*> constants;
  out->value_dtypes_.reserve(n);
  out->value_shapes_.reserve(n);
  for (int i : order) {
    const NodeDef& def = defs[i];
    CompiledNode& node = out->nodes_[i];
    input_dtypes.clear();
    input_shapes.clear();
    constants.clear();
    for (const EdgeRef& in : view(out->inputs_, input_offsets, i)) {
      const CompiledNode& producer = out->nodes_[in.node];
      if (in.slot >= num_outputs[in.node]) {
        return InvalidArgumentError(
            NodeContext(def) + ": input '" + producer.name + ":" +
            std::to_string(in.slot) + "' does not exist ('" + producer.name +
            "' has " + std::to_string(num_outputs[in.node]) + " outputs)");
      }
      const int value = producer.first_value + in.slot;
      input_dtypes.push_back(out->value_dtypes_[value]);
      input_shapes.push_back(out->value_shapes_[value]);
      // A Const's value (type-checked when the Const was compiled) lets
      // shape functions read shapes and axes given as tensors.
      const Tensor* constant = nullptr;
      if (producer.def == const_def) {
        const AttrMap& attrs = defs[in.node].attrs;
        if (auto it = attrs.find("value"); it != attrs.end()) {
          constant = it->second.get_if<Tensor>();
        }
      }
      constants.push_back(constant);
    }
    auto signature = ResolveSignature(*node.def, def.attrs, input_dtypes);
    if (!signature.ok())
      return signature.status().WithContext(NodeContext(def));
    const AttrMap& attrs = signature->attrs;
    const std::vector<DataType>& output_dtypes = signature->output_dtypes;

    InferenceContext ctx(node.name, attrs, input_dtypes, input_shapes,
                         constants, static_cast<int>(output_dtypes.size()));
    if (node.def->shape_fn) {
      Status s = node.def->shape_fn(ctx);
      if (!s.ok()) return s.WithContext(NodeContext(def));
    }
    costs[i] = InitialCostNs(*node.def, ctx);
    if (!ctx.status().ok()) {  // An attribute the op does not declare.
      return ctx.status().WithContext(NodeContext(def) + ": shape function");
    }

    node.blocking = node.def->blocking;
    if (auto it = attrs.find("blocking"); it != attrs.end()) {
      if (const bool* b = it->second.get_if<bool>()) node.blocking |= *b;
    }
    node.is_placeholder = def.op == "Placeholder";
    if (node.def == const_def && control_offsets[i] == control_offsets[i + 1]) {
      if (const Tensor* value = attrs.at("value").get_if<Tensor>()) {
        node.constant = std::make_unique<Tensor>(*value);
      }
    }

    const KernelFactory* factory = OpRegistry::Global().FindKernel(def.op);
    if (factory == nullptr) {
      return UnimplementedError(NodeContext(def) + ": op '" + def.op +
                                "' has no kernel");
    }
    KernelConstruction construction(node.name, node.op(), attrs, input_dtypes,
                                    output_dtypes, input_shapes,
                                    ctx.output_shapes());
    StatusOr<std::unique_ptr<OpKernel>> kernel =
        InternalError("kernel factory did not run");
    try {
      kernel = (*factory)(construction);
    } catch (const std::exception& e) {
      kernel =
          InternalError(std::string("kernel construction threw: ") + e.what());
    }
    if (kernel.ok() && !construction.status().ok()) {
      kernel = construction.status().WithContext("kernel construction");
    }
    if (!kernel.ok()) return kernel.status().WithContext(NodeContext(def));
    node.kernel = std::move(kernel).value();

    node.first_value = out->num_values_;
    num_outputs[i] = static_cast<int>(output_dtypes.size());
    out->num_values_ += num_outputs[i];
    out->value_dtypes_.insert(out->value_dtypes_.end(), output_dtypes.begin(),
                              output_dtypes.end());
    out->value_shapes_.insert(out->value_shapes_.end(),
                              ctx.output_shapes().begin(),
                              ctx.output_shapes().end());
  }

  // Consumer lists (compressed rows, in consumer then slot order), the
  // value each input reads, and every node's views.
  std::vector<int> consumer_offsets(n + 1, 0);
  std::vector<int> control_consumer_offsets(n + 1, 0);
  for (const EdgeRef& in : out->inputs_) ++consumer_offsets[in.node + 1];
  for (int p : out->control_inputs_) ++control_consumer_offsets[p + 1];
  for (int i = 0; i < n; ++i) {
    consumer_offsets[i + 1] += consumer_offsets[i];
    control_consumer_offsets[i + 1] += control_consumer_offsets[i];
  }
  out->consumers_.resize(out->inputs_.size());
  out->control_consumers_.resize(out->control_inputs_.size());
  out->input_values_.resize(out->inputs_.size());
  {
    std::vector<int> fill(consumer_offsets.begin(), consumer_offsets.end() - 1);
    std::vector<int> control_fill(control_consumer_offsets.begin(),
                                  control_consumer_offsets.end() - 1);
    for (int i = 0; i < n; ++i) {
      for (int k = input_offsets[i]; k < input_offsets[i + 1]; ++k) {
        const EdgeRef in = out->inputs_[k];
        out->consumers_[fill[in.node]++] = {i, k - input_offsets[i]};
        out->input_values_[k] = out->nodes_[in.node].first_value + in.slot;
      }
      for (int k = control_offsets[i]; k < control_offsets[i + 1]; ++k) {
        out->control_consumers_[control_fill[out->control_inputs_[k]]++] = i;
      }
    }
  }
  out->cost_ns_ = std::make_unique<std::atomic<double>[]>(n);
  for (int i = 0; i < n; ++i) {
    out->cost_ns_[i].store(costs[i], std::memory_order_relaxed);
    CompiledNode& node = out->nodes_[i];
    node.inputs = view(out->inputs_, input_offsets, i);
    node.input_values = view(out->input_values_, input_offsets, i);
    node.control_inputs = view(out->control_inputs_, control_offsets, i);
    node.consumers = view(out->consumers_, consumer_offsets, i);
    node.control_consumers =
        view(out->control_consumers_, control_consumer_offsets, i);
    node.output_dtypes = {out->value_dtypes_.data() + node.first_value,
                          static_cast<size_t>(num_outputs[i])};
    node.output_shapes = {out->value_shapes_.data() + node.first_value,
                          static_cast<size_t>(num_outputs[i])};
  }
  return std::shared_ptr<const CompiledGraph>(std::move(out));
}

}  // namespace weft::internal
