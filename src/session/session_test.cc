// Sessions and the executor: pruning, feeds, errors, pools, placement,
// deadlines, Close, concurrent Runs.
#include "weft/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <map>
#include <new>
#include <set>
#include <thread>

#include "test_support/session_util.h"
#include "test_support/threads.h"
#include "test_support/wait.h"

namespace weft {
namespace {

using test::MustCreate;
using test::MustRun;
using test::MustRunTraced;
using test::PerSessionOptions;
using test::Values;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A CustomOp function that counts its calls and outputs its input + 1.
std::atomic<int>& CounterCalls() {
  static std::atomic<int> calls{0};
  return calls;
}

void RegisterTestFunctions() {
  static bool once = [] {
    EXPECT_TRUE(
        RegisterCustomFunction(
            "test.count_plus_one",
            [](KernelContext& ctx) -> Status {
              ++CounterCalls();
              WEFT_ASSIGN_OR_RETURN(
                  Tensor * out, ctx.AllocateOutput(0, ctx.input(0).shape()));
              for (int64_t i = 0; i < out->NumElements(); ++i) {
                out->data<float>()[i] = ctx.input(0).data<float>()[i] + 1;
              }
              return Status::OK();
            })
            .ok());
    EXPECT_TRUE(RegisterCustomFunction("test.fail", [](KernelContext&) {
                  return InvalidArgumentError("boom");
                }).ok());
    EXPECT_TRUE(
        RegisterCustomFunction("test.throw", [](KernelContext&) -> Status {
          throw std::runtime_error("thrown from a custom op");
        }).ok());
    EXPECT_TRUE(
        RegisterCustomFunction("test.bad_alloc", [](KernelContext&) -> Status {
          throw std::bad_alloc();
        }).ok());
    return true;
  }();
  (void)once;
}

std::string CustomNode(Graph& g, const std::string& name, const std::string& fn,
                       std::vector<std::string> inputs) {
  EXPECT_TRUE(g.AddNode({name,
                         "CustomOp",
                         std::move(inputs),
                         {{"function", fn},
                          {"Tout", std::vector<DataType>{DataType::kFloat32}}},
                         ""})
                  .ok());
  return name;
}

Tensor Vec(const std::vector<float>& v) {
  return Tensor::FromVector<float>(Shape{static_cast<int64_t>(v.size())}, v);
}

TEST(SessionTest, RunsAGraphAndFetchesOutputs) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {3});
  auto c = g.Const("c", Vec({10, 20, 30}));
  auto sum = g.Add("sum", x, c);
  g.Mul("prod", sum, c);
  auto session = MustCreate(std::move(g), PerSessionOptions(2, 1));
  auto out = MustRun(*session, {"prod", "sum"}, {{"x", Vec({1, 2, 3})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{110, 440, 990}));
  EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{11, 22, 33}));
}

TEST(SessionTest, OnlyNeededNodesRun) {
  RegisterTestFunctions();
  Graph g;
  auto c = g.Const("c", Vec({1}));
  auto used = CustomNode(g, "used", "test.count_plus_one", {c});
  CustomNode(g, "unused", "test.count_plus_one", {c});
  g.Identity("out", used);
  auto session = MustCreate(std::move(g), PerSessionOptions(2, 1));
  CounterCalls() = 0;
  auto out = MustRun(*session, {"out"});
  EXPECT_EQ(Values<float>(out[0]), std::vector<float>{2});
  EXPECT_EQ(CounterCalls().load(), 1);
}

TEST(SessionTest, TargetsRunWithoutFetching) {
  RegisterTestFunctions();
  Graph g;
  auto c = g.Const("c", Vec({1}));
  CustomNode(g, "effect", "test.count_plus_one", {c});
  auto session = MustCreate(std::move(g), PerSessionOptions(1, 1));
  CounterCalls() = 0;
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"effect"}, &out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(CounterCalls().load(), 1);
}

TEST(SessionTest, ControlDependencyOrdersNodes) {
  RegisterTestFunctions();
  Graph g;
  auto c = g.Const("c", Vec({1}));
  auto first = CustomNode(g, "first", "test.count_plus_one", {c});
  ASSERT_TRUE(g.AddNode({"second", "Identity", {c, "^" + first}, {}, ""}).ok());
  auto session = MustCreate(std::move(g), PerSessionOptions(2, 1));
  CounterCalls() = 0;
  MustRun(*session, {"second"});
  EXPECT_EQ(CounterCalls().load(), 1);  // Pulled in by the control edge.
}

TEST(SessionTest, FeedingANodeSkipsItsInputs) {
  RegisterTestFunctions();
  Graph g;
  auto c = g.Const("c", Vec({1}));
  auto mid = CustomNode(g, "mid", "test.count_plus_one", {c});
  g.Identity("out", mid);
  auto session = MustCreate(std::move(g), PerSessionOptions(1, 1));
  CounterCalls() = 0;
  auto out = MustRun(*session, {"out"}, {{"mid", Vec({7})}});
  EXPECT_EQ(Values<float>(out[0]), std::vector<float>{7});
  EXPECT_EQ(CounterCalls().load(), 0);
  // A fetched tensor that is fed comes back as fed.
  out = MustRun(*session, {"mid"}, {{"mid", Vec({5})}});
  EXPECT_EQ(Values<float>(out[0]), std::vector<float>{5});
}

