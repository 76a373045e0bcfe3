#include "threading/event_count.h"

namespace weft::internal {

uint64_t EventCount::PrepareWait() {
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  MutexLock lock(mu_);
  return epoch_;
}

void EventCount::CancelWait() {
  waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

void EventCount::CommitWait(uint64_t key) {
  {
    MutexLock lock(mu_);
    while (epoch_ == key) cv_.Wait(lock);
  }
  waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

void EventCount::NotifyOne() { Notify(/*all=*/false); }

void EventCount::NotifyAll() { Notify(/*all=*/true); }

void EventCount::Notify(bool all) {
  if (waiters_.load(std::memory_order_seq_cst) == 0) return;
  {
    MutexLock lock(mu_);
    ++epoch_;
  }
  if (all) {
    cv_.NotifyAll();
  } else {
    cv_.NotifyOne();
  }
}

}  // namespace weft::internal
