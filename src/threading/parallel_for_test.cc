#include "weft/parallel_for.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_support/threads.h"
#include "test_support/wait.h"
#include "threading/parallel_for_internal.h"
#include "weft/thread_pool.h"

namespace weft {
namespace {

std::unique_ptr<ThreadPool> MakePool(int threads) {
  ThreadPoolOptions options;
  options.name = "pf";
  options.num_threads = threads;
  return std::make_unique<ThreadPool>(options);
}

// Large enough that ParallelFor always splits when it can.
constexpr double kExpensive = 1e6;

// Counts visits per index and checks every range is inside [0, n).
class VisitCounter {
 public:
  explicit VisitCounter(int64_t n) : visits_(n) {}
  void Visit(int64_t begin, int64_t end) {
    ASSERT_LE(0, begin);
    ASSERT_LT(begin, end);
    ASSERT_LE(end, static_cast<int64_t>(visits_.size()));
    for (int64_t i = begin; i < end; ++i) visits_[i].fetch_add(1);
  }
  void ExpectEachVisitedOnce(const std::string& context) const {
    for (size_t i = 0; i < visits_.size(); ++i) {
      ASSERT_EQ(visits_[i].load(), 1) << context << " index " << i;
    }
  }

 private:
  std::vector<std::atomic<int>> visits_;
};

TEST(ParallelForTest, VisitsEveryIndexExactlyOnce) {
  for (int threads : {0, 1, 2, 3, 4, 7}) {
    auto pool = MakePool(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 100, 1000, 4097}) {
      for (double cost : {0.0, 10.0, 1000.0, kExpensive}) {
        VisitCounter counter(n);
        ParallelFor(pool.get(), n, cost,
                    [&](int64_t b, int64_t e) { counter.Visit(b, e); });
        counter.ExpectEachVisitedOnce("threads=" + std::to_string(threads) +
                                      " n=" + std::to_string(n) +
                                      " cost=" + std::to_string(cost));
      }
    }
  }
}

TEST(ParallelForTest, FixedBlocksVisitEveryIndexOnceWithFixedBoundaries) {
  for (int threads : {0, 1, 2, 4}) {
    auto pool = MakePool(threads);
    for (int64_t n : {0, 1, 5, 64, 1000, 1001}) {
      for (int64_t block : {1, 3, 64, 1000, 5000}) {
        VisitCounter counter(n);
        std::atomic<int64_t> calls{0};
        ParallelForFixedBlocks(pool.get(), n, block, [&](int64_t b, int64_t e) {
          EXPECT_EQ(b % block, 0);
          EXPECT_EQ(e, std::min(n, b + block));
          counter.Visit(b, e);
          ++calls;
        });
        const std::string context = "threads=" + std::to_string(threads) +
                                    " n=" + std::to_string(n) +
                                    " block=" + std::to_string(block);
        counter.ExpectEachVisitedOnce(context);
        EXPECT_EQ(calls.load(), (n + block - 1) / block) << context;
      }
    }
  }
}

// Blocks that two threads share evenly: 28 units as 4 blocks of 7, not 7
// blocks of 4 (one thread 16 units, the other 12); 10 as 10 blocks of 1 when
// the cost allows 10 blocks, not 5 of 2; a range that splits evenly keeps
// its blocks.
TEST(BalancedBlockTest, GivesTheBusiestThreadTheFewestUnits) {
  EXPECT_EQ(internal::BalancedBlock(28, 4, 2, 28), 7);
  EXPECT_EQ(internal::BalancedBlock(10, 2, 2, 10), 1);
  EXPECT_EQ(internal::BalancedBlock(10, 2, 2, 5), 2);  // 5 blocks at most
  EXPECT_EQ(internal::BalancedBlock(1 << 20, 1 << 17, 2, 1 << 20), 1 << 17);
  EXPECT_EQ(internal::BalancedBlock(12, 3, 3, 12), 4);  // 3 x 4, not 4 x 3
  EXPECT_EQ(internal::BalancedBlock(12, 2, 2, 12), 2);
  EXPECT_EQ(internal::BalancedBlock(9, 3, 1, 9), 3);
  EXPECT_EQ(internal::BalancedBlock(5, 5, 2, 5), 5);
}

// And ParallelFor uses it: 28 costly units on two threads come as 4 blocks
// (10 us each: 280 us is not a long call, which would be cut finer).
TEST(ParallelForTest, CostlyUnitsComeInBlocksTwoThreadsShareEvenly) {
  auto pool = MakePool(1);
  std::atomic<int> blocks{0};
  std::atomic<int64_t> widest{0};
  ParallelFor(pool.get(), 28, 10'000, [&](int64_t begin, int64_t end) {
    blocks.fetch_add(1);
    int64_t seen = widest.load();
    while (end - begin > seen &&
           !widest.compare_exchange_weak(seen, end - begin)) {
    }
  });
  EXPECT_EQ(blocks.load(), 4);
  EXPECT_EQ(widest.load(), 7);
}

