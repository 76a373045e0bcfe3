// The blocking pool: where nodes of blocking ops (QueueDequeue, QueueEnqueue,
// Sleep, CustomOp with blocking = true) run, so that no inter-op worker is
// held while one waits — with inter = 1 a dequeue scheduled before its
// enqueue would otherwise wait forever.
//
// Elastic and process-wide: a task goes to an idle thread, or a new thread
// is started for it (up to kMaxBlockingThreads, then tasks queue); a thread
// idle for kIdleTimeout exits. Waiting costs no CPU, so these threads are
// outside the core budget; a blocking kernel that computes counts against it as
// any other kernel does.
#ifndef WEFT_SRC_RUNTIME_BLOCKING_POOL_H_
#define WEFT_SRC_RUNTIME_BLOCKING_POOL_H_

#include <chrono>
#include <deque>

#include "threading/mutex.h"
#include "threading/task.h"

namespace weft::internal {

class BlockingPool {
 public:
  static constexpr int kMaxBlockingThreads = 1024;
  static constexpr std::chrono::seconds kIdleTimeout{10};

  // The process's pool (never destroyed: its threads may outlive main).
  static BlockingPool& Global();

  // Runs task->Run() on a pool thread, soon.
  void Schedule(Task* task) WEFT_EXCLUDES(mu_);

  // True on a blocking-pool thread.
  static bool OnPoolThread();

 private:
  BlockingPool() = default;
  void ThreadLoop() WEFT_EXCLUDES(mu_);

  Mutex mu_;
  CondVar work_;
  std::deque<Task*> tasks_ WEFT_GUARDED_BY(mu_);
  int threads_ WEFT_GUARDED_BY(mu_) = 0;
  int idle_ WEFT_GUARDED_BY(mu_) = 0;  // Threads waiting for a task.
  // Threads started but not yet in their loop: each will take a task.
  int starting_ WEFT_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_BLOCKING_POOL_H_
