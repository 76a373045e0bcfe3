#include "weft/parallel_for.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "threading/cpu_spread.h"
#include "threading/parallel_for_internal.h"
#include "threading/pool_core.h"
#include "threading/spin.h"
#include "threading/thread_pool_internal.h"
#include "weft/check.h"
#include "weft/thread_pool.h"

namespace weft {
namespace {

// One ParallelFor call: the block range, the claim counter, and completion.
//
// Lifetime: reference counted, one reference for the caller and one per
// queued helper entry (or advertisement, see PoolCore::Advertise), because a
// helper may be dequeued long after the caller returned. fn_ may refer to
// the caller's stack; it is only called for a block claimed below
// num_blocks_, and the caller does not return before every claimed block has
// finished, so no call outlives it.
//
// Recycling: allocating a job per call, freed by whichever thread drops the
// last reference, makes caller and workers fight over the allocator's locks
// (on a 2-vCPU Intel Xeon guest, a stream of short calls then put both
// threads to sleep on malloc's lock a hundred thousand times a second, and
// the scheduler stacked them on one core for up to a second after). So each
// thread keeps the jobs it started in a small cache (JobCache) and reuses
// one when it is the sole owner again, which Release() makes the common
// case by taking back the helper entries nobody ran.
//
// What each mechanism buys, measured by switching it off alone
// (docs/BENCHMARKS.md, 2026-11-23, AMD EPYC Zen 4, 2 cores; medians of 5
// alternated rounds of weft_threading_bench and `weft bench
// examples/mlp.json`) is stated next to it.
class alignas(64) ParallelForJob final : public internal::Task {
 public:
  // The most blocks one job can count (claim_ counts each end's claims in
  // 24 bits); callers split larger ranges.
  static constexpr int64_t kMaxBlocks = int64_t{1} << 23;
  // The most helper entries one job can count.
  static constexpr int kMaxHelpers = (1 << 15) - 1;

  // Prepares a job for a new call. REQUIRES: no other thread refers to it,
  // 2 <= ceil(n / block) <= kMaxBlocks, 0 <= helpers <= kMaxHelpers.
  // `spread`: helpers keep off CPUs where another weft thread computes
  // (CpuClaim), worth a move only when the call is long.
  void Reset(RangeFn fn, int64_t n, int64_t block, int helpers, bool spread) {
    WEFT_DCHECK(block > 0 && n > block && (n - 1) / block < kMaxBlocks,
                "a job has 2 to kMaxBlocks blocks");
    WEFT_DCHECK(helpers >= 0 && helpers <= kMaxHelpers, "helpers in range");
    fn_ = fn;
    n_ = n;
    block_ = block;
    num_blocks_ = (n + block - 1) / block;
    // Block 0 is the caller's without a claim (RunFirstBlock): one shared
    // read-modify-write fewer on the fork/join's critical path.
    claim_.store(1, std::memory_order_relaxed);
    unfinished_.store(num_blocks_, std::memory_order_relaxed);
    done_.store(kRunning, std::memory_order_relaxed);
    refs_.store(helpers + 1, std::memory_order_relaxed);
    helpers_ = helpers;
    spread_ = spread;
    error_ = nullptr;
  }

  // A helper's entry point: its first claim also counts it as entered, so
  // starting is one update of the start line. Helpers claim from the back
  // of the range, the caller from the front (see claim_).
  void Run() override {
    {
      // A short call's helper is not counted: it ends before a stacking
      // matters, and a fork/join of a few microseconds feels every update.
      std::optional<internal::CpuClaim> cpu;
      if (spread_) cpu.emplace(/*may_move=*/true);
      RunClaimedBlocks<kFromBack>(
          claim_.fetch_add(kEnteredOne + kFromBack, std::memory_order_acq_rel));
    }
    Unref();
  }

  // The caller's first block, reserved for it by Reset().
  void RunFirstBlock() { RunBlock(0); }

