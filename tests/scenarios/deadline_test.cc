// Deadlines and cancellation end a Run within the timeout + 50 ms, also
// while it waits in a blocking op or runs a long ParallelFor; Close() ends
// Runs in flight with Cancelled.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "test_support/sanitizers.h"
#include "test_support/session_util.h"

namespace weft {
namespace {

using test::MustCreate;
using test::PerSessionOptions;
using test::QueueAttrs;
using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

// The promise is the timeout + 50 ms. Under the sanitizers a kernel block
// runs 10-50x slower and their runtimes add threads of their own; there the
// tests check that the Run ends, with a slack that says nothing about speed.
constexpr double kSlackMs = test::kUnderSanitizer ? 5000 : 50;
constexpr int64_t kMatrix = test::kUnderSanitizer ? 512 : 2048;

Graph EmptyQueueDequeue() {
  Graph g;
  test::MustAdd(g, {"d", "QueueDequeue", {}, QueueAttrs("never_fed"), ""});
  return g;
}

// A chain of large MatMuls: seconds of work, one ParallelFor per node. The
// chain is long enough to outlast the deadline even where the product tiles
// are an uninstrumented library (BLIS) running at full speed under the
// sanitizers: 200 products of 512 are about 0.5 s on one core at 100 GFLOP/s.
Graph LongMatMuls() {
  Graph g;
  std::string h =
      g.RandomUniform("w", DataType::kFloat32, {kMatrix, kMatrix}, 1);
  for (int i = 0; i < 200; ++i) h = g.MatMul("m" + std::to_string(i), h, h);
  g.Identity("out", h);
  return g;
}

// Runs and returns (status, elapsed ms).
std::pair<Status, double> TimedRun(Session& session, const RunOptions& options,
                                   const std::string& fetch) {
  std::vector<Tensor> out;
  RunMetadata metadata;
  const auto start = Clock::now();
  Status s = session.Run(options, {}, {fetch}, {}, &out, &metadata);
  return {
      s,
      std::chrono::duration<double, std::milli>(Clock::now() - start).count()};
}

TEST(DeadlineTimingTest, TimeoutEndsAWaitInADequeue) {
  for (int inter : {-1, 1, 2}) {
    auto session = MustCreate(EmptyQueueDequeue(), PerSessionOptions(inter, 1));
    RunOptions options;
    options.timeout_ms = 100;
    auto [s, ms] = TimedRun(*session, options, "d");
    EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
    EXPECT_THAT(s.message(), HasSubstr("deadline of 100 ms"));
    EXPECT_LT(ms, 100 + kSlackMs) << "inter=" << inter;
  }
}

TEST(DeadlineTimingTest, OperationTimeoutEndsAWaitInADequeue) {
  SessionOptions options = PerSessionOptions(1, 1);
  options.operation_timeout_ms = 80;
  auto session = MustCreate(EmptyQueueDequeue(), options);
  auto [s, ms] = TimedRun(*session, RunOptions{}, "d");
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
  EXPECT_LT(ms, 80 + kSlackMs);
}

TEST(DeadlineTimingTest, TimeoutEndsASleep) {
  Graph g;
  g.Sleep("nap", 10'000'000);  // 10 s
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  RunOptions options;
  options.timeout_ms = 60;
  auto [s, ms] = TimedRun(*session, options, "nap");
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
  EXPECT_LT(ms, 60 + kSlackMs);
}

TEST(DeadlineTimingTest, TimeoutEndsALongParallelFor) {
  for (int intra : {1, 2}) {
    auto session = MustCreate(LongMatMuls(), PerSessionOptions(1, intra));
    RunOptions options;
    options.timeout_ms = 50;
    auto [s, ms] = TimedRun(*session, options, "out");
    EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
    EXPECT_LT(ms, 50 + kSlackMs) << "intra=" << intra;
  }
}

std::atomic<int> g_waiting_kernels{0};

// A graph of a blocking CustomOp that counts itself into g_waiting_kernels
// and waits until cancelled, next to a dequeue from a queue nobody feeds:
// once the count reaches the number of Runs, every Run is surely inside.
Graph WaitingGraph() {
  static const bool registered =
      RegisterCustomFunction("deadline_test_wait", [](KernelContext& ctx) {
        ++g_waiting_kernels;
        if (!ctx.WaitFor(std::chrono::seconds(60))) {
          return CancelledError("cancelled while waiting");
        }
        return ctx.SetOutput(0, Tensor::Scalar<float>(1.0f));
      }).ok();
  EXPECT_TRUE(registered);
  Graph g = EmptyQueueDequeue();
  test::MustAdd(g, {"wait",
                    "CustomOp",
                    {},
                    {{"function", "deadline_test_wait"},
                     {"Tout", std::vector<DataType>{DataType::kFloat32}},
                     {"blocking", true}},
                    ""});
  return g;
}

TEST(DeadlineTimingTest, CloseCancelsRunsBlockedInADequeue) {
  g_waiting_kernels = 0;
  auto session = MustCreate(WaitingGraph(), PerSessionOptions(1, 1));
  constexpr int kRuns = 4;
  std::vector<std::thread> runs;
  std::vector<Status> results(kRuns);
  for (int i = 0; i < kRuns; ++i) {
    runs.emplace_back([&, i] {
      std::vector<Tensor> out;
      results[i] = session->Run({}, {"d", "wait"}, {}, &out);
    });
  }
  while (g_waiting_kernels.load() < kRuns) std::this_thread::yield();
  const auto start = Clock::now();
  EXPECT_TRUE(session->Close().ok());
  for (std::thread& t : runs) t.join();
  const double close_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  EXPECT_LT(close_ms, kSlackMs);
  for (const Status& s : results) {
    EXPECT_EQ(s.code(), StatusCode::kCancelled) << s;
  }
}

// A DeadlineExceeded a kernel returns (its own call timed out) is that
// kernel's error: it keeps its message and names its node, with or without
// a Run timeout, and is not reported as the Run's deadline.
TEST(DeadlineTest, AKernelsOwnDeadlineExceededKeepsItsMessage) {
  static const bool registered =
      RegisterCustomFunction("deadline_test_upstream", [](KernelContext&) {
        return DeadlineExceededError("the upstream service took too long");
      }).ok();
  ASSERT_TRUE(registered);
  Graph g;
  test::MustAdd(g, {"fetch_remote",
                    "CustomOp",
                    {},
                    {{"function", "deadline_test_upstream"},
                     {"Tout", std::vector<DataType>{DataType::kFloat32}}},
                    ""});
  for (int inter : {-1, 2}) {
    auto session = MustCreate(g, PerSessionOptions(inter, 1));
    for (int64_t timeout_ms : {0, 60'000}) {
      RunOptions options;
      options.timeout_ms = timeout_ms;
      auto [s, ms] = TimedRun(*session, options, "fetch_remote");
      EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
      EXPECT_THAT(s.message(), HasSubstr("the upstream service took too long"));
      EXPECT_THAT(s.message(), HasSubstr("fetch_remote"));
      EXPECT_THAT(s.message(), Not(HasSubstr("the Run exceeded")));
    }
  }
}

TEST(DeadlineTest, DestroyingASessionWithRunsInFlightEndsThem) {
  g_waiting_kernels = 0;
  constexpr int kRuns = 3;
  std::vector<Status> results(kRuns);
  std::vector<std::thread> runs;
  {
    auto session = MustCreate(WaitingGraph(), PerSessionOptions(2, 1));
    for (int i = 0; i < kRuns; ++i) {
      runs.emplace_back([&, i, s = session.get()] {
        std::vector<Tensor> out;
        results[i] = s->Run({}, {"d", "wait"}, {}, &out);
      });
    }
    while (g_waiting_kernels.load() < kRuns) std::this_thread::yield();
    // ~Session closes: the Runs end with Cancelled before it returns.
  }
  for (std::thread& t : runs) t.join();
  for (const Status& s : results) {
    EXPECT_EQ(s.code(), StatusCode::kCancelled) << s;
  }
}

}  // namespace
}  // namespace weft