TEST(SessionTest, MissingFeedForPlaceholder) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {2});
  g.Identity("y", x);
  auto session = MustCreate(std::move(g), PerSessionOptions(1, 1));
  std::vector<Tensor> out;
  Status s = session->Run({}, {"y"}, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("feed a value for placeholder 'x'"));
}

TEST(SessionTest, BadFeedsAndFetches) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {2});
  g.Identity("y", x);
  auto session = MustCreate(std::move(g), PerSessionOptions(1, 1));
  std::vector<Tensor> out;
  EXPECT_THAT(
      session->Run({{"x", Tensor(DataType::kInt32, {2})}}, {"y"}, {}, &out)
          .message(),
      AllOf(HasSubstr("feed 'x' is int32"), HasSubstr("float32")));
  EXPECT_THAT(session->Run({{"x", Vec({1, 2, 3})}}, {"y"}, {}, &out).message(),
              AllOf(HasSubstr("feed 'x' has shape [3]"), HasSubstr("[2]")));
  EXPECT_EQ(session->Run({{"x", Vec({1, 2})}}, {"nope"}, {}, &out).code(),
            StatusCode::kNotFound);
  EXPECT_THAT(session->Run({{"x", Vec({1, 2})}}, {"y:3"}, {}, &out).message(),
              HasSubstr("has 1 outputs"));
  EXPECT_THAT(session->Run({{"ghost", Vec({1, 2})}}, {"y"}, {}, &out).message(),
              HasSubstr("'ghost'"));
  EXPECT_THAT(
      session->Run({{"x", Vec({1, 2})}, {"x", Vec({1, 2})}}, {"y"}, {}, &out)
          .message(),
      HasSubstr("fed twice"));
  EXPECT_THAT(session->Run({}, {}, {}, &out).message(),
              HasSubstr("at least one fetch or target"));
}

TEST(SessionTest, FirstErrorNamesNodeAndSessionStaysUsable) {
  RegisterTestFunctions();
  for (int inter : {-1, 1, 2}) {
    Graph g;
    auto c = g.Const("c", Vec({1}));
    auto bad = CustomNode(g, "bad", "test.fail", {c});
    auto after = CustomNode(g, "after", "test.count_plus_one", {bad});
    g.Identity("good", c);
    auto session = MustCreate(std::move(g), PerSessionOptions(inter, 1));
    CounterCalls() = 0;
    std::vector<Tensor> out;
    Status s = session->Run({}, {after}, {}, &out);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << inter;
    EXPECT_THAT(s.message(), AllOf(HasSubstr("node 'bad' (op CustomOp)"),
                                   HasSubstr("boom")));
    EXPECT_TRUE(out.empty());
    EXPECT_EQ(CounterCalls().load(), 0) << "a node after the error ran";
    auto good = MustRun(*session, {"good"});
    EXPECT_EQ(Values<float>(good[0]), std::vector<float>{1});
  }
}

TEST(SessionTest, ThrowingKernelBecomesAnError) {
  RegisterTestFunctions();
  Graph g;
  auto c = g.Const("c", Vec({1}));
  CustomNode(g, "thrower", "test.throw", {c});
  auto session = MustCreate(std::move(g), PerSessionOptions(1, 1));
  std::vector<Tensor> out;
  Status s = session->Run({}, {"thrower"}, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("node 'thrower'"),
                                 HasSubstr("thrown from a custom op")));
}

// A kernel whose working memory cannot be allocated: the Run fails with
// ResourceExhausted (the request's size), not Internal (a bug).
TEST(SessionTest, AKernelOutOfMemoryIsResourceExhausted) {
  RegisterTestFunctions();
  Graph g;
  auto c = g.Const("c", Vec({1}));
  CustomNode(g, "greedy", "test.bad_alloc", {c});
  auto session = MustCreate(std::move(g), PerSessionOptions(1, 1));
  std::vector<Tensor> out;
  Status s = session->Run({}, {"greedy"}, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("node 'greedy'"), HasSubstr("out of memory")));
}

