// The scheduler behind ThreadPool.
//
// Algorithm outline:
//  - Worker i owns RunQueue i. Schedule() from worker i pushes there. Any
//    other thread first offers the task to a worker's inbox, a one-task slot
//    on its own cache line, so a fork/join hand-off to a spinning worker
//    touches one line and takes no lock; when every inbox is full (or the
//    owner's deque is), the task goes to the mutex-guarded injection queue.
//  - A worker looks for work in order: its own deque (newest first), its
//    inbox, the injection queue, then every other worker's inbox and deque
//    from a random start (oldest first).
//  - Finding nothing, it spins for options.spin_us, counted in spinning_,
//    then parks on event_. At most half the workers (at least one) spin at
//    once; the others park straight away, so idle spinners do not take the
//    cores of busy threads. Schedule() wakes a parked worker only when no
//    worker spins: a spinning worker will find the task without a system
//    call. A woken worker searches as a spinner too. When the last spinner
//    finds a task while more work is queued, it wakes another worker, so a
//    burst still spreads over the pool one wake-up at a time.
//  - The pre-park re-check (after EventCount::PrepareWait) scans every queue
//    with seq_cst loads; Schedule() publishes with seq_cst before reading
//    spinning_ and the waiter count. See event_count.h for why this loses no
//    wake-up.
//  - Shutdown sets stopping_ and wakes everyone; a worker exits only when it
//    finds no task after seeing stopping_, so queued work is drained.
#ifndef WEFT_SRC_THREADING_POOL_CORE_H_
#define WEFT_SRC_THREADING_POOL_CORE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <latch>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "threading/event_count.h"
#include "threading/mutex.h"
#include "threading/run_queue.h"
#include "threading/task.h"
#include "threading/task_ring.h"
#include "weft/thread_pool.h"

namespace weft::internal {

class PoolCore {
 public:
  // Returns once every worker thread has started: a worker the OS has not
  // yet run is no waiter a wake-up can reach, and on a busy machine a new
  // thread may wait milliseconds for its first turn, so the first Run of a
  // new session would find its pool a thread short.
  explicit PoolCore(ThreadPoolOptions options);
  ~PoolCore();  // Drains queued work, then joins.

  PoolCore(const PoolCore&) = delete;
  PoolCore& operator=(const PoolCore&) = delete;

  // Queues task; with no workers, runs it inline. Any thread.
  void Schedule(Task* task);
  // Where ScheduleCopies put the entries the caller may take back.
  struct Copies {
    int inboxes = 0;    // Inbox placements recorded in `inboxes`.
    int own_deque = 0;  // Entries on the calling worker's own deque.
  };
  // Queues `copies` entries of the same task, then wakes up to that many
  // workers at once. Records in `inboxes` (as many as fit) the workers whose
  // inbox took an entry, so that the caller can Withdraw() an entry no worker
  // has taken yet, and counts the entries a worker of this pool pushed on its
  // own deque (WithdrawFromOwnDeque). REQUIRES: NumThreads() > 0.
  Copies ScheduleCopies(Task* task, int copies, std::span<int> inboxes = {});
  // Takes task back out of worker's inbox if it is still there. Returns true
  // when it did: that entry will never run.
  bool Withdraw(Task* task, int worker);
  // Takes one entry of task back from the calling worker's own deque if it
  // is the newest entry there (not stolen, nothing pushed on top of it).
  // Returns true when it did: that entry will never run. False on any
  // thread that is not a worker of this pool.
  bool WithdrawFromOwnDeque(Task* task);

  // A few slots for tasks that could use another worker later (a
  // ParallelFor that started with fewer helpers than it could use, because
  // other kernels held the cores). Advertise() puts task in a free slot;
  // WithdrawAdvert() takes it back if nobody has scheduled it;
  // TakeAdvert() takes one advertised task out for a thread that has just
  // freed a core, which runs it itself (nullptr when none is advertised);
  // ScheduleOwnAdvert(task) schedules task if it is still advertised. More
  // than one slot because a short kernel's advertisement must not shut out
  // a long one that starts beside it (a MatMul held to one thread for its
  // whole length, docs/BENCHMARKS.md).
  static constexpr int kAdvertSlots = 4;
  bool Advertise(Task* task);
  bool WithdrawAdvert(Task* task);
  // True when a slot holds a task: a snapshot, for a thread deciding
  // whether to look further before TakeAdvert. Reads one cache line.
  bool AnyAdvert() const;
  Task* TakeAdvert();
  void ScheduleOwnAdvert(Task* task);

  // For a worker that must wait for tasks it may have to run itself (a
  // kernel waiting for its subgraph's nodes on a pool of one thread, as
  // Taskflow's corun): runs one queued task of this pool, looking where the
  // worker would (own deque, inbox, injection queue, other workers). Returns
  // false, running nothing, when it finds none or the calling thread is no
  // worker of this pool.
  bool RunOneQueuedTask();

  // True when some task waits in a queue of this pool (a deque, an inbox or
  // the injection queue). A snapshot: it may be stale at once.
  bool AnyQueuedWork() const;

  int NumThreads() const { return static_cast<int>(workers_.size()); }
  int CurrentThreadIndex() const;
  // True on a worker thread of any pool.
  static bool OnAnyPoolThread();
  const ThreadPoolOptions& options() const { return options_; }

 private:
  struct alignas(64) Worker {
    explicit Worker(size_t capacity) : queue(capacity) {}
    RunQueue<Task*> queue;
    std::thread thread;
    // Written by any thread offering a task (CAS from null), emptied by
    // whichever worker takes it (exchange to null).
    alignas(64) std::atomic<Task*> inbox{nullptr};
    // Set while the worker spins for work. On the inbox's line: a thread
    // that fills the inbox reads it without another miss, and needs no
    // wake-up (nor a look at the pool-wide spinner count) when it is set.
    std::atomic<bool> spinning{false};
  };

  // Where Push() put a task.
  struct Placement {
    int inbox = -1;          // The worker whose inbox took it, or -1.
    bool attended = false;   // That worker spins, so needs no wake-up.
    bool own_deque = false;  // The calling worker's own deque took it.
  };
  Placement Push(Task* task);
  void WakeWorkers(int count);
  void WorkerLoop(int index, std::latch* started);
  void SetUpWorkerThread(int index);
  Task* FindTask(int self, uint64_t* rng);
  Task* PopInjected(int self);
  // The worker whose empty inbox took task, or -1 when none was empty.
  int OfferToInbox(Task* task);
  Task* TakeFromInbox(int worker);
  Task* SpinForTask(int self, uint64_t* rng);
  void WakeAnotherIfWorkRemains();
  void RunTask(Task* task, int index);

  // Read-mostly fields first; each field that workers write while they run
  // gets a cache line of its own, so that a thread submitting work reads the
  // options without missing on a line a spinning worker just wrote.
  const ThreadPoolOptions options_;
  std::vector<std::unique_ptr<Worker>> workers_;

  alignas(64) Mutex inject_mu_;
  TaskRing injected_ WEFT_GUARDED_BY(inject_mu_);
  alignas(64) std::atomic<int64_t> injected_size_{0};  // injected_.size().

  alignas(64) EventCount event_;
  alignas(64) std::atomic<int> spinning_{0};
  alignas(64) std::atomic<bool> stopping_{false};
  // One cache line: TakeAdvert's common case, all empty, reads one line.
  alignas(64) std::array<std::atomic<Task*>, kAdvertSlots> adverts_{};
};

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_POOL_CORE_H_
