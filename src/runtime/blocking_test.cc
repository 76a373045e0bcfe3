// Blocking ops never hold an inter-op worker while they wait: the graphs
// that hang TensorFlow with inter_op_parallelism_threads = 1 complete here
// with inter = 1 and intra = 1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "runtime/blocking_pool.h"
#include "test_support/session_util.h"
#include "test_support/wait.h"

namespace weft {
namespace {

using test::MustCreate;
using test::MustRun;
using test::PerSessionOptions;
using test::QueueAttrs;
using ::testing::HasSubstr;

Tensor BlockingScalar(float v) { return Tensor::Scalar<float>(v); }

// (a) The dequeue is scheduled first (a root) while the enqueue waits behind
// a Spin that holds the only inter-op worker for 20 ms.
TEST(BlockingTest, DequeueScheduledBeforeItsEnqueueCompletes) {
  Graph g;
  ASSERT_TRUE(g.AddNode({"d", "QueueDequeue", {}, QueueAttrs("q"), ""}).ok());
  g.Spin("busy", 20'000);
  g.Const("x", BlockingScalar(42.0f));
  ASSERT_TRUE(
      g.AddNode({"e", "QueueEnqueue", {"x", "^busy"}, QueueAttrs("q"), ""})
          .ok());
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"d"}, {"e"}, &out).ok());
  EXPECT_EQ(*out[0].data<float>(), 42.0f);
}

// (b) A CustomOp, marked blocking, that runs the same session again.
Session* g_reentrant_session = nullptr;