// Error isolation: Runs that fail (a kernel error, a throwing CustomOp) run
// concurrently with Runs that succeed on the same session; each gets its own
// result, the session stays usable, and no thread is left behind.
TEST(SessionTest, FailingRunsDoNotDisturbConcurrentRuns) {
  RegisterTestFunctions();
  const int threads_before = test::CountWeftThreads();
  {
    Graph g;
    auto c = g.Const("c", Vec({1, 2}));
    CustomNode(g, "bad", "test.fail", {c});
    CustomNode(g, "thrower", "test.throw", {c});
    CustomNode(g, "good", "test.count_plus_one", {c});
    auto session = MustCreate(std::move(g), PerSessionOptions(2, 2));
    std::vector<std::thread> clients;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t) {
      clients.emplace_back([&, t] {
        for (int i = 0; i < 200; ++i) {
          std::vector<Tensor> out;
          const int kind = (i + t) % 3;
          const char* fetch = kind == 0   ? "bad"
                              : kind == 1 ? "thrower"
                                          : "good";
          Status s = session->Run({}, {fetch}, {}, &out);
          if (kind == 2) {
            if (!s.ok() || Values<float>(out[0]) != std::vector<float>{2, 3}) {
              ++wrong;
            }
          } else if (s.ok() ||
                     s.message().find(std::string("node '") + fetch +
                                      "' (op CustomOp)") == std::string::npos) {
            ++wrong;
          }
        }
      });
    }
    for (std::thread& client : clients) client.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(Values<float>(MustRun(*session, {"good"})[0]),
              (std::vector<float>{2, 3}));
  }
  // The session's pools are gone with it.
  EXPECT_TRUE(test::WaitFor([&] {
    return test::CountWeftThreads() <= threads_before;
  })) << test::CountWeftThreads()
      << " weft threads, " << threads_before << " before";
}

TEST(SessionTest, NegativeInterRunsEverythingOnTheCallersThread) {
  Graph g;
  auto a = g.Spin("a", 100);
  auto b = g.Spin("b", 100);
  g.Add("sum", a, b);
  auto session = MustCreate(std::move(g), PerSessionOptions(-1, 1));
  EXPECT_EQ(session->inter_op_threads(), -1);
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> out;
  RunMetadata metadata;
  ASSERT_TRUE(session->Run(options, {}, {"sum"}, {}, &out, &metadata).ok());
  ASSERT_EQ(metadata.node_stats.size(), 3u);
  const int64_t caller = static_cast<int64_t>(gettid());
  for (const NodeExecStats& stats : metadata.node_stats) {
    EXPECT_EQ(stats.pool, "caller") << stats.node_name;
    EXPECT_EQ(stats.thread_index, -1);
    EXPECT_EQ(stats.os_thread_id, caller) << stats.node_name;
  }
}

TEST(SessionTest, RunOptionsCanPickTheCallersThread) {
  Graph g;
  g.Spin("a", 10);
  auto session = MustCreate(std::move(g), PerSessionOptions(2, 1));
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFull;
  options.inter_op_thread_pool = -1;
  std::vector<Tensor> out;
  RunMetadata metadata;
  ASSERT_TRUE(session->Run(options, {}, {"a"}, {}, &out, &metadata).ok());
  EXPECT_EQ(metadata.node_stats.at(0).pool, "caller");
  options.inter_op_thread_pool = 1;
  Status s = session->Run(options, {}, {"a"}, {}, &out, &metadata);
  EXPECT_THAT(s.message(),
              HasSubstr("inter_op_thread_pool = 1 is out of range"));
}

// A Run whose roots are cheap (below inline_node_cost_ns) starts on the
// calling thread, which runs the cheap nodes; handing them to the pool would
// cost more than they do.
TEST(SessionTest, CheapNodesOfARunWithCheapRootsRunOnTheCallersThread) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {4});
  g.Relu("y", g.Add("sum", x, x));
  SessionOptions options = PerSessionOptions(2, 1);
  const NamedTensors feeds = {{"x", Tensor(DataType::kFloat32, {4})}};
  RunMetadata metadata = MustRunTraced(*MustCreate(g, options), {"y"}, feeds);
  ASSERT_EQ(metadata.node_stats.size(), 2u);
  const int64_t caller = static_cast<int64_t>(gettid());
  for (const NodeExecStats& stats : metadata.node_stats) {
    EXPECT_EQ(stats.pool, "caller") << stats.node_name;
    EXPECT_EQ(stats.os_thread_id, caller) << stats.node_name;
  }

  // inline_node_cost_ns = 0 turns the rule off: every node on the pool.
  options.inline_node_cost_ns = 0;
  metadata = MustRunTraced(*MustCreate(g, options), {"y"}, feeds);
  ASSERT_EQ(metadata.node_stats.size(), 2u);
  for (const NodeExecStats& stats : metadata.node_stats) {
    EXPECT_EQ(stats.pool, "inter") << stats.node_name;
    EXPECT_NE(stats.os_thread_id, caller) << stats.node_name;
  }
}

// The calling thread keeps only cheap nodes: an expensive node it makes
// ready goes to the inter-op pool, so inter_op_parallelism_threads still
// bounds the expensive work running at once.
TEST(SessionTest, TheCallersThreadHandsExpensiveNodesToThePool) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {4});
  g.Spin("slow", 200, g.Add("sum", x, x));
  auto session = MustCreate(std::move(g), PerSessionOptions(2, 1));
  const RunMetadata metadata = MustRunTraced(
      *session, {"slow"}, {{"x", Tensor(DataType::kFloat32, {4})}});
  ASSERT_EQ(metadata.node_stats.size(), 2u);
  for (const NodeExecStats& stats : metadata.node_stats) {
    EXPECT_EQ(stats.pool, stats.node_name == "sum" ? "caller" : "inter")
        << stats.node_name;
  }
}

