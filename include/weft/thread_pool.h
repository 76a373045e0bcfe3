// A work-stealing thread pool.
//
// Each worker owns a deque: it pushes and pops its own tasks at one end, idle
// workers steal from the other end. Threads outside the pool inject tasks
// through a shared queue. A worker with nothing to do spins for a bounded
// window (ThreadPoolOptions::spin_us), then parks on an event count, so an
// idle pool uses no CPU.
//
// Thread-safety: every method may be called from any thread, including the
// pool's own workers, except the destructor.
#ifndef WEFT_THREAD_POOL_H_
#define WEFT_THREAD_POOL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace weft {

struct ThreadPoolOptions {
  // Names the threads "weft-<name>-<index>" (as seen in `top -H`, gdb and
  // traces). Linux keeps 15 characters of a thread name; the rest is cut.
  std::string name = "pool";

  // Worker threads to start. 0 is allowed and makes a pool that runs every
  // Schedule()d task inline in the caller, and every ParallelFor serially.
  int num_threads = 1;

  // How long an idle worker keeps looking for work before it parks, in
  // microseconds. Spinning makes back-to-back fork/joins cheap (no wake-up
  // system call) at the cost of burning CPU for that long after the last
  // task. 0 parks at once.
  int spin_us = 50;

  // CPUs to pin workers to: worker i runs only on pin_cpus[i % size]. Empty
  // (the default) leaves placement to the OS.
  std::vector<int> pin_cpus;

  // ParallelFor tuning. A block should hold at least this much estimated work
  // (ns), so that handing it to another thread costs little relative to it;
  // work below twice this runs inline in the caller.
  double min_block_ns = 1000;
  // ParallelFor splits into at most this many blocks per participating
  // thread; more blocks balance uneven work better, fewer cost less. A
  // long call (over 100 us of estimated work per block at this count) is
  // cut finer, up to 16 blocks per thread (docs/architecture.md).
  int max_blocks_per_thread = 4;
};

class ThreadPool {
 public:
  // REQUIRES: options.num_threads >= 0, options.spin_us >= 0, every entry of
  // options.pin_cpus is a CPU this process may run on.
  explicit ThreadPool(ThreadPoolOptions options);

  // Runs every task already scheduled, and the tasks those schedule, then
  // joins every worker. REQUIRES: no other thread calls Schedule() once
  // destruction has begun.
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs fn on some worker, eventually. From a worker of this pool the task
  // goes to that worker's own deque (others may steal it); from any other
  // thread it is injected. With no workers, fn runs inline before return.
  // fn must not throw: an exception escaping it is reported on stderr with
  // the pool's name and ends the process (std::abort).
  void Schedule(std::function<void()> fn);

  // The number of worker threads (the caller of ParallelFor is not counted).
  int NumThreads() const;

  // The index in [0, NumThreads()) of the calling worker thread, or -1 when
  // the caller is not one of this pool's workers.
  int CurrentThreadIndex() const;

  const ThreadPoolOptions& options() const;

 private:
  // weft's own parallel algorithms reach the scheduler through
  // ThreadPoolInternal (src/threading/thread_pool_internal.h).
  friend class ThreadPoolInternal;
  class Core;  // The scheduler; defined inside the library.
  std::unique_ptr<Core> core_;
};

}  // namespace weft

#endif  // WEFT_THREAD_POOL_H_
