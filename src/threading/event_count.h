// EventCount: lets threads sleep until some condition they poll may have
// become true, without losing a wake-up and without a system call on the
// notify side when nobody sleeps.
//
// Waiter:                         Notifier:
//   key = ec.PrepareWait();         make the condition true (seq_cst);
//   if (condition) {                ec.NotifyOne();
//     ec.CancelWait();
//   } else {
//     ec.CommitWait(key);
//   }
//
// Why no wake-up is lost: PrepareWait() increments waiters_ (seq_cst) before
// the waiter re-checks the condition; NotifyOne() reads waiters_ (seq_cst)
// after the condition was made true. In the single total order of seq_cst
// operations, either the notifier sees the waiter (and bumps epoch_ under the
// mutex, which CommitWait re-checks before blocking), or the waiter's re-check
// comes after the condition became true and it does not sleep.
//
// Thread-safety: all methods may be called concurrently.
#ifndef WEFT_SRC_THREADING_EVENT_COUNT_H_
#define WEFT_SRC_THREADING_EVENT_COUNT_H_

#include <atomic>
#include <cstdint>

#include "threading/mutex.h"

namespace weft::internal {

class EventCount {
 public:
  // Registers the caller as a waiter; returns the key for CommitWait.
  uint64_t PrepareWait();
  // Unregisters a waiter that found its condition true after PrepareWait.
  void CancelWait();
  // Blocks until a notification newer than key, then unregisters.
  void CommitWait(uint64_t key);
  // Wakes one committed waiter, if any is registered.
  void NotifyOne();
  // Wakes every committed waiter.
  void NotifyAll();

 private:
  void Notify(bool all);

  std::atomic<int> waiters_{0};
  Mutex mu_;
  CondVar cv_;
  uint64_t epoch_ WEFT_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_EVENT_COUNT_H_