// The nodes of a traced Run of `fetches` by name, at (inter, intra) =
// (2, 1) with `join_inline_cost_ns`, after `untraced_runs` Runs that let
// the cost estimates settle.
std::map<std::string, NodeExecStats> TracedAtTwoInterThreads(
    Graph g, double join_inline_cost_ns,
    const std::vector<std::string>& fetches, int untraced_runs = 0) {
  SessionOptions options = PerSessionOptions(2, 1);
  options.join_inline_cost_ns = join_inline_cost_ns;
  auto session = MustCreate(std::move(g), options);
  for (int i = 0; i < untraced_runs; ++i) MustRun(*session, fetches);
  std::map<std::string, NodeExecStats> stats;
  for (const NodeExecStats& s : MustRunTraced(*session, fetches).node_stats) {
    stats[s.node_name] = s;
  }
  return stats;
}

// Of two expensive nodes made ready together whose outputs meet at once,
// the shorter runs on the longer one's thread, before it
// (join_inline_cost_ns): a hand-off to another worker would cost more than
// the overlap it buys.
TEST(SessionTest, AShortNodeThatJoinsItsLongSiblingRunsOnItsThread) {
  Graph g;
  auto root = g.Spin("root", 50);
  g.Add("join", g.Spin("long", 3000, root), g.Spin("short", 200, root));
  auto stats = TracedAtTwoInterThreads(std::move(g), 1e6, {"join"}, 5);
  EXPECT_EQ(stats["short"].os_thread_id, stats["long"].os_thread_id);
  EXPECT_LE(stats["short"].end_ns, stats["long"].start_ns);
}

// join_inline_cost_ns = 0 turns the rule off: the shorter node goes to the
// other worker and overlaps the longer.
TEST(SessionTest, JoinInlineCostZeroHandsTheShortSiblingOver) {
  Graph g;
  auto root = g.Spin("root", 50);
  g.Add("join", g.Spin("long", 20000, root), g.Spin("short", 200, root));
  auto stats = TracedAtTwoInterThreads(std::move(g), 0, {"join"});
  EXPECT_NE(stats["short"].os_thread_id, stats["long"].os_thread_id);
  EXPECT_LT(stats["short"].start_ns, stats["long"].end_ns);
}

// A short node that leads to other work is handed over whatever its cost:
// its branch overlaps the long sibling.
TEST(SessionTest, AShortNodeLeadingToOtherWorkIsHandedOver) {
  Graph g;
  auto root = g.Spin("root", 50);
  auto tail = g.Spin("tail", 20000, g.Spin("short", 200, root));
  g.Add("join", g.Spin("long", 20000, root), tail);
  auto stats = TracedAtTwoInterThreads(std::move(g), 1e6, {"join"});
  EXPECT_LT(stats["tail"].start_ns, stats["long"].end_ns);
}

// The node kept is the batch's costliest, known only at the batch's end: a
// short node that joins a node later displaced by a costlier one goes to
// the pool with its partner, not behind the costlier one on this thread.
TEST(SessionTest, AShortNodeFollowsItsPartnerWhenACostlierNodeIsKept) {
  Graph g;
  auto a = g.Spin("a", 100);
  auto b = g.Spin("b", 100);
  g.Spin("long", 20000);
  g.Add("pair", a, b);
  auto stats = TracedAtTwoInterThreads(std::move(g), 1e6, {"pair", "long"}, 3);
  EXPECT_LT(stats["pair"].end_ns, stats["long"].end_ns);
}

// A Run with an expensive root starts on the pool, as before.
TEST(SessionTest, ARunWithAnExpensiveRootStartsOnThePool) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {1 << 16});
  g.Relu("y", g.Add("sum", x, x));
  auto session = MustCreate(std::move(g), PerSessionOptions(2, 1));
  const RunMetadata metadata = MustRunTraced(
      *session, {"y"}, {{"x", Tensor(DataType::kFloat32, {1 << 16})}});
  ASSERT_EQ(metadata.node_stats.size(), 2u);
  for (const NodeExecStats& stats : metadata.node_stats) {
    EXPECT_EQ(stats.pool, "inter") << stats.node_name;
  }
}

TEST(SessionTest, MetadataRecordsTheInterPoolThread) {
  Graph g;
  auto a = g.Spin("a", 100);
  g.Spin("b", 100, a);
  auto session = MustCreate(std::move(g), PerSessionOptions(2, 1));
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> out;
  RunMetadata metadata;
  ASSERT_TRUE(session->Run(options, {}, {"b"}, {}, &out, &metadata).ok());
  ASSERT_EQ(metadata.node_stats.size(), 2u);
  for (const NodeExecStats& stats : metadata.node_stats) {
    EXPECT_EQ(stats.pool, "inter");
    EXPECT_GE(stats.thread_index, 0);
    EXPECT_LT(stats.thread_index, 2);
    EXPECT_NE(stats.os_thread_id, static_cast<int64_t>(gettid()));
    EXPECT_LE(metadata.run_start_ns, stats.scheduled_ns);
    EXPECT_LE(stats.scheduled_ns, stats.start_ns);
    EXPECT_LE(stats.start_ns, stats.end_ns);
    EXPECT_LE(stats.end_ns, metadata.run_end_ns);
    EXPECT_EQ(stats.device, "/cpu:0");
  }
  EXPECT_EQ(metadata.node_stats[0].node_name, "a");
  EXPECT_LE(metadata.node_stats[0].end_ns, metadata.node_stats[1].start_ns);
}

