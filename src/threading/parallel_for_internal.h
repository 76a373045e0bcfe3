// ParallelFor with a cap on the helpers it may enlist, for the executor's
// core budget (runtime/core_budget.h): the caller plus at most max_helpers
// workers run blocks. Block boundaries of the fixed-block form still depend
// only on n and block. Both return how many threads they enlisted.
#ifndef WEFT_SRC_THREADING_PARALLEL_FOR_INTERNAL_H_
#define WEFT_SRC_THREADING_PARALLEL_FOR_INTERNAL_H_

#include <cstdint>

#include "weft/parallel_for.h"

namespace weft::internal {

// wanted_helpers: how many helpers the call could use were the cores free.
// When it exceeds max_helpers and the work is worth at least
// kLateHelperMinNs, the call is cut into blocks for wanted_helpers + 1
// threads and advertised on the pool for one more helper, which a thread
// that frees a core takes and runs (PoolCore::TakeAdvert); it claims the
// blocks still unclaimed. A late helper that must be scheduled (a parked
// worker takes tens of microseconds to wake) needs enough work left, hence
// the minimum.
//
// core_freed is asked once, right after the advertisement is up: a core
// freed after max_helpers was decided but before then found nothing to
// schedule, so if it says a core is free now, the call schedules its own
// advertisement. (A lost wake-up otherwise: the freeing thread's release of
// its core and look at the slots, and this call's posting and look at the
// budget, are each ordered seq_cst, so one of the two sees the other.)
inline constexpr double kLateHelperMinNs = 200'000;
int ParallelForCapped(ThreadPool* pool, int64_t n, double cost_per_unit_ns,
                      int max_helpers, int wanted_helpers,
                      FunctionRef<bool()> core_freed, RangeFn fn);
int ParallelForFixedBlocksCapped(ThreadPool* pool, int64_t n, int64_t block,
                                 int max_helpers, RangeFn fn);

// How many blocks per participating thread ParallelFor cuts a call worth
// total_ns (estimated) into: max_blocks_per_thread (ThreadPoolOptions), or
// for a long call enough that each block holds about kLongCallBlockNs, up
// to kLongCallBlocksPerThread. The threads claim blocks as they go, so a
// call ends when its last block does: a helper that starts late or is
// preempted leaves up to a block's time on the other thread at the end.
// Against blocks of a quarter of a thread's share, finer blocks made
// ResNet-18 at batch 8 on two threads 1-9% faster (int8 and float), and the
// claims of 16 a thread cost a few hundred nanoseconds each
// (docs/BENCHMARKS.md, "ParallelFor: finer blocks for long calls, and
// two-ended claims").
inline constexpr double kLongCallBlockNs = 100'000;
inline constexpr int64_t kLongCallBlocksPerThread = 16;
int64_t BlocksPerThread(int max_blocks_per_thread, double total_ns,
                        int64_t threads);

// The block size ParallelFor uses for n units, where `block` gives the
// blocks it wants and `threads` threads take them: among the sizes that give
// from half as many to twice as many blocks (at most max_blocks), the one
// whose busiest thread (ceil(blocks / threads) blocks) has the fewest units;
// `block` itself when nothing beats it, else the first found from `block`
// up, then down. 28 jobs on 2 threads in blocks of 4 are 7 blocks, 16 units
// for one thread and 12 for the other; in blocks of 7, 14 and 14 (a
// convolution's 28 pixel tiles ran 1.74x faster on two threads than on one,
// for 1.86x in ONNX Runtime). 10 jobs in blocks of 2 are 5 blocks, 6 units
// against 4; in blocks of 1, 5 and 5. Depends on its arguments alone.
int64_t BalancedBlock(int64_t n, int64_t block, int64_t threads,
                      int64_t max_blocks);

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_PARALLEL_FOR_INTERNAL_H_
