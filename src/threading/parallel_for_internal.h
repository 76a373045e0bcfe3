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
// that frees a core schedules (PoolCore::ScheduleAdvert); it claims the
// blocks still unclaimed. A parked worker takes tens of microseconds to
// wake, hence the minimum.
inline constexpr double kLateHelperMinNs = 200'000;
int ParallelForCapped(ThreadPool* pool, int64_t n, double cost_per_unit_ns,
                      int max_helpers, int wanted_helpers, RangeFn fn);
int ParallelForFixedBlocksCapped(ThreadPool* pool, int64_t n, int64_t block,
                                 int max_helpers, RangeFn fn);

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_PARALLEL_FOR_INTERNAL_H_
