#ifndef WEFT_SRC_THREADING_TASK_RING_H_
#define WEFT_SRC_THREADING_TASK_RING_H_

#include <cstddef>
#include <vector>

#include "threading/task.h"
#include "weft/check.h"

namespace weft::internal {

// A FIFO of tasks in a ring buffer that doubles when full and never shrinks,
// so that steady traffic allocates nothing (std::deque allocates and frees a
// chunk every few dozen operations, on alternating threads).
// Not thread-safe: the owner guards it with a mutex.
class TaskRing {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  void PushBack(Task* task) {
    if (size_ == slots_.size()) Grow();
    slots_[(head_ + size_) & (slots_.size() - 1)] = task;
    ++size_;
  }

  // REQUIRES: !empty().
  Task* PopFront() {
    WEFT_DCHECK(size_ > 0, "PopFront on an empty ring");
    Task* task = slots_[head_];
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
    return task;
  }

 private:
  void Grow() {
    std::vector<Task*> bigger(slots_.empty() ? 64 : slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) {
      bigger[i] = slots_[(head_ + i) & (slots_.size() - 1)];
    }
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<Task*> slots_;  // Size is zero or a power of two.
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_TASK_RING_H_