TEST(SessionTest, IntraOpPoolSplitsKernelsAndIntraOneDoesNot) {
  Graph g;
  auto a = g.RandomUniform("a", DataType::kFloat32, {256, 256}, 1);
  auto b = g.RandomUniform("b", DataType::kFloat32, {256, 256}, 2);
  g.MatMul("c", a, b);
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> reference;
  for (int intra : {1, 2, 4}) {
    auto session = MustCreate(g, PerSessionOptions(1, intra));
    EXPECT_EQ(session->intra_op_threads(), intra);
    std::vector<Tensor> out;
    RunMetadata metadata;
    ASSERT_TRUE(session->Run(options, {}, {"c"}, {}, &out, &metadata).ok());
    int shards = 0;
    for (const auto& s : metadata.node_stats) {
      if (s.node_name == "c") shards = s.intra_op_shards;
    }
    if (intra == 1) {
      EXPECT_EQ(shards, 1);
      reference = out;
    } else {
      EXPECT_GT(shards, 1) << "intra=" << intra;
      EXPECT_TRUE(out[0].BitwiseEqual(reference[0])) << "intra=" << intra;
    }
  }
}

TEST(SessionTest, DeviceCountAndSoftPlacementThroughSession) {
  Graph g;
  auto c = g.Const("c", Vec({1}));
  ASSERT_TRUE(g.AddNode({"i", "Identity", {c}, {}, "/cpu:1"}).ok());
  SessionOptions options = PerSessionOptions(1, 1);
  options.optimize_graph = false;  // "i" must run, not fold to a constant.
  EXPECT_FALSE(Session::Create(g, options).ok());
  options.device_count = {{"CPU", 2}};
  auto session = MustCreate(g, options);
  RunOptions run_options;
  run_options.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> out;
  RunMetadata metadata;
  ASSERT_TRUE(session->Run(run_options, {}, {"i"}, {}, &out, &metadata).ok());
  bool found = false;
  for (const auto& s : metadata.node_stats) {
    if (s.node_name == "i") {
      EXPECT_EQ(s.device, "/cpu:1");
      found = true;
    }
  }
  EXPECT_TRUE(found);
  options.device_count = {{"CPU", 0}};
  EXPECT_THAT(Session::Create(g, options).status().message(),
              HasSubstr("device_count[\"CPU\"] = 0"));
  options.device_count = {{"GPU", 1}};
  EXPECT_THAT(Session::Create(g, options).status().message(),
              HasSubstr("'GPU'"));
}

// A graph that does not compile as given is the user's error, also when
// its open shapes make the session specialize it: the error names the
// node and the dtype, and does not blame the graph passes.
TEST(SessionTest, AGraphThatDoesNotCompileAsGivenIsTheUsersError) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kBool);  // Shape left open.
  g.MatMul("product", x, x);
  for (bool optimize : {true, false}) {
    SessionOptions options = PerSessionOptions(1, 1);
    options.optimize_graph = optimize;
    const Status s = Session::Create(g, options).status();
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
    EXPECT_THAT(s.message(), AllOf(HasSubstr("node 'product'"),
                                   HasSubstr("dtype bool is not allowed"),
                                   Not(HasSubstr("graph passes"))));
  }
}

TEST(SessionTest, ATracedRunReportsThePeakBytesItHeld) {
  // Three chained 10x10 float products (400 bytes each): m1 and m2 are held
  // together, then m2 and m3; the feed is not counted.
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {10, 10});
  g.MatMul("m1", "x", "x");
  g.MatMul("m2", "m1", "m1");
  g.MatMul("m3", "m2", "m2");
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  const NamedTensors feeds = {{"x", Tensor(DataType::kFloat32, {10, 10})}};
  RunOptions traced;
  traced.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> out;
  RunMetadata metadata;
  ASSERT_TRUE(session->Run(traced, feeds, {"m3"}, {}, &out, &metadata).ok());
  EXPECT_EQ(metadata.peak_bytes, 800);
  // Not counted without a trace (nor a memory limit): no shared counter.
  ASSERT_TRUE(session->Run({}, feeds, {"m3"}, {}, &out, &metadata).ok());
  EXPECT_EQ(metadata.peak_bytes, 0);
}

