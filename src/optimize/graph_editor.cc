#include "optimize/graph_editor.h"

#include <algorithm>
#include <utility>

namespace weft::internal {

GraphEditor::GraphEditor(const Graph& graph, CompileOptions compile)
    : nodes_(graph.nodes().begin(), graph.nodes().end()),
      compile_(std::move(compile)) {
  alive_.assign(nodes_.size(), 1);
  Commit();
}

void GraphEditor::Replace(int i, NodeDef node) {
  nodes_[i] = std::move(node);
  changed_ = true;
}

void GraphEditor::SetInput(int i, int input, std::string value) {
  nodes_[i].inputs[input] = std::move(value);
  changed_ = true;
}

int GraphEditor::Add(NodeDef node) {
  changed_ = true;
  index_[node.name] = size();
  nodes_.push_back(std::move(node));
  alive_.push_back(1);
  claimed_.push_back(1);  // New this pass: nothing else may match it.
  uses_.emplace_back();
  return size() - 1;
}

void GraphEditor::Remove(int i, RemovedNode why) {
  changed_ = true;
  alive_[i] = 0;
  index_.erase(nodes_[i].name);
  removed_[nodes_[i].name] = std::move(why);
}

void GraphEditor::Commit() {
  claimed_.assign(nodes_.size(), 0);
  // A pass that rewrote nothing leaves the index, the uses and the
  // compiled shapes as they were: the next pass's shapes need no compile.
  if (!changed_) return;
  changed_ = false;
  index_.clear();
  index_.reserve(nodes_.size());
  for (int i = 0; i < size(); ++i) {
    if (alive(i)) index_[nodes_[i].name] = i;
  }
  uses_.assign(nodes_.size(), {});
  for (int i = 0; i < size(); ++i) {
    if (!alive(i)) continue;
    const std::vector<std::string>& inputs = nodes_[i].inputs;
    for (int k = 0; k < static_cast<int>(inputs.size()); ++k) {
      auto spec = ParseInput(inputs[k]);
      if (!spec.ok()) continue;
      const int producer = Find(spec->node);
      if (producer < 0) continue;
      uses_[producer].push_back(
          {i, k, spec->control ? 0 : spec->output, spec->control});
    }
  }
  compiled_.reset();
  compile_failed_ = false;
}

int GraphEditor::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

NodeUse GraphEditor::Producer(const std::string& input) const {
  auto spec = ParseInput(input);
  if (!spec.ok() || spec->control) return {};
  return {Find(spec->node), 0, spec->output, false};
}

int GraphEditor::SoleConsumer(int i) const {
  const std::vector<NodeUse>& u = uses_[i];
  if (u.size() != 1 || u[0].control || u[0].slot != 0) return -1;
  if (HasControlInputs(i)) return -1;
  return u[0].node;
}

bool GraphEditor::HasControlInputs(int i) const {
  for (const std::string& input : nodes_[i].inputs) {
    if (!input.empty() && input[0] == '^') return true;
  }
  return false;
}

const Tensor* GraphEditor::Constant(const std::string& input) const {
  const NodeUse p = Producer(input);
  if (p.node < 0 || p.slot != 0 || nodes_[p.node].op != "Const") return nullptr;
  if (HasControlInputs(p.node)) return nullptr;
  auto it = nodes_[p.node].attrs.find("value");
  if (it == nodes_[p.node].attrs.end()) return nullptr;
  return it->second.get_if<Tensor>();
}

const CompiledGraph* GraphEditor::Compiled() {
  if (compiled_ == nullptr && !compile_failed_) {
    auto compiled = CompiledGraph::Compile(Snapshot(), compile_);
    if (compiled.ok()) {
      compiled_ = *std::move(compiled);
    } else {
      compile_failed_ = true;
    }
  }
  return compiled_.get();
}

const CompiledNode* GraphEditor::CompiledProducer(const std::string& input,
                                                  int* slot) {
  const NodeUse p = Producer(input);
  const CompiledGraph* compiled = p.node < 0 ? nullptr : Compiled();
  if (compiled == nullptr) return nullptr;
  const int n = compiled->FindNode(nodes_[p.node].name);
  if (n < 0 ||
      p.slot >= static_cast<int>(compiled->node(n).output_dtypes.size())) {
    return nullptr;
  }
  *slot = p.slot;
  return &compiled->node(n);
}

std::optional<DataType> GraphEditor::Dtype(const std::string& input) {
  int slot = 0;
  const CompiledNode* node = CompiledProducer(input, &slot);
  if (node == nullptr) return std::nullopt;
  return node->output_dtypes[slot];
}

std::optional<PartialShape> GraphEditor::Shape(const std::string& input) {
  int slot = 0;
  const CompiledNode* node = CompiledProducer(input, &slot);
  if (node == nullptr) return std::nullopt;
  return node->output_shapes[slot];
}

std::string GraphEditor::UniqueName(const std::string& stem) {
  // A pass often names a node after a tensor, and "split:1", a second
  // output, is no node name (Graph::AddNode refuses ':', '^' and white
  // space): such characters become '_'.
  std::string base = stem;
  std::replace_if(
      base.begin(), base.end(),
      [](char c) {
        return c == ':' || c == '^' || c == ' ' || c == '\t' || c == '\n';
      },
      '_');
  std::string name = base;
  while (index_.count(name) > 0 || removed_.count(name) > 0) {
    name = base + "_" + std::to_string(next_name_++);
  }
  index_[name] = -1;  // Reserved until Add or Commit.
  return name;
}

Graph GraphEditor::Snapshot() const {
  Graph graph;
  for (int i = 0; i < size(); ++i) {
    if (alive(i)) (void)graph.AddNode(nodes_[i]);
  }
  return graph;
}

}  // namespace weft::internal
