#include "weft/thread_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_support/wait.h"

namespace weft {
namespace {

ThreadPoolOptions TestPoolOptions(int threads, std::string name = "test") {
  ThreadPoolOptions options;
  options.name = std::move(name);
  options.num_threads = threads;
  return options;
}

TEST(ThreadPoolTest, RunsEveryScheduledTask) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(TestPoolOptions(threads));
    std::atomic<int> count{0};
    for (int i = 0; i < 10000; ++i) pool.Schedule([&] { ++count; });
    test::WaitFor([&] { return count.load() == 10000; });
    EXPECT_EQ(count.load(), 10000) << threads << " threads";
  }
}

TEST(ThreadPoolTest, TasksScheduledFromWorkersRunToo) {
  std::atomic<int> count{0};
  // Declared before the pool: a worker may still be returning from `spawn`
  // after the last count, until ~ThreadPool joins it.
  std::function<void(int)> spawn;
  ThreadPool pool(TestPoolOptions(3));
  // Each task fans out into two until depth 12: 2^13 - 1 tasks, many more
  // than a worker's deque holds, so the overflow path runs as well.
  spawn = [&](int depth) {
    ++count;
    if (depth == 0) return;
    pool.Schedule([&, depth] { spawn(depth - 1); });
    pool.Schedule([&, depth] { spawn(depth - 1); });
  };
  pool.Schedule([&] { spawn(12); });
  test::WaitFor([&] { return count.load() == (1 << 13) - 1; });
  EXPECT_EQ(count.load(), (1 << 13) - 1);
}

TEST(ThreadPoolTest, DestructorRunsQueuedWork) {
  std::atomic<int> count{0};
  {
    ThreadPool pool(TestPoolOptions(2));
    for (int i = 0; i < 1000; ++i) {
      pool.Schedule([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(10));
        ++count;
      });
    }
  }
  EXPECT_EQ(count.load(), 1000);
}

TEST(ThreadPoolTest, ZeroThreadPoolRunsInline) {
  ThreadPool pool(TestPoolOptions(0));
  EXPECT_EQ(pool.NumThreads(), 0);
  const auto caller = std::this_thread::get_id();
  std::thread::id ran_on;
  pool.Schedule([&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, caller);
}

TEST(ThreadPoolTest, CurrentThreadIndexIdentifiesWorkers) {
  // The tasks' state outlives the pools: a worker may still be reading
  // `release` when the test body ends, until ~ThreadPool joins it.
  std::mutex mu;
  std::set<int> seen;
  std::atomic<int> done{0};
  std::atomic<bool> release{false};
  ThreadPool pool(TestPoolOptions(4));
  ThreadPool other(TestPoolOptions(1, "other"));
  EXPECT_EQ(pool.CurrentThreadIndex(), -1);
  for (int i = 0; i < 4; ++i) {
    pool.Schedule([&] {
      {
        std::lock_guard<std::mutex> lock(mu);
        seen.insert(pool.CurrentThreadIndex());
        EXPECT_EQ(other.CurrentThreadIndex(), -1);
      }
      ++done;
      // Hold the worker so the next task must go to another one.
      test::WaitFor([&] { return release.load(); });
    });
  }
  test::WaitFor([&] { return done.load() == 4; });
  release = true;
  ASSERT_EQ(done.load(), 4);
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2, 3}));
}

TEST(ThreadPoolTest, ThreadsAreNamedAfterThePool) {
  std::mutex mu;  // Declared before the pool, which joins its workers first.
  std::set<std::string> names;
  std::atomic<int> done{0};
  std::atomic<bool> release{false};
  ThreadPool pool(TestPoolOptions(2, "inter"));
  for (int i = 0; i < 2; ++i) {
    pool.Schedule([&] {
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof(name));
      {
        std::lock_guard<std::mutex> lock(mu);
        names.insert(name);
      }
      ++done;
      test::WaitFor([&] { return release.load(); });
    });
  }
  test::WaitFor([&] { return done.load() == 2; });
  release = true;
  EXPECT_EQ(names, (std::set<std::string>{"weft-inter-0", "weft-inter-1"}));
}

