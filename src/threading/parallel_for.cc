#include "weft/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <utility>
#include <vector>

#include "threading/parallel_for_internal.h"
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
//
// Recycling: allocating a job per call, freed by whichever thread drops the
// last reference, makes caller and workers fight over the allocator's locks.
// So each thread keeps the jobs it started in a small cache and reuses one
// when it is the sole owner again (every helper entry consumed); a job still
// referenced by an unstarted entry is abandoned to its last holder.
class alignas(64) ParallelForJob final : public internal::Task {
 public:
  // Prepares a job for a new call. REQUIRES: no other thread refers to it.
  void Reset(RangeFn fn, int64_t n, int64_t block, int helpers) {
    fn_ = fn;
    n_ = n;
    block_ = block;
    num_blocks_ = (n + block - 1) / block;
    // Block 0 is the caller's without a claim (RunFirstBlock): one shared
    // read-modify-write fewer on the fork/join's critical path.
    next_block_.store(1, std::memory_order_relaxed);
    unfinished_.store(num_blocks_, std::memory_order_relaxed);
    done_.store(kRunning, std::memory_order_relaxed);
    entered_.store(0, std::memory_order_relaxed);
    refs_.store(helpers + 1, std::memory_order_relaxed);
    helpers_ = helpers;
    failed_.store(false, std::memory_order_relaxed);
    error_ = nullptr;
  }

  // A helper's entry point: claim blocks until none are left.
  void Run() override {
    entered_.fetch_add(1, std::memory_order_acq_rel);
    RunBlocks();
    Unref();
  }

  // The caller's first block, reserved for it by Reset().
  void RunFirstBlock() { RunBlock(0); }

  // Claims and runs blocks until every block is claimed, or until this
  // thread finished the last one (then nothing is left to claim, and a
  // helper lets go of the job at once, without another shared update).
  void RunBlocks() {
    for (;;) {
      const int64_t b = next_block_.fetch_add(1, std::memory_order_relaxed);
      if (b >= num_blocks_ || RunBlock(b)) return;
    }
  }

  // Returns once every block has finished: spins for spin_us, then sleeps.
  void Wait(int spin_us) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
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

  // After Wait(): waits for helpers that started to let go (they hold no
  // block any more, so this is a few instructions), then drops the caller's
  // reference. Returns true when the caller is the sole owner again and may
  // reuse the job; false when an unstarted helper entry still refers to it,
  // in which case the last holder deletes it.
  bool Release() {
    for (;;) {
      // The common case first: every helper has let go. That reads only
      // the completion line, which Wait() just brought here.
      const int refs = refs_.load(std::memory_order_acquire);
      if (refs == 1) return true;
      const int unstarted = helpers_ - entered_.load(std::memory_order_acquire);
      if (refs - 1 <= unstarted) break;
      internal::CpuRelax();
    }
    // Abandon it to the last holder, unless that turns out to be us.
    return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }

  // Moves out the first exception thrown by fn, if any. REQUIRES: Wait()
  // returned. The job keeps no reference, so the exception object is freed
  // on the caller's thread, never by a helper that drops the job later.
  std::exception_ptr TakeError() { return std::move(error_); }

 private:
  // Runs block b (unless an earlier block threw) and counts it finished.
  // Returns true when it was the last block to finish.
  bool RunBlock(int64_t b) {
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
    if (unfinished_.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
    if (done_.exchange(kDone, std::memory_order_acq_rel) == kSleeping) {
      done_.notify_one();
    }
    return true;
  }

  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  static constexpr uint32_t kRunning = 0;
  static constexpr uint32_t kSleeping = 1;  // The caller sleeps in Wait().
  static constexpr uint32_t kDone = 2;

  // Two cache lines. The first holds what a helper needs to start: the
  // vtable pointer, the call's parameters and the two counters a helper
  // updates on entry, so starting moves one line from the caller. The second
  // holds completion, which caller and helpers meet on at the end.
  RangeFn fn_ = [](int64_t, int64_t) {};
  int64_t n_ = 0;
  int64_t block_ = 1;
  int64_t num_blocks_ = 0;
  std::atomic<int64_t> next_block_{0};
  int helpers_ = 0;
  std::atomic<int> entered_{0};
  alignas(64) std::atomic<int64_t> unfinished_{0};
  std::atomic<uint32_t> done_{kRunning};
  std::atomic<int> refs_{1};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;  // Written once, by the thread that set failed_.
};
static_assert(sizeof(ParallelForJob) == 128);

// The calling thread's recycled jobs; nested ParallelFor calls take several.
class JobCache {
 public:
  ~JobCache() {
    for (ParallelForJob* job : free_) delete job;
  }
  ParallelForJob* Take() {
    if (free_.empty()) return new ParallelForJob;
    ParallelForJob* job = free_.back();
    free_.pop_back();
    return job;
  }
  void Give(ParallelForJob* job) { free_.push_back(job); }