TEST(BlocksPerThreadTest, LongCallsAreCutFinerUpToALimit) {
  using internal::BlocksPerThread;
  using internal::kLongCallBlockNs;
  using internal::kLongCallBlocksPerThread;
  // Up to 4 blocks' worth of kLongCallBlockNs a thread: the option's 4.
  EXPECT_EQ(BlocksPerThread(4, 2 * 4 * kLongCallBlockNs, 2), 4);
  EXPECT_EQ(BlocksPerThread(4, 1e3, 2), 4);
  // Longer: a block per kLongCallBlockNs of a thread's share.
  EXPECT_EQ(BlocksPerThread(4, 2 * 10 * kLongCallBlockNs, 2), 10);
  EXPECT_EQ(BlocksPerThread(4, 3 * 7.5 * kLongCallBlockNs, 3), 7);
  // Longer still: the limit.
  EXPECT_EQ(BlocksPerThread(4, 1e12, 2), kLongCallBlocksPerThread);
  EXPECT_EQ(BlocksPerThread(4, std::numeric_limits<double>::infinity(), 2),
            kLongCallBlocksPerThread);
  // A larger option wins; a nonsensical estimate keeps the option.
  EXPECT_EQ(BlocksPerThread(64, 1e12, 2), 64);
  EXPECT_EQ(BlocksPerThread(0, 1e3, 2), 1);
  EXPECT_EQ(BlocksPerThread(4, std::numeric_limits<double>::quiet_NaN(), 2), 4);
}

// A long call (28 units of 1 ms on two threads) comes in blocks of one unit:
// 14 a thread, where the option's 4 a thread would have made 7 blocks of 4.
TEST(ParallelForTest, ALongCallComesInFinerBlocks) {
  auto pool = MakePool(1);
  std::atomic<int> blocks{0};
  ParallelFor(pool.get(), 28, kExpensive, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(end - begin, 1);
    blocks.fetch_add(1);
  });
  EXPECT_EQ(blocks.load(), 28);
}

