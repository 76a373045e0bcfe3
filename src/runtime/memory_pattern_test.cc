// The memory pattern (SessionOptions::enable_mem_pattern): a steady Run of a
// CNN takes its intermediate tensors from its arena, not the heap; results
// are those of the heap; tensors that outlive their planned life (an alias
// fetched and held, a session closed under it) stay intact.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "test_support/session_util.h"

namespace weft {
namespace {

AttrMap ConvAttrs() {
  return {{"pads", AttrValue(std::vector<int64_t>{1, 1, 1, 1})}};
}

// x [1, 8, 20, 20] -> Conv -> Relu -> Conv -> Add (residual) -> MaxPool
// -> Conv -> GlobalAveragePool -> Flatten ("y"); also fetchable: "pool".
Graph MemoryPatternSmallCnn() {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({1, 8, 20, 20}));
  g.Const("w1", test::SeededFloats({8, 8, 3, 3}, 1));
  g.Const("w2", test::SeededFloats({8, 8, 3, 3}, 2));
  g.Const("w3", test::SeededFloats({16, 8, 3, 3}, 3));
  test::MustAdd(g, {"c1", "Conv", {"x", "w1"}, ConvAttrs(), ""});
  test::MustAdd(g, {"r1", "Relu", {"c1"}, {}, ""});
  test::MustAdd(g, {"c2", "Conv", {"r1", "w2"}, ConvAttrs(), ""});
  test::MustAdd(g, {"sum", "Add", {"c2", "r1"}, {}, ""});
  test::MustAdd(g, {"pool",
                    "MaxPool",
                    {"sum"},
                    {{"kernel_shape", AttrValue(std::vector<int64_t>{2, 2})},
                     {"strides", AttrValue(std::vector<int64_t>{2, 2})}},
                    ""});
  test::MustAdd(g, {"c3", "Conv", {"pool", "w3"}, ConvAttrs(), ""});
  test::MustAdd(g, {"gap", "GlobalAveragePool", {"c3"}, {}, ""});
  test::MustAdd(g, {"y", "Flatten", {"gap"}, {}, ""});
  return g;
}

SessionOptions MemoryPatternOptions(int inter, int intra, bool pattern) {
  SessionOptions options = test::PerSessionOptions(inter, intra);
  options.enable_mem_pattern = pattern;
  // The graph as given: every node above runs as written.
  options.optimize_graph = false;
  return options;
}

TEST(MemoryPatternTest, ASteadyRunTakesOnlyItsFetchFromTheHeap) {
  const Tensor x = test::SeededFloats({1, 8, 20, 20}, 9);
  auto heap = test::MustCreate(MemoryPatternSmallCnn(),
                               MemoryPatternOptions(1, 1, false));
  ASSERT_NE(heap, nullptr);
  const Tensor want = test::MustRun(*heap, {"y"}, {{"x", x}})[0];
  const RunMetadata heap_run = test::MustRunTraced(*heap, {"y"}, {{"x", x}});
  EXPECT_EQ(heap_run.arena_bytes, 0);
  EXPECT_GE(heap_run.heap_tensors, 8);  // Every node's output.

  for (const auto& [inter, intra] :
       std::vector<std::pair<int, int>>{{-1, 1}, {1, 2}, {2, 2}}) {
    SCOPED_TRACE("inter " + std::to_string(inter) + " intra " +
                 std::to_string(intra));
    auto session = test::MustCreate(MemoryPatternSmallCnn(),
                                    MemoryPatternOptions(inter, intra, true));
    ASSERT_NE(session, nullptr);
    // The first Run records the sizes, from the heap.
    const RunMetadata first = test::MustRunTraced(*session, {"y"}, {{"x", x}});
    EXPECT_EQ(first.arena_bytes, 0);
    EXPECT_EQ(first.heap_tensors, heap_run.heap_tensors);
    for (int run = 0; run < 3; ++run) {
      const RunMetadata steady =
          test::MustRunTraced(*session, {"y"}, {{"x", x}});
      // Flatten passes GlobalAveragePool's buffer on as the fetch, so that
      // buffer is the caller's: the only one from the heap.
      EXPECT_EQ(steady.heap_tensors, 1);
      EXPECT_GT(steady.arena_bytes, 0);
      // Tensors whose lives cannot overlap share: less than the sum.
      EXPECT_LT(steady.arena_bytes, heap_run.heap_tensor_bytes);
      EXPECT_TRUE(
          test::MustRun(*session, {"y"}, {{"x", x}})[0].BitwiseEqual(want));
    }
  }
}

// "pool" is fetched here, so it is the caller's; the Runs' other tensors
// reuse the arena while the caller still holds earlier outputs.
TEST(MemoryPatternTest, HeldOutputsSurviveLaterRunsAndTheSession) {
  auto reference = test::MustCreate(MemoryPatternSmallCnn(),
                                    MemoryPatternOptions(1, 1, false));
  auto session = test::MustCreate(MemoryPatternSmallCnn(),
                                  MemoryPatternOptions(2, 2, true));
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(session, nullptr);
  std::vector<std::vector<Tensor>> held, want;
  for (int run = 0; run < 5; ++run) {
    const NamedTensors feeds = {
        {"x", test::SeededFloats({1, 8, 20, 20}, 20 + run)}};
    held.push_back(test::MustRun(*session, {"y", "pool", "c3"}, feeds));
    want.push_back(test::MustRun(*reference, {"y", "pool", "c3"}, feeds));
  }
  session.reset();  // Its arenas go; what the caller holds stays.
  for (size_t run = 0; run < held.size(); ++run) {
    for (size_t k = 0; k < held[run].size(); ++k) {
      EXPECT_TRUE(held[run][k].BitwiseEqual(want[run][k]))
          << "run " << run << " fetch " << k;
    }
  }
}

// Runs of one session from several threads at once each have their own
// arena (ThreadSanitizer checks the slots' hand-over).
TEST(MemoryPatternTest, ConcurrentRunsKeepTheirOwnTensors) {
  auto reference = test::MustCreate(MemoryPatternSmallCnn(),
                                    MemoryPatternOptions(1, 1, false));
  auto session = test::MustCreate(MemoryPatternSmallCnn(),
                                  MemoryPatternOptions(2, 2, true));
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(session, nullptr);
  constexpr int kThreads = 3;
  std::vector<Tensor> feeds, want;
  for (int t = 0; t < kThreads; ++t) {
    feeds.push_back(test::SeededFloats({1, 8, 20, 20}, 40 + t));
    want.push_back(test::MustRun(*reference, {"y"}, {{"x", feeds[t]}})[0]);
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int run = 0; run < 20; ++run) {
        std::vector<Tensor> out;
        if (!session->Run({{"x", feeds[t]}}, {"y"}, {}, &out).ok() ||
            !out[0].BitwiseEqual(want[t])) {
          ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0);
}

// A larger feed than the one the sizes were recorded with: what does not
// fit comes from the heap, and the result is right.
TEST(MemoryPatternTest, ALargerFeedThanRecordedFallsBackToTheHeap) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({-1, 64}));
  g.Const("w", test::SeededFloats({64, 64}, 5));
  test::MustAdd(g, {"h", "MatMul", {"x", "w"}, {}, ""});
  test::MustAdd(g, {"r", "Relu", {"h"}, {}, ""});
  test::MustAdd(g, {"y", "MatMul", {"r", "w"}, {}, ""});
  auto reference = test::MustCreate(g, MemoryPatternOptions(1, 1, false));
  auto session = test::MustCreate(g, MemoryPatternOptions(1, 1, true));
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(session, nullptr);
  for (int64_t rows : {4, 4, 40, 4}) {
    const NamedTensors feeds = {{"x", test::SeededFloats({rows, 64}, 7)}};
    EXPECT_TRUE(test::MustRun(*session, {"y"}, feeds)[0].BitwiseEqual(
        test::MustRun(*reference, {"y"}, feeds)[0]))
        << rows << " rows";
  }
}

