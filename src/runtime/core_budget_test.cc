// The core budget: intra-op helpers shrink as more kernels run at once.
#include "runtime/core_budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "test_support/session_util.h"
#include "weft/threading.h"

namespace weft {
namespace {

using internal::CoreBudget;

TEST(CoreBudgetTest, HelpersShrinkWithRunningKernelsAndWaitersGiveCoresBack) {
  const int budget = std::max(AutoCpuBudget().threads, 8);
  CoreBudget::Running self;  // The kernel asking.
  EXPECT_EQ(CoreBudget::HelpersAllowed(7, 8), std::min(7, budget - 1));
  {
    CoreBudget::Running other1, other2;
    EXPECT_EQ(CoreBudget::HelpersAllowed(7, 8), std::min(7, budget - 3));
    {
      CoreBudget::Waiting blocked;  // other2 waits: its core is free.
      EXPECT_EQ(CoreBudget::HelpersAllowed(7, 8), std::min(7, budget - 2));
    }
  }
  // Never more than the pool has, never negative.
  EXPECT_EQ(CoreBudget::HelpersAllowed(1, 8), 1);
  CoreBudget::Running crowd[1024];
  EXPECT_EQ(CoreBudget::HelpersAllowed(7, 8), 0);
}

// Two branches of chained MatMuls. Run alone (inter = 1), every MatMul
// gets the session's full intra width; run concurrently (inter = 2, intra =
// 2 on a 2-core budget), MatMuls that overlap get no helper.
TEST(CoreBudgetTest, ShardCountsInRunMetadataFollowConcurrentLoad) {
  const int cores = AutoCpuBudget().threads;
  if (cores < 2) GTEST_SKIP() << "needs a budget of at least 2 cores";
  Graph g;
  std::string left = g.RandomUniform("x", DataType::kFloat32, {384, 384}, 1);
  std::string right = left;
  for (int i = 0; i < 4; ++i) {
    left = g.MatMul("left" + std::to_string(i), left, left);
    right = g.MatMul("right" + std::to_string(i), right, right);
  }
  g.Add("join", left, right);
  RunOptions trace;
  trace.trace_level = RunOptions::TraceLevel::kFull;
  auto matmul_shards = [&](int inter) {
    auto session = test::MustCreate(g, test::PerSessionOptions(inter, cores));
    std::vector<Tensor> out;
    RunMetadata metadata;
    EXPECT_TRUE(session->Run(trace, {}, {"join"}, {}, &out, &metadata).ok());
    std::vector<int> shards;
    for (const NodeExecStats& s : metadata.node_stats) {
      if (s.op == "MatMul") shards.push_back(s.intra_op_shards);
    }
    EXPECT_EQ(shards.size(), 8u);
    return shards;
  };
  const std::vector<int> alone = matmul_shards(/*inter=*/1);
  for (int shards : alone) {
    EXPECT_GT(shards, 1);
    EXPECT_EQ(shards, alone[0]);
  }
  const std::vector<int> concurrent = matmul_shards(/*inter=*/2);
  EXPECT_LT(*std::min_element(concurrent.begin(), concurrent.end()), alone[0])
      << "no MatMul gave up a helper while the other branch ran";
}

// A MatMul that starts while a Spin holds the other core gets no helper;
// when the Spin ends, the freed core joins it (a late helper), so its
// blocks run on two threads after all.
TEST(CoreBudgetTest, ACoreFreedWhileAKernelRunsJoinsIt) {
  const int cores = AutoCpuBudget().threads;
  if (cores < 2) GTEST_SKIP() << "needs a budget of at least 2 cores";
  Graph g;
  const std::string x = g.Placeholder("x", DataType::kFloat32, {768, 768});
  // Both Spins are roots and start together; the MatMul (~10 ms on one
  // core of the reference VM, far longer under a sanitizer) follows the
  // short one, so it starts while the long one still holds a core.
  g.Spin("long_spin", 3000);
  const std::string gate = g.Spin("gate", 100);
  g.AddNode({"product", "MatMul", {x, x, "^" + gate}, {}, ""});
  // intra = 2: the MatMul can use one helper. On two cores the Spin leaves
  // it none at first; on more cores it has one from the start.
  auto session = test::MustCreate(g, test::PerSessionOptions(2, 2));
  Tensor value(DataType::kFloat32, {768, 768});
  for (int64_t i = 0; i < value.NumElements(); ++i) {
    value.data<float>()[i] = 0.5f;
  }
  int overlapping_runs = 0;
  for (int attempt = 0; attempt < 10 && overlapping_runs < 3; ++attempt) {
    const RunMetadata metadata =
        test::MustRunTraced(*session, {"product", "long_spin"}, {{"x", value}});
    const NodeExecStats* product = nullptr;
    const NodeExecStats* spin = nullptr;
    for (const NodeExecStats& s : metadata.node_stats) {
      if (s.node_name == "product") product = &s;
      if (s.node_name == "long_spin") spin = &s;
    }
    ASSERT_NE(product, nullptr);
    ASSERT_NE(spin, nullptr);
    // Only a Run where the MatMul started while the Spin ran, and ran on
    // after it ended, shows the late helper.
    if (!(spin->start_ns < product->start_ns &&
          product->start_ns < spin->end_ns && spin->end_ns < product->end_ns)) {
      continue;
    }
    ++overlapping_runs;
    std::set<int64_t> threads;
    for (const ShardExecStats& shard : product->shards) {
      threads.insert(shard.os_thread_id);
    }
    EXPECT_EQ(threads.size(), 2u) << "no thread joined the MatMul";
    EXPECT_EQ(product->intra_op_shards, 2);
  }
  EXPECT_GT(overlapping_runs, 0) << "the MatMul never overlapped the Spin";
}

}  // namespace
}  // namespace weft
