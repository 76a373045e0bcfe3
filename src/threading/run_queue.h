// A bounded work-stealing deque of pointers (Chase and Lev, "Dynamic Circular
// Work-Stealing Deque", SPAA 2005; memory orders after Le et al., PPoPP 2013).
//
// Algorithm outline:
//  - The owner thread pushes and pops at the bottom (LIFO: the task it made
//    last is the one whose data is still in its cache). Any thread steals at
//    the top (FIFO: the oldest task, usually the largest piece of work).
//  - bottom_ is written only by the owner; top_ only moves forward, by CAS.
//    An element at index i lives in slot i & mask_.
//  - The only contended case is the last element: the owner, having
//    decremented bottom_, and a thief both see top_ == bottom_ - 1 and race
//    with a CAS on top_; exactly one wins.
//  - Where the paper uses a seq_cst fence (owner's pop between the bottom_
//    store and the top_ load; thief's steal between its two loads) we use
//    seq_cst operations on those variables instead: equivalent, and visible
//    to ThreadSanitizer, which does not model fences.
//  - Every store to bottom_ is at least release, so a thief that reads any
//    bottom_ value also sees the tasks pushed before it.
//  - The buffer does not grow: Push() returns false when full and the caller
//    routes the task elsewhere. That keeps the structure free of memory
//    reclamation problems.
#ifndef WEFT_SRC_THREADING_RUN_QUEUE_H_
#define WEFT_SRC_THREADING_RUN_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "weft/check.h"

namespace weft::internal {

template <class T>
class RunQueue {
  static_assert(std::is_pointer_v<T>, "RunQueue holds pointers; null = none");

 public:
  // REQUIRES: capacity is a power of two.
  explicit RunQueue(size_t capacity)
      : mask_(static_cast<int64_t>(capacity) - 1),
        slots_(new std::atomic<T>[capacity]) {
    WEFT_CHECK(capacity > 0 && (capacity & (capacity - 1)) == 0,
               "RunQueue capacity must be a power of two");
  }

  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  // Owner only. Returns false, leaving the queue unchanged, when it is full.
  bool Push(T item) {
    const int64_t b = bottom_.load(std::memory_order_relaxed);
    const int64_t t = top_.load(std::memory_order_acquire);
    if (b - t > mask_) return false;
    slots_[b & mask_].store(item, std::memory_order_relaxed);
    bottom_.store(b + 1, std::memory_order_seq_cst);
    return true;
  }

  // Owner only. The most recently pushed item, or nullptr when empty.
  T Pop() {
    // Empty, without the fence below: bottom_ is only written here and by
    // Push (this thread), and top_ only grows, so a top_ read at least as
    // large as bottom_ cannot be stale in the wrong direction. Idle workers
    // poll their deque in a loop; this keeps the poll cheap.
    if (top_.load(std::memory_order_relaxed) >=
        bottom_.load(std::memory_order_relaxed)) {
      return nullptr;
    }
    const int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    bottom_.store(b, std::memory_order_seq_cst);
    int64_t t = top_.load(std::memory_order_seq_cst);
    if (t > b) {  // Was empty.
      bottom_.store(b + 1, std::memory_order_release);
      return nullptr;
    }
    T item = slots_[b & mask_].load(std::memory_order_relaxed);
    if (t == b) {  // Last element: race thieves for it.
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        item = nullptr;
      }
      bottom_.store(b + 1, std::memory_order_release);
    }
    return item;
  }

  // Any thread. The oldest item, or nullptr. Sets *lost_race when the queue
  // was not empty but another thread took the item first: the caller may
  // retry, since the queue may still hold more.
  T Steal(bool* lost_race) {
    int64_t t = top_.load(std::memory_order_seq_cst);
    const int64_t b = bottom_.load(std::memory_order_seq_cst);
    if (t >= b) return nullptr;
    T item = slots_[t & mask_].load(std::memory_order_relaxed);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
      *lost_race = true;
      return nullptr;
    }
    return item;
  }

  // Any thread. Exact when no operation is in flight; a hint otherwise.
  int64_t SizeApprox() const {
    const int64_t n = bottom_.load(std::memory_order_seq_cst) -
                      top_.load(std::memory_order_seq_cst);
    return n < 0 ? 0 : n;
  }

 private:
  const int64_t mask_;
  std::unique_ptr<std::atomic<T>[]> slots_;
  // Thieves hammer top_; keep it off the owner's bottom_ cache line.
  alignas(64) std::atomic<int64_t> top_{0};
  alignas(64) std::atomic<int64_t> bottom_{0};
};

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_RUN_QUEUE_H_
