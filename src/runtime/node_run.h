// NodeRun: the state behind one KernelContext — one execution of one node.
#ifndef WEFT_SRC_RUNTIME_NODE_RUN_H_
#define WEFT_SRC_RUNTIME_NODE_RUN_H_

#include <mutex>
#include <string>
#include <vector>

#include "runtime/compiled_graph.h"
#include "runtime/run_state.h"

namespace weft::internal {

struct NodeRun {
  const CompiledNode* node = nullptr;
  RunState* run = nullptr;
  // The Run's value array: input i is values[node->input_values[i]].
  const Tensor* values = nullptr;
  Tensor* outputs = nullptr;  // node->output_dtypes.size() entries.
  ThreadPool* intra_pool = nullptr;
  int max_shards = 1;  // The most threads one ParallelFor call enlisted.
  bool trace = false;
  std::mutex shards_mu;
  std::vector<ShardExecStats> shards;  // Guarded by shards_mu.
};

// The calling thread's OS id and name (cached per thread).
int64_t CurrentOsThreadId();
const std::string& CurrentThreadName();

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_NODE_RUN_H_
