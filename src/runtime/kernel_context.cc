#include <algorithm>
#include <atomic>

#include "runtime/node_run.h"
#include "weft/kernel.h"

namespace weft {

const std::string& KernelContext::node_name() const { return run_->node->name; }

const std::string& KernelContext::op() const { return run_->node->op; }

int KernelContext::num_inputs() const {
  return static_cast<int>(run_->inputs.size());
}

const Tensor& KernelContext::input(int i) const { return *run_->inputs[i]; }

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
  WEFT_ASSIGN_OR_RETURN(run_->outputs[i],
                        Tensor::Create(output_dtype(i), shape));
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

void KernelContext::RecordShards(int blocks) {
  // Without an intra-op pool every block ran here, one after another.
  if (run_->intra_pool != nullptr) {
    run_->max_shards = std::max(run_->max_shards, blocks);
  }
}

void KernelContext::ParallelFor(int64_t n, double cost_per_unit_ns,
                                RangeFn fn) {
  std::atomic<int> blocks{0};
  weft::ParallelFor(run_->intra_pool, n, cost_per_unit_ns,
                    [&](int64_t begin, int64_t end) {
                      blocks.fetch_add(1, std::memory_order_relaxed);
                      fn(begin, end);
                    });
  RecordShards(blocks.load());
}

void KernelContext::ParallelForFixedBlocks(int64_t n, int64_t block,
                                           RangeFn fn) {
  std::atomic<int> blocks{0};
  weft::ParallelForFixedBlocks(run_->intra_pool, n, block,
                               [&](int64_t begin, int64_t end) {
                                 blocks.fetch_add(1, std::memory_order_relaxed);
                                 fn(begin, end);
                               });
  RecordShards(blocks.load());
}

int KernelContext::intra_op_threads() const {
  return run_->intra_pool ? run_->intra_pool->NumThreads() + 1 : 1;
}

bool KernelContext::IsCancelled() const { return run_->run->cancelled(); }

bool KernelContext::WaitFor(std::chrono::nanoseconds duration) {
  return run_->run->WaitUnlessCancelled(duration);
}

}  // namespace weft
