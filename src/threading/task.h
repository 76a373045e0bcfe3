#ifndef WEFT_SRC_THREADING_TASK_H_
#define WEFT_SRC_THREADING_TASK_H_

namespace weft::internal {

// A unit of work in a pool's queues. Queues hold plain pointers, so the same
// Task may sit in several queues at once (ParallelFor pushes one job as all
// of its helpers). Run() owns the lifetime: it releases whatever the queue
// entry referred to.
class Task {
 public:
  virtual ~Task() = default;
  virtual void Run() = 0;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_TASK_H_
