#include "data/autotune.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "weft/data.h"

namespace weft::data {
namespace {

using internal::PlanBuffer;
using internal::PlanParallelism;
using internal::StageLoad;
using std::chrono::milliseconds;

TEST(AutotunePlanTest, EachStageGetsWhatTheConsumerNeedsWhenItFits) {
  // The consumer takes an element every 10 ms; the stages cost 10 ms and
  // 2 ms per consumed element: 1.25 and 0.25 threads' worth, rounded up.
  EXPECT_EQ(PlanParallelism({{0.010, 8}, {0.002, 8}}, 0.010, 4),
            (std::vector<int>{2, 1}));
  // A stage never gets more than its own limit.
  EXPECT_EQ(PlanParallelism({{0.050, 2}}, 0.010, 8), (std::vector<int>{2}));
}

TEST(AutotunePlanTest, TheSlowestStageGetsTheMostWhenTheBudgetIsShort) {
  // Needs of 4 and 2 threads against a budget of 4: shared 3 to 1.
  EXPECT_EQ(PlanParallelism({{0.030, 8}, {0.010, 8}}, 0.010, 4),
            (std::vector<int>{3, 1}));
  EXPECT_EQ(PlanParallelism({{0.010, 8}, {0.030, 8}}, 0.010, 4),
            (std::vector<int>{1, 3}));
  // A consumer that only takes (a stats pass): the whole budget, shared.
  EXPECT_EQ(PlanParallelism({{0.004, 8}, {0.004, 8}}, 0, 4),
            (std::vector<int>{2, 2}));
  // More stages than threads: one each, never none.
  EXPECT_EQ(PlanParallelism({{1, 8}, {1, 8}, {1, 8}}, 0, 2),
            (std::vector<int>{1, 1, 1}));
  EXPECT_TRUE(PlanParallelism({}, 0.01, 4).empty());
}

TEST(AutotunePlanTest, ABufferGrowsOnlyWhenItsProducerHadTimeToSpare) {
  EXPECT_EQ(PlanBuffer(2, 16, /*consumer_waited=*/true,
                       /*producer_idled=*/true),
            4);
  EXPECT_EQ(PlanBuffer(16, 16, true, true), 16);
  // A producer that never rested is too slow: a deeper buffer cannot help.
  EXPECT_EQ(PlanBuffer(2, 16, true, false), 2);
  EXPECT_EQ(PlanBuffer(2, 16, false, true), 2);
}

std::shared_ptr<ThreadPool> AutotunePool(int threads) {
  ThreadPoolOptions options;
  options.name = "autotune-test";
  options.num_threads = threads;
  return std::make_shared<ThreadPool>(options);
}

// 0 .. count-1 through a map whose calls take `cost` each, `calls` in
// flight (sleeping, on the blocking pool: the tests measure the plan, not
// the machine's cores, and a 2-core machine runs them under sanitizers).
Dataset SleepingMap(int64_t count, milliseconds cost, int calls = kAutotune) {
  MapFn taking = [cost](Element e) -> StatusOr<Element> {
    std::this_thread::sleep_for(cost);
    return e;
  };
  return Dataset::Range(0, count).value().Map(taking, calls, true,
                                              /*blocking=*/true);
}

// Takes every element, `consumer_cost` of work after each; the last
// stats.
std::vector<StageStats> Consume(const Dataset& ds, IteratorOptions options,
                                milliseconds consumer_cost) {
  auto it = ds.MakeIterator(std::move(options));
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return {};
  while (true) {
    Element e;
    bool end = false;
    Status s = (*it)->GetNext(&e, &end);
    EXPECT_TRUE(s.ok()) << s;
    if (end || !s.ok()) break;
    std::this_thread::sleep_for(consumer_cost);
  }
  return (*it)->Stats();
}

const StageStats& StageNamed(const std::vector<StageStats>& stats,
                             const std::string& name) {
  for (const StageStats& s : stats) {
    if (s.stage == name) return s;
  }
  ADD_FAILURE() << "no stage " << name;
  return stats.front();
}

TEST(AutotuneTest, ACheapMapBeforeASlowConsumerKeepsOneCallInFlight) {
  // 1 ms a call, 10 ms a consumed element: one call keeps up, so the
  // other threads stay free for the consumer's Runs.
  Dataset ds = SleepingMap(40, milliseconds(1));
  std::vector<StageStats> stats =
      Consume(ds, {.pool = AutotunePool(4)}, milliseconds(10));
  const StageStats& map = StageNamed(stats, "ParallelMap");
  EXPECT_TRUE(map.autotuned);
  EXPECT_EQ(map.parallelism, 1);
  // The consumer is the bottleneck: no stage is marked.
  for (const StageStats& s : stats) EXPECT_FALSE(s.bottleneck) << s.stage;
}

TEST(AutotuneTest, ASlowMapBeforeAFastConsumerGetsEveryThread) {
  // 8 ms a call, 1 ms a consumed element: ten calls' worth is needed, the
  // pool has 4 threads, and the map is the only stage: all of them.
  Dataset ds = SleepingMap(40, milliseconds(8));
  std::vector<StageStats> stats =
      Consume(ds, {.pool = AutotunePool(4)}, milliseconds(1));
  const StageStats& map = StageNamed(stats, "ParallelMap");
  EXPECT_EQ(map.parallelism, 4);
  EXPECT_TRUE(map.bottleneck);
}

TEST(AutotuneTest, TurnedOffItKeepsTheStartingChoices) {
  // The map of the first test, which the model takes down to one call.
  Dataset ds = SleepingMap(40, milliseconds(1)).Prefetch(kAutotune);
  std::vector<StageStats> stats = Consume(
      ds, {.pool = AutotunePool(4), .autotune = false}, milliseconds(10));
  EXPECT_EQ(StageNamed(stats, "ParallelMap").parallelism, 4);
  EXPECT_EQ(StageNamed(stats, "Prefetch").parallelism, 2);
}

TEST(AutotuneTest, AFixedParallelismIsKept) {
  Dataset ds = SleepingMap(40, milliseconds(1), /*calls=*/3);
  std::vector<StageStats> stats =
      Consume(ds, {.pool = AutotunePool(4)}, milliseconds(5));
  const StageStats& map = StageNamed(stats, "ParallelMap");
  EXPECT_FALSE(map.autotuned);
  EXPECT_EQ(map.parallelism, 3);
}

TEST(AutotuneTest, APrefetchBufferGrowsForAProducerThatComesInBursts) {
  // Every fourth element takes 30 ms, the others none: 7.5 ms a element on
  // average against a consumer's 10 ms, so the producer keeps up on
  // average, fills the buffer between the slow ones, and the consumer
  // still waits on each slow one until the buffer holds enough.
  MapFn bursty = [](Element e) -> StatusOr<Element> {
    if (*e[0].data<int64_t>() % 4 == 3) {
      std::this_thread::sleep_for(milliseconds(30));
    }
    return e;
  };
  Dataset ds = Dataset::Range(0, 60).value().Map(bursty).Prefetch(kAutotune);
  std::vector<StageStats> stats =
      Consume(ds, {.pool = AutotunePool(2)}, milliseconds(10));
  const StageStats& prefetch = StageNamed(stats, "Prefetch");
  EXPECT_TRUE(prefetch.autotuned);
  EXPECT_GT(prefetch.parallelism, 2);
}

TEST(AutotuneTest, RepeatRoundsRemakeTheirTunedStagesSafely) {
  // Each round makes a fresh autotuned map; the tuner drops the old ones.
  Dataset ds = SleepingMap(6, milliseconds(1)).Repeat(8);
  std::vector<StageStats> stats =
      Consume(ds, {.pool = AutotunePool(2)}, milliseconds(1));
  EXPECT_EQ(stats.back().elements, 48);
}

}  // namespace
}  // namespace weft::data