// A tensor that leaves its Run by another way than a fetch (here a queue)
// keeps its slot busy: later Runs take the heap for it instead of writing
// over it, and its memory outlives the session.
TEST(MemoryPatternTest, ATensorKeptByAQueueIsNeverOverwritten) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({256}));
  test::MustAdd(g, {"r", "Relu", {"x"}, {}, ""});
  test::MustAdd(g, {"e", "QueueEnqueue", {"r"}, test::QueueAttrs("q"), ""});
  test::MustAdd(g, {"d", "QueueDequeue", {}, test::QueueAttrs("q"), ""});
  auto session = test::MustCreate(g, MemoryPatternOptions(1, 1, true));
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> fed;
  for (int run = 0; run < 4; ++run) {
    fed.push_back(test::SeededFloats({256}, 60 + run));
    std::vector<Tensor> unused;
    ASSERT_TRUE(session->Run({{"x", fed.back()}}, {}, {"e"}, &unused).ok());
  }
  std::vector<Tensor> dequeued;
  for (int run = 0; run < 4; ++run) {
    dequeued.push_back(test::MustRun(*session, {"d"})[0]);
  }
  session.reset();
  for (int run = 0; run < 4; ++run) {
    const float* got = dequeued[run].data<float>();
    const float* x = fed[run].data<float>();
    for (int i = 0; i < 256; ++i) {
      ASSERT_EQ(got[i], std::max(x[i], 0.0f)) << "run " << run << " at " << i;
    }
  }
}

}  // namespace
}  // namespace weft