 private:
  std::vector<ParallelForJob*> free_;
};

thread_local JobCache tls_job_cache;

// Runs [0, n) in blocks of `block` on the caller plus up to `max_helpers`
// workers; returns how many threads it enlisted (the caller included).
// REQUIRES: max_helpers >= 1, the pool has workers and there are at least two
// blocks.
int RunBlocksInParallel(ThreadPool& pool, int64_t n, int64_t block,
                        int max_helpers, RangeFn fn) {
  const int64_t num_blocks = (n + block - 1) / block;
  const int helpers = static_cast<int>(
      std::min<int64_t>({pool.NumThreads(), max_helpers, num_blocks - 1}));
  ParallelForJob* job = tls_job_cache.Take();
  job->Reset(fn, n, block, helpers);
  pool.core().ScheduleCopies(job, helpers);
  job->RunFirstBlock();
  job->RunBlocks();
  job->Wait(pool.options().spin_us);
  const std::exception_ptr error = job->TakeError();
  if (job->Release()) tls_job_cache.Give(job);
  if (error) std::rethrow_exception(error);
  return helpers + 1;
}

// Without helpers, or with a single block: every block on the caller.
int RunBlocksInline(int64_t n, int64_t block, RangeFn fn) {
  for (int64_t begin = 0; begin < n; begin += block) {
    fn(begin, std::min(n, begin + block));
  }
  return 1;
}

}  // namespace

namespace internal {

int ParallelForCapped(ThreadPool* pool, int64_t n, double cost_per_unit_ns,
                      int max_helpers, RangeFn fn) {
  if (n <= 0) return 0;
  if (pool == nullptr || pool->NumThreads() == 0 || max_helpers <= 0 ||
      n == 1) {
    return RunBlocksInline(n, n, fn);
  }
  const ThreadPoolOptions& options = pool->options();
  const double total_ns = static_cast<double>(n) * cost_per_unit_ns;
  const double min_block_ns = std::max(options.min_block_ns, 1.0);
  if (!(total_ns >= 2 * min_block_ns)) {  // Also catches NaN.
    return RunBlocksInline(n, n, fn);
  }
  // The caller works too.
  const int64_t threads = std::min(pool->NumThreads(), max_helpers) + 1;
  const double by_cost = std::floor(total_ns / min_block_ns);
  const int64_t by_threads =
      threads * std::max(options.max_blocks_per_thread, 1);
  const int64_t wanted = std::min<int64_t>(
      {n, by_threads,
       static_cast<int64_t>(std::min(by_cost, static_cast<double>(n)))});
  const int64_t block = (n + wanted - 1) / wanted;
  if (block >= n) return RunBlocksInline(n, n, fn);
  return RunBlocksInParallel(*pool, n, block, max_helpers, fn);
}

int ParallelForFixedBlocksCapped(ThreadPool* pool, int64_t n, int64_t block,
                                 int max_helpers, RangeFn fn) {
  if (n <= 0) return 0;
  block = std::max<int64_t>(block, 1);
  if (pool == nullptr || pool->NumThreads() == 0 || max_helpers <= 0 ||
      block >= n) {
    return RunBlocksInline(n, block, fn);
  }
  return RunBlocksInParallel(*pool, n, block, max_helpers, fn);
}

}  // namespace internal

int ParallelFor(ThreadPool* pool, int64_t n, double cost_per_unit_ns,
                RangeFn fn) {
  return internal::ParallelForCapped(pool, n, cost_per_unit_ns,
                                     std::numeric_limits<int>::max(), fn);
}

int ParallelForFixedBlocks(ThreadPool* pool, int64_t n, int64_t block,
                           RangeFn fn) {
  return internal::ParallelForFixedBlocksCapped(
      pool, n, block, std::numeric_limits<int>::max(), fn);
}

}  // namespace weft
