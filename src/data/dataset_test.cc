#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "weft/data.h"
#include "weft/machine.h"
#include "weft/npy.h"
#include "weft/session.h"

namespace weft::data {
namespace {

std::shared_ptr<ThreadPool> DatasetPool(int threads) {
  ThreadPoolOptions options;
  options.name = "data-test";
  options.num_threads = threads;
  return std::make_shared<ThreadPool>(options);
}

// Every element of one pass; fails the test on an error.
std::vector<Element> Drain(const Dataset& ds,
                           std::shared_ptr<ThreadPool> pool = nullptr) {
  auto it = ds.MakeIterator({.pool = std::move(pool)});
  EXPECT_TRUE(it.ok()) << it.status();
  std::vector<Element> out;
  if (!it.ok()) return out;
  while (true) {
    Element e;
    bool end = false;
    Status s = (*it)->GetNext(&e, &end);
    EXPECT_TRUE(s.ok()) << s;
    if (end || !s.ok()) break;
    out.push_back(std::move(e));
  }
  return out;
}

// The first component of each element, as int64 scalars.
std::vector<int64_t> DatasetInts(const std::vector<Element>& elements) {
  std::vector<int64_t> out;
  for (const Element& e : elements) out.push_back(*e[0].data<int64_t>());
  return out;
}

Dataset RangeOf(int64_t start, int64_t stop, int64_t step = 1) {
  return Dataset::Range(start, stop, step).value();
}

MapFn AddConstant(int64_t k) {
  return [k](Element e) -> StatusOr<Element> {
    return Element{Tensor::Scalar<int64_t>(*e[0].data<int64_t>() + k)};
  };
}

TEST(DatasetTest, RangeTakeSkip) {
  EXPECT_EQ(DatasetInts(Drain(RangeOf(0, 10))),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(DatasetInts(Drain(RangeOf(10, 0, -3))),
            (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(DatasetInts(Drain(RangeOf(0, 10).Skip(3).Take(4))),
            (std::vector<int64_t>{3, 4, 5, 6}));
  EXPECT_EQ(DatasetInts(Drain(RangeOf(0, 3).Take(-1))),
            (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(Drain(RangeOf(0, 3).Skip(-1)).empty());
  EXPECT_FALSE(Dataset::Range(0, 3, 0).ok());
}

TEST(DatasetTest, FromTensorSlicesCutsEveryComponent) {
  Tensor x = Tensor::FromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor label = Tensor::FromVector<int64_t>({3}, {7, 8, 9});
  auto ds = Dataset::FromTensorSlices({x, label});
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::vector<Element> out = Drain(*ds);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1][0].shape(), Shape({2}));
  EXPECT_EQ(out[1][0].data<float>()[1], 4.0f);
  EXPECT_EQ(*out[2][1].data<int64_t>(), 9);

  auto mismatched =
      Dataset::FromTensorSlices({x, Tensor::FromVector<int64_t>({2}, {1, 2})});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().message().find("component 1 has 2 rows"),
            std::string::npos);
}

TEST(DatasetTest, BatchStacksAndKeepsOrDropsTheRemainder) {
  std::vector<Element> batches = Drain(RangeOf(0, 7).Batch(3));
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0][0].shape(), Shape({3}));
  EXPECT_EQ(batches[2][0].shape(), Shape({1}));
  EXPECT_EQ(batches[1][0].data<int64_t>()[2], 5);
  EXPECT_EQ(Drain(RangeOf(0, 7).Batch(3, /*drop_remainder=*/true)).size(), 2u);
  // Unbatch undoes it.
  EXPECT_EQ(DatasetInts(Drain(RangeOf(0, 7).Batch(3).Unbatch())),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
}

MapFn VectorOfLength() {
  // Element k -> a float vector of k + 1 ones.
  return [](Element e) -> StatusOr<Element> {
    const int64_t k = *e[0].data<int64_t>();
    return Element{Tensor::FromVector<float>(
        {k + 1}, std::vector<float>(static_cast<size_t>(k + 1), 1.0f))};
  };
}

TEST(DatasetTest, BatchNamesTheElementWhoseShapeDiffers) {
  auto it = RangeOf(0, 4).Map(VectorOfLength()).Batch(4).MakeIterator();
  ASSERT_TRUE(it.ok());
  Element e;
  bool end = false;
  Status s = (*it)->GetNext(&e, &end);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("element 1 is float32[2]"), std::string::npos)
      << s;
}

TEST(DatasetTest, PaddedBatchPadsWithZeros) {
  std::vector<Element> out =
      Drain(RangeOf(0, 3).Map(VectorOfLength()).PaddedBatch(3));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0].shape(), Shape({3, 3}));
  const float* v = out[0][0].data<float>();
  EXPECT_EQ(std::vector<float>(v, v + 9),
            (std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  std::vector<Element> fixed =
      Drain(RangeOf(0, 3).Map(VectorOfLength()).PaddedBatch(2, {{5}}));
  EXPECT_EQ(fixed[0][0].shape(), Shape({2, 5}));
}

TEST(DatasetTest, PaddedBatchPadsWithTheValuesGiven) {
  // A float component padded with -1 given as an int64 number (converted
  // exactly, as tf.data converts a Python -1).
  std::vector<Element> out =
      Drain(RangeOf(0, 2)
                .Map(VectorOfLength())
                .PaddedBatch(2, {}, false, {Tensor::Scalar<int64_t>(-1)}));
  ASSERT_EQ(out.size(), 1u);
  const float* v = out[0][0].data<float>();
  EXPECT_EQ(std::vector<float>(v, v + 4), (std::vector<float>{1, -1, 1, 1}));
  // A value the component's dtype cannot hold is an error naming both.
  auto it = RangeOf(0, 2)
                .PaddedBatch(2, {}, false, {Tensor::Scalar<double>(0.5)})
                .MakeIterator();
  ASSERT_TRUE(it.ok());
  Element e;
  bool end = false;
  Status s = (*it)->GetNext(&e, &end);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("padding value of dtype float64 for a component "
                             "of dtype int64: 0.500000 does not convert "
                             "exactly"),
            std::string::npos)
      << s;
}

TEST(DatasetTest, ShuffleIsASeededPermutation) {
  std::vector<int64_t> a = DatasetInts(Drain(RangeOf(0, 100).Shuffle(10, 42)));
  std::vector<int64_t> b = DatasetInts(Drain(RangeOf(0, 100).Shuffle(10, 42)));
  std::vector<int64_t> c = DatasetInts(Drain(RangeOf(0, 100).Shuffle(10, 43)));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, DatasetInts(Drain(RangeOf(0, 100))));
}

