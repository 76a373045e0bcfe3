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
  // Exponential moving average: follows the measurements both ways.
  const double old = cost_ns_[i].load(std::memory_order_relaxed);
  cost_ns_[i].store(0.75 * old + 0.25 * measured_ns, std::memory_order_relaxed);
}

int CompiledGraph::FindNode(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : static_cast<int>(it->second);
}

StatusOr<std::shared_ptr<const CompiledGraph>> CompiledGraph::Compile(
    const Graph& graph, const CompileOptions& options) {
  // The caller keeps its graph: the name index is built anew.
  std::unordered_map<std::string, size_t> index;
  index.reserve(graph.nodes().size());
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    index.emplace(graph.nodes()[i].name, i);
  }
  return CompileWithIndex(graph, std::move(index), options);
}

StatusOr<std::shared_ptr<const CompiledGraph>> CompiledGraph::Compile(
    Graph&& graph, const CompileOptions& options) {
  return CompileWithIndex(graph, std::move(graph.index_), options);
}

StatusOr<std::shared_ptr<const CompiledGraph>> CompiledGraph::CompileWithIndex(
    const Graph& graph, std::unordered_map<std::string, size_t> index,
    const CompileOptions& options) {
  WEFT_RETURN_IF_ERROR(graph.status());
  if (graph.nodes().size() >
      static_cast<size_t>(std::numeric_limits<int>::max() / 2)) {
    return InvalidArgumentError("the graph has " +
                                std::to_string(graph.nodes().size()) +
                                " nodes, more than weft supports");
  }
  std::shared_ptr<CompiledGraph> out(new CompiledGraph());
  const std::vector<NodeDef>& defs = graph.nodes();
  const int n = static_cast<int>(defs.size());

  // Names, ops, inputs. Graph::AddNode refuses duplicate names, so a
  // well-formed graph's index has one entry per node.
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
  for (int i = 0; i < n; ++i) {
    const NodeDef& def = defs[i];
    CompiledNode& node = out->nodes_[i];
    node.name = def.name;
    node.op = def.op;
    node.def = OpRegistry::Global().FindOp(def.op);
    if (node.def == nullptr) {
      return NotFoundError(NodeContext(def) + ": unknown op '" + def.op + "'");
    }
    for (const std::string& text : def.inputs) {
      auto spec = ParseInput(text);
      if (!spec.ok()) return spec.status().WithContext(NodeContext(def));
      const int producer = out->FindNode(spec->node);
      if (producer < 0) {
        return InvalidArgumentError(NodeContext(def) + ": input '" + text +
                                    "' refers to node '" + spec->node +
                                    "', which does not exist");
      }
      if (spec->control) {
        node.control_inputs.push_back(producer);
      } else {
        node.inputs.push_back({producer, spec->output});
      }
      producers.items.push_back(producer);
    }
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
      node.device = "/cpu:0";
    } else {
      node.device = "/cpu:" + std::to_string(*cpu);
    }
    if (options.log_device_placement) {
      std::fprintf(stderr, "weft: %s placed on %s\n", NodeContext(def).c_str(),
                   node.device.c_str());
    }
  }

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

  // Signatures, attributes, shapes and kernels, producers first.
  std::vector<double> costs(n);
  std::vector<const Tensor*> constants;  // Reused: one per input of a node.
  for (int i : order) {
    const NodeDef& def = defs[i];
    CompiledNode& node = out->nodes_[i];
    constants.clear();
    for (const EdgeRef& in : node.inputs) {
      const CompiledNode& producer = out->nodes_[in.node];
      if (in.slot >= static_cast<int>(producer.output_dtypes.size())) {
        return InvalidArgumentError(
            NodeContext(def) + ": input '" + producer.name + ":" +
            std::to_string(in.slot) + "' does not exist ('" + producer.name +
            "' has " + std::to_string(producer.output_dtypes.size()) +
            " outputs)");
      }
      node.input_dtypes.push_back(producer.output_dtypes[in.slot]);
      node.input_shapes.push_back(producer.output_shapes[in.slot]);
      const AttrValue* value =
          producer.op == "Const" ? &producer.attrs.at("value") : nullptr;
      constants.push_back(value ? value->get_if<Tensor>() : nullptr);
    }
    auto signature = ResolveSignature(*node.def, def.attrs, node.input_dtypes);
    if (!signature.ok())
      return signature.status().WithContext(NodeContext(def));
    node.attrs = std::move(signature->attrs);
    node.output_dtypes = std::move(signature->output_dtypes);

    InferenceContext ctx(node.name, node.attrs, node.input_dtypes,
                         node.input_shapes, constants,
                         static_cast<int>(node.output_dtypes.size()));
    if (node.def->shape_fn) {
      Status s = node.def->shape_fn(ctx);
      if (!s.ok()) return s.WithContext(NodeContext(def));
    }
    node.output_shapes = ctx.output_shapes();
    costs[i] = InitialCostNs(*node.def, ctx);

    node.blocking = node.def->blocking;
    if (auto it = node.attrs.find("blocking"); it != node.attrs.end()) {
      if (const bool* b = it->second.get_if<bool>()) node.blocking |= *b;
    }
    node.is_placeholder = node.op == "Placeholder";
    if (node.op == "Const" && node.control_inputs.empty()) {
      if (const Tensor* value = node.attrs.at("value").get_if<Tensor>()) {
        node.constant = std::make_unique<Tensor>(*value);
      }
    }

    const KernelFactory* factory = OpRegistry::Global().FindKernel(node.op);
    if (factory == nullptr) {
      return UnimplementedError(NodeContext(def) + ": op '" + node.op +
                                "' has no kernel");
    }
    KernelConstruction construction(node.name, node.op, node.attrs,
                                    node.input_dtypes, node.output_dtypes,
                                    node.input_shapes, node.output_shapes);
    StatusOr<std::unique_ptr<OpKernel>> kernel =
        InternalError("kernel factory did not run");
    try {
      kernel = (*factory)(construction);
    } catch (const std::exception& e) {
      kernel =
          InternalError(std::string("kernel construction threw: ") + e.what());
    }
    if (!kernel.ok()) return kernel.status().WithContext(NodeContext(def));
    node.kernel = std::move(kernel).value();
  }

  // Consumers, value slots, costs.
  out->cost_ns_ = std::make_unique<std::atomic<double>[]>(n);
  for (int i = 0; i < n; ++i) {
    CompiledNode& node = out->nodes_[i];
    node.first_value = out->num_values_;
    out->num_values_ += static_cast<int>(node.output_dtypes.size());
    for (int slot = 0; slot < static_cast<int>(node.inputs.size()); ++slot) {
      out->nodes_[node.inputs[slot].node].consumers.push_back({i, slot});
    }
    for (int p : node.control_inputs) {
      out->nodes_[p].control_consumers.push_back(i);
    }
  }
  for (int i = 0; i < n; ++i) {
    out->cost_ns_[i].store(costs[i], std::memory_order_relaxed);
    CompiledNode& node = out->nodes_[i];
    // What only compilation needed (every consumer is compiled now).
    node.attrs = AttrMap();
    node.input_dtypes = std::vector<DataType>();
    node.input_shapes = std::vector<PartialShape>();
    node.input_values.reserve(node.inputs.size());
    for (const EdgeRef& in : node.inputs) {
      node.input_values.push_back(out->nodes_[in.node].first_value + in.slot);
    }
  }
  return std::shared_ptr<const CompiledGraph>(std::move(out));
}

}  // namespace weft::internal
