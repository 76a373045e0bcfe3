// NodeRun: the state behind one KernelContext — one execution of one node.
#ifndef WEFT_SRC_RUNTIME_NODE_RUN_H_
#define WEFT_SRC_RUNTIME_NODE_RUN_H_

#include <vector>

#include "runtime/compiled_graph.h"
#include "runtime/run_state.h"

namespace weft::internal {

struct NodeRun {
  const CompiledNode* node = nullptr;
  RunState* run = nullptr;
  std::vector<const Tensor*> inputs;
  Tensor* outputs = nullptr;  // node->output_dtypes.size() entries.
  ThreadPool* intra_pool = nullptr;
  int max_shards = 1;  // The most blocks one ParallelFor call ran.
};

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_NODE_RUN_H_