TEST(BlockingTest, CustomOpRunsTheSameSessionAgain) {
  ASSERT_TRUE(
      RegisterCustomFunction("blocking_test_rerun", [](KernelContext& ctx) {
        std::vector<Tensor> inner;
        WEFT_RETURN_IF_ERROR(
            g_reentrant_session->Run({}, {"inner"}, {}, &inner));
        return ctx.SetOutput(0, inner[0]);
      }).ok());
  Graph g;
  g.Add("inner", g.Const("a", BlockingScalar(1.0f)),
        g.Const("b", BlockingScalar(2.0f)));
  ASSERT_TRUE(g.AddNode({"outer",
                         "CustomOp",
                         {},
                         {{"function", "blocking_test_rerun"},
                          {"Tout", std::vector<DataType>{DataType::kFloat32}},
                          {"blocking", true}},
                         ""})
                  .ok());
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  g_reentrant_session = session.get();
  auto out = MustRun(*session, {"outer"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(*out[0].data<float>(), 3.0f);
  g_reentrant_session = nullptr;
}

// (c) Eight Runs blocked in a dequeue at once, fed by a ninth.
TEST(BlockingTest, EightRunsBlockedInDequeueAreFedByANinth) {
  Graph g;
  ASSERT_TRUE(g.AddNode({"d", "QueueDequeue", {}, QueueAttrs("q"), ""}).ok());
  g.Placeholder("x", DataType::kFloat32, Shape{});
  ASSERT_TRUE(
      g.AddNode({"e", "QueueEnqueue", {"x"}, QueueAttrs("q"), ""}).ok());
  test::MustAdd(g, {"size", "QueueSize", {}, QueueAttrs("q"), ""});
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  constexpr int kConsumers = 8;
  std::vector<float> got(kConsumers, -1.0f);
  std::atomic<int> started{0};
  std::vector<std::thread> consumers;
  for (int i = 0; i < kConsumers; ++i) {
    consumers.emplace_back([&, i] {
      ++started;
      std::vector<Tensor> out;
      Status s = session->Run({}, {"d"}, {}, &out);
      EXPECT_TRUE(s.ok()) << s;
      if (s.ok()) got[i] = *out[0].data<float>();
    });
  }
  while (started.load() < kConsumers) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int i = 0; i < kConsumers; ++i) {
    ASSERT_TRUE(session
                    ->Run({{"x", BlockingScalar(static_cast<float>(i))}}, {},
                          {"e"}, nullptr)
                    .ok());
  }
  for (std::thread& t : consumers) t.join();
  EXPECT_EQ(std::set<float>(got.begin(), got.end()),
            (std::set<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(*MustRun(*session, {"size"})[0].data<int64_t>(), 0);
}

// (d) The tuning guides' "data loading and training at the same time": a
// loader branch (Sleep, then enqueue) overlaps a training branch (a chain of
// MatMuls), visibly in RunMetadata.
TEST(BlockingTimingTest, LoaderBranchOverlapsTrainingBranch) {
  Graph g;
  auto sleep = g.Sleep("load_io", 30'000);
  g.Const("load_value", BlockingScalar(7.0f));
  ASSERT_TRUE(g.AddNode({"load_enqueue",
                         "QueueEnqueue",
                         {"load_value", "^" + sleep},
                         QueueAttrs("batches"),
                         ""})
                  .ok());
  std::string h = g.RandomUniform("w", DataType::kFloat32, {384, 384}, 3);
  for (int i = 0; i < 12; ++i) h = g.MatMul("train" + std::to_string(i), h, h);
  ASSERT_TRUE(g.AddNode({"batch",
                         "QueueDequeue",
                         {"^load_enqueue"},
                         QueueAttrs("batches"),
                         ""})
                  .ok());
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  RunOptions trace;
  trace.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> out;
  RunMetadata metadata;
  ASSERT_TRUE(session->Run(trace, {}, {"batch", h}, {}, &out, &metadata).ok());
  EXPECT_EQ(*out[0].data<float>(), 7.0f);
  int64_t sleep_start = 0, sleep_end = 0, train_start = INT64_MAX,
          train_end = 0;
  for (const NodeExecStats& s : metadata.node_stats) {
    if (s.node_name == "load_io") {
      sleep_start = s.start_ns;
      sleep_end = s.end_ns;
    } else if (s.op == "MatMul") {
      train_start = std::min(train_start, s.start_ns);
      train_end = std::max(train_end, s.end_ns);
    }
  }
  ASSERT_GT(sleep_end, 0);
  // The two intervals intersect: loading did not wait for training, nor
  // training for loading.
  EXPECT_LT(std::max(sleep_start, train_start), std::min(sleep_end, train_end))
      << "sleep [" << sleep_start << ", " << sleep_end << "] train ["
      << train_start << ", " << train_end << "]";
}

TEST(BlockingTest, DequeueFromAClosedEmptyQueueIsOutOfRange) {
  Graph g;
  test::MustAdd(g, {"close", "QueueClose", {}, QueueAttrs("q"), ""});
  test::MustAdd(g, {"d", "QueueDequeue", {"^close"}, QueueAttrs("q"), ""});
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  std::vector<Tensor> out;
  Status s = session->Run({}, {"d"}, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(s.message(), HasSubstr("queue 'q' is closed and empty"));
  EXPECT_THAT(s.message(), HasSubstr("node 'd'"));
}

TEST(BlockingTest, QueueOpsWithAnotherDefinitionAreAnError) {
  Graph g;
  test::MustAdd(g, {"size", "QueueSize", {}, QueueAttrs("q", 4), ""});
  test::MustAdd(g, {"size2", "QueueSize", {"^size"}, QueueAttrs("q", 8), ""});
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  std::vector<Tensor> out;
  Status s = session->Run({}, {"size2"}, {}, &out);
  EXPECT_THAT(s.message(), HasSubstr("queue 'q' exists with capacity 4"));
}

TEST(BlockingTest, FullQueueBlocksTheEnqueueUntilADequeue) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, Shape{});
  test::MustAdd(g, {"e", "QueueEnqueue", {"x"}, QueueAttrs("q", 1), ""});
  test::MustAdd(g, {"d", "QueueDequeue", {}, QueueAttrs("q", 1), ""});
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  ASSERT_TRUE(
      session->Run({{"x", BlockingScalar(1.0f)}}, {}, {"e"}, nullptr).ok());
  std::atomic<bool> second_done{false};
  std::thread producer([&] {
    EXPECT_TRUE(
        session->Run({{"x", BlockingScalar(2.0f)}}, {}, {"e"}, nullptr).ok());
    second_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(second_done.load()) << "enqueue into a full queue returned";
  EXPECT_EQ(*MustRun(*session, {"d"})[0].data<float>(), 1.0f);
  producer.join();
  EXPECT_EQ(*MustRun(*session, {"d"})[0].data<float>(), 2.0f);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Concurrency of the test function below: now and the most seen.
std::atomic<int> g_bound_running{0};
std::atomic<int> g_bound_most{0};

// Six independent blocking CustomOps that each hold a place for 30 ms:
// with inter_op_bound, a Run runs at most its inter-op thread count of them
// at once (1 in the caller-thread mode); without it, the blocking pool runs
// them all at once.
TEST(BlockingTest, InterOpBoundNodesRunAtMostInterOpThreadsAtOnce) {
  static const bool registered =
      RegisterCustomFunction("blocking_test_hold", [](KernelContext& ctx) {
        const int now = ++g_bound_running;
        int most = g_bound_most.load();
        while (now > most && !g_bound_most.compare_exchange_weak(most, now)) {
        }
        ctx.WaitFor(std::chrono::milliseconds(30));
        --g_bound_running;
        return Status::OK();
      }).ok();
  ASSERT_TRUE(registered);
  for (bool bound : {true, false}) {
    Graph g;
    std::vector<std::string> targets;
    for (int i = 0; i < 6; ++i) {
      targets.push_back("hold" + std::to_string(i));
      ASSERT_TRUE(g.AddNode({targets.back(),
                             "CustomOp",
                             {},
                             {{"function", "blocking_test_hold"},
                              {"blocking", true},
                              {"inter_op_bound", bound}},
                             ""})
                      .ok());
    }
    for (int inter : {-1, 1, 2}) {
      SCOPED_TRACE("inter = " + std::to_string(inter) +
                   (bound ? ", bound" : ", not bound"));
      auto session = MustCreate(g, PerSessionOptions(inter, 1));
      g_bound_most = 0;
      std::vector<Tensor> out;
      ASSERT_TRUE(session->Run({}, {}, targets, &out).ok());
      if (bound) {
        EXPECT_EQ(g_bound_most.load(), inter == -1 ? 1 : inter);
      } else {
        EXPECT_GT(g_bound_most.load(), 2);
      }
    }
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Threads of this process the OS knows by `name`.
int ThreadsNamed(const std::string& name) {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) ++count;
  }
  return count;
}

// A task that schedules itself again as its last act, `remaining` times:
// the thread coming back from it finds its follow-up already queued, while
// the pool has woken an idle thread for it.
class RescheduleTask final : public internal::Task {
 public:
  explicit RescheduleTask(int times) : remaining_(times) {}
  void Run() override {
    if (--remaining_ > 0) {
      internal::BlockingPool::Global().Schedule(this);
    } else {
      done_ = true;
    }
  }
  bool done() const { return done_; }

 private:
  int remaining_;  // Touched by one thread at a time (each Run schedules).
  std::atomic<bool> done_{false};
};

// The blocking pool reuses its threads when tasks follow each other
// faster than a thread comes back from one: a thread coming back may take
// the next task before the idle thread woken for it, and threads still
// starting count as ones that will take a task. (Without either, every
// Schedule started a new thread: the pool reached its 1024-thread cap here,
// and hundreds of threads after a few thousand Python py_function runs.)
TEST(BlockingTest,
     IdleBlockingThreadsAreReusedWhenAReturningThreadTakesTheTask) {
  const int before = ThreadsNamed("weft-blocking");
  RescheduleTask warm_up(1);  // Leaves one more idle thread to be woken.
  internal::BlockingPool::Global().Schedule(&warm_up);
  ASSERT_TRUE(test::WaitFor([&] { return warm_up.done(); }));
  RescheduleTask chain(3000);
  internal::BlockingPool::Global().Schedule(&chain);
  ASSERT_TRUE(test::WaitFor([&] { return chain.done(); }));
  // Each task runs alone: two threads suffice; a few more may start while
  // one is still coming back. Hundreds would be the leak.
  EXPECT_LE(ThreadsNamed("weft-blocking") - before, 8);
}

}  // namespace
}  // namespace weft
