#include "threading/run_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace weft::internal {
namespace {

TEST(RunQueueTest, OwnerIsLifoThiefIsFifo) {
  RunQueue<int*> queue(8);
  int items[3];
  for (int& item : items) ASSERT_TRUE(queue.Push(&item));
  bool lost = false;
  EXPECT_EQ(queue.Steal(&lost), &items[0]);
  EXPECT_EQ(queue.Pop(), &items[2]);
  EXPECT_EQ(queue.Pop(), &items[1]);
  EXPECT_EQ(queue.Pop(), nullptr);
  EXPECT_EQ(queue.Steal(&lost), nullptr);
  EXPECT_FALSE(lost);
}

TEST(RunQueueTest, PushFailsWhenFullAndRecoversAfterPop) {
  RunQueue<int*> queue(4);
  int items[5];
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(queue.Push(&items[i]));
  EXPECT_FALSE(queue.Push(&items[4]));
  EXPECT_EQ(queue.SizeApprox(), 4);
  EXPECT_EQ(queue.Pop(), &items[3]);
  EXPECT_TRUE(queue.Push(&items[4]));
}

TEST(RunQueueTest, WrapsAroundManyTimes) {
  RunQueue<int*> queue(4);
  int item;
  for (int round = 0; round < 1000; ++round) {
    ASSERT_TRUE(queue.Push(&item));
    bool lost = false;
    ASSERT_EQ(round % 2 ? queue.Pop() : queue.Steal(&lost), &item);
  }
  EXPECT_EQ(queue.SizeApprox(), 0);
}

// The owner pushes and pops while thieves steal: every item is taken exactly
// once.
TEST(RunQueueTest, ConcurrentOwnerAndThievesTakeEachItemOnce) {
  constexpr int kItems = 100000;
  constexpr int kThieves = 3;
  RunQueue<int*> queue(64);
  std::vector<int> values(kItems);
  std::vector<std::atomic<int>> taken(kItems);
  std::atomic<bool> done{false};
  auto take = [&](int* item) {
    taken[item - values.data()].fetch_add(1, std::memory_order_relaxed);
  };
  std::vector<std::thread> thieves;
  for (int t = 0; t < kThieves; ++t) {
    thieves.emplace_back([&] {
      while (!done.load(std::memory_order_acquire) || queue.SizeApprox() > 0) {
        bool lost = false;
        if (int* item = queue.Steal(&lost)) take(item);
      }
    });
  }
  for (int i = 0; i < kItems; ++i) {
    while (!queue.Push(&values[i])) {
      if (int* item = queue.Pop()) take(item);
    }
    if (i % 3 == 0) {
      if (int* item = queue.Pop()) take(item);
    }
  }
  while (int* item = queue.Pop()) take(item);
  done.store(true, std::memory_order_release);
  for (auto& thief : thieves) thief.join();
  for (int i = 0; i < kItems; ++i) {
    ASSERT_EQ(taken[i].load(), 1) << "item " << i;
  }
}

}  // namespace
}  // namespace weft::internal
