// The state behind one KernelContext — one execution of one node — and the
// library's access to it.
#ifndef WEFT_SRC_RUNTIME_NODE_RUN_H_
#define WEFT_SRC_RUNTIME_NODE_RUN_H_

#include <string>
#include <vector>

#include "runtime/compiled_graph.h"
#include "runtime/run_state.h"
#include "threading/mutex.h"

namespace weft {

// The state behind a KernelContext.
struct KernelContext::Run {
  const internal::CompiledNode* node = nullptr;
  internal::RunState* run = nullptr;
  // The Run's value array: input i is values[node->input_values[i]].
  const Tensor* values = nullptr;
  Tensor* outputs = nullptr;  // node->output_dtypes.size() entries.
  ThreadPool* intra_pool = nullptr;
  int max_shards = 1;  // The most threads one ParallelFor call enlisted.
  bool trace = false;
  internal::Mutex shards_mu;
  std::vector<ShardExecStats> shards WEFT_GUARDED_BY(shards_mu);
};

// What the library reaches in a KernelContext that kernels outside it do
// not (leveldb's WriteBatchInternal pattern).
class KernelContextInternal {
 public:
  using Run = KernelContext::Run;
  static KernelContext ContextFor(Run* run) { return KernelContext(run); }
  // The session's named resources (queues); null outside a session.
  static internal::ResourceMgr* resources(const KernelContext& ctx);
  // The Run the context's node belongs to.
  static internal::RunState& run_state(const KernelContext& ctx) {
    return *ctx.run_->run;
  }
};

namespace internal {

using NodeRun = KernelContextInternal::Run;

// The calling thread's OS id and name (cached per thread).
int64_t CurrentOsThreadId();
const std::string& CurrentThreadName();

}  // namespace internal
}  // namespace weft

#endif  // WEFT_SRC_RUNTIME_NODE_RUN_H_
