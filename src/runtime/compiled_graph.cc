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
#include "framework/node_context.h"
#include "framework/op_registry_impl.h"
#include "framework/suggest.h"
#include "runtime/signature.h"

namespace weft::internal {
namespace {

std::string NodeContext(const NodeDef& node) {
  return internal::NodeContext(node.name, node.op);
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
template <class T>
struct CompressedRows {
  std::vector<int> offsets;  // Row i is items[offsets[i], offsets[i + 1]).
  std::vector<T> items;
  std::span<const T> row(int i) const {
    return {items.data() + offsets[i], items.data() + offsets[i + 1]};
  }
};

// Groups entries into rows 0..rows-1 by key, each row keeping the order in
// which the entries were given: for_each(emit) must call emit(key, item)
// for every entry, and the same entries in the same order each time (it is
// called twice: once to count, once to fill).
template <class T, class ForEach>
CompressedRows<T> GroupByKey(int rows, const ForEach& for_each) {
  CompressedRows<T> out;
  out.offsets.assign(rows + 1, 0);
  for_each([&](int key, const T&) { ++out.offsets[key + 1]; });
  for (int i = 0; i < rows; ++i) out.offsets[i + 1] += out.offsets[i];
  out.items.resize(out.offsets[rows]);
  std::vector<int> fill(out.offsets.begin(), out.offsets.end() - 1);
  for_each([&](int key, const T& item) { out.items[fill[key]++] = item; });
  return out;
}

// Names a node on a cycle among `unsorted` (nodes Kahn's algorithm could not
// order): walking inputs from any of them must revisit a node.
std::string FindNodeOnCycle(const CompressedRows<int>& producers,
                            const std::vector<char>& unsorted,
                            const Graph& graph) {
  int start = 0;
  while (!unsorted[start]) ++start;
  std::vector<char> seen(unsorted.size(), 0);
  int current = start;
  while (!seen[current]) {
    seen[current] = 1;
    for (int p : producers.row(current)) {
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
  internal::NameIndex index = GraphInternal::TakeIndex(graph);
  return CompileWithIndex(graph, std::move(index), options);
}

// Compiling, in four named steps over the state they share. Each step
// returns the first error it meets, naming the node.
class CompiledGraph::Builder {
 public:
  Builder(const Graph& graph, const CompileOptions& options)
      : graph_(graph),
        defs_(graph.nodes()),
        // Fits: Graph::AddNode refuses more than Graph::kMaxNodes nodes.
        n_(static_cast<int>(defs_.size())),
        options_(options),
        out_(new CompiledGraph()) {}

  StatusOr<std::shared_ptr<const CompiledGraph>> Build(NameIndex index) {
    WEFT_RETURN_IF_ERROR(graph_.status());
    WEFT_RETURN_IF_ERROR(ResolveInputs(std::move(index)));
    WEFT_RETURN_IF_ERROR(Order());
    WEFT_RETURN_IF_ERROR(InstantiateInOrder());
    LinkConsumers();
    return std::shared_ptr<const CompiledGraph>(std::move(out_));
  }

 private:
  Status ResolveInputs(NameIndex index);
  Status Order();
  Status InstantiateInOrder();
  Status Instantiate(int i);
  void LinkConsumers();

  const Graph& graph_;
  const std::vector<NodeDef>& defs_;
  const int n_;
  const CompileOptions& options_;
  std::shared_ptr<CompiledGraph> out_;

  // Every input's producer, data and control, per node in input order.
  CompressedRows<int> producers_;
  // Rows of out_->inputs_ and out_->control_inputs_ per node.
  std::vector<int> input_offsets_;
  std::vector<int> control_offsets_;
  std::vector<int> order_;  // Producers before consumers.
  std::vector<double> costs_;
  std::vector<int> num_outputs_;
  const OpDef* const_def_ = nullptr;
  // Per-node buffers of InstantiateInOrder, reused.
  std::vector<DataType> input_dtypes_;
  std::vector<PartialShape> input_shapes_;
  std::vector<const Tensor*> constants_;
};

// Step 1: names, ops, inputs and devices, in graph order. Inputs may name
// nodes not reached yet: names are looked up in the whole graph's index.
Status CompiledGraph::Builder::ResolveInputs(NameIndex index) {
  // Graph::AddNode refuses duplicate names, so a well-formed graph's index
  // has one entry per node.
  out_->index_ = std::move(index);
  if (out_->index_.size() != defs_.size()) {
    return InvalidArgumentError("the graph has duplicate node names");
  }
  out_->nodes_.resize(n_);
  producers_.offsets.reserve(n_ + 1);
  producers_.offsets.push_back(0);
  for (const NodeDef& def : defs_) {
    producers_.offsets.push_back(producers_.offsets.back() +
                                 static_cast<int>(def.inputs.size()));
  }
  producers_.items.reserve(producers_.offsets.back());
  out_->inputs_.reserve(producers_.offsets.back());
  input_offsets_.assign(n_ + 1, 0);
  control_offsets_.assign(n_ + 1, 0);
  const OpDef* last_def = nullptr;  // Neighbours often share an op.
  for (int i = 0; i < n_; ++i) {
    const NodeDef& def = defs_[i];
    CompiledNode& node = out_->nodes_[i];
    node.name = def.name;
    node.def = last_def != nullptr && last_def->name == def.op
                   ? last_def
                   : OpRegistry::Global().FindOp(def.op);
    if (node.def == nullptr) {
      return NotFoundError(NodeContext(def) + ": unknown op '" + def.op + "'" +
                           SuggestOp(def.op));
    }
    last_def = node.def;
    for (const std::string& text : def.inputs) {
      auto spec = ParseInput(text);
      if (!spec.ok()) return spec.status().WithContext(NodeContext(def));
      const int producer = out_->index_.Find(spec->node, NameMember(defs_));
      if (producer < 0) {
        return InvalidArgumentError(NodeContext(def) + ": input '" + text +
                                    "' refers to node '" + spec->node +
                                    "', which does not exist");
      }
      if (spec->control) {
        out_->control_inputs_.push_back(producer);
      } else {
        out_->inputs_.push_back({producer, spec->output});
      }
      producers_.items.push_back(producer);
    }
    input_offsets_[i + 1] = static_cast<int>(out_->inputs_.size());
    control_offsets_[i + 1] = static_cast<int>(out_->control_inputs_.size());
    const auto cpu = ParseCpuDevice(def.device);
    if (!cpu || *cpu >= options_.num_cpu_devices) {
      if (!options_.allow_soft_placement) {
        return InvalidArgumentError(
            NodeContext(def) + ": device '" + def.device +
            "' does not exist (this session has /cpu:0 to /cpu:" +
            std::to_string(options_.num_cpu_devices - 1) +
            "; set allow_soft_placement to place it on /cpu:0)");
      }
      node.cpu = 0;
    } else {
      node.cpu = *cpu;
    }
    if (options_.log_device_placement) {
      std::fprintf(stderr, "weft: %s placed on %s\n", NodeContext(def).c_str(),
                   node.device().c_str());
    }
  }
  return Status::OK();
}

// Step 2: a topological order (Kahn's algorithm); what is left over lies on
// or behind a cycle.
Status CompiledGraph::Builder::Order() {
  const CompressedRows<int> successors =
      GroupByKey<int>(n_, [&](const auto& emit) {
        for (int i = 0; i < n_; ++i) {
          for (int p : producers_.row(i)) emit(p, i);
        }
      });
  std::vector<int> missing(n_);
  order_.reserve(n_);
  for (int i = 0; i < n_; ++i) {
    missing[i] = static_cast<int>(producers_.row(i).size());
    if (missing[i] == 0) order_.push_back(i);
  }
  for (size_t k = 0; k < order_.size(); ++k) {
    for (int s : successors.row(order_[k])) {
      if (--missing[s] == 0) order_.push_back(s);
    }
  }
  if (static_cast<int>(order_.size()) == n_) return Status::OK();
  std::vector<char> unsorted(n_, 1);
  for (int i : order_) unsorted[i] = 0;
  return InvalidArgumentError("the graph has a cycle through node '" +
                              FindNodeOnCycle(producers_, unsorted, graph_) +
                              "'");
}

// Step 3: signatures, attributes, shapes and kernels, producers first.
// Values are numbered in this order, so a node's inputs are known when it
// is reached.
Status CompiledGraph::Builder::InstantiateInOrder() {
  const_def_ = OpRegistry::Global().FindOp("Const");
  costs_.assign(n_, 0.0);
  num_outputs_.assign(n_, 0);
  out_->value_dtypes_.reserve(n_);
  out_->value_shapes_.reserve(n_);
  for (int i : order_) WEFT_RETURN_IF_ERROR(Instantiate(i));
  return Status::OK();
}

Status CompiledGraph::Builder::Instantiate(int i) {
  const NodeDef& def = defs_[i];
  CompiledNode& node = out_->nodes_[i];
  input_dtypes_.clear();
  input_shapes_.clear();
  constants_.clear();
  for (int k = input_offsets_[i]; k < input_offsets_[i + 1]; ++k) {
    const EdgeRef in = out_->inputs_[k];
    const CompiledNode& producer = out_->nodes_[in.node];
    if (in.slot >= num_outputs_[in.node]) {
      return InvalidArgumentError(
          NodeContext(def) + ": input '" + producer.name + ":" +
          std::to_string(in.slot) + "' does not exist ('" + producer.name +
          "' has " + std::to_string(num_outputs_[in.node]) + " outputs)");
    }
    const int value = producer.first_value + in.slot;
    input_dtypes_.push_back(out_->value_dtypes_[value]);
    input_shapes_.push_back(out_->value_shapes_[value]);
    // A Const's value (type-checked when the Const was compiled) lets
    // shape functions read shapes and axes given as tensors.
    const Tensor* constant = nullptr;
    if (producer.def == const_def_) {
      const AttrMap& attrs = defs_[in.node].attrs;
      if (auto it = attrs.find("value"); it != attrs.end()) {
        constant = it->second.get_if<Tensor>();
      }
    }
    constants_.push_back(constant);
  }
  auto signature = ResolveSignature(*node.def, def.attrs, input_dtypes_);
  if (!signature.ok()) return signature.status().WithContext(NodeContext(def));
  const AttrMap& attrs = signature->attrs;
  const std::vector<DataType>& output_dtypes = signature->output_dtypes;

  InferenceContext ctx(node.name, attrs, input_dtypes_, input_shapes_,
                       constants_, static_cast<int>(output_dtypes.size()));
  if (node.def->shape_fn) {
    Status s = node.def->shape_fn(ctx);
    if (!s.ok()) return s.WithContext(NodeContext(def));
  }
  costs_[i] = InitialCostNs(*node.def, ctx);
  if (!ctx.status().ok()) {  // An attribute the op does not declare.
    return ctx.status().WithContext(NodeContext(def) + ": shape function");
  }

  node.blocking = node.def->blocking;
  if (auto it = attrs.find("blocking"); it != attrs.end()) {
    if (const bool* b = it->second.get_if<bool>()) node.blocking |= *b;
  }
  if (auto it = attrs.find("inter_op_bound"); it != attrs.end()) {
    if (const bool* b = it->second.get_if<bool>()) {
      node.inter_op_bound = node.blocking && *b;
    }
  }
  node.is_placeholder = def.op == "Placeholder";
  if (node.def == const_def_ &&
      control_offsets_[i] == control_offsets_[i + 1]) {
    if (auto it = attrs.find("value"); it != attrs.end()) {
      if (const Tensor* value = it->second.get_if<Tensor>()) {
        node.constant = std::make_unique<Tensor>(*value);
      }
    }
  }

  const KernelFactory* factory = OpRegistry::Global().FindKernel(def.op);
  if (factory == nullptr) {
    return UnimplementedError(NodeContext(def) + ": op '" + def.op +
                              "' has no kernel");
  }
  if (!options_.prepare_constants) {
    std::fill(constants_.begin(), constants_.end(), nullptr);
  }
  KernelConstruction construction(
      node.name, node.op(), attrs, input_dtypes_, output_dtypes, input_shapes_,
      ctx.output_shapes(), constants_, options_.batch_invariant, options_.bf16,
      options_.prepared_weights.get());
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

  node.first_value = out_->num_values_;
  num_outputs_[i] = static_cast<int>(output_dtypes.size());
  out_->num_values_ += num_outputs_[i];
  out_->value_dtypes_.insert(out_->value_dtypes_.end(), output_dtypes.begin(),
                             output_dtypes.end());
  out_->value_shapes_.insert(out_->value_shapes_.end(),
                             ctx.output_shapes().begin(),
                             ctx.output_shapes().end());
  return Status::OK();
}

// Step 4: consumer lists (in consumer, then input slot order), the value
// each input reads, and every node's views into the flat arrays.
void CompiledGraph::Builder::LinkConsumers() {
  CompiledGraph& g = *out_;
  CompressedRows<EdgeRef> consumers =
      GroupByKey<EdgeRef>(n_, [&](const auto& emit) {
        for (int i = 0; i < n_; ++i) {
          for (int k = input_offsets_[i]; k < input_offsets_[i + 1]; ++k) {
            emit(g.inputs_[k].node, EdgeRef{i, k - input_offsets_[i]});
          }
        }
      });
  CompressedRows<int> control_consumers =
      GroupByKey<int>(n_, [&](const auto& emit) {
        for (int i = 0; i < n_; ++i) {
          for (int k = control_offsets_[i]; k < control_offsets_[i + 1]; ++k) {
            emit(g.control_inputs_[k], i);
          }
        }
      });
  g.consumers_ = std::move(consumers.items);
  g.control_consumers_ = std::move(control_consumers.items);
  g.input_values_.resize(g.inputs_.size());
  for (size_t k = 0; k < g.inputs_.size(); ++k) {
    const EdgeRef in = g.inputs_[k];
    g.input_values_[k] = g.nodes_[in.node].first_value + in.slot;
  }
  // Row i of a flat array, by the offsets that lay it out.
  const auto row = [](const auto& items, const std::vector<int>& offsets,
                      int i) {
    return std::span(items.data() + offsets[i], items.data() + offsets[i + 1]);
  };
  g.cost_ns_ = std::make_unique<std::atomic<double>[]>(n_);
  for (int i = 0; i < n_; ++i) {
    g.cost_ns_[i].store(costs_[i], std::memory_order_relaxed);
    CompiledNode& node = g.nodes_[i];
    node.inputs = row(g.inputs_, input_offsets_, i);
    node.input_values = row(g.input_values_, input_offsets_, i);
    node.control_inputs = row(g.control_inputs_, control_offsets_, i);
    node.consumers = row(g.consumers_, consumers.offsets, i);
    node.control_consumers =
        row(g.control_consumers_, control_consumers.offsets, i);
    node.output_dtypes = {g.value_dtypes_.data() + node.first_value,
                          static_cast<size_t>(num_outputs_[i])};
    node.output_shapes = {g.value_shapes_.data() + node.first_value,
                          static_cast<size_t>(num_outputs_[i])};
  }
}

StatusOr<std::shared_ptr<const CompiledGraph>> CompiledGraph::CompileWithIndex(
    const Graph& graph, NameIndex index, const CompileOptions& options) {
  return Builder(graph, options).Build(std::move(index));
}

}  // namespace weft::internal