TEST(DatasetTest, RepeatReshufflesEachRoundUnlessAskedNot) {
  std::vector<int64_t> two =
      DatasetInts(Drain(RangeOf(0, 20).Shuffle(20, 1).Repeat(2)));
  ASSERT_EQ(two.size(), 40u);
  EXPECT_NE(std::vector<int64_t>(two.begin(), two.begin() + 20),
            std::vector<int64_t>(two.begin() + 20, two.end()));
  std::vector<int64_t> same =
      DatasetInts(Drain(RangeOf(0, 20).Shuffle(20, 1, false).Repeat(2)));
  EXPECT_EQ(std::vector<int64_t>(same.begin(), same.begin() + 20),
            std::vector<int64_t>(same.begin() + 20, same.end()));
  // Repeat of an empty dataset ends rather than spinning.
  EXPECT_TRUE(Drain(RangeOf(0, 0).Repeat()).empty());
  EXPECT_EQ(Drain(RangeOf(0, 3).Repeat().Take(10)).size(), 10u);
}

TEST(DatasetTest, FilterEnumerateZip) {
  auto even = [](const Element& e) -> StatusOr<bool> {
    return *e[0].data<int64_t>() % 2 == 0;
  };
  EXPECT_EQ(DatasetInts(Drain(RangeOf(0, 7).Filter(even))),
            (std::vector<int64_t>{0, 2, 4, 6}));
  std::vector<Element> numbered = Drain(RangeOf(5, 8).Enumerate(10));
  ASSERT_EQ(numbered.size(), 3u);
  EXPECT_EQ(*numbered[2][0].data<int64_t>(), 12);
  EXPECT_EQ(*numbered[2][1].data<int64_t>(), 7);
  auto zipped = Dataset::Zip({RangeOf(0, 5), RangeOf(100, 103)});
  ASSERT_TRUE(zipped.ok());
  std::vector<Element> pairs = Drain(*zipped);
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(*pairs[1][1].data<int64_t>(), 101);
}

