// The core budget: intra-op helpers shrink as more kernels run at once.
#include "runtime/core_budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "test_support/session_util.h"
#include "test_support/wait.h"
#include "weft/threading.h"

namespace weft {
namespace {

using internal::CoreBudget;

TEST(CoreBudgetTest, PausedHereGivesACountedThreadsCoreBackAndNoOtherOne) {
  ASSERT_EQ(CoreBudget::running(), 0);
  {
    CoreBudget::PausedHere outside;  // this thread does not count: no-op
    EXPECT_EQ(CoreBudget::running(), 0);
    EXPECT_FALSE(CoreBudget::CountsHere());
  }
  EXPECT_EQ(CoreBudget::running(), 0);
  CoreBudget::Running kernel;
  EXPECT_TRUE(CoreBudget::CountsHere());
  {
    CoreBudget::PausedHere paused;
    EXPECT_EQ(CoreBudget::running(), 0);
    EXPECT_FALSE(CoreBudget::CountsHere());
    CoreBudget::Running nested;  // a Run's kernel on this thread
    EXPECT_EQ(CoreBudget::running(), 1);
  }
  EXPECT_EQ(CoreBudget::running(), 1);
  EXPECT_TRUE(CoreBudget::CountsHere());
}

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
// 2 on a 2-core budget), MatMuls that overlap get no helper at their start.
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
    SessionOptions options = test::PerSessionOptions(inter, cores);
    options.optimize_graph = false;  // Keep "join" an Add: 8 MatMuls.
    auto session = test::MustCreate(g, options);
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
  // The branches overlap only if the OS runs the second inter-op worker
  // while the first computes; on a loaded machine (ctest -j) a woken worker
  // can wait milliseconds for a core, and the branches then run one after
  // the other. One overlapping Run out of a few shows the budget at work.
  // Five tries failed 3 times in 20 on a 16-CPU Xeon whose other cores ran
  // six more jobs (its fp32 products take ~0.3 ms each there): up to 25,
  // the loop ending at the first overlap.
  int fewest = alone[0];
  for (int attempt = 0; attempt < 25 && fewest >= alone[0]; ++attempt) {
    const std::vector<int> concurrent = matmul_shards(/*inter=*/2);
    fewest = *std::min_element(concurrent.begin(), concurrent.end());
  }
  EXPECT_LT(fewest, alone[0])
      << "no MatMul gave up a helper while the other branch ran";
}

// A kernel that starts while another holds the second core gets no helper;
// when that kernel ends, the freed core joins it (a late helper): the
// holder's own thread, already on that core, not an intra-op worker woken
// there (the scheduler may queue that one behind a busy core). Two custom
// functions fix the order whatever else loads the machine: the holder keeps
// its core until the waiter is inside its ParallelFor, and the waiter's
// first block waits there until another thread has run a block. Without a
// late helper nobody comes, and the waiter fails at its deadline.
struct LateHelperScene {
  std::atomic<bool> holder_running{false};
  std::atomic<bool> waiter_in_parallel_for{false};
  std::atomic<bool> helper_joined{false};
  std::atomic<std::thread::id> holder_thread{};
  std::atomic<bool> helper_was_holder{false};
  // For a third root, queued in the inter-op pool while the other two run.
  std::atomic<bool> queued_ran{false};
  std::atomic<bool> queued_found_helper{false};
};
LateHelperScene scene;

// Polls `flag` for up to 20 s. A kernel polling still counts as running:
// only KernelContext::WaitFor gives its core back to the budget.
bool AwaitFlag(const std::atomic<bool>& flag) {
  return test::WaitFor([&] { return flag.load(std::memory_order_acquire); },
                       std::chrono::seconds(20));
}

Status HoldCore(KernelContext& ctx) {
  scene.holder_thread.store(std::this_thread::get_id());
  scene.holder_running.store(true, std::memory_order_release);
  if (!AwaitFlag(scene.waiter_in_parallel_for)) {
    return DeadlineExceededError("the waiter never reached its ParallelFor");
  }
  return ctx.SetOutput(0, Tensor::Scalar<float>(0));
}

Status WaitForLateHelper(KernelContext& ctx) {
  // Both cores of the budget are taken from here on: no helper at the start.
  if (!AwaitFlag(scene.holder_running)) {
    return DeadlineExceededError("the holder never ran beside the waiter");
  }
  const std::thread::id caller = std::this_thread::get_id();
  bool timed_out = false;
  // 16 units of 100 µs: enough to share, and to take a late helper
  // (internal::kLateHelperMinNs).
  ctx.ParallelFor(16, 100'000, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() != caller) {
      scene.helper_was_holder.store(std::this_thread::get_id() ==
                                    scene.holder_thread.load());
      scene.helper_joined.store(true, std::memory_order_release);
    } else if (!scene.waiter_in_parallel_for.exchange(true)) {
      timed_out = !AwaitFlag(scene.helper_joined);  // The first block.
    }
  });
  if (timed_out) return DeadlineExceededError("no thread joined the waiter");
  return ctx.SetOutput(0, Tensor::Scalar<float>(0));
}

