// Graph files: the JSON format of docs/graph-format.md.
//
//   {"format": "weft-graph", "version": 1,
//    "nodes": [{"name": "x", "op": "Placeholder",
//               "attrs": {"dtype": "float32", "shape": [2, 2]}}, ...],
//    "outputs": ["y"]}
#ifndef WEFT_GRAPH_IO_H_
#define WEFT_GRAPH_IO_H_

#include <string>
#include <string_view>
#include <vector>

#include "weft/graph.h"
#include "weft/status.h"

namespace weft {

struct GraphFile {
  Graph graph;
  // The tensors a plain `weft run` fetches ("node" or "node:k").
  std::vector<std::string> outputs;
};

// Parses a graph file's text. Relative .npy paths in Const values resolve
// against base_dir. A syntax error gives line and column; a semantic error
// names the node and the attribute. Attribute values are read through the
// op's attribute schema (a JSON 1 is an int or a float as the op declares).
StatusOr<GraphFile> ParseGraph(std::string_view text,
                               const std::string& base_dir = ".");

// Reads and parses a graph file; errors start with the path.
StatusOr<GraphFile> LoadGraph(const std::string& path);

// The JSON text of a graph (tensor attributes inline), readable by
// ParseGraph.
std::string SerializeGraph(const GraphFile& file);

}  // namespace weft

#endif  // WEFT_GRAPH_IO_H_