// The constructor returns once every worker has run: each has named itself
// already. (Without waiting, a busy machine can leave a new thread unrun for
// milliseconds, and a wake-up cannot reach it.)
TEST(ThreadPoolTest, EveryWorkerHasStartedWhenTheConstructorReturns) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    // A name of its own per attempt: a joined worker of the previous attempt
    // can still be listed in /proc for a moment after its join returns (the
    // kernel clears its tid before it leaves the thread group).
    const std::string pool_name = "st" + std::to_string(attempt);
    ThreadPool pool(TestPoolOptions(4, pool_name));
    const std::string prefix = "weft-" + pool_name + "-";
    int named = 0;
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      named += name.starts_with(prefix);
    }
    ASSERT_EQ(named, 4) << "attempt " << attempt;
  }
}

TEST(ThreadPoolTest, PinnedWorkerRunsOnlyOnItsCpu) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int target = -1;
  for (int cpu = CPU_SETSIZE - 1; cpu >= 0; --cpu) {
    if (CPU_ISSET(cpu, &allowed)) {
      target = cpu;
      break;
    }
  }
  ASSERT_GE(target, 0);
  ThreadPoolOptions options = TestPoolOptions(1, "pinned");
  options.pin_cpus = {target};
  ThreadPool pool(options);
  std::atomic<bool> done{false};
  cpu_set_t seen;
  CPU_ZERO(&seen);
  int ran_on = -1;
  pool.Schedule([&] {
    sched_getaffinity(0, sizeof(seen), &seen);
    ran_on = sched_getcpu();
    done = true;
  });
  test::WaitFor([&] { return done.load(); });
  ASSERT_TRUE(done.load());
  EXPECT_EQ(CPU_COUNT(&seen), 1);
  EXPECT_TRUE(CPU_ISSET(target, &seen));
  EXPECT_EQ(ran_on, target);
}

double CpuSecondsUsedByProcess() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// CPU seconds the threads whose names start with `prefix` have run, from
// /proc/self/task/*/schedstat (nanoseconds on the CPU); -1 where the kernel
// keeps no such figure or fewer than `threads` threads have the name.
double CpuSecondsOfThreadsNamed(const std::string& prefix, int threads) {
  double seconds = 0;
  int found = 0;
  std::error_code error;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name.rfind(prefix, 0) != 0) continue;
    std::ifstream schedstat(task.path() / "schedstat");
    double nanoseconds = 0;
    if (!(schedstat >> nanoseconds)) return -1;
    seconds += nanoseconds / 1e9;
    ++found;
  }
  return found >= threads ? seconds : -1;
}

TEST(ThreadPoolTest, IdlePoolUsesNoCpuAfterSpinWindow) {
  ThreadPoolOptions options = TestPoolOptions(4, "idle");
  options.spin_us = 1000;
  ThreadPool pool(options);
  std::atomic<int> count{0};
  for (int i = 0; i < 100; ++i) pool.Schedule([&] { ++count; });
  test::WaitFor([&] { return count.load() == 100; });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // > spin_us
  // The pool's own threads where the kernel says what each ran: the
  // process's other threads count otherwise (ThreadSanitizer's background
  // thread took 12.9 ms of such a second in one CI run).
  const auto cpu_seconds = [] {
    const double pool = CpuSecondsOfThreadsNamed("weft-idle-", 4);
    return pool >= 0 ? pool : CpuSecondsUsedByProcess();
  };
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double used = cpu_seconds() - before;
  // 1% of one CPU over one second is 10 ms; a parked pool should be near 0.
  EXPECT_LT(used, 0.010) << "idle pool used " << used * 1e3 << " ms of CPU";
}

TEST(ThreadPoolTest, ManyOutsideThreadsScheduleConcurrently) {
  ThreadPool pool(TestPoolOptions(2));
  std::atomic<int> count{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) pool.Schedule([&] { ++count; });
    });
  }
  for (auto& client : clients) client.join();
  test::WaitFor([&] { return count.load() == 16000; });
  EXPECT_EQ(count.load(), 16000);
}

TEST(ThreadPoolDeathTest, ExceptionEscapingATaskIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ThreadPool pool(TestPoolOptions(1, "thrower"));
        pool.Schedule([] { throw std::runtime_error("boom"); });
        std::this_thread::sleep_for(std::chrono::seconds(10));
      },
      "exception escaped a task on pool 'thrower' \\(worker 0\\): boom");
}

}  // namespace
}  // namespace weft