  // Claims and runs blocks from the front until every block is claimed.
  void RunBlocks() {
    RunClaimedBlocks<kFromFront>(
        claim_.fetch_add(kFromFront, std::memory_order_relaxed));
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

  // After Wait(): takes back the entries still waiting in the inboxes
  // listed and, for a call from a worker of the pool, the `own_deque`
  // entries it pushed on its own deque; waits for helpers that started to
  // let go (they hold no block any more, so this is a few instructions),
  // then drops the caller's reference. Returns true when the caller is the
  // sole owner again and may reuse the job; false when an unstarted helper
  // entry still refers to it, in which case the last holder deletes it.
  bool Release(internal::PoolCore& pool, std::span<const int> inboxes,
               int own_deque) {
    if (refs_.load(std::memory_order_acquire) == 1) return true;
    // A call whose blocks all ran before some helper arrived (a short one):
    // withdrawing that helper's entry spares it a useless trip to this job,
    // and the caller an abandoned job and a fresh allocation next time.
    // Buys: a nested fork/join region (BM_NestedForkJoin_Weft) 74 us instead
    // of 136, and no malloc-lock storm (one round in five without it took
    // 7.4 ms, and a 2 x 2 us fork/join 120 us instead of 2.3).
    int withdrawn = 0;
    for (int worker : inboxes) withdrawn += pool.Withdraw(this, worker);
    // An inbox entry that was not there to withdraw is in a worker's hands,
    // about to run: waiting for it is a few instructions, and cheaper than
    // abandoning the job.
    const int taken = static_cast<int>(inboxes.size()) - withdrawn;
    // Own-deque entries sit newest-first; one that is gone was stolen (then
    // it is about to run, like a taken inbox entry), one under another task
    // stays and the job is abandoned to it. Buys: BM_NestedForkJoin_Weft
    // 74.4 us instead of 77.5 (4 %; 9 % on the Xeon guest).
    for (int i = 0; i < own_deque && pool.WithdrawFromOwnDeque(this); ++i) {
      ++withdrawn;
    }
    if (withdrawn > 0 && ForgetEntries(withdrawn)) return true;
    for (;;) {
      const int refs = refs_.load(std::memory_order_acquire);
      if (refs == 1) return true;
      const auto entered = static_cast<int>(
          (claim_.load(std::memory_order_acquire) >> kEnteredShift) &
          kMaxHelpers);
      if (refs - 1 <= helpers_ - entered && entered >= taken) break;
      internal::CpuRelax();
    }
    // Abandon it to the last holder, unless that turns out to be us.
    return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }

  // Drops the references of `count` helper entries that will never exist or
  // run (withdrawn from an inbox or an advertisement slot, or never
  // placed). Returns true when the caller is then the sole owner.
  // REQUIRES: the caller's own reference is still held.
  bool ForgetEntries(int count) {
    helpers_ -= count;
    return refs_.fetch_sub(count, std::memory_order_acq_rel) == count + 1;
  }

  // Moves out the first exception thrown by fn, if any. REQUIRES: Wait()
  // returned. The job keeps no reference, so the exception object is freed
  // on the caller's thread, never by a helper that drops the job later.
  std::exception_ptr TakeError() { return std::move(error_); }

 private:
  // claim_ packs what a thread updates to take part, so that taking part
  // is one read-modify-write of one line: bits 0-23 the blocks claimed
  // from the front (by the caller: blocks 0, 1, ...), bits 24-47 those
  // claimed from the back (by helpers: the last block, the one before, ...),
  // bits 48-62 the helper entries that started (for Release), bit 63 set
  // once a block threw (a claim that sees it gets nothing: the blocks not
  // yet claimed are skipped). A claim is a block while front + back, before
  // it, is below num_blocks_; the two ends meet without overlapping.
  //
  // Why two ends: the caller of consecutive calls over the same range (a
  // network's layers, pixel by pixel) then computes about the same first
  // part each time and its helper the same last part, so each reads what
  // it wrote, from its own cache, instead of half of it from the other
  // core's. Buys: int8 ResNet-18 on two threads 3-5% (docs/BENCHMARKS.md,
  // "ParallelFor: finer blocks for long calls, and two-ended claims").
  static constexpr uint64_t kCountMask = (uint64_t{1} << 24) - 1;
  static constexpr int kBackShift = 24;
  static constexpr uint64_t kFromFront = 1;
  static constexpr uint64_t kFromBack = uint64_t{1} << kBackShift;
  static constexpr int kEnteredShift = 48;
  static constexpr uint64_t kEnteredOne = uint64_t{1} << kEnteredShift;
  static constexpr uint64_t kFailed = uint64_t{1} << 63;
  // Neither count carries into the next field: each ends at most one past
  // num_blocks_ per participant.
  static_assert(kMaxBlocks + kMaxHelpers + 1 < kCountMask);

  static int64_t FrontCount(uint64_t claim) {
    return static_cast<int64_t>(claim & kCountMask);
  }
  static int64_t BackCount(uint64_t claim) {
    return static_cast<int64_t>((claim >> kBackShift) & kCountMask);
  }

  // Runs the block that `claim` (the value claim_ held before this
  // thread's claim from the end `kEnd` names) names, then claims and runs
  // more from that end, until none is left or this thread finished the last
  // one (then nothing is left to claim, and a helper lets go of the job at
  // once, without another shared update).
  template <uint64_t kEnd>
  void RunClaimedBlocks(uint64_t claim) {
    for (;;) {
      if ((claim & kFailed) != 0) return;
      if (FrontCount(claim) + BackCount(claim) >= num_blocks_) return;
      const int64_t b = kEnd == kFromFront ? FrontCount(claim)
                                           : num_blocks_ - 1 - BackCount(claim);
      if (RunBlock(b)) return;
      claim = claim_.fetch_add(kEnd, std::memory_order_relaxed);
    }
  }

  // Runs block b and counts it finished. Returns true when it was the last
  // block to finish.
  bool RunBlock(int64_t b) {
    int64_t finished = 1;
    try {
      fn_(b * block_, std::min(n_, (b + 1) * block_));
    } catch (...) {
      finished += SkipUnclaimedBlocks();
    }
    if (unfinished_.fetch_sub(finished, std::memory_order_acq_rel) !=
        finished) {
      return false;
    }
    if (done_.exchange(kDone, std::memory_order_acq_rel) == kSleeping) {
      done_.notify_one();
    }
    return true;
  }

  // Called in the handler of an exception from fn: the first such call
  // keeps the exception and stops all further claims. Returns how many
  // blocks will now never be claimed, for the caller to count finished.
  int64_t SkipUnclaimedBlocks() {
    const uint64_t before = claim_.fetch_or(kFailed, std::memory_order_acq_rel);
    if ((before & kFailed) != 0) return 0;  // Not the first to throw.
    error_ = std::current_exception();
    const auto claimed =
        std::min(FrontCount(before) + BackCount(before), num_blocks_);
    return num_blocks_ - claimed;
  }

  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  static constexpr uint32_t kRunning = 0;
  static constexpr uint32_t kSleeping = 1;  // The caller sleeps in Wait().
  static constexpr uint32_t kDone = 2;

  // Two cache lines. The first holds everything a helper needs to start:
  // the vtable pointer, the call's parameters (fn_ holds a copy of a small
  // callable, so calling it reads no other line of the caller's) and
  // claim_, so starting moves one line from the caller. The second holds
  // completion, which caller and helpers meet on at the end.
  RangeFn fn_ = [](int64_t, int64_t) {};
  int64_t n_ = 0;
  int64_t block_ = 1;
  int64_t num_blocks_ = 0;
  std::atomic<uint64_t> claim_{0};
  alignas(64) std::atomic<int64_t> unfinished_{0};
  std::atomic<uint32_t> done_{kRunning};
  std::atomic<int> refs_{1};
  int helpers_ = 0;
  bool spread_ = false;  // Read once per helper: no room on the first line.
  std::exception_ptr error_;  // Written once, by the first block to throw.
};
static_assert(sizeof(ParallelForJob) == 128);

// The calling thread's recycled jobs; nested ParallelFor calls take several.
// Buys: an empty 2-thread fork/join 0.21 us instead of 0.34, a nested region
// 74 us instead of 80.
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

// Without helpers, or with a single block: every block on the caller.
int RunBlocksInline(int64_t n, int64_t block, RangeFn fn) {
  for (int64_t begin = 0; begin < n; begin += block) {
    fn(begin, std::min(n, begin + block));
  }
  return 1;
}

// For calls that cannot grow: FunctionRef refers to an object, hence a
// lambda with static storage rather than a function.
constexpr auto kNoCoreFreed = [] { return false; };

// Runs [0, n) in blocks of `block` on the caller plus up to `max_helpers`
// workers, and with `may_grow`, one more worker that joins later if a core
// frees up (PoolCore::Advertise; core_freed as for ParallelForCapped).
// Returns how many threads it enlisted (the caller included). REQUIRES:
// max_helpers >= 0, the pool has workers and there are at least two blocks.
int RunBlocksInParallel(ThreadPool& pool, int64_t n, int64_t block,
                        int max_helpers, bool may_grow, bool spread,
                        FunctionRef<bool()> core_freed, RangeFn fn) {
  const int64_t num_blocks = n / block + (n % block != 0);
  if (num_blocks > ParallelForJob::kMaxBlocks) {
    // More blocks than one job counts (a range that would take days): run
    // consecutive parts of kMaxBlocks blocks, so that block boundaries stay
    // where they were. No overflow: here block < n / kMaxBlocks.
    const int64_t part = ParallelForJob::kMaxBlocks * block;
    int enlisted = 1;
    for (int64_t offset = 0; offset < n;) {
      const int64_t size = std::min(part, n - offset);
      const auto shifted = [&fn, offset](int64_t b, int64_t e) {
        fn(offset + b, offset + e);
      };
      enlisted = std::max(
          enlisted, size > block ? RunBlocksInParallel(
                                       pool, size, block, max_helpers, may_grow,
                                       spread, core_freed, shifted)
                                 : RunBlocksInline(size, block, shifted));
      offset += size;
    }
    return enlisted;
  }
  const int helpers = static_cast<int>(
      std::min<int64_t>({pool.NumThreads(), max_helpers, num_blocks - 1,
                         ParallelForJob::kMaxHelpers}));
  // Advertised only when another helper would have a worker and a block;
  // the advertisement, like a queued helper entry, holds a reference.
  // Buys: examples/mlp.json at (inter 2, intra 2) runs 1.04x the time of
  // (1, 2) instead of 1.37x: a core freed by another node joins a MatMul
  // that started with fewer helpers.
  const bool advertise =
      may_grow && helpers < ParallelForJob::kMaxHelpers &&
      helpers < std::min<int64_t>(pool.NumThreads(), num_blocks - 1);
  ParallelForJob* job = tls_job_cache.Take();
  job->Reset(fn, n, block, helpers + (advertise ? 1 : 0), spread);
  // The inboxes that took an entry, for Release(); beyond the first few,
  // an entry no helper took is abandoned instead.
  std::array<int, 8> inboxes;
  internal::PoolCore& core = ThreadPoolInternal::core(pool);
  const internal::PoolCore::Copies placed =
      core.ScheduleCopies(job, helpers, inboxes);
  bool advertised = advertise && core.Advertise(job);
  if (advertise && !advertised) job->ForgetEntries(1);  // Every slot taken.
  if (advertised && core_freed()) core.ScheduleOwnAdvert(job);
  job->RunFirstBlock();
  job->RunBlocks();
  // Every block is claimed: a helper arriving now would find nothing.
  if (advertised && core.WithdrawAdvert(job)) {
    job->ForgetEntries(1);
    advertised = false;
  }
  job->Wait(pool.options().spin_us);
  const std::exception_ptr error = job->TakeError();
  if (job->Release(core, std::span(inboxes.data(), placed.inboxes),
                   placed.own_deque)) {
    tls_job_cache.Give(job);
  }
  if (error) std::rethrow_exception(error);
  // A withdrawal that failed means a thread scheduled the advertised entry.
  return helpers + 1 + (advertised ? 1 : 0);
}

}  // namespace

namespace internal {

int64_t BalancedBlock(int64_t n, int64_t block, int64_t threads,
                      int64_t max_blocks) {
  if (block <= 0 || threads <= 1 || block >= n) return block;
  const int64_t wanted = (n + block - 1) / block;
  // With this many blocks per thread the last round hardly matters; and the
  // search below stays short.
  if (wanted > 64 * threads) return block;
  // Already as even as can be (the common case, and a fork/join's fast
  // path: the search's divisions cost an empty one a sixth of its time).
  const int64_t units = (wanted + threads - 1) / threads * block;
  if (units <= (n + threads - 1) / threads) return block;
  int64_t best = block, best_units = units;
  auto consider = [&](int64_t blocks) {
    const int64_t size = (n + blocks - 1) / blocks;
    const int64_t made = (n + size - 1) / size;
    const int64_t units = (made + threads - 1) / threads * size;
    if (units < best_units) {
      best = size;
      best_units = units;
    }
  };
  for (int64_t blocks = wanted; blocks >= (wanted + 1) / 2; --blocks) {
    consider(blocks);
  }
  const int64_t most = std::min({2 * wanted, max_blocks, n});
  for (int64_t blocks = wanted + 1; blocks <= most; ++blocks) consider(blocks);
  return best;
}

int64_t BlocksPerThread(int max_blocks_per_thread, double total_ns,
                        int64_t threads) {
  const int64_t base = std::max(max_blocks_per_thread, 1);
  const double by_length =
      total_ns / (static_cast<double>(threads) * kLongCallBlockNs);
  if (!(by_length > static_cast<double>(base))) return base;  // Also NaN.
  return std::max(
      base, static_cast<int64_t>(std::min(
                by_length, static_cast<double>(kLongCallBlocksPerThread))));
}

int ParallelForCapped(ThreadPool* pool, int64_t n, double cost_per_unit_ns,
                      int max_helpers, int wanted_helpers,
                      FunctionRef<bool()> core_freed, RangeFn fn) {
  if (n <= 0) return 0;
  if (pool == nullptr || pool->NumThreads() == 0 || n == 1) {
    return RunBlocksInline(n, n, fn);
  }
  const ThreadPoolOptions& options = pool->options();
  const double total_ns = static_cast<double>(n) * cost_per_unit_ns;
  const double min_block_ns = std::max(options.min_block_ns, 1.0);
  if (!(total_ns >= 2 * min_block_ns)) {  // Also catches NaN.
    return RunBlocksInline(n, n, fn);
  }
  max_helpers = std::max(max_helpers, 0);
  // A long call held below the helpers it could use is cut for all of them
  // and advertised for one more, so that a core freed meanwhile joins it.
  const bool may_grow =
      wanted_helpers > max_helpers && total_ns >= kLateHelperMinNs;
  const int planned = may_grow ? wanted_helpers : max_helpers;
  if (planned <= 0) return RunBlocksInline(n, n, fn);
  // The caller works too.
  const int64_t threads = std::min(pool->NumThreads(), planned) + 1;
  const double by_cost = std::floor(total_ns / min_block_ns);
  const int64_t by_threads =
      threads *
      BlocksPerThread(options.max_blocks_per_thread, total_ns, threads);
  const int64_t wanted = std::min<int64_t>(
      {n, by_threads,
       static_cast<int64_t>(std::min(by_cost, static_cast<double>(n)))});
  const int64_t block = BalancedBlock(
      n, (n + wanted - 1) / wanted, threads,
      static_cast<int64_t>(std::min(by_cost, static_cast<double>(n))));
  if (block >= n) return RunBlocksInline(n, n, fn);
  return RunBlocksInParallel(*pool, n, block, max_helpers, may_grow,
                             /*spread=*/total_ns >= kSpreadMinNs, core_freed,
                             fn);
}

int ParallelForFixedBlocksCapped(ThreadPool* pool, int64_t n, int64_t block,
                                 int max_helpers, RangeFn fn) {
  if (n <= 0) return 0;
  block = std::max<int64_t>(block, 1);
  if (pool == nullptr || pool->NumThreads() == 0 || max_helpers <= 0 ||
      block >= n) {
    return RunBlocksInline(n, block, fn);
  }
  // The cost is unknown here: no helper moves for these calls.
  return RunBlocksInParallel(*pool, n, block, max_helpers, /*may_grow=*/false,
                             /*spread=*/false, kNoCoreFreed, fn);
}

}  // namespace internal

int ParallelFor(ThreadPool* pool, int64_t n, double cost_per_unit_ns,
                RangeFn fn) {
  return internal::ParallelForCapped(
      pool, n, cost_per_unit_ns, std::numeric_limits<int>::max(),
      std::numeric_limits<int>::max(), kNoCoreFreed, fn);
}

int ParallelForFixedBlocks(ThreadPool* pool, int64_t n, int64_t block,
                           RangeFn fn) {
  return internal::ParallelForFixedBlocksCapped(
      pool, n, block, std::numeric_limits<int>::max(), fn);
}

}  // namespace weft
