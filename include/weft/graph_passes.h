// Graph rewrites at session creation: what ONNX Runtime calls graph
// optimisation and TensorFlow calls Grappler. Session::Create runs them
// (SessionOptions::optimize_graph, ::disabled_graph_passes); OptimizeGraph
// runs them alone, to look at the result (`weft info --passes MODEL`).
//
// Contract of every pass: results stay within the ONNX tolerances of the
// graph as given (most passes keep them bitwise; batch-norm folding rounds
// differently), and stay bitwise identical across thread settings. A pass
// never removes a node without consumers (a graph's outputs), a Placeholder,
// or a stateful or blocking node.
//
// Every name stays usable: a session keeps the graph as given beside the
// optimised one, and a Run that fetches or feeds a node the passes removed,
// or feeds anything but a Placeholder, runs the graph as given (compiled on
// first need).
#ifndef WEFT_GRAPH_PASSES_H_
#define WEFT_GRAPH_PASSES_H_

#include <map>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/status.h"

namespace weft {

struct GraphPassInfo {
  std::string name;  // What SessionOptions::disabled_graph_passes takes.
  std::string summary;
};

// Every pass, in the order they run.
const std::vector<GraphPassInfo>& GraphPasses();

struct GraphPassOptions {
  // Names from GraphPasses(); an unknown name is an error.
  std::vector<std::string> disabled;
  // The CPU devices the graph may be placed on (SessionOptions'
  // device_count and allow_soft_placement), so that the passes see the
  // graph as the session will.
  int num_cpu_devices = 1;
  bool allow_soft_placement = false;
};

// A node a pass took out of the graph.
struct RemovedNode {
  std::string pass;
  // The node that now computes what it computed, or "" (folded away, or
  // an Identity whose readers now read its input).
  std::string replaced_by;
};

struct GraphPassResult {
  std::string pass;
  int rewrites = 0;  // Nodes replaced, removed or fused.
};

struct OptimizedGraph {
  Graph graph;
  std::vector<GraphPassResult> passes;  // One per pass that ran, in order.
  // A node a pass replaced by another under the same name (a folded
  // constant, a fused Conv named after its activation) computes the same
  // value and is not listed.
  std::map<std::string, RemovedNode> removed;
};

// Runs every pass not disabled. A graph that does not compile as given is
// returned unchanged (the session reports its error with its own names).
StatusOr<OptimizedGraph> OptimizeGraph(const Graph& graph,
                                       const GraphPassOptions& options = {});

}  // namespace weft

#endif  // WEFT_GRAPH_PASSES_H_
