#include "threading/event_count.h"

namespace weft::internal {

uint64_t EventCount::PrepareWait() {
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}

void EventCount::CancelWait() {
  waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

void EventCount::CommitWait(uint64_t key) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return epoch_ != key; });
  }
  waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

void EventCount::NotifyOne() { Notify(/*all=*/false); }

void EventCount::NotifyAll() { Notify(/*all=*/true); }

void EventCount::Notify(bool all) {
  if (waiters_.load(std::memory_order_seq_cst) == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++epoch_;
  }
  if (all) {
    cv_.notify_all();
  } else {
    cv_.notify_one();
  }
}

}  // namespace weft::internal