Status RecordQueuedRun(KernelContext& ctx) {
  scene.queued_found_helper.store(scene.helper_joined.load());
  scene.queued_ran.store(true);
  return ctx.SetOutput(0, Tensor::Scalar<float>(0));
}

// The scene's graph: a holder and a waiter as roots, and with
// `queued_root` a third root that records its start. Each root's cost is
// unknown before its first Run, so each is worth a thread: the start task
// keeps the holder and queues the others on its worker's deque, oldest
// first, where the other worker steals the oldest (the waiter).
std::unique_ptr<Session> MakeLateHelperScene(bool queued_root) {
  static const bool registered =
      RegisterCustomFunction("test.hold_core", HoldCore).ok() &&
      RegisterCustomFunction("test.wait_for_late_helper", WaitForLateHelper)
          .ok() &&
      RegisterCustomFunction("test.record_queued_run", RecordQueuedRun).ok();
  EXPECT_TRUE(registered);
  scene.holder_running = false;
  scene.waiter_in_parallel_for = false;
  scene.helper_joined = false;
  scene.helper_was_holder = false;
  scene.queued_ran = false;
  scene.queued_found_helper = false;
  auto custom = [](const std::string& function) {
    return AttrMap{{"function", function},
                   {"Tout", std::vector<DataType>{DataType::kFloat32}}};
  };
  Graph g;
  test::MustAdd(g, {"holder", "CustomOp", {}, custom("test.hold_core"), ""});
  test::MustAdd(
      g, {"waiter", "CustomOp", {}, custom("test.wait_for_late_helper"), ""});
  if (queued_root) {
    test::MustAdd(
        g, {"queued", "CustomOp", {}, custom("test.record_queued_run"), ""});
  }
  // inter = 2 runs two roots at once; intra = 2 gives one intra-op worker,
  // which only the late helper can bring in.
  return test::MustCreate(g, test::PerSessionOptions(2, 2));
}

TEST(CoreBudgetTest, ACoreFreedWhileAKernelRunsJoinsIt) {
  if (AutoCpuBudget().threads != 2) {
    GTEST_SKIP() << "needs a budget of exactly 2 cores, so that the holder "
                    "leaves the waiter no helper at its start";
  }
  auto session = MakeLateHelperScene(/*queued_root=*/false);
  ASSERT_NE(session, nullptr);
  test::MustRun(*session, {"holder", "waiter"});
  EXPECT_TRUE(scene.helper_joined.load());
  EXPECT_TRUE(scene.helper_was_holder.load());
}

// A core freed while a node waits in the inter-op pool runs that node
// first, and joins the kernel only after: a node run whole costs less than
// a kernel's share split over two threads.
TEST(CoreBudgetTest, AFreedCoreRunsAWaitingNodeBeforeJoiningAKernel) {
  if (AutoCpuBudget().threads != 2) {
    GTEST_SKIP() << "needs a budget of exactly 2 cores, so that the holder "
                    "leaves the waiter no helper at its start";
  }
  auto session = MakeLateHelperScene(/*queued_root=*/true);
  ASSERT_NE(session, nullptr);
  test::MustRun(*session, {"holder", "waiter", "queued"});
  EXPECT_TRUE(scene.queued_ran.load());
  EXPECT_FALSE(scene.queued_found_helper.load())
      << "the freed core joined the waiter before running the queued node";
  EXPECT_TRUE(scene.helper_joined.load());
}

}  // namespace
}  // namespace weft
