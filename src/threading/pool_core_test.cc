#include "threading/pool_core.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <latch>

#include "test_support/wait.h"

namespace weft::internal {
namespace {

ThreadPoolOptions OneWorker() {
  ThreadPoolOptions options;
  options.name = "core";
  options.num_threads = 1;
  return options;
}

class CountingTask final : public Task {
 public:
  void Run() override { runs.fetch_add(1); }
  std::atomic<int> runs{0};
};

// Occupies the pool's only worker until released.
class BlockingTask final : public Task {
 public:
  void Run() override {
    started.count_down();
    release.wait();
  }
  std::latch started{1};
  std::latch release{1};
};

// A one-worker pool whose worker is held busy until Release() (at the
// latest when it goes, so that a failed assertion cannot hang the test).
class BusyPool {
 public:
  BusyPool() {
    pool_.Schedule(&blocker_);
    blocker_.started.wait();
  }
  ~BusyPool() { Release(); }
  void Release() {
    if (!released_) blocker_.release.count_down();
    released_ = true;
  }
  PoolCore& pool() { return pool_; }

 private:
  BlockingTask blocker_;  // Outlives the pool, which joins its worker.
  bool released_ = false;
  PoolCore pool_{OneWorker()};
};

TEST(PoolCoreTest, AWithdrawnEntryNeverRuns) {
  BusyPool busy;
  PoolCore& pool = busy.pool();

  CountingTask withdrawn;
  std::array<int, 4> inboxes{};
  ASSERT_EQ(pool.ScheduleCopies(&withdrawn, 1, inboxes), 1);
  EXPECT_EQ(inboxes[0], 0);
  EXPECT_TRUE(pool.Withdraw(&withdrawn, inboxes[0]));
  EXPECT_FALSE(pool.Withdraw(&withdrawn, inboxes[0]));  // Already gone.

  // Had the entry stayed, the worker would take it from its inbox before
  // this one, which has to wait in the shared queue behind it.
  CountingTask after;
  pool.Schedule(&after);
  busy.Release();
  ASSERT_TRUE(test::WaitFor([&] { return after.runs.load() == 1; }));
  EXPECT_EQ(withdrawn.runs.load(), 0);
}

TEST(PoolCoreTest, AnEntryAWorkerTookCannotBeWithdrawn) {
  PoolCore pool(OneWorker());
  CountingTask task;
  std::array<int, 1> inboxes{};
  ASSERT_EQ(pool.ScheduleCopies(&task, 1, inboxes), 1);
  ASSERT_TRUE(test::WaitFor([&] { return task.runs.load() == 1; }));
  EXPECT_FALSE(pool.Withdraw(&task, inboxes[0]));
  EXPECT_EQ(task.runs.load(), 1);
}

TEST(PoolCoreTest, OnlyInboxPlacementsAreRecorded) {
  BusyPool busy;
  // One inbox: the first copy goes there, the second to the shared queue.
  CountingTask task;
  std::array<int, 4> inboxes{};
  EXPECT_EQ(busy.pool().ScheduleCopies(&task, 2, inboxes), 1);
  busy.Release();
  ASSERT_TRUE(test::WaitFor([&] { return task.runs.load() == 2; }));
}

}  // namespace
}  // namespace weft::internal
