#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <string>
#include <string_view>

#include "framework/node_context.h"
#include "runtime/clock.h"
#include "runtime/core_budget.h"
#include "runtime/kernel_services.h"
#include "runtime/node_run.h"
#include "threading/parallel_for_internal.h"
#include "weft/kernel.h"

namespace weft {

const std::string& KernelContext::node_name() const { return run_->node->name; }

const std::string& KernelContext::op() const { return run_->node->op(); }

int KernelContext::num_inputs() const {
  return static_cast<int>(run_->node->input_values.size());
}

const Tensor& KernelContext::input(int i) const {
  WEFT_CHECK(i >= 0 && i < num_inputs(), IndexOutOfRange("input", i));
  return run_->values[run_->node->input_values[i]];
}

std::string KernelContext::IndexOutOfRange(const char* what, int i) const {
  return internal::NodeContext(node_name(), op()) + ": KernelContext " + what +
         " " + std::to_string(i) + " of " +
         std::to_string(std::string_view(what) == "input" ? num_inputs()
                                                          : num_outputs());
}

int KernelContext::num_outputs() const {
  return static_cast<int>(run_->node->output_dtypes.size());
}

bool KernelContext::output_required(int i) const {
  WEFT_CHECK(i >= 0 && i < num_outputs(), IndexOutOfRange("output", i));
  return run_->run->plan().value_uses[run_->node->first_value + i] != 0;
}

DataType KernelContext::output_dtype(int i) const {
  WEFT_CHECK(i >= 0 && i < num_outputs(), IndexOutOfRange("output", i));
  return run_->node->output_dtypes[i];
}

namespace {

// The bytes a tensor of `shape` holds, or -1 when the shape is invalid or
// the size overflows (Tensor::Allocate reports those).
int64_t BytesOf(DataType dtype, const Shape& shape) {
  if (!shape.IsValid()) return -1;
  const int64_t n = shape.NumElements();
  const int64_t element = static_cast<int64_t>(DataTypeSize(dtype));
  if (n > std::numeric_limits<int64_t>::max() / element) return -1;
  return n * element;
}

}  // namespace

// Counts `bytes` more against the Run's memory limit for output i (which
// replaces whatever output i held).
Status KernelContext::Account(int i, int64_t bytes) {
  if (bytes < 0) return Status::OK();  // Allocate() reports the bad shape.
  int64_t held = 0;
  if (!run_->run->ReserveBytes(bytes, &held)) {
    return ResourceExhaustedError(
        "output " + std::to_string(i) + " needs " + std::to_string(bytes) +
        " bytes; the Run holds " + std::to_string(held) +
        " bytes of tensors and SessionOptions.memory_limit_bytes is " +
        std::to_string(run_->run->config().memory_limit_bytes));
  }
  if (run_->outputs[i].IsInitialized()) {
    run_->run->ReleaseBytes(
        static_cast<int64_t>(run_->outputs[i].size_bytes()));
  }
  return Status::OK();
}

StatusOr<Tensor*> KernelContext::AllocateOutput(int i, const Shape& shape) {
  return Allocate(i, shape, /*zero_fill=*/true);
}

StatusOr<Tensor*> KernelContext::AllocateOutputUninitialized(
    int i, const Shape& shape) {
  return Allocate(i, shape, /*zero_fill=*/false);
}

StatusOr<Tensor*> KernelContext::Allocate(int i, const Shape& shape,
                                          bool zero_fill) {
  if (i < 0 || i >= num_outputs()) {
    return InternalError("output index " + std::to_string(i) + " out of range");
  }
  const int64_t bytes = BytesOf(output_dtype(i), shape);
  WEFT_RETURN_IF_ERROR(Account(i, bytes));
  // The Run's arena first (runtime/memory_plan.h): a planned slot that is
  // free and large enough holds the tensor; otherwise the heap.
  if (const int64_t data_bytes = Tensor::AllocatedBytes(output_dtype(i), shape);
      data_bytes > 0) {
    const int value = run_->node->first_value + i;
    if (void* header = run_->run->PlaceValue(value, data_bytes)) {
      run_->outputs[i].AllocateIn(output_dtype(i), shape, zero_fill, header,
                                  &internal::MemoryArena::ReturnSlot,
                                  run_->run->arena(),
                                  run_->run->arena_slot(value));
      return &run_->outputs[i];
    }
  }
  Status allocated =
      run_->outputs[i].Allocate(output_dtype(i), shape, zero_fill);
  if (!allocated.ok()) {
    if (bytes >= 0) run_->run->ReleaseBytes(bytes);
    return allocated;
  }
  run_->run->CountHeapTensor(bytes);
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
  WEFT_RETURN_IF_ERROR(Account(i, static_cast<int64_t>(tensor.size_bytes())));
  if (run_->run->recording_memory() && tensor.raw_data() != nullptr) {
    // An input's buffer passed on (a Reshape): the memory plan keeps that
    // input's slot until this output's readers are done too.
    for (int j = 0; j < num_inputs(); ++j) {
      if (input(j).raw_data() == tensor.raw_data()) {
        run_->run->ObserveAlias(run_->node->first_value + i,
                                run_->node->input_values[j]);
        break;
      }
    }
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

using internal::NowNs;

// Wraps a kernel's block function: a block of a cancelled Run is skipped
// (the Run's outputs are discarded anyway, and a long kernel then ends
// within one block of a deadline or Close), and when tracing, each block's
// thread and time are recorded.
class BlockRunner {
 public:
  BlockRunner(internal::NodeRun* run, RangeFn fn) : run_(run), fn_(fn) {}

  void operator()(int64_t begin, int64_t end) {
    if (run_->run->cancelled()) return;
    if (!run_->trace || run_->intra_pool == nullptr) {
      fn_(begin, end);
      return;
    }
    ShardExecStats shard;
    shard.os_thread_id = internal::CurrentOsThreadId();
    shard.thread_name = internal::CurrentThreadName();
    shard.start_ns = NowNs();
    fn_(begin, end);
    shard.end_ns = NowNs();
    internal::MutexLock lock(run_->shards_mu);
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
  BlockRunner runner(run_, fn);
  // Serial work is done in slices of about kCancelSliceNs, so that a
  // cancelled Run stops within one slice rather than at the end of the
  // kernel.
  constexpr double kCancelSliceNs = 1e6;
  const double total_ns = static_cast<double>(n) * cost_per_unit_ns;
  // Too little work to share (most nodes of a graph of small tensors): run
  // it here without consulting the budget or the pool.
  const double share_ns =
      run_->intra_pool != nullptr
          ? 2 * std::max(run_->intra_pool->options().min_block_ns, 1.0)
          : 2 * kCancelSliceNs;
  const bool too_small = n <= 1 || total_ns < share_ns;
  const int helpers = too_small ? 0 : HelpersAllowed();
  // Long work held to fewer helpers than the pool has may take on one more
  // when another kernel ends (internal::kLateHelperMinNs).
  const int wanted = run_->intra_pool != nullptr && !too_small &&
                             total_ns >= internal::kLateHelperMinNs
                         ? run_->intra_pool->NumThreads()
                         : 0;
  if (helpers == 0 && wanted == 0) {
    const int64_t slices =
        total_ns >= 2 * kCancelSliceNs
            ? std::min<int64_t>(n,
                                static_cast<int64_t>(total_ns / kCancelSliceNs))
            : 1;
    const int64_t slice = (n + slices - 1) / slices;
    for (int64_t begin = 0; begin < n; begin += slice) {
      runner(begin, std::min(n, begin + slice));
    }
    RecordShards(1);
    return;
  }
  RecordShards(internal::ParallelForCapped(
      run_->intra_pool, n, cost_per_unit_ns, helpers, wanted,
      [&] { return HelpersAllowed() > helpers; },
      [&](int64_t b, int64_t e) { runner(b, e); }));
}

void KernelContext::ParallelForFixedBlocks(int64_t n, int64_t block,
                                           RangeFn fn) {
  BlockRunner runner(run_, fn);
  RecordShards(internal::ParallelForFixedBlocksCapped(
      run_->intra_pool, n, block, HelpersAllowed(),
      [&](int64_t b, int64_t e) { runner(b, e); }));
}

int KernelContext::intra_op_threads() const {
  return run_->intra_pool ? run_->intra_pool->NumThreads() + 1 : 1;
}

bool KernelContext::IsCancelled() const { return run_->run->cancelled(); }

bool KernelContext::WaitFor(std::chrono::nanoseconds duration) {
  internal::CoreBudget::Waiting waiting;  // A waiting kernel uses no core.
  return run_->run->WaitUnlessCancelled(duration);
}

internal::ResourceMgr* KernelContextInternal::resources(
    const KernelContext& ctx) {
  return ctx.run_->run->config().resources;
}

namespace internal {

ResourceMgr* SessionResources(const KernelContext& ctx) {
  return KernelContextInternal::resources(ctx);
}

int64_t SessionMemoryLimitBytes(const KernelContext& ctx) {
  return KernelContextInternal::run_state(ctx).config().memory_limit_bytes;
}

// The budget counts running kernels in one process-wide counter, so the
// scope needs no state of its own.
CoreReleasedWhileBlocked::CoreReleasedWhileBlocked() {
  CoreBudget::GiveBackCore();
}

CoreReleasedWhileBlocked::~CoreReleasedWhileBlocked() {
  CoreBudget::TakeBackCore();
}

}  // namespace internal

}  // namespace weft
