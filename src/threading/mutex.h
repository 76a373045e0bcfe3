// Mutexes that clang's thread-safety analysis understands (-Wthread-safety,
// the fuzz preset builds with it as an error), after abseil's
// ABSL_GUARDED_BY and absl::Mutex. libstdc++'s std::mutex carries no
// capability annotation, so a member marked WEFT_GUARDED_BY(mu_) must be
// guarded by one of these. Under GCC the annotations compile to nothing.
//
//   Mutex mu_;
//   int count_ WEFT_GUARDED_BY(mu_) = 0;
//   void Add() WEFT_EXCLUDES(mu_) { MutexLock lock(mu_); ++count_; }
//
// Condition-variable waits are written as loops in the function holding
// the lock (`while (!ready_) cv_.Wait(lock);`), so that the analysis sees
// every guarded read under it; a predicate lambda would hide it.
#ifndef WEFT_SRC_THREADING_MUTEX_H_
#define WEFT_SRC_THREADING_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define WEFT_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define WEFT_THREAD_ANNOTATION(x)
#endif

#define WEFT_CAPABILITY(name) WEFT_THREAD_ANNOTATION(capability(name))
#define WEFT_SCOPED_CAPABILITY WEFT_THREAD_ANNOTATION(scoped_lockable)
#define WEFT_GUARDED_BY(mu) WEFT_THREAD_ANNOTATION(guarded_by(mu))
#define WEFT_PT_GUARDED_BY(mu) WEFT_THREAD_ANNOTATION(pt_guarded_by(mu))
#define WEFT_REQUIRES(...) \
  WEFT_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define WEFT_ACQUIRE(...) \
  WEFT_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define WEFT_ACQUIRE_SHARED(...) \
  WEFT_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define WEFT_RELEASE(...) \
  WEFT_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define WEFT_RELEASE_GENERIC(...) \
  WEFT_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define WEFT_EXCLUDES(...) WEFT_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

namespace weft::internal {

class MutexLock;
class CondVar;

class WEFT_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() WEFT_ACQUIRE() { mu_.lock(); }
  void Unlock() WEFT_RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope; may release and retake it in between.
class WEFT_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) WEFT_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() WEFT_RELEASE() = default;

  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() WEFT_RELEASE() { lock_.unlock(); }
  void Lock() WEFT_ACQUIRE() { lock_.lock(); }

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

// A condition variable waited on with a MutexLock held.
class CondVar {
 public:
  void Wait(MutexLock& lock) { cv_.wait(lock.lock_); }
  // Returns false once `deadline` has passed.
  bool WaitUntil(MutexLock& lock,
                 std::chrono::steady_clock::time_point deadline) {
    return cv_.wait_until(lock.lock_, deadline) == std::cv_status::no_timeout;
  }
  // Returns false once `timeout` has passed.
  bool WaitFor(MutexLock& lock, std::chrono::nanoseconds timeout) {
    return cv_.wait_for(lock.lock_, timeout) == std::cv_status::no_timeout;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// A reader/writer mutex: ReaderLock shares it, WriterLock holds it alone.
class WEFT_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() WEFT_ACQUIRE() { mu_.lock(); }
  void Unlock() WEFT_RELEASE() { mu_.unlock(); }
  void LockShared() WEFT_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() WEFT_RELEASE_GENERIC() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

class WEFT_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) WEFT_ACQUIRE_SHARED(mu) : mu_(mu) {
    mu_.LockShared();
  }
  ~ReaderLock() WEFT_RELEASE_GENERIC() { mu_.UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

class WEFT_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) WEFT_ACQUIRE(mu) : mu_(mu) {
    mu_.Lock();
  }
  ~WriterLock() WEFT_RELEASE() { mu_.Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_MUTEX_H_
