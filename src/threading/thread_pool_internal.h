// The library's access to a ThreadPool's scheduler (leveldb's
// WriteBatchInternal pattern): the public header names no internal type,
// and only code under src/ can reach the scheduler.
#ifndef WEFT_SRC_THREADING_THREAD_POOL_INTERNAL_H_
#define WEFT_SRC_THREADING_THREAD_POOL_INTERNAL_H_

#include "threading/pool_core.h"
#include "weft/thread_pool.h"

namespace weft {

// The opaque type ThreadPool holds is the scheduler itself.
class ThreadPool::Core : public internal::PoolCore {
 public:
  using PoolCore::PoolCore;
};

class ThreadPoolInternal {
 public:
  static internal::PoolCore& core(const ThreadPool& pool) {
    return *pool.core_;
  }
};

}  // namespace weft

#endif  // WEFT_SRC_THREADING_THREAD_POOL_INTERNAL_H_