TEST(DatasetTest, InterleaveFollowsTfDataOrder) {
  // tf.data's documented example: range(1, 6), each x repeated 6 times,
  // cycle_length 2, block_length 4.
  auto repeated = [](Element e) -> StatusOr<Dataset> {
    const int64_t x = *e[0].data<int64_t>();
    return RangeOf(x, x + 1).Repeat(6);
  };
  EXPECT_EQ(
      DatasetInts(Drain(RangeOf(1, 6).Interleave(repeated, 2, 4))),
      (std::vector<int64_t>{1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3,
                            3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5}));
}

// A map whose calls take uneven times, so that parallel calls finish out of
// order.
MapFn SlowSquare() {
  return [](Element e) -> StatusOr<Element> {
    const int64_t x = *e[0].data<int64_t>();
    std::this_thread::sleep_for(std::chrono::microseconds((x * 7919) % 500));
    return Element{Tensor::Scalar<int64_t>(x * x)};
  };
}

TEST(DatasetTest, ParallelMapKeepsInputOrderForEveryPoolSize) {
  std::vector<int64_t> expected;
  for (int64_t x = 0; x < 60; ++x) expected.push_back(x * x);
  for (int threads : {0, 1, 2, 4}) {
    for (int calls : {1, 3, kAutotune}) {
      Dataset ds = RangeOf(0, 60).Map(SlowSquare(), calls);
      EXPECT_EQ(DatasetInts(Drain(ds, DatasetPool(threads))), expected)
          << threads << " threads, " << calls << " calls";
    }
  }
}

TEST(DatasetTest, NonDeterministicMapStillYieldsEveryElement) {
  Dataset ds = RangeOf(0, 40).Map(SlowSquare(), 4, /*deterministic=*/false);
  std::vector<int64_t> got = DatasetInts(Drain(ds, DatasetPool(3)));
  std::sort(got.begin(), got.end());
  std::vector<int64_t> expected;
  for (int64_t x = 0; x < 40; ++x) expected.push_back(x * x);
  EXPECT_EQ(got, expected);
}

MapFn FailOnMultiplesOf(int64_t k) {
  return [k](Element e) -> StatusOr<Element> {
    const int64_t x = *e[0].data<int64_t>();
    if (x % k == 0) {
      return InvalidArgumentError("element " + std::to_string(x) + " is bad");
    }
    return e;
  };
}

TEST(DatasetTest, ErrorsArePerElementAndIgnoreErrorsCountsThem) {
  for (int calls : {0, 2}) {
    auto it = RangeOf(1, 7)
                  .Map(FailOnMultiplesOf(3), calls)
                  .MakeIterator({.pool = DatasetPool(2)});
    ASSERT_TRUE(it.ok());
    std::vector<std::string> seen;
    while (true) {
      Element e;
      bool end = false;
      Status s = (*it)->GetNext(&e, &end);
      if (end) break;
      seen.push_back(s.ok() ? std::to_string(*e[0].data<int64_t>())
                            : s.message());
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"1", "2", "element 3 is bad", "4",
                                              "5", "element 6 is bad"}));
  }
  Dataset skipping = RangeOf(1, 10).Map(FailOnMultiplesOf(3), 2).IgnoreErrors();
  auto it = skipping.MakeIterator({.pool = DatasetPool(2)});
  ASSERT_TRUE(it.ok());
  int64_t count = 0;
  Element e;
  bool end = false;
  while ((*it)->GetNext(&e, &end).ok() && !end) ++count;
  EXPECT_EQ(count, 6);
  std::vector<StageStats> stats = (*it)->Stats();
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[0].stage, "Range");
  EXPECT_EQ(stats[1].stage, "ParallelMap");
  EXPECT_EQ(stats[1].parallelism, 2);
  EXPECT_EQ(stats[2].skipped, 3);
  EXPECT_EQ(stats[2].elements, 6);
}

TEST(DatasetTest, PrefetchGivesTheSameSequence) {
  Dataset base = RangeOf(0, 50).Map(SlowSquare(), 2).Batch(4);
  std::vector<Element> plain = Drain(base, DatasetPool(2));
  for (int64_t buffer : {int64_t{1}, int64_t{3}, int64_t{kAutotune}}) {
    std::vector<Element> ahead = Drain(base.Prefetch(buffer), DatasetPool(2));
    ASSERT_EQ(plain.size(), ahead.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_TRUE(plain[i][0].BitwiseEqual(ahead[i][0]));
    }
  }
}

