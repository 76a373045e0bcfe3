#include "weft/graph.h"

#include <utility>

#include "framework/graph_internal.h"

namespace weft {

Graph::Graph() : index_(std::make_unique<Index>()) {}

Graph::~Graph() = default;

Graph::Graph(const Graph& other)
    : nodes_(other.nodes_),
      index_(std::make_unique<Index>(other.index_ ? *other.index_ : Index())),
      status_(other.status_) {}

Graph& Graph::operator=(const Graph& other) {
  if (this != &other) *this = Graph(other);
  return *this;
}

Graph::Graph(Graph&& other) noexcept = default;

Graph& Graph::operator=(Graph&& other) noexcept = default;

Status Graph::AddNode(NodeDef node) {
  Status status;
  if (node.name.empty()) {
    status =
        InvalidArgumentError("a node has an empty name (op '" + node.op + "')");
  } else if (node.name.find_first_of(":^ \t\n") != std::string::npos) {
    status = InvalidArgumentError("node name '" + node.name +
                                  "' contains ':', '^' or white space");
  } else if (node.op.empty()) {
    status = InvalidArgumentError("node '" + node.name + "' has no op");
  } else if (nodes_.size() >= static_cast<size_t>(kMaxNodes)) {
    status = InvalidArgumentError("node '" + node.name +
                                  "' would make the graph larger than " +
                                  std::to_string(kMaxNodes) + " nodes");
  } else if (index_ == nullptr) {  // Moved from or taken: index again.
    index_ = std::make_unique<Index>();
    index_->Reserve(nodes_.size() + 1);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      index_->Insert(nodes_[i].name, static_cast<int>(i),
                     internal::NameMember(nodes_));
    }
  }
  if (status.ok() && !index_->Insert(node.name, static_cast<int>(nodes_.size()),
                                     internal::NameMember(nodes_))) {
    status = InvalidArgumentError("duplicate node name '" + node.name + "'");
  }
  if (!status.ok()) {
    if (status_.ok()) status_ = status;
    return status;
  }
  nodes_.push_back(std::move(node));  // At the position just indexed.
  return Status::OK();
}

const NodeDef* Graph::FindNode(const std::string& name) const {
  if (index_ == nullptr) {  // Moved from or taken: look through the nodes.
    for (const NodeDef& node : nodes_) {
      if (node.name == name) return &node;
    }
    return nullptr;
  }
  const int i = index_->Find(name, internal::NameMember(nodes_));
  return i < 0 ? nullptr : &nodes_[i];
}

std::string Graph::Append(NodeDef node) {
  std::string name = node.name;
  (void)AddNode(std::move(node));  // Recorded in status_.
  return name;
}

std::string Graph::Placeholder(const std::string& name, DataType dtype,
                               PartialShape shape) {
  NodeDef node{name, "Placeholder", {}, {{"dtype", dtype}}, ""};
  if (shape.rank_known()) node.attrs["shape"] = std::move(shape);
  return Append(std::move(node));
}

std::string Graph::Const(const std::string& name, Tensor value) {
  const DataType dtype = value.dtype();
  return Append(
      {name, "Const", {}, {{"value", std::move(value)}, {"dtype", dtype}}, ""});
}

std::string Graph::Identity(const std::string& name, const std::string& x) {
  return Append({name, "Identity", {x}, {}, ""});
}

std::string Graph::Add(const std::string& name, const std::string& a,
                       const std::string& b) {
  return Append({name, "Add", {a, b}, {}, ""});
}

std::string Graph::Sub(const std::string& name, const std::string& a,
                       const std::string& b) {
  return Append({name, "Sub", {a, b}, {}, ""});
}

std::string Graph::Mul(const std::string& name, const std::string& a,
                       const std::string& b) {
  return Append({name, "Mul", {a, b}, {}, ""});
}

std::string Graph::Div(const std::string& name, const std::string& a,
                       const std::string& b) {
  return Append({name, "Div", {a, b}, {}, ""});
}

std::string Graph::MatMul(const std::string& name, const std::string& a,
                          const std::string& b, bool transpose_a,
                          bool transpose_b) {
  return Append({name,
                 "MatMul",
                 {a, b},
                 {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}},
                 ""});
}

std::string Graph::ReduceSum(const std::string& name, const std::string& x,
                             std::vector<int64_t> axes, bool keepdims) {
  return Append({name,
                 "ReduceSum",
                 {x},
                 {{"axes", std::move(axes)},
                  {"keepdims", static_cast<int64_t>(keepdims ? 1 : 0)}},
                 ""});
}

std::string Graph::Relu(const std::string& name, const std::string& x) {
  return Append({name, "Relu", {x}, {}, ""});
}

std::string Graph::RandomUniform(const std::string& name, DataType dtype,
                                 const Shape& shape, int64_t seed) {
  return Append({name,
                 "RandomUniform",
                 {},
                 {{"dtype", dtype}, {"shape", shape}, {"seed", seed}},
                 ""});
}

std::string Graph::Spin(const std::string& name, int64_t micros,
                        const std::string& after) {
  NodeDef node{name, "Spin", {}, {{"micros", micros}}, ""};
  if (!after.empty()) node.inputs.push_back(after);
  return Append(std::move(node));
}

std::string Graph::Sleep(const std::string& name, int64_t micros,
                         const std::string& after) {
  NodeDef node{name, "Sleep", {}, {{"micros", micros}}, ""};
  if (!after.empty()) node.inputs.push_back(after);
  return Append(std::move(node));
}

}  // namespace weft
