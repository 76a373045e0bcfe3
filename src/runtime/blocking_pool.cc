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
  // as it likes. While idle threads and threads still starting up are at
  // least as many as the queued tasks, one of them takes it (a thread
  // coming back from a task may take it first; a woken one then waits
  // again, still idle). Otherwise start a thread.
  if (tasks_.size() <= static_cast<size_t>(idle_ + starting_)) {
    work_.NotifyOne();
    return;
  }
  if (threads_ >= kMaxBlockingThreads)
    return;  // Queued for the next free thread.
  ++threads_;
  ++starting_;
  lock.Unlock();
  std::thread([this] { ThreadLoop(); }).detach();
}

void BlockingPool::ThreadLoop() {
  tls_on_blocking_thread = true;
  pthread_setname_np(pthread_self(), "weft-blocking");
  MutexLock lock(mu_);
  --starting_;
  for (;;) {
    if (tasks_.empty()) {
      ++idle_;
      const auto give_up = std::chrono::steady_clock::now() + kIdleTimeout;
      bool woken = true;
      while (tasks_.empty() && woken) woken = work_.WaitUntil(lock, give_up);
      --idle_;
      if (tasks_.empty()) {  // Idle for kIdleTimeout.
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
