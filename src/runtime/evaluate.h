// Running a graph once, on the calling thread, without a session: what
// constant folding (src/optimize/constant_folding.cc) needs to compute the
// constant part of a graph while the session that will run the graph is
// still being made, without reaching up to the session floor.
#ifndef WEFT_SRC_RUNTIME_EVALUATE_H_
#define WEFT_SRC_RUNTIME_EVALUATE_H_

#include <string>
#include <vector>

#include "runtime/compiled_graph.h"
#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft::internal {

// Compiles `graph` with `options` and runs it once for `fetches`: every
// node on the calling thread, kernels serially, no deadline. The graph
// takes no feeds. Errors: the compiler's, the plan's, or the Run's (naming
// the node).
StatusOr<std::vector<Tensor>> EvaluateOnCallingThread(
    Graph graph, const CompileOptions& options,
    const std::vector<std::string>& fetches);

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_EVALUATE_H_
