#include "weft/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>

#include "threading/pool_core.h"
#include "threading/spin.h"
#include "weft/thread_pool.h"

namespace weft {
namespace {

// One ParallelFor call: the block range, the claim counter, and completion.
//
// Lifetime: reference counted, one reference for the caller and one per
// queued helper entry, because a helper may be dequeued long after the caller
// returned. fn_ refers to the caller's stack; it is only called for a block
// claimed below num_blocks_, and the caller does not return before every
// claimed block has finished, so no call outlives it.
class ParallelForJob final : public internal::Task {
 public:
  ParallelForJob(RangeFn fn, int64_t n, int64_t block, int helpers)
      : fn_(fn),
        n_(n),
        block_(block),
        num_blocks_((n + block - 1) / block),
        unfinished_(num_blocks_),
        refs_(helpers + 1) {}

  // A helper's entry point: claim blocks until none are left.
  void Run() override {
    RunBlocks();
    Unref();
  }

  // Claims and runs blocks until every block is claimed.
  void RunBlocks() {
    for (;;) {
      const int64_t b = next_block_.fetch_add(1, std::memory_order_relaxed);
      if (b >= num_blocks_) return;
      if (!failed_.load(std::memory_order_relaxed)) {
        try {
          fn_(b * block_, std::min(n_, (b + 1) * block_));
        } catch (...) {
          bool expected = false;
          if (failed_.compare_exchange_strong(expected, true)) {
            error_ = std::current_exception();
          }
        }
      }
      if (unfinished_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        if (done_.exchange(kDone, std::memory_order_acq_rel) == kSleeping) {
          done_.notify_one();
        }
      }
    }
  }

  // Returns once every block has finished: spins for spin_us, then sleeps.
  void Wait(int spin_us) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::microseconds(spin_us);
    for (uint32_t i = 1; done_.load(std::memory_order_acquire) != kDone; ++i) {
      internal::CpuRelax();
      if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) break;
    }
    uint32_t state = kRunning;
    if (done_.compare_exchange_strong(state, kSleeping,
                                      std::memory_order_acq_rel)) {
      state = kSleeping;
    }
    while (state != kDone) {
      done_.wait(kSleeping, std::memory_order_acquire);
      state = done_.load(std::memory_order_acquire);
    }
  }

  // The first exception thrown by fn, if any. Valid after Wait().
  std::exception_ptr error() const { return error_; }

  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  static constexpr uint32_t kRunning = 0;
  static constexpr uint32_t kSleeping = 1;  // The caller sleeps in Wait().
  static constexpr uint32_t kDone = 2;

  const RangeFn fn_;
  const int64_t n_;
  const int64_t block_;
  const int64_t num_blocks_;
  alignas(64) std::atomic<int64_t> next_block_{0};
  alignas(64) std::atomic<int64_t> unfinished_;
  std::atomic<uint32_t> done_{kRunning};
  std::atomic<int> refs_;
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;  // Written once, by the thread that set failed_.
};

// Runs [0, n) in blocks of `block` on the caller plus up to NumThreads()
// helpers. REQUIRES: pool has workers and there are at least two blocks.
void RunBlocksInParallel(ThreadPool& pool, int64_t n, int64_t block,
                         RangeFn fn) {
  const int64_t num_blocks = (n + block - 1) / block;
  const int helpers = static_cast<int>(
      std::min<int64_t>(pool.NumThreads(), num_blocks - 1));
  auto* job = new ParallelForJob(fn, n, block, helpers);
  pool.core().ScheduleCopies(job, helpers);
  job->RunBlocks();
  job->Wait(pool.options().spin_us);
  const std::exception_ptr error = job->error();
  job->Unref();
  if (error) std::rethrow_exception(error);
}

bool HasWorkers(const ThreadPool* pool) {
  return pool != nullptr && pool->NumThreads() > 0;
}

}  // namespace

void ParallelFor(ThreadPool* pool, int64_t n, double cost_per_unit_ns,
                 RangeFn fn) {
  if (n <= 0) return;
  if (!HasWorkers(pool) || n == 1) {
    fn(0, n);
    return;
  }
  const ThreadPoolOptions& options = pool->options();
  const double total_ns = static_cast<double>(n) * cost_per_unit_ns;
  const double min_block_ns = std::max(options.min_block_ns, 1.0);
  if (!(total_ns >= 2 * min_block_ns)) {  // Also catches NaN.
    fn(0, n);
    return;
  }
  const int64_t threads = pool->NumThreads() + 1;  // The caller works too.
  const double by_cost = std::floor(total_ns / min_block_ns);
  const int64_t by_threads =
      threads * std::max(options.max_blocks_per_thread, 1);
  const int64_t wanted = std::min<int64_t>(
      {n, by_threads,
       static_cast<int64_t>(std::min(by_cost, static_cast<double>(n)))});
  const int64_t block = (n + wanted - 1) / wanted;
  if (block >= n) {
    fn(0, n);
    return;
  }
  RunBlocksInParallel(*pool, n, block, fn);
}

void ParallelForFixedBlocks(ThreadPool* pool, int64_t n, int64_t block,
                            RangeFn fn) {
  if (n <= 0) return;
  block = std::max<int64_t>(block, 1);
  if (!HasWorkers(pool) || block >= n) {
    for (int64_t begin = 0; begin < n; begin += block) {
      fn(begin, std::min(n, begin + block));
    }
    return;
  }
  RunBlocksInParallel(*pool, n, block, fn);
}

}  // namespace weft