// A traced node lists the nodes it waited for, as the Run executed them:
// data inputs once each (sum reads m1 twice), control inputs too, and the
// fused node the passes made rather than the nodes it replaced.
TEST(SessionTest, TracedNodesListTheNodesTheyWaitedForInTheGraphAsRun) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {4, 4});
  g.Const("w", test::SeededFloats({4, 4}, 1));
  g.Const("b", test::SeededFloats({4}, 2));
  g.MatMul("m1", "x", "w");
  g.Add("biased", "m1", "b");
  g.Relu("r", "biased");  // m1, biased and r run as one FusedGemm "r".
  g.Spin("s", 1);
  ASSERT_TRUE(g.AddNode({"sum", "Add", {"r", "r", "^s"}, {}, ""}).ok());
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  RunOptions traced;
  traced.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> out;
  RunMetadata metadata;
  const NamedTensors feeds = {{"x", test::SeededFloats({4, 4}, 3)}};
  ASSERT_TRUE(session->Run(traced, feeds, {"sum"}, {}, &out, &metadata).ok());
  std::map<std::string, std::vector<std::string>> inputs;
  std::map<std::string, std::string> ops;
  for (const NodeExecStats& stats : metadata.node_stats) {
    inputs[stats.node_name] = stats.input_nodes;
    ops[stats.node_name] = stats.op;
  }
  EXPECT_EQ(ops["r"], "FusedGemm");
  EXPECT_EQ(inputs.count("m1"), 0u);
  EXPECT_THAT(inputs["r"], ElementsAre("x", "w", "b"));
  EXPECT_THAT(inputs["sum"], ElementsAre("r", "s"));
  EXPECT_THAT(inputs["s"], IsEmpty());
}

TEST(SessionTest, LogDevicePlacementPrintsEachNode) {
  Graph g;
  g.Const("c", Vec({1}));
  SessionOptions options = PerSessionOptions(1, 1);
  options.log_device_placement = true;
  ::testing::internal::CaptureStderr();
  auto session = MustCreate(g, options);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("node 'c' (op Const) placed on /cpu:0"));
}

TEST(SessionTest, InvalidOptionsAreErrors) {
  Graph g;
  g.Const("c", Vec({1}));
  SessionOptions options;
  options.intra_op_parallelism_threads = -2;
  EXPECT_THAT(Session::Create(g, options).status().message(),
              HasSubstr("intra_op_parallelism_threads = -2"));
  options = SessionOptions();
  options.inter_op_spin_us = -2;
  EXPECT_THAT(Session::Create(g, options).status().message(),
              HasSubstr("inter_op_spin_us"));
  options = SessionOptions();
  options.operation_timeout_ms = -5;
  EXPECT_THAT(Session::Create(g, options).status().message(),
              HasSubstr("operation_timeout_ms"));
  options = SessionOptions();
  options.inter_op_pin_cpus = {100000};
  EXPECT_THAT(Session::Create(g, options).status().message(),
              HasSubstr("pin CPU 100000"));
}

TEST(SessionTest, TimeoutEndsRunWithDeadlineExceeded) {
  Graph g;
  auto s1 = g.Sleep("long_sleep", 5'000'000);
  g.Identity("out", s1);
  auto session = MustCreate(std::move(g), PerSessionOptions(1, 1));
  RunOptions options;
  options.timeout_ms = 50;
  std::vector<Tensor> out;
  const auto start = std::chrono::steady_clock::now();
  Status s = session->Run(options, {}, {"out"}, {}, &out, nullptr);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("50 ms"));
  EXPECT_LT(took, std::chrono::seconds(2));
  // operation_timeout_ms is the default deadline.
  SessionOptions session_options = PerSessionOptions(1, 1);
  session_options.operation_timeout_ms = 30;
  Graph g2;
  g2.Sleep("nap", 5'000'000);
  auto session2 = MustCreate(std::move(g2), session_options);
  EXPECT_EQ(session2->Run({}, {"nap"}, {}, &out).code(),
            StatusCode::kDeadlineExceeded);
}

TEST(SessionTest, CloseCancelsRunsInFlight) {
  static std::atomic<bool> waiting{false};
  static const bool registered = [] {
    return RegisterCustomFunction(
               "test.wait_until_cancelled",
               [](KernelContext& ctx) -> Status {
                 waiting = true;
                 if (!ctx.WaitFor(std::chrono::seconds(60))) {
                   return CancelledError("cancelled");
                 }
                 return Status::OK();
               })
        .ok();
  }();
  ASSERT_TRUE(registered);
  Graph g;
  ASSERT_TRUE(g.AddNode({"wait",
                         "CustomOp",
                         {},
                         {{"function", "test.wait_until_cancelled"},
                          {"blocking", true}},
                         ""})
                  .ok());
  auto session = MustCreate(std::move(g), PerSessionOptions(1, 1));
  waiting = false;
  Status run_status;
  std::thread runner([&] {
    std::vector<Tensor> out;
    run_status = session->Run({}, {}, {"wait"}, &out);
  });
  ASSERT_TRUE(test::WaitFor([] { return waiting.load(); }));
  ASSERT_TRUE(session->Close().ok());
  runner.join();
  EXPECT_EQ(run_status.code(), StatusCode::kCancelled) << run_status;
  EXPECT_THAT(run_status.message(), HasSubstr("session was closed"));
  std::vector<Tensor> out;
  EXPECT_EQ(session->Run({}, {}, {"wait"}, &out).code(),
            StatusCode::kFailedPrecondition);
}

