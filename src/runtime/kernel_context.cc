#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>

#include "runtime/core_budget.h"
#include "runtime/node_run.h"
#include "threading/parallel_for_internal.h"
#include "weft/kernel.h"

namespace weft {

const std::string& KernelContext::node_name() const { return run_->node->name; }

const std::string& KernelContext::op() const { return run_->node->op; }

int KernelContext::num_inputs() const {
  return static_cast<int>(run_->node->input_values.size());
}

const Tensor& KernelContext::input(int i) const {
  return run_->values[run_->node->input_values[i]];
}

int KernelContext::num_outputs() const {
  return static_cast<int>(run_->node->output_dtypes.size());
}

DataType KernelContext::output_dtype(int i) const {
  return run_->node->output_dtypes[i];
}

StatusOr<Tensor*> KernelContext::AllocateOutput(int i, const Shape& shape) {
  if (i < 0 || i >= num_outputs()) {
    return InternalError("output index " + std::to_string(i) + " out of range");
  }
  WEFT_RETURN_IF_ERROR(
      run_->outputs[i].Allocate(output_dtype(i), shape, /*zero_fill=*/true));
  return &run_->outputs[i];
}

StatusOr<Tensor*> KernelContext::AllocateOutputUninitialized(
    int i, const Shape& shape) {
  if (i < 0 || i >= num_outputs()) {
    return InternalError("output index " + std::to_string(i) + " out of range");
  }
  WEFT_RETURN_IF_ERROR(
      run_->outputs[i].Allocate(output_dtype(i), shape, /*zero_fill=*/false));
  return &run_->outputs[i];
}

Status KernelContext::SetOutput(int i, Tensor tensor) {
  if (i < 0 || i >= num_outputs()) {
    return InternalError("output index " + std::to_string(i) + " out of range");
  }
  if (tensor.dtype() != output_dtype(i)) {
    return InternalError(std::string("output ") + std::to_string(i) +
                         " must be " + DataTypeName(output_dtype(i)) +
                         ", the kernel produced " +
                         DataTypeName(tensor.dtype()));
  }
  run_->outputs[i] = std::move(tensor);
  return Status::OK();
}

void KernelContext::RecordShards(int threads) {
  // Without an intra-op pool every block ran here, on one thread.
  if (run_->intra_pool != nullptr) {
    run_->max_shards = std::max(run_->max_shards, threads);
  }
}

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Wraps a kernel's block function when tracing: records each block's thread
// and time.
class ShardRecorder {
 public:
  ShardRecorder(internal::NodeRun* run, RangeFn fn) : run_(run), fn_(fn) {}

  void operator()(int64_t begin, int64_t end) {
    ShardExecStats shard;
    shard.os_thread_id = internal::CurrentOsThreadId();
    shard.thread_name = internal::CurrentThreadName();
    shard.start_ns = NowNs();
    fn_(begin, end);
    shard.end_ns = NowNs();
    std::lock_guard<std::mutex> lock(run_->shards_mu);
    run_->shards.push_back(std::move(shard));
  }

 private:
  internal::NodeRun* run_;
  RangeFn fn_;
};

}  // namespace

int KernelContext::HelpersAllowed() const {
  if (run_->intra_pool == nullptr) return 0;
  return internal::CoreBudget::HelpersAllowed(
      run_->intra_pool->NumThreads(), run_->run->config().intra_threads);
}

void KernelContext::ParallelFor(int64_t n, double cost_per_unit_ns,
                                RangeFn fn) {
  const int helpers = HelpersAllowed();
  if (!run_->trace || run_->intra_pool == nullptr) {
    RecordShards(internal::ParallelForCapped(run_->intra_pool, n,
                                             cost_per_unit_ns, helpers, fn));
    return;
  }
  ShardRecorder recorder(run_, fn);
  RecordShards(internal::ParallelForCapped(
      run_->intra_pool, n, cost_per_unit_ns, helpers,
      [&](int64_t b, int64_t e) { recorder(b, e); }));
}

void KernelContext::ParallelForFixedBlocks(int64_t n, int64_t block,
                                           RangeFn fn) {
  const int helpers = HelpersAllowed();
  if (!run_->trace || run_->intra_pool == nullptr) {
    RecordShards(internal::ParallelForFixedBlocksCapped(run_->intra_pool, n,
                                                        block, helpers, fn));
    return;
  }
  ShardRecorder recorder(run_, fn);
  RecordShards(internal::ParallelForFixedBlocksCapped(
      run_->intra_pool, n, block, helpers,
      [&](int64_t b, int64_t e) { recorder(b, e); }));
}

int KernelContext::intra_op_threads() const {
  return run_->intra_pool ? run_->intra_pool->NumThreads() + 1 : 1;
}

bool KernelContext::IsCancelled() const { return run_->run->cancelled(); }

bool KernelContext::WaitFor(std::chrono::nanoseconds duration) {
  internal::CoreBudget::Waiting waiting;  // A waiting kernel uses no core.
  return run_->run->WaitUnlessCancelled(duration);
}

}  // namespace weft
