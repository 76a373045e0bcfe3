// The executor's scheduling: independent branches overlap on the inter-op
// pool, and do not with one inter-op thread; cost estimates move both ways.
//
// Tests named *TimingTest measure wall time on the whole machine; ctest runs
// them alone (RUN_SERIAL, see tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/compiled_graph.h"
#include "test_support/session_util.h"

namespace weft {
namespace {

constexpr int64_t kBranchMicros = 50'000;  // 50 ms of CPU per branch.

Graph TwoSpinBranches() {
  Graph g;
  auto left = g.Spin("left", kBranchMicros);
  auto right = g.Spin("right", kBranchMicros);
  g.Add("join", left, right);
  return g;
}

struct BranchRun {
  const NodeExecStats* left = nullptr;
  const NodeExecStats* right = nullptr;
  double wall_ms = 0;
};

BranchRun RunBranches(Session& session, RunMetadata* metadata) {
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> out;
  const auto start = std::chrono::steady_clock::now();
  Status s = session.Run(options, {}, {"join"}, {}, &out, metadata);
  BranchRun run;
  run.wall_ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  EXPECT_TRUE(s.ok()) << s;
  for (const NodeExecStats& stats : metadata->node_stats) {
    if (stats.node_name == "left") run.left = &stats;
    if (stats.node_name == "right") run.right = &stats;
  }
  return run;
}

bool Overlap(const NodeExecStats& a, const NodeExecStats& b) {
  return a.start_ns < b.end_ns && b.start_ns < a.end_ns;
}

TEST(ExecutorTimingTest, TwoInterThreadsRunIndependentBranchesAtOnce) {
  auto session =
      test::MustCreate(TwoSpinBranches(), test::PerSessionOptions(2, 1));
  test::MustRun(*session, {"join"});  // Warm up: threads started, costs known.
  // Best of three: the machine may be busy for a moment.
  double best_ms = 1e9;
  bool overlapped = false;
  for (int attempt = 0; attempt < 3; ++attempt) {
    RunMetadata metadata;
    BranchRun run = RunBranches(*session, &metadata);
    ASSERT_NE(run.left, nullptr);
    ASSERT_NE(run.right, nullptr);
    overlapped = overlapped || Overlap(*run.left, *run.right);
    EXPECT_NE(run.left->os_thread_id, run.right->os_thread_id);
    best_ms = std::min(best_ms, run.wall_ms);
  }
  EXPECT_TRUE(overlapped);
  EXPECT_LT(best_ms, 1.5 * kBranchMicros / 1000.0);
}

TEST(ExecutorTimingTest, OneInterThreadRunsBranchesOneAfterTheOther) {
  auto session =
      test::MustCreate(TwoSpinBranches(), test::PerSessionOptions(1, 1));
  RunMetadata metadata;
  BranchRun run = RunBranches(*session, &metadata);
  ASSERT_NE(run.left, nullptr);
  ASSERT_NE(run.right, nullptr);
  EXPECT_FALSE(Overlap(*run.left, *run.right));
  EXPECT_EQ(run.left->os_thread_id, run.right->os_thread_id);
  EXPECT_GE(run.wall_ms, 2.0 * kBranchMicros / 1000.0 * 0.95);
}

TEST(ExecutorTest, CostEstimateMovesBothWays) {
  Graph g;
  g.Spin("s", 1000);
  auto compiled = internal::CompiledGraph::Compile(g, {});
  ASSERT_TRUE(compiled.ok());
  const internal::CompiledGraph& graph = **compiled;
  const double initial = graph.cost_ns(0);
  EXPECT_NEAR(initial, 1e6, 1);  // Spin's own estimate: micros * 1000.
  for (int i = 0; i < 50; ++i) graph.RecordCost(0, 10.0);
  EXPECT_LT(graph.cost_ns(0), 100.0);
  for (int i = 0; i < 50; ++i) graph.RecordCost(0, 1e7);
  EXPECT_GT(graph.cost_ns(0), 1e6);
}

TEST(ExecutorTest, OneOutlierDoesNotMakeACheapNodeExpensive) {
  Graph g;
  g.Spin("s", 0);
  auto compiled = internal::CompiledGraph::Compile(g, {});
  ASSERT_TRUE(compiled.ok());
  const internal::CompiledGraph& graph = **compiled;
  for (int i = 0; i < 50; ++i) graph.RecordCost(0, 20.0);
  graph.RecordCost(0, 50'000.0);  // A preemption in mid-kernel.
  EXPECT_LT(graph.cost_ns(0), SessionOptions{}.inline_node_cost_ns);
}

TEST(ExecutorTest, LongChainCompletesWithEveryThreadSetting) {
  Graph g;
  std::string last = g.Const("c0", Tensor::Scalar<float>(1));
  auto one = g.Const("one", Tensor::Scalar<float>(1));
  for (int i = 1; i <= 300; ++i)
    last = g.Add("a" + std::to_string(i), last, one);
  for (int inter : {-1, 1, 2, 4}) {
    auto session = test::MustCreate(g, test::PerSessionOptions(inter, 1));
    auto out = test::MustRun(*session, {last});
    EXPECT_EQ(out[0].data<float>()[0], 301.0f) << "inter=" << inter;
  }
}

TEST(ExecutorTest, WideGraphCompletesWithEveryThreadSetting) {
  Graph g;
  std::vector<std::string> level;
  for (int i = 0; i < 200; ++i) {
    level.push_back(
        g.Const("c" + std::to_string(i), Tensor::Scalar<int64_t>(i)));
  }
  int id = 0;
  while (level.size() > 1) {
    std::vector<std::string> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) {
      next.push_back(g.Add("s" + std::to_string(id++), level[i], level[i + 1]));
    }
    if (level.size() % 2) next.push_back(level.back());
    level.swap(next);
  }
  for (int inter : {-1, 1, 2, 8}) {
    auto session = test::MustCreate(g, test::PerSessionOptions(inter, 2));
    auto out = test::MustRun(*session, {level[0]});
    EXPECT_EQ(out[0].data<int64_t>()[0], 199 * 200 / 2) << "inter=" << inter;
  }
}

}  // namespace
}  // namespace weft