TEST(DatasetTest, PrefetchedParallelMapOnOneThreadDoesNotDeadlock) {
  // The driver waits on the blocking pool, the map calls run on the single
  // inter-op worker, and the consumer waits on its own thread.
  Dataset ds = RangeOf(0, 30)
                   .Map(SlowSquare(), 4)
                   .Prefetch(2)
                   .Map(SlowSquare(), 2)
                   .Prefetch(1);
  EXPECT_EQ(Drain(ds, DatasetPool(1)).size(), 30u);
}

TEST(DatasetTest, AnIteratorDroppedMidwayStopsItsWork) {
  Dataset ds = RangeOf(0, 1000).Map(SlowSquare(), 4).Prefetch(8);
  for (int i = 0; i < 5; ++i) {
    auto it = ds.MakeIterator({.pool = DatasetPool(2)});
    ASSERT_TRUE(it.ok());
    Element e;
    bool end = false;
    ASSERT_TRUE((*it)->GetNext(&e, &end).ok());
  }
}

TEST(DatasetTest, MemoryCacheRunsTheStagesBeforeItOnce) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  MapFn counted = [calls](Element e) -> StatusOr<Element> {
    calls->fetch_add(1);
    return e;
  };
  Dataset ds = RangeOf(0, 5).Map(counted).Cache();
  EXPECT_EQ(DatasetInts(Drain(ds.Repeat(3))).size(), 15u);
  EXPECT_EQ(calls->load(), 5);
}

class DatasetFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("weft_data_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  std::filesystem::path dir_;
};

TEST_F(DatasetFilesTest, ListFilesSortsAndShufflesBySeed) {
  for (const char* name : {"c.txt", "a.txt", "b.txt", "d.bin"})
    Write(name, name);
  auto ds = Dataset::ListFiles((dir_ / "*.txt").string());
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::vector<std::string> names;
  for (const Element& e : Drain(ds->Map(ReadFileFn()))) {
    names.push_back(*e[0].data<std::string>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a.txt", "b.txt", "c.txt"}));

  auto shuffled = Dataset::ListFiles((dir_ / "*.txt").string(), true, 5);
  auto again = Dataset::ListFiles((dir_ / "*.txt").string(), true, 5);
  auto paths = [](const std::vector<Element>& es) {
    std::vector<std::string> out;
    for (const Element& e : es) out.push_back(*e[0].data<std::string>());
    return out;
  };
  EXPECT_EQ(paths(Drain(*shuffled)), paths(Drain(*again)));

  auto none = Dataset::ListFiles((dir_ / "*.png").string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("*.png"), std::string::npos);
}

TEST_F(DatasetFilesTest, ReadFileNamesAMissingFile) {
  auto ds = Dataset::FromTensorSlices(
      {Tensor::FromVector<std::string>({1}, {(dir_ / "gone.jpg").string()})});
  auto it = ds->Map(ReadFileFn()).MakeIterator();
  Element e;
  bool end = false;
  Status s = (*it)->GetNext(&e, &end);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gone.jpg"), std::string::npos) << s;
  EXPECT_NE(s.message().find("No such file"), std::string::npos) << s;
}

TEST_F(DatasetFilesTest, ReadNpyReadsArrays) {
  ASSERT_TRUE(WriteNpy((dir_ / "x.npy").string(),
                       Tensor::FromVector<float>({2}, {1.5f, 2.5f}))
                  .ok());
  auto ds = Dataset::ListFiles((dir_ / "*.npy").string());
  std::vector<Element> out = Drain(ds->Map(ReadNpyFn()));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0].data<float>()[1], 2.5f);
}

