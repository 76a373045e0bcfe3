#include "runtime/blocking_pool.h"

#include <pthread.h>

#include <thread>

namespace weft::internal {
namespace {
thread_local bool tls_on_blocking_thread = false;
}  // namespace

BlockingPool& BlockingPool::Global() {
  static BlockingPool* pool = new BlockingPool();  // Never destroyed.
  return *pool;
}

bool BlockingPool::OnPoolThread() { return tls_on_blocking_thread; }

void BlockingPool::Schedule(Task* task) {
  MutexLock lock(mu_);
  tasks_.push_back(task);
  // Every queued task needs a thread of its own: it may block for as long
  // as it likes. Wake an idle thread nobody has claimed yet, else start one.
  if (idle_ > wakes_pending_) {
    ++wakes_pending_;
    work_.NotifyOne();
    return;
  }
  if (threads_ >= kMaxBlockingThreads)
    return;  // Queued for the next free thread.
  ++threads_;
  lock.Unlock();
  std::thread([this] { ThreadLoop(); }).detach();
}

void BlockingPool::ThreadLoop() {
  tls_on_blocking_thread = true;
  pthread_setname_np(pthread_self(), "weft-blocking");
  MutexLock lock(mu_);
  for (;;) {
    while (tasks_.empty()) {
      ++idle_;
      const auto give_up = std::chrono::steady_clock::now() + kIdleTimeout;
      bool woken = true;
      while (tasks_.empty() && woken) woken = work_.WaitUntil(lock, give_up);
      --idle_;
      if (wakes_pending_ > 0) --wakes_pending_;
      if (!woken && tasks_.empty()) {
        --threads_;
        return;
      }
    }
    Task* task = tasks_.front();
    tasks_.pop_front();
    lock.Unlock();
    task->Run();
    lock.Lock();
  }
}

}  // namespace weft::internal