// RunCancellation at each inter-op setting: a chain of 200 busy nodes of
// 10 ms stops after the node running at Cancel(); a node waiting 60 s
// wakes; a cancelled cancellation refuses Runs until Reset; the session
// stays usable.
TEST(SessionTest,
     RunCancellationEndsRunsInFlightAndRefusesLaterOnesUntilReset) {
  for (int inter : {-1, 1, 2}) {
    SCOPED_TRACE("inter = " + std::to_string(inter));
    Graph g;
    std::string previous;
    for (int i = 0; i < 200; ++i) {
      previous = g.Spin("spin" + std::to_string(i), 10000, previous);
    }
    g.Sleep("sleep", 60 * 1000 * 1000);
    auto session = MustCreate(std::move(g), PerSessionOptions(inter, 1));
    for (const char* target : {"spin199", "sleep"}) {
      SCOPED_TRACE(target);
      RunOptions options;
      options.trace_level = RunOptions::TraceLevel::kFull;
      options.cancellation = std::make_shared<RunCancellation>();
      RunMetadata metadata;
      Status status;
      std::atomic<bool> done{false};
      std::thread runner([&] {
        std::vector<Tensor> out;
        status = session->Run(options, {}, {}, {target}, &out, &metadata);
        done = true;
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      options.cancellation->Cancel();
      runner.join();
      EXPECT_EQ(status.code(), StatusCode::kCancelled) << status;
      EXPECT_THAT(status.message(), HasSubstr("RunCancellation"));
      EXPECT_LT(metadata.node_stats.size(), 200u);

      std::vector<Tensor> out;
      Status refused = session->Run(options, {}, {}, {"spin0"}, &out, nullptr);
      EXPECT_EQ(refused.code(), StatusCode::kCancelled);
      EXPECT_THAT(refused.message(), HasSubstr("before it started"));
      options.cancellation->Reset();
      EXPECT_TRUE(session->Run(options, {}, {}, {"spin0"}, &out, nullptr).ok());
    }
  }
}

// Feeds over caller-owned memory of exactly their size (no SIMD slack at
// the end, unlike weft's buffers): kernels read them in place, give the
// bits an owned copy gives, and read nothing past the end (the ASan build
// checks that), with inter and intra at 2.
TEST(SessionTest, ExternalFeedsAreReadInPlaceAndGiveTheBitsOfAnOwnedCopy) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {37, 37});
  auto w = g.RandomUniform("w", DataType::kFloat32, {37, 37}, 5);
  auto product = g.MatMul("product", x, w);
  auto relu = g.Relu("relu", g.Add("sum", x, product));
  g.ReduceSum("total", g.Mul("square", relu, x));
  auto session = MustCreate(std::move(g), PerSessionOptions(2, 2));
  auto* memory = new std::vector<float>(37 * 37);
  for (size_t i = 0; i < memory->size(); ++i) {
    (*memory)[i] = static_cast<float>(i % 11) - 5.0f;
  }
  bool released = false;
  {
    StatusOr<Tensor> external =
        Tensor::WrapExternal(DataType::kFloat32, Shape({37, 37}),
                             memory->data(), [&released, memory] {
                               released = true;
                               delete memory;
                             });
    ASSERT_TRUE(external.ok()) << external.status();
    Tensor owned = Tensor::FromVector(Shape({37, 37}), *memory);
    const std::vector<std::string> fetches = {"relu", "total", "x"};
    auto in_place = MustRun(*session, fetches, {{"x", *external}});
    auto copied = MustRun(*session, fetches, {{"x", owned}});
    for (size_t i = 0; i < fetches.size(); ++i) {
      EXPECT_TRUE(in_place[i].BitwiseEqual(copied[i])) << fetches[i];
    }
    EXPECT_EQ(in_place[2].raw_data(), external->raw_data());  // Fed through.
    EXPECT_FALSE(released);
  }
  EXPECT_TRUE(released);
}