// The caller claims blocks from the front and its helper from the back, so
// each thread's blocks are one stretch of the range: the caller's start at
// 0, the helper's end at n, whatever the timing.
TEST(ParallelForTest, TheCallerTakesTheFrontAndItsHelperTheBack) {
  auto pool = MakePool(1);
  constexpr int64_t kUnits = 28;
  for (int round = 0; round < 20; ++round) {
    const auto caller = std::this_thread::get_id();
    std::array<std::atomic<bool>, kUnits> by_caller{};
    std::atomic<int> blocks{0};
    ParallelFor(pool.get(), kUnits, kExpensive, [&](int64_t b, int64_t e) {
      blocks.fetch_add(1);
      for (int64_t i = b; i < e; ++i) {
        by_caller[i] = std::this_thread::get_id() == caller;
      }
      // Long enough that the helper, once awake, takes some blocks.
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
    ASSERT_EQ(blocks.load(), kUnits);
    EXPECT_TRUE(by_caller[0]) << "round " << round;
    int64_t switches = 0;
    for (int64_t i = 1; i < kUnits; ++i) {
      switches += by_caller[i] != by_caller[i - 1];
    }
    EXPECT_LE(switches, 1) << "round " << round;
  }
}

TEST(ParallelForTest, NullPoolRunsSeriallyInCaller) {
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  ParallelFor(nullptr, 100, kExpensive, [&](int64_t b, int64_t e) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 100);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(ParallelForTest, SmallWorkRunsInline) {
  auto pool = MakePool(4);
  int calls = 0;
  ParallelFor(pool.get(), 1000, 0.1, [&](int64_t b, int64_t e) {
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 1000);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

// Two blocks that each wait for the other to start can only finish if they
// really run at the same time.
TEST(ParallelForTest, BlocksRunConcurrently) {
  for (int threads : {1, 2, 4}) {
    auto pool = MakePool(threads);
    std::atomic<int> started{0};
    std::atomic<bool> both_seen{true};
    ParallelFor(pool.get(), 2, kExpensive, [&](int64_t b, int64_t e) {
      ASSERT_EQ(e - b, 1);
      ++started;
      if (!test::WaitFor([&] { return started.load() == 2; })) {
        both_seen = false;
      }
    });
    EXPECT_TRUE(both_seen.load()) << threads << " threads";
  }
}

TEST(ParallelForTest, NestedThreeLevelsCompletes) {
  for (int threads : {1, 2, 4}) {
    auto pool = MakePool(threads);
    auto other = MakePool(2);
    std::atomic<int64_t> leaves{0};
    ParallelFor(pool.get(), 8, kExpensive, [&](int64_t b1, int64_t e1) {
      for (int64_t i = b1; i < e1; ++i) {
        // Level 2 on another pool, level 3 back on the first.
        ParallelFor(other.get(), 8, kExpensive, [&](int64_t b2, int64_t e2) {
          for (int64_t j = b2; j < e2; ++j) {
            ParallelFor(pool.get(), 8, kExpensive,
                        [&](int64_t b3, int64_t e3) { leaves += e3 - b3; });
          }
        });
      }
    });
    EXPECT_EQ(leaves.load(), 8 * 8 * 8) << threads << " threads";
    // The same nesting, all on one pool, started from inside a worker.
    std::atomic<bool> done{false};
    leaves = 0;
    pool->Schedule([&] {
      ParallelFor(pool.get(), 8, kExpensive, [&](int64_t b1, int64_t e1) {
        for (int64_t i = b1; i < e1; ++i) {
          ParallelFor(pool.get(), 8, kExpensive, [&](int64_t b2, int64_t e2) {
            for (int64_t j = b2; j < e2; ++j) {
              ParallelFor(pool.get(), 8, kExpensive,
                          [&](int64_t b3, int64_t e3) { leaves += e3 - b3; });
            }
          });
        }
      });
      done = true;
    });
    ASSERT_TRUE(test::WaitFor([&] { return done.load(); }));
    EXPECT_EQ(leaves.load(), 8 * 8 * 8) << threads << " threads, in worker";
  }
}

TEST(ParallelForTest, NestedCallsStartNoThreads) {
  auto pool = MakePool(2);
  const int before = test::CountProcessThreads();
  std::atomic<int> max_seen{0};
  ParallelFor(pool.get(), 4, kExpensive, [&](int64_t, int64_t) {
    ParallelFor(pool.get(), 4, kExpensive, [&](int64_t, int64_t) {
      int now = test::CountProcessThreads();
      int seen = max_seen.load();
      while (now > seen && !max_seen.compare_exchange_weak(seen, now)) {
      }
    });
  });
  EXPECT_EQ(max_seen.load(), before);
}

TEST(ParallelForTest, SixtyFourOutsideThreadsAtOnce) {
  auto pool = MakePool(4);
  constexpr int kClients = 64;
  constexpr int64_t kN = 5000;
  std::vector<int64_t> sums(kClients, 0);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int round = 0; round < 10; ++round) {
        std::atomic<int64_t> sum{0};
        ParallelFor(pool.get(), kN, 200.0, [&](int64_t b, int64_t e) {
          int64_t local = 0;
          for (int64_t i = b; i < e; ++i) local += i;
          sum += local;
        });
        sums[c] += sum.load();
      }
    });
  }
  for (auto& client : clients) client.join();
  for (int c = 0; c < kClients; ++c) {
    EXPECT_EQ(sums[c], 10 * kN * (kN - 1) / 2) << "client " << c;
  }
}

TEST(ParallelForTest, ExceptionIsRethrownToCallerAndPoolStaysUsable) {
  auto pool = MakePool(2);
  std::atomic<int> calls{0};
  EXPECT_THROW(ParallelFor(pool.get(), 100, kExpensive,
                           [&](int64_t b, int64_t) {
                             ++calls;
                             if (b == 0) throw std::runtime_error("block 0");
                           }),
               std::runtime_error);
  EXPECT_GE(calls.load(), 1);
  // Inline path: the same contract.
  EXPECT_THROW(
      ParallelFor(pool.get(), 1, kExpensive,
                  [](int64_t, int64_t) { throw std::logic_error("x"); }),
      std::logic_error);
  VisitCounter counter(1000);
  ParallelFor(pool.get(), 1000, kExpensive,
              [&](int64_t b, int64_t e) { counter.Visit(b, e); });
  counter.ExpectEachVisitedOnce("after exception");
}

TEST(ParallelForTest, ExceptionMessageIsTheFirstOneThrown) {
  auto pool = MakePool(3);
  try {
    ParallelForFixedBlocks(pool.get(), 64, 1, [](int64_t b, int64_t) {
      throw std::runtime_error("block " + std::to_string(b));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("block ", 0), 0u);
  }
}

TEST(ParallelForTest, BlocksNotYetClaimedWhenOneThrowsAreSkipped) {
  auto pool = MakePool(2);
  constexpr int64_t kBlocks = 10000;
  std::atomic<int64_t> calls{0};
  EXPECT_THROW(ParallelForFixedBlocks(pool.get(), kBlocks, 1,
                                      [&](int64_t b, int64_t) {
                                        calls.fetch_add(1);
                                        // The caller runs block 0 first.
                                        if (b == 0)
                                          throw std::runtime_error("0");
                                        std::this_thread::sleep_for(
                                            std::chrono::microseconds(100));
                                      }),
               std::runtime_error);
  // Helpers finish the block they hold and claim no more: a few blocks at
  // most ran, not ten thousand.
  EXPECT_LT(calls.load(), 100);
}

// A call held to no helper asks core_freed right after advertising itself;
// when a core came free meanwhile, it schedules its own advertisement, and
// a worker joins. Nothing else would bring one: the caller's first block
// waits until another thread has run a block.
TEST(ParallelForTest, ACoreFreedBeforeTheAdvertisementIsNotMissed) {
  auto pool = MakePool(1);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> helper_joined{false};
  int asked = 0;
  bool joined_in_time = true;
  const int enlisted = internal::ParallelForCapped(
      pool.get(), 16, 100'000, /*max_helpers=*/0, /*wanted_helpers=*/1,
      [&] {
        ++asked;
        return true;
      },
      [&](int64_t begin, int64_t) {
        if (std::this_thread::get_id() != caller) {
          helper_joined = true;
        } else if (begin == 0) {
          joined_in_time = test::WaitFor([&] { return helper_joined.load(); },
                                         std::chrono::seconds(20));
        }
      });
  EXPECT_EQ(asked, 1);
  EXPECT_TRUE(joined_in_time);
  EXPECT_EQ(enlisted, 2);
}

// Records the address it is called at, to tell a copy from the original;
// kPadding makes it too large to be copied into a RangeFn.
template <size_t kPadding>
struct WhereCalled {
  const void** where;
  std::array<char, kPadding> padding{};
  void operator()(int64_t, int64_t) const { *where = this; }
};

TEST(RangeFnTest, ASmallConstCallableIsCopied) {
  const void* where = nullptr;
  const WhereCalled<0> small{&where};
  RangeFn fn(small);
  fn(0, 1);
  EXPECT_NE(where, &small);
  ASSERT_NE(where, nullptr);
}

TEST(RangeFnTest, ALargeCallableIsReferred) {
  const void* where = nullptr;
  const WhereCalled<64> large{&where};
  RangeFn fn(large);
  fn(0, 1);
  EXPECT_EQ(where, &large);
}

int64_t g_covered = 0;
void Cover(int64_t b, int64_t e) { g_covered += e - b; }

TEST(RangeFnTest, AFunctionCanBeGiven) {
  g_covered = 0;
  RangeFn fn(Cover);
  fn(0, 4);
  RangeFn by_pointer(&Cover);
  by_pointer(4, 6);
  EXPECT_EQ(g_covered, 6);
  auto pool = MakePool(2);
  g_covered = 0;
  ParallelFor(pool.get(), 1, kExpensive, Cover);  // Inline: one block.
  EXPECT_EQ(g_covered, 1);
}

// Small and trivially copyable, but its call changes it.
struct Summer {
  int64_t total = 0;
  void operator()(int64_t b, int64_t e) { total += e - b; }
};

TEST(RangeFnTest, ACallableWhoseCallChangesItIsReferred) {
  Summer summer;
  RangeFn fn(summer);
  fn(0, 3);
  fn(3, 5);
  EXPECT_EQ(summer.total, 5);  // A copy would have kept the sum to itself.
}

}  // namespace
}  // namespace weft
