// Parallel loops on a ThreadPool.
//
// ParallelFor(pool, n, cost, fn) is the parallel version of the serial call
//
//   fn(0, n);
//
// It calls fn on disjoint ranges [begin, end) whose union is [0, n), each
// index exactly once, on the calling thread and on pool workers, and returns
// when all calls have returned. A null pool (or one without workers) runs the
// serial call in the caller.
//
//   weft::ParallelFor(&pool, rows, /*cost_per_unit_ns=*/50.0,
//                     [&](int64_t begin, int64_t end) {
//                       for (int64_t r = begin; r < end; ++r) Scale(r);
//                     });
//
// Guarantees:
//  - The caller always works: it claims blocks like any worker, so progress
//    never depends on a free worker. Calls nested inside fn (on the same pool
//    or another, from a worker or not) therefore never deadlock, and no call
//    ever starts a thread.
//  - Exceptions: when a call of fn throws, blocks not yet started are
//    skipped, blocks already running finish, and the first exception is
//    rethrown to the caller of ParallelFor. The pool stays usable.
#ifndef WEFT_PARALLEL_FOR_H_
#define WEFT_PARALLEL_FOR_H_

#include <cstdint>

#include "weft/function_ref.h"

namespace weft {

class ThreadPool;

// A callable of a few pointers or references is copied (see
// CopyingFunctionRef), so a helper thread starts without reading the
// caller's stack; others are referred to and must outlive the call.
using RangeFn = CopyingFunctionRef<void(int64_t begin, int64_t end), 16>;

// Splits [0, n) by estimated cost: when n * cost_per_unit_ns is below twice
// pool->options().min_block_ns, fn(0, n) runs inline; otherwise the range is
// cut into equal blocks (at most max_blocks_per_thread per participating
// thread, each worth at least min_block_ns) that threads claim dynamically.
// Block boundaries depend on the pool size: use ParallelForFixedBlocks when
// the result must not. Returns how many threads it enlisted: the caller plus
// the helpers it scheduled (1 when the range ran inline; 0 when n <= 0). A
// helper that arrives after every block is claimed runs none.
int ParallelFor(ThreadPool* pool, int64_t n, double cost_per_unit_ns,
                RangeFn fn);

// Calls fn once per block [k * block, min(n, (k + 1) * block)) for every k,
// so the boundaries depend only on n and block, never on the thread count:
// a reduction that keeps one partial result per block and combines them in
// block order is bitwise reproducible. Returns how many threads it enlisted.
int ParallelForFixedBlocks(ThreadPool* pool, int64_t n, int64_t block,
                           RangeFn fn);

}  // namespace weft

#endif  // WEFT_PARALLEL_FOR_H_