TEST(SessionTest, ConcurrentRunsOnOneSessionGetTheirOwnResults) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {64});
  auto w = g.RandomUniform("w", DataType::kFloat32, {64}, 3);
  auto y = g.Mul("y", x, w);
  g.ReduceSum("s", y);
  auto session = MustCreate(std::move(g), PerSessionOptions(2, 2));
  auto w_value = MustRun(*session, {"w"})[0];
  constexpr int kThreads = 8;
  std::vector<std::thread> clients;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < kThreads; ++t) {
    clients.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        std::vector<float> xs(64, static_cast<float>(t * 100 + round));
        std::vector<Tensor> out;
        Status s = session->Run({{"x", Vec(xs)}}, {"s", "y"}, {}, &out);
        if (!s.ok()) {
          ++mismatches;
          continue;
        }
        double expected = 0;
        for (int i = 0; i < 64; ++i) {
          const float prod = xs[i] * w_value.data<float>()[i];
          if (out[1].data<float>()[i] != prod) ++mismatches;
          expected += prod;
        }
        if (std::abs(out[0].data<float>()[0] - expected) >
            1e-4 * std::abs(expected) + 1e-4) {
          ++mismatches;
        }
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(SessionTest, SessionPoolsListAndNamedPools) {
  Graph g;
  g.Spin("a", 10);
  SessionOptions options;
  options.session_inter_op_thread_pools = {{1, ""}, {2, "test_named_pool"}};
  auto session = MustCreate(g, options);
  RunOptions run_options;
  run_options.trace_level = RunOptions::TraceLevel::kFull;
  run_options.inter_op_thread_pool = 1;
  std::vector<Tensor> out;
  RunMetadata metadata;
  ASSERT_TRUE(session->Run(run_options, {}, {"a"}, {}, &out, &metadata).ok());
  EXPECT_EQ(metadata.node_stats.at(0).pool, "test_named_pool");
  // Another session may share the named pool with the same size ...
  SessionOptions same;
  same.session_inter_op_thread_pools = {{2, "test_named_pool"}};
  EXPECT_TRUE(Session::Create(g, same).ok());
  // ... but not ask for another size.
  SessionOptions other;
  other.session_inter_op_thread_pools = {{3, "test_named_pool"}};
  auto bad = Session::Create(g, other);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              AllOf(HasSubstr("'test_named_pool' has 2 threads"),
                    HasSubstr("asks for 3")));
}

TEST(SessionTest, PinningOptionsPinThePoolThreads) {
  static const bool registered = [] {
    return RegisterCustomFunction(
               "test.affinity",
               [](KernelContext& ctx) -> Status {
                 cpu_set_t set;
                 CPU_ZERO(&set);
                 sched_getaffinity(0, sizeof(set), &set);
                 WEFT_ASSIGN_OR_RETURN(Tensor * out,
                                       ctx.AllocateOutput(0, Shape{2}));
                 int first = -1;
                 for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
                   if (CPU_ISSET(cpu, &set)) {
                     first = cpu;
                     break;
                   }
                 }
                 out->data<int32_t>()[0] = CPU_COUNT(&set);
                 out->data<int32_t>()[1] = first;
                 return Status::OK();
               })
        .ok();
  }();
  ASSERT_TRUE(registered);
  const int cpu = AutoCpuBudget().allowed_cpus.back();
  Graph g;
  ASSERT_TRUE(g.AddNode({"where",
                         "CustomOp",
                         {},
                         {{"function", "test.affinity"},
                          {"Tout", std::vector<DataType>{DataType::kInt32}}},
                         ""})
                  .ok());
  SessionOptions options = PerSessionOptions(1, 1);
  options.inter_op_pin_cpus = {cpu};
  options.inter_op_spin_us = 0;
  auto session = MustCreate(std::move(g), options);
  auto out = MustRun(*session, {"where"});
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{1, cpu}));
}

TEST(SessionTest, ScalarsAndZeroSizeTensorsFlowThrough) {
  Graph g;
  auto s = g.Const("s", Tensor::Scalar<float>(2));
  auto z = g.Const("z", Tensor(DataType::kFloat32, {0, 3}));
  g.Mul("zs", z, s);
  g.Add("ss", s, s);
  g.ReduceSum("rz", z, {}, false);
  auto session = MustCreate(std::move(g), PerSessionOptions(2, 2));
  auto out = MustRun(*session, {"zs", "ss", "rz"});
  EXPECT_EQ(out[0].shape(), (Shape{0, 3}));
  EXPECT_EQ(out[1].shape(), Shape{});
  EXPECT_EQ(out[1].data<float>()[0], 4);
  EXPECT_EQ(out[2].shape(), Shape{});
  EXPECT_EQ(out[2].data<float>()[0], 0);
}

// output_required: true for a fetched output or one a running node reads,
// false for an output of a target node that nothing reads.
std::atomic<int> g_required_calls{0};
std::atomic<bool> g_output_required{false};

TEST(SessionTest, OutputRequiredFollowsFetchesAndConsumers) {
  ASSERT_TRUE(
      RegisterCustomFunction("session_test_required", [](KernelContext& ctx) {
        g_output_required = ctx.output_required(0);
        ++g_required_calls;
        return ctx.SetOutput(0, Tensor::Scalar<float>(1.0f));
      }).ok());
  Graph g;
  ASSERT_TRUE(g.AddNode({"f",
                         "CustomOp",
                         {},
                         {{"function", "session_test_required"},
                          {"Tout", std::vector<DataType>{DataType::kFloat32}}},
                         ""})
                  .ok());
  g.Add("sum", "f", g.Const("one", Tensor::Scalar<float>(1.0f)));
  auto session = MustCreate(g, PerSessionOptions(1, 1));
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"f"}, &out).ok());  // A target only.
  EXPECT_EQ(g_required_calls.load(), 1);
  EXPECT_FALSE(g_output_required.load());
  MustRun(*session, {"f"});  // Fetched.
  EXPECT_TRUE(g_output_required.load());
  g_output_required = false;
  MustRun(*session, {"sum"});  // Read by a node that runs.
  EXPECT_TRUE(g_output_required.load());
  EXPECT_EQ(g_required_calls.load(), 3);
}

}  // namespace
}  // namespace weft