TEST_F(DatasetFilesTest, FileCacheIsWrittenOnceAndReplayed) {
  const std::string path = (dir_ / "cache").string();
  auto calls = std::make_shared<std::atomic<int>>(0);
  MapFn labelled = [calls](Element e) -> StatusOr<Element> {
    calls->fetch_add(1);
    const int64_t x = *e[0].data<int64_t>();
    return Element{e[0],
                   Tensor::Scalar<std::string>("item" + std::to_string(x))};
  };
  std::vector<Element> first = Drain(RangeOf(0, 4).Map(labelled).Cache(path));
  EXPECT_TRUE(std::filesystem::exists(path));
  // A new dataset (a later process) reads the file instead of mapping.
  std::vector<Element> second = Drain(RangeOf(0, 4).Map(labelled).Cache(path));
  EXPECT_EQ(calls->load(), 4);
  ASSERT_EQ(second.size(), 4u);
  EXPECT_EQ(*second[3][1].data<std::string>(), "item3");
  EXPECT_EQ(DatasetInts(second), DatasetInts(first));

  // A pass dropped before its end leaves no cache behind.
  const std::string partial = (dir_ / "partial").string();
  {
    auto it = RangeOf(0, 4).Cache(partial).MakeIterator();
    Element e;
    bool end = false;
    ASSERT_TRUE((*it)->GetNext(&e, &end).ok());
  }
  EXPECT_FALSE(std::filesystem::exists(partial));
  EXPECT_FALSE(std::filesystem::exists(partial + ".partial"));
}

// A graph map squaring pairs of floats, and two such pairs to map.
StatusOr<MapFn> SquareGraphFn() {
  Graph g;
  std::string x = g.Placeholder("x", DataType::kFloat32, PartialShape({2}));
  g.Mul("y", x, x);
  return GraphFn(std::move(g), {"x"}, {"y"});
}

Dataset TwoPairs() {
  return Dataset::FromTensorSlices(
             {Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4})})
      .value();
}

TEST(DatasetTest, GraphFnRunsAGraphPerElement) {
  auto fn = SquareGraphFn();
  ASSERT_TRUE(fn.ok()) << fn.status();
  auto ds = TwoPairs();
  std::vector<Element> out = Drain(ds.Map(*fn, 2), DatasetPool(2));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1][0].data<float>()[1], 16.0f);
  EXPECT_EQ(RangeOf(0, 2).Map(*fn).Batch(2).DebugString(),
            "Range -> Map -> Batch");
}

// Item 3 of the input-pipeline issue: a map call computing counts against
// the core budget as a kernel does, wherever it runs (the consumer's
// thread, or the pool's); a blocking one (it waits) does not; a graph map
// gives its count back while its own kernels run, so nothing counts twice.
TEST(DatasetTest, MapCallsCountAgainstTheCoreBudgetWhileTheyCompute) {
  std::atomic<int> least_seen{1 << 20};
  const MapFn observe = [&least_seen](Element e) -> StatusOr<Element> {
    int seen = least_seen.load();
    const int now = KernelsComputingNow();
    while (now < seen && !least_seen.compare_exchange_weak(seen, now)) {
    }
    return e;
  };
  ASSERT_EQ(KernelsComputingNow(), 0);
  EXPECT_EQ(Drain(RangeOf(0, 4).Map(observe)).size(), 4u);
  EXPECT_EQ(least_seen.load(), 1) << "sequential map on the test's thread";
  least_seen = 1 << 20;
  EXPECT_EQ(Drain(RangeOf(0, 8).Map(observe, 2), DatasetPool(2)).size(), 8u);
  EXPECT_GE(least_seen.load(), 1) << "parallel map on the pool";
  least_seen = 1 << 20;
  EXPECT_EQ(
      Drain(RangeOf(0, 4).Map(observe, 0, true, /*blocking=*/true)).size(), 4u);
  EXPECT_EQ(least_seen.load(), 0) << "a blocking map waits: not counted";
  {
    ComputingScope outer;  // as on a kernel's thread
    ComputingScope nested;
    EXPECT_EQ(KernelsComputingNow(), 1) << "a thread counts once";
    least_seen = 1 << 20;
    EXPECT_EQ(Drain(RangeOf(0, 2).Map(observe)).size(), 2u);
    EXPECT_EQ(least_seen.load(), 1) << "a map on a counted thread";
  }
  EXPECT_EQ(KernelsComputingNow(), 0);
}

TEST(DatasetTest, AGraphMapsCallDoesNotCountTwice) {
  auto fn = SquareGraphFn();
  ASSERT_TRUE(fn.ok()) << fn.status();
  std::atomic<int> most_seen{0};
  const MapFn after = [&most_seen](Element e) -> StatusOr<Element> {
    most_seen = std::max(most_seen.load(), KernelsComputingNow());
    return e;
  };
  EXPECT_EQ(Drain(TwoPairs().Map(*fn).Map(after)).size(), 2u);
  EXPECT_EQ(most_seen.load(), 1);
  EXPECT_EQ(KernelsComputingNow(), 0) << "every count given back";
}

}  // namespace
}  // namespace weft::data
