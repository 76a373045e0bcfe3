#include "threading/pool_core.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <latch>
#include <set>

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
  ASSERT_EQ(pool.ScheduleCopies(&withdrawn, 1, inboxes).inboxes, 1);
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
  ASSERT_EQ(pool.ScheduleCopies(&task, 1, inboxes).inboxes, 1);
  ASSERT_TRUE(test::WaitFor([&] { return task.runs.load() == 1; }));
  EXPECT_FALSE(pool.Withdraw(&task, inboxes[0]));
  EXPECT_EQ(task.runs.load(), 1);
}

// Two kernels held below their helpers advertise at once (a short one
// beside a long MatMul): both get a slot, each freed core takes one of
// them, and a withdrawn one is never taken.
TEST(PoolCoreTest, SeveralAdvertisementsAreEachTakenOnce) {
  PoolCore pool(OneWorker());
  CountingTask short_kernel, long_kernel, withdrawn;
  ASSERT_TRUE(pool.Advertise(&short_kernel));
  ASSERT_TRUE(pool.Advertise(&long_kernel));
  ASSERT_TRUE(pool.Advertise(&withdrawn));
  EXPECT_TRUE(pool.WithdrawAdvert(&withdrawn));
  EXPECT_FALSE(pool.WithdrawAdvert(&withdrawn));

  Task* first = pool.TakeAdvert();  // One freed core: one task.
  Task* second = pool.TakeAdvert();
  EXPECT_EQ(pool.TakeAdvert(), nullptr);  // Nothing left.
  EXPECT_EQ(std::set<Task*>({first, second}),
            std::set<Task*>({&short_kernel, &long_kernel}));
  // A taken task is gone from the slots: its kernel's withdrawal fails.
  EXPECT_FALSE(pool.WithdrawAdvert(&short_kernel));
  EXPECT_FALSE(pool.WithdrawAdvert(&long_kernel));
  EXPECT_EQ(short_kernel.runs.load() + long_kernel.runs.load(), 0);
}

TEST(PoolCoreTest, AdvertisementsBeyondTheSlotsAreRefused) {
  PoolCore pool(OneWorker());
  std::array<CountingTask, PoolCore::kAdvertSlots + 1> tasks;
  for (int i = 0; i < PoolCore::kAdvertSlots; ++i) {
    EXPECT_TRUE(pool.Advertise(&tasks[i]));
  }
  EXPECT_FALSE(pool.Advertise(&tasks.back()));
  // ScheduleOwnAdvert schedules only the task it names.
  pool.ScheduleOwnAdvert(&tasks[2]);
  pool.ScheduleOwnAdvert(&tasks.back());  // Not advertised: nothing.
  ASSERT_TRUE(test::WaitFor([&] { return tasks[2].runs.load() == 1; }));
  for (int i = 0; i < PoolCore::kAdvertSlots; ++i) {
    if (i != 2) EXPECT_TRUE(pool.WithdrawAdvert(&tasks[i]));
  }
  EXPECT_EQ(tasks.back().runs.load(), 0);
}

TEST(PoolCoreTest, OnlyInboxPlacementsAreRecorded) {
  BusyPool busy;
  // One inbox: the first copy goes there, the second to the shared queue.
  CountingTask task;
  std::array<int, 4> inboxes{};
  const PoolCore::Copies placed = busy.pool().ScheduleCopies(&task, 2, inboxes);
  EXPECT_EQ(placed.inboxes, 1);
  EXPECT_EQ(placed.own_deque, 0);  // Not called from a worker.
  busy.Release();
  ASSERT_TRUE(test::WaitFor([&] { return task.runs.load() == 2; }));
}

// Runs `body` on the only worker of `pool` and waits for it.
template <class Body>
void OnTheWorker(PoolCore& pool, Body body) {
  class BodyTask final : public Task {
   public:
    explicit BodyTask(Body& body) : body_(body) {}
    void Run() override {
      body_();
      done.count_down();
    }
    std::latch done{1};

   private:
    Body& body_;
  };
  BodyTask task(body);
  pool.Schedule(&task);
  task.done.wait();
}

// A worker of the pool (a nested ParallelFor's caller) pushes copies on its
// own deque, and takes them back newest first; nobody else can steal them
// from a one-worker pool.
TEST(PoolCoreTest, AWorkerTakesItsOwnEntriesBack) {
  PoolCore pool(OneWorker());
  CountingTask task;
  CountingTask after;
  OnTheWorker(pool, [&] {
    EXPECT_FALSE(pool.WithdrawFromOwnDeque(&task));  // Nothing there yet.
    const PoolCore::Copies placed = pool.ScheduleCopies(&task, 2);
    EXPECT_EQ(placed.own_deque, 2);
    EXPECT_EQ(placed.inboxes, 0);
    EXPECT_TRUE(pool.WithdrawFromOwnDeque(&task));
    EXPECT_TRUE(pool.WithdrawFromOwnDeque(&task));
    EXPECT_FALSE(pool.WithdrawFromOwnDeque(&task));
    pool.Schedule(&after);  // Runs once this body returns.
  });
  ASSERT_TRUE(test::WaitFor([&] { return after.runs.load() == 1; }));
  EXPECT_EQ(task.runs.load(), 0);
  EXPECT_FALSE(pool.WithdrawFromOwnDeque(&task));  // Not on a worker.
}

// An entry with another task pushed on top of it stays where it is, and so
// does the other task: both still run.
TEST(PoolCoreTest, AnOwnEntryUnderAnotherTaskIsNotWithdrawn) {
  PoolCore pool(OneWorker());
  CountingTask buried;
  CountingTask on_top;
  OnTheWorker(pool, [&] {
    ASSERT_EQ(pool.ScheduleCopies(&buried, 1).own_deque, 1);
    pool.Schedule(&on_top);
    EXPECT_FALSE(pool.WithdrawFromOwnDeque(&buried));
  });
  ASSERT_TRUE(test::WaitFor(
      [&] { return buried.runs.load() == 1 && on_top.runs.load() == 1; }));
}

}  // namespace
}  // namespace weft::internal
