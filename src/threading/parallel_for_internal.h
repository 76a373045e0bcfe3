// ParallelFor with a cap on the helpers it may enlist, for the executor's
// core budget (runtime/core_budget.h): the caller plus at most max_helpers
// workers run blocks. Block boundaries of the fixed-block form still depend
// only on n and block. Both return how many threads they enlisted.
#ifndef WEFT_SRC_THREADING_PARALLEL_FOR_INTERNAL_H_
#define WEFT_SRC_THREADING_PARALLEL_FOR_INTERNAL_H_

#include <cstdint>

#include "weft/parallel_for.h"

namespace weft::internal {

int ParallelForCapped(ThreadPool* pool, int64_t n, double cost_per_unit_ns,
                      int max_helpers, RangeFn fn);
int ParallelForFixedBlocksCapped(ThreadPool* pool, int64_t n, int64_t block,
                                 int max_helpers, RangeFn fn);

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_PARALLEL_FOR_INTERNAL_H_
