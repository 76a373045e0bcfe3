// Graphs of nodes, built in code or loaded from a file.
//
//   weft::Graph g;
//   auto x = g.Placeholder("x", weft::DataType::kFloat32, {2, 2});
//   auto w = g.RandomUniform("w", weft::DataType::kFloat32, {2, 2}, 7);
//   auto y = g.MatMul("y", x, w);
//   if (!g.status().ok()) ...  // the first error of any helper
//
// Inputs are written "node" (output 0), "node:k" (output k) and "^node" (a
// control dependency: run after node, use no value). AddNode checks only
// what it can alone (a name, an op, no duplicate); the rest (unknown ops,
// dangling inputs, cycles, arity, dtypes and shapes, attributes) is checked
// when a Session compiles the graph.
#ifndef WEFT_GRAPH_H_
#define WEFT_GRAPH_H_

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "weft/attr.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

struct NodeDef {
  std::string name;
  std::string op;
  std::vector<std::string> inputs;
  AttrMap attrs;
  // "" (placed by the session, on /cpu:0), "/cpu:1", "/device:CPU:1", ...
  std::string device;
};

class Graph {
 public:
  // The most nodes a graph holds; AddNode refuses more.
  static constexpr int kMaxNodes = std::numeric_limits<int>::max() / 2;

  Graph();
  ~Graph();
  Graph(const Graph& other);
  Graph& operator=(const Graph& other);
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;

  Status AddNode(NodeDef node);

  const std::vector<NodeDef>& nodes() const { return nodes_; }
  const NodeDef* FindNode(const std::string& name) const;

  // The first error any typed helper below met (AddNode's own errors are
  // returned to its caller and recorded here too).
  const Status& status() const { return status_; }

  // Typed helpers: each adds one node and returns its name, the handle used
  // as another node's input.
  std::string Placeholder(const std::string& name, DataType dtype,
                          PartialShape shape = PartialShape::UnknownRank());
  std::string Const(const std::string& name, Tensor value);
  std::string Identity(const std::string& name, const std::string& x);
  std::string Add(const std::string& name, const std::string& a,
                  const std::string& b);
  std::string Sub(const std::string& name, const std::string& a,
                  const std::string& b);
  std::string Mul(const std::string& name, const std::string& a,
                  const std::string& b);
  std::string Div(const std::string& name, const std::string& a,
                  const std::string& b);
  std::string MatMul(const std::string& name, const std::string& a,
                     const std::string& b, bool transpose_a = false,
                     bool transpose_b = false);
  std::string ReduceSum(const std::string& name, const std::string& x,
                        std::vector<int64_t> axes = {}, bool keepdims = true);
  std::string Relu(const std::string& name, const std::string& x);
  std::string RandomUniform(const std::string& name, DataType dtype,
                            const Shape& shape, int64_t seed);
  // `after`, when not empty, is an input that orders the node after another.
  std::string Spin(const std::string& name, int64_t micros,
                   const std::string& after = "");
  std::string Sleep(const std::string& name, int64_t micros,
                    const std::string& after = "");

 private:
  std::string Append(NodeDef node);  // AddNode, keeping the first error.

  // Compiling a graph it owns takes the name index over rather than
  // rebuilding it (GraphInternal, src/framework/graph_internal.h).
  friend class GraphInternal;
  class Index;  // Name -> position in nodes_; defined inside the library.

  std::vector<NodeDef> nodes_;
  std::unique_ptr<Index> index_;  // Never null but in a moved-from graph.
  Status status_;
};

// A graph that a node calls: If's branches, Loop's and Scan's bodies, held
// in a kGraph attribute. Its parameters are the Placeholders named in
// `inputs`, in order: the calling node binds them, and its input dtypes and
// shapes replace those the placeholders declare when the subgraph is
// compiled (once, with the node). Its results are the values named in
// `outputs` ("node" or "node:k"), which may be inputs themselves. A
// subgraph reads nothing of the graph around it but through its inputs: an
// ONNX body's outer-scope reads become extra inputs of the calling node.
struct Subgraph {
  Graph graph;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

}  // namespace weft

#endif  // WEFT_GRAPH_H_
