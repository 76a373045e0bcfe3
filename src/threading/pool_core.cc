#include "threading/pool_core.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "threading/spin.h"
#include "weft/check.h"
#include "weft/warnings.h"

namespace weft::internal {
namespace {

// Per-worker deque capacity. A worker that pushes more than this (a task
// fanning out thousands of children) overflows into the injection queue.
constexpr size_t kDequeCapacity = 1024;

// The most tasks a worker moves from the injection queue to its deque at
// once (see PopInjected).
constexpr size_t kInjectedBatch = 32;

// The pool and index of the calling worker thread; null/-1 elsewhere.
thread_local const PoolCore* tls_pool = nullptr;
thread_local int tls_index = -1;

uint64_t NextRandom(uint64_t* state) {  // xorshift64
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return x;
}

[[noreturn]] void DieWithMessage(const std::string& message) {
  std::fprintf(stderr, "weft: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

PoolCore::PoolCore(ThreadPoolOptions options) : options_(std::move(options)) {
  WEFT_CHECK(options_.num_threads >= 0 && options_.spin_us >= 0,
             "ThreadPool '" + options_.name +
                 "': num_threads and spin_us must be >= 0");
  for (int cpu : options_.pin_cpus) {
    WEFT_CHECK(cpu >= 0 && cpu < CPU_SETSIZE,
               "ThreadPool '" + options_.name + "': pin CPU " +
                   std::to_string(cpu) + " is out of range");
  }
  workers_.reserve(options_.num_threads);
  for (int i = 0; i < options_.num_threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(kDequeCapacity));
  }
  // Start threads only once every Worker exists: a thief scans them all.
  std::latch started(options_.num_threads);
  for (int i = 0; i < options_.num_threads; ++i) {
    workers_[i]->thread =
        std::thread([this, i, &started] { WorkerLoop(i, &started); });
  }
  started.wait();
}

PoolCore::~PoolCore() {
  stopping_.store(true, std::memory_order_seq_cst);
  event_.NotifyAll();
  for (auto& worker : workers_) worker->thread.join();
}

bool PoolCore::OnAnyPoolThread() { return tls_pool != nullptr; }

int PoolCore::CurrentThreadIndex() const {
  return tls_pool == this ? tls_index : -1;
}

bool PoolCore::RunOneQueuedTask() {
  const int self = CurrentThreadIndex();
  if (self < 0) return false;
  thread_local uint64_t rng = 0x2545F4914F6CDD1Dull;
  Task* task = FindTask(self, &rng);
  if (task == nullptr) return false;
  RunTask(task, self);
  return true;
}

void PoolCore::Schedule(Task* task) {
  if (workers_.empty()) {
    RunTask(task, -1);
    return;
  }
  if (!Push(task).attended) WakeWorkers(1);
}

PoolCore::Copies PoolCore::ScheduleCopies(Task* task, int copies,
                                          std::span<int> inboxes) {
  int unattended = 0;
  Copies placed;
  for (int i = 0; i < copies; ++i) {
    const Placement placement = Push(task);
    if (!placement.attended) ++unattended;
    if (placement.inbox >= 0 &&
        placed.inboxes < static_cast<int>(inboxes.size())) {
      inboxes[placed.inboxes++] = placement.inbox;
    }
    placed.own_deque += placement.own_deque;
  }
  if (unattended > 0) WakeWorkers(unattended);
  return placed;
}

bool PoolCore::Withdraw(Task* task, int worker) {
  std::atomic<Task*>& inbox = workers_[worker]->inbox;
  return inbox.load(std::memory_order_relaxed) == task &&
         inbox.compare_exchange_strong(task, nullptr, std::memory_order_seq_cst,
                                       std::memory_order_relaxed);
}

bool PoolCore::WithdrawFromOwnDeque(Task* task) {
  if (tls_pool != this) return false;
  RunQueue<Task*>& queue = workers_[tls_index]->queue;
  Task* newest = queue.Pop();
  if (newest == task) return true;
  // Something else is on top (or the deque is empty): put it back where it
  // was. Only this thread pushes here, and it just made room.
  if (newest != nullptr) {
    const bool pushed = queue.Push(newest);
    WEFT_CHECK(pushed, "a slot just popped takes the entry back");
  }
  return false;
}

bool PoolCore::Advertise(Task* task) {
  for (std::atomic<Task*>& slot : adverts_) {
    Task* empty = nullptr;
    // seq_cst: see TakeAdvert.
    if (slot.load(std::memory_order_relaxed) == nullptr &&
        slot.compare_exchange_strong(empty, task, std::memory_order_seq_cst,
                                     std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

bool PoolCore::WithdrawAdvert(Task* task) {
  for (std::atomic<Task*>& slot : adverts_) {
    Task* expected = task;
    if (slot.compare_exchange_strong(expected, nullptr,
                                     std::memory_order_acq_rel,
                                     std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

bool PoolCore::AnyAdvert() const {
  for (const std::atomic<Task*>& slot : adverts_) {
    if (slot.load(std::memory_order_seq_cst) != nullptr) return true;
  }
  return false;
}

Task* PoolCore::TakeAdvert() {
  // The common case, nothing advertised, reads one line that rarely
  // changes. seq_cst (plain loads on x86), paired with Advertise's: a
  // caller that freed a core and then finds every slot empty is ordered
  // against the advertiser, who then sees the freed core
  // (ParallelForCapped).
  for (std::atomic<Task*>& slot : adverts_) {
    if (slot.load(std::memory_order_seq_cst) == nullptr) continue;
    if (Task* task = slot.exchange(nullptr, std::memory_order_acq_rel)) {
      return task;
    }
  }
  return nullptr;
}

void PoolCore::ScheduleOwnAdvert(Task* task) {
  if (WithdrawAdvert(task)) Schedule(task);
}

PoolCore::Placement PoolCore::Push(Task* task) {
  if (tls_pool == this) {
    if (workers_[tls_index]->queue.Push(task)) {
      return {.inbox = -1, .attended = false, .own_deque = true};
    }
  } else if (const int worker = OfferToInbox(task); worker >= 0) {
    // Pairs with the worker clearing the flag before its last look at the
    // inbox (SpinForTask): either it sees the task or this sees it gone.
    return {worker, workers_[worker]->spinning.load(std::memory_order_seq_cst)};
  }
  {
    MutexLock lock(inject_mu_);
    injected_.PushBack(task);
  }
  injected_size_.fetch_add(1, std::memory_order_seq_cst);
  return {};
}

void PoolCore::WakeWorkers(int count) {
  // A spinning worker finds new work without help; wake parked ones only for
  // the rest.
  count -= spinning_.load(std::memory_order_seq_cst);
  for (int i = 0; i < count; ++i) event_.NotifyOne();
}

int PoolCore::OfferToInbox(Task* task) {
  // Rotate the starting worker per calling thread so that the helpers of one
  // ParallelFor land in different inboxes.
  thread_local uint32_t next = 0;
  const int n = NumThreads();
  for (int k = 0; k < n; ++k) {
    const int worker = static_cast<int>((next + k) % n);
    std::atomic<Task*>& inbox = workers_[worker]->inbox;
    Task* empty = nullptr;
    if (inbox.load(std::memory_order_relaxed) == nullptr &&
        inbox.compare_exchange_strong(empty, task, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
      next += k + 1;
      return worker;
    }
  }
  return -1;
}

Task* PoolCore::TakeFromInbox(int worker) {
  std::atomic<Task*>& inbox = workers_[worker]->inbox;
  if (inbox.load(std::memory_order_seq_cst) == nullptr) return nullptr;
  Task* task = inbox.exchange(nullptr, std::memory_order_seq_cst);
  // The task's first line was just written by the thread that offered it;
  // start moving it here (for writing: tasks update their own state) while
  // the caller does its bookkeeping.
  if (task != nullptr) __builtin_prefetch(task, 1);
  return task;
}

Task* PoolCore::PopInjected(int self) {
  if (injected_size_.load(std::memory_order_seq_cst) == 0) return nullptr;
  MutexLock lock(inject_mu_);
  if (injected_.empty()) return nullptr;
  Task* task = injected_.PopFront();
  int64_t taken = 1;
  if (self >= 0) {
    // Take a fair share into the own deque (where others can still steal
    // it), so a stream of outside tasks costs one lock per batch, not per
    // task.
    const size_t share =
        std::min<size_t>(injected_.size() / NumThreads(), kInjectedBatch - 1);
    for (size_t i = 0; i < share; ++i) {
      const bool pushed = workers_[self]->queue.Push(injected_.PopFront());
      WEFT_CHECK(pushed, "share < capacity and the deque was empty");
      ++taken;
    }
  }
  injected_size_.fetch_sub(taken, std::memory_order_seq_cst);
  return task;
}

Task* PoolCore::FindTask(int self, uint64_t* rng) {
  if (self >= 0) {
    if (Task* task = workers_[self]->queue.Pop()) return task;
    if (Task* task = TakeFromInbox(self)) return task;
  }
  if (Task* task = PopInjected(self)) return task;
  const int n = NumThreads();
  bool lost_race;
  do {
    lost_race = false;
    const int start = static_cast<int>(NextRandom(rng) % n);
    for (int k = 0; k < n; ++k) {
      const int victim = (start + k) % n;
      if (victim == self) continue;
      if (Task* task = TakeFromInbox(victim)) return task;
      if (Task* task = workers_[victim]->queue.Steal(&lost_race)) return task;
    }
    // A lost race means another thread took an item from a queue that may
    // hold more: scan again rather than conclude that all are empty.
  } while (lost_race);
  return nullptr;
}

bool PoolCore::AnyQueuedWork() const {
  if (injected_size_.load(std::memory_order_seq_cst) > 0) return true;
  for (const auto& worker : workers_) {
    if (worker->queue.SizeApprox() > 0 ||
        worker->inbox.load(std::memory_order_seq_cst) != nullptr) {
      return true;
    }
  }
  return false;
}

Task* PoolCore::SpinForTask(int self, uint64_t* rng) {
  // Spinners are bounded (half the workers, at least one): each burns a
  // core, and on a machine as small as the pool, idle spinners would take
  // the cores the working threads need. The one spinner that finds a task
  // wakes another worker if more work remains.
  const int max_spinners = std::max(1, NumThreads() / 2);
  for (int s = spinning_.load(std::memory_order_seq_cst);;) {
    if (s >= max_spinners) return FindTask(self, rng);
    if (spinning_.compare_exchange_weak(s, s + 1, std::memory_order_seq_cst)) {
      break;
    }
  }
  std::atomic<bool>& spinning = workers_[self]->spinning;
  spinning.store(true, std::memory_order_seq_cst);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::microseconds(options_.spin_us);
  for (uint32_t i = 1;; ++i) {
    if (Task* task = FindTask(self, rng)) {
      spinning.store(false, std::memory_order_seq_cst);
      if (spinning_.fetch_sub(1, std::memory_order_seq_cst) == 1) {
        WakeAnotherIfWorkRemains();
      }
      return task;
    }
    // At least one full scan even with spin_us == 0: a freshly woken worker
    // comes through here and must pass the wake-up on.
    if (stopping_.load(std::memory_order_relaxed)) break;
    CpuRelax();
    // Reading the clock costs more than a pause; do it every 64 rounds.
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() > deadline) break;
      // Spinning is a bet on work coming soon, and must not keep a thread
      // that has work from a CPU: the thread waiting for a Run to finish,
      // a network thread, a kernel thread of another pool. Where one is
      // runnable on this CPU, it goes first; else this returns at once.
      // Without it, spinners of both pools on a 2-CPU machine held both
      // CPUs for the whole window, and with a window of 5 ms a 4.5 ms Run
      // returned after the scheduler's next slice, 8 ms.
      sched_yield();
    }
    if (options_.spin_us == 0) break;
  }
  // Before this worker's last look for work ahead of parking (WorkerLoop):
  // a task offered to this inbox from now on comes with a wake-up.
  spinning.store(false, std::memory_order_seq_cst);
  spinning_.fetch_sub(1, std::memory_order_seq_cst);
  return nullptr;
}

void PoolCore::WakeAnotherIfWorkRemains() {
  // Schedule() wakes nobody while a worker spins; the last spinner to find a
  // task therefore hands the search on, so a burst spreads over the pool.
  if (spinning_.load(std::memory_order_seq_cst) == 0 && AnyQueuedWork()) {
    event_.NotifyOne();
  }
}

void PoolCore::SetUpWorkerThread(int index) {
  tls_pool = this;
  tls_index = index;
  const std::string name =
      ("weft-" + options_.name + "-" + std::to_string(index)).substr(0, 15);
  pthread_setname_np(pthread_self(), name.c_str());
  if (!options_.pin_cpus.empty()) {
    const int cpu = options_.pin_cpus[index % options_.pin_cpus.size()];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
      EmitWarning(WarningCategory::kThreading,
                  "could not pin " + name + " to CPU " + std::to_string(cpu) +
                      ": " + std::strerror(err));
    }
  }
}

void PoolCore::WorkerLoop(int index, std::latch* started) {
  SetUpWorkerThread(index);
  started->count_down();  // The last use: the latch dies with the constructor.
  uint64_t rng = 0x9E3779B97F4A7C15ull * (index + 1);
  bool woken = false;
  while (true) {
    // A woken worker searches as a spinner so that it passes the wake-up on.
    Task* task = woken ? nullptr : FindTask(index, &rng);
    if (task == nullptr) task = SpinForTask(index, &rng);
    woken = false;
    if (task != nullptr) {
      RunTask(task, index);
      continue;
    }
    const uint64_t key = event_.PrepareWait();
    task = FindTask(index, &rng);
    if (task != nullptr) {
      event_.CancelWait();
      WakeAnotherIfWorkRemains();
      RunTask(task, index);
      continue;
    }
    if (stopping_.load(std::memory_order_seq_cst)) {
      event_.CancelWait();
      return;
    }
    event_.CommitWait(key);
    woken = true;
  }
}

void PoolCore::RunTask(Task* task, int index) {
  try {
    task->Run();
  } catch (const std::exception& e) {
    DieWithMessage("exception escaped a task on pool '" + options_.name +
                   "' (worker " + std::to_string(index) + "): " + e.what());
  } catch (...) {
    DieWithMessage("exception escaped a task on pool '" + options_.name +
                   "' (worker " + std::to_string(index) + ")");
  }
}

}  // namespace weft::internal
