// The built-in graphs of `weft demo` (also written to examples/).
#ifndef WEFT_TOOLS_WEFT_DEMO_GRAPHS_H_
#define WEFT_TOOLS_WEFT_DEMO_GRAPHS_H_

#include <string>
#include <vector>

#include "weft/graph_io.h"

namespace weft::cli {

struct DemoGraph {
  std::string file_name;  // "two_spin_branches.json"
  std::string title;
  GraphFile graph;
};

// (a) two independent CPU-bound branches (Spin) joined by an Add;
// (b) two branches of four chained 512x512 MatMuls joined by an Add;
// (c) a three-layer MLP on a batch of 256.
std::vector<DemoGraph> DemoGraphs();

}  // namespace weft::cli

#endif  // WEFT_TOOLS_WEFT_DEMO_GRAPHS_H_
