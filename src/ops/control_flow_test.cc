#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "test_support/session_util.h"
#include "weft/graph_io.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// The (inter, intra) settings every control-flow test runs at: the caller
// thread alone, one inter-op thread (the thread running the loop is the
// pool's only one), and two.
const std::vector<std::pair<int, int>> kSettings = {{-1, 1}, {-1, 2}, {1, 1},
                                                    {1, 2},  {2, 1},  {2, 2}};

SessionOptions ControlFlowOptions(int inter, int intra) {
  return test::PerSessionOptions(inter, intra);
}

NodeDef Placeholder(const std::string& name, DataType dtype) {
  return {name, "Placeholder", {}, {{"dtype", dtype}}, ""};
}

SubgraphPtr MakeSubgraph(std::vector<NodeDef> nodes,
                         std::vector<std::string> inputs,
                         std::vector<std::string> outputs) {
  auto sub = std::make_shared<Subgraph>();
  for (NodeDef& node : nodes) test::MustAdd(sub->graph, std::move(node));
  sub->inputs = std::move(inputs);
  sub->outputs = std::move(outputs);
  return sub;
}

// Loop body: (i, cond, acc, x) -> (cond, acc + x, 2 (acc + x)), x captured.
SubgraphPtr SumBody() {
  return MakeSubgraph({Placeholder("i", DataType::kInt64),
                       Placeholder("c", DataType::kBool),
                       Placeholder("acc", DataType::kFloat32),
                       Placeholder("x", DataType::kFloat32),
                       {"sum", "Add", {"acc", "x"}, {}, ""},
                       {"twice", "Add", {"sum", "sum"}, {}, ""}},
                      {"i", "c", "acc", "x"}, {"c", "sum", "twice"});
}

// m (int64 scalar), acc0 and x (float32 [2]) fed; loop = Loop(m, acc0, x).
Graph SumLoopGraph(SubgraphPtr body = SumBody()) {
  Graph g;
  test::MustAdd(g, Placeholder("m", DataType::kInt64));
  test::MustAdd(g, Placeholder("acc0", DataType::kFloat32));
  test::MustAdd(g, Placeholder("x", DataType::kFloat32));
  test::MustAdd(g, {"loop",
                    "Loop",
                    {"m", "acc0", "x"},
                    {{"body", std::move(body)},
                     {"has_trip_count", true},
                     {"num_captures", int64_t{1}},
                     {"Tout", std::vector<DataType>{DataType::kFloat32,
                                                    DataType::kFloat32}}},
                    ""});
  return g;
}

NamedTensors SumFeeds(int64_t m) {
  return {{"m", Tensor::Scalar<int64_t>(m)},
          {"acc0", Tensor::FromVector<float>({2}, {0.5f, 0})},
          {"x", Tensor::FromVector<float>({2}, {1, 2})}};
}

TEST(LoopTest, CarriesStateAndStacksScanOutputsAtEverySetting) {
  for (auto [inter, intra] : kSettings) {
    SCOPED_TRACE("inter " + std::to_string(inter) + ", intra " +
                 std::to_string(intra));
    auto session =
        test::MustCreate(SumLoopGraph(), ControlFlowOptions(inter, intra));
    ASSERT_NE(session, nullptr);
    auto out = test::MustRun(*session, {"loop:0", "loop:1"}, SumFeeds(3));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{3.5f, 6}));
    EXPECT_EQ(out[1].shape(), (Shape{3, 2}));
    EXPECT_EQ(test::Values<float>(out[1]),
              (std::vector<float>{3, 4, 5, 8, 7, 12}));
  }
}

// The body hands its iteration number and condition out as scan outputs
// (Identity keeps the very tensors): each iteration's must stay as it was,
// though the Loop writes the next iteration's into a reused scalar when
// nothing else holds it.
TEST(LoopTest, ABodyThatKeepsItsIterationNumberSeesEachOneUnchanged) {
  auto body = MakeSubgraph({Placeholder("i", DataType::kInt64),
                            Placeholder("c", DataType::kBool),
                            {"i_out", "Identity", {"i"}, {}, ""},
                            {"c_out", "Identity", {"c"}, {}, ""}},
                           {"i", "c"}, {"c", "i_out", "c_out"});
  Graph g;
  test::MustAdd(g, Placeholder("m", DataType::kInt64));
  test::MustAdd(
      g, {"loop",
          "Loop",
          {"m"},
          {{"body", std::move(body)},
           {"has_trip_count", true},
           {"Tout", std::vector<DataType>{DataType::kInt64, DataType::kBool}}},
          ""});
  for (auto [inter, intra] : kSettings) {
    auto session = test::MustCreate(g, ControlFlowOptions(inter, intra));
    ASSERT_NE(session, nullptr);
    auto out = test::MustRun(*session, {"loop:0", "loop:1"},
                             {{"m", Tensor::Scalar<int64_t>(4)}});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(test::Values<int64_t>(out[0]),
              (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(out[1].shape(), (Shape{4}));
  }
}

TEST(LoopTest, ZeroIterationsPassTheInitialValuesThrough) {
  auto session = test::MustCreate(SumLoopGraph(), ControlFlowOptions(2, 1));
  auto out = test::MustRun(*session, {"loop:0", "loop:1"}, SumFeeds(0));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{0.5f, 0}));
  EXPECT_EQ(out[1].NumElements(), 0);
}

TEST(LoopTest, StopsWhenTheBodysConditionTurnsFalse) {
  // Body: (i, c, n, limit) -> (i + 1 < limit, n + 1); no trip count.
  auto body = MakeSubgraph(
      {Placeholder("i", DataType::kInt64),
       Placeholder("c", DataType::kBool),
       Placeholder("n", DataType::kInt64),
       Placeholder("limit", DataType::kInt64),
       {"one",
        "Const",
        {},
        {{"value", Tensor::Scalar<int64_t>(1)}, {"dtype", DataType::kInt64}},
        ""},
       {"next", "Add", {"i", "one"}, {}, ""},
       {"more", "Less", {"next", "limit"}, {}, ""},
       {"n1", "Add", {"n", "one"}, {}, ""}},
      {"i", "c", "n", "limit"}, {"more", "n1"});
  Graph g;
  test::MustAdd(g, Placeholder("go", DataType::kBool));
  test::MustAdd(g, Placeholder("n0", DataType::kInt64));
  test::MustAdd(g, Placeholder("limit", DataType::kInt64));
  test::MustAdd(g, {"loop",
                    "Loop",
                    {"go", "n0", "limit"},
                    {{"body", body},
                     {"has_condition", true},
                     {"num_captures", int64_t{1}},
                     {"Tout", std::vector<DataType>{DataType::kInt64}}},
                    ""});
  for (auto [inter, intra] : kSettings) {
    auto session = test::MustCreate(g, ControlFlowOptions(inter, intra));
    auto out = test::MustRun(*session, {"loop"},
                             {{"go", Tensor::Scalar<bool>(true)},
                              {"n0", Tensor::Scalar<int64_t>(10)},
                              {"limit", Tensor::Scalar<int64_t>(4)}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(*out[0].data<int64_t>(), 14);  // Iterations 0..3.
    // A false condition runs no iteration.
    out = test::MustRun(*session, {"loop"},
                        {{"go", Tensor::Scalar<bool>(false)},
                         {"n0", Tensor::Scalar<int64_t>(10)},
                         {"limit", Tensor::Scalar<int64_t>(4)}});
    EXPECT_EQ(*out[0].data<int64_t>(), 10);
  }
}

TEST(LoopTest, RefusesANegativeTripCount) {
  auto session = test::MustCreate(SumLoopGraph(), ControlFlowOptions(1, 1));
  std::vector<Tensor> out;
  const Status status = session->Run(SumFeeds(-1), {"loop"}, {}, &out);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("trip count M is -1"));
  EXPECT_THAT(status.message(), HasSubstr("loop"));
}

TEST(LoopTest, AnAbsurdTripCountWithScanOutputsFailsAfterOneIteration) {
  auto session = test::MustCreate(SumLoopGraph(), ControlFlowOptions(2, 1));
  std::vector<Tensor> out;
  const Status status =
      session->Run(SumFeeds(int64_t{1} << 60), {"loop:1"}, {}, &out);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(),
              HasSubstr("trip count M = 1152921504606846976"));
}

TEST(LoopTest, ScanOutputsObeyTheSessionMemoryLimit) {
  SessionOptions options = ControlFlowOptions(1, 1);
  options.memory_limit_bytes = 1000;
  // A condition input: the loop is not bounded by M alone, so only the
  // limit stops it, after 125 iterations of 8 bytes.
  auto body = MakeSubgraph({Placeholder("i", DataType::kInt64),
                            Placeholder("c", DataType::kBool),
                            Placeholder("x", DataType::kFloat32),
                            {"y", "Add", {"x", "x"}, {}, ""}},
                           {"i", "c", "x"}, {"c", "y"});
  Graph g;
  test::MustAdd(g, Placeholder("go", DataType::kBool));
  test::MustAdd(g, Placeholder("x", DataType::kFloat32));
  test::MustAdd(g, {"loop",
                    "Loop",
                    {"go", "x"},
                    {{"body", body},
                     {"has_condition", true},
                     {"num_captures", int64_t{1}},
                     {"Tout", std::vector<DataType>{DataType::kFloat32}}},
                    ""});
  auto session = test::MustCreate(g, options);
  std::vector<Tensor> out;
  const Status status =
      session->Run({{"go", Tensor::Scalar<bool>(true)},
                    {"x", Tensor::FromVector<float>({2}, {1, 2})}},
                   {"loop"}, {}, &out);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("more than 1000 bytes"));
}

// A body of two independent 20 ms Spins and a Sleep that waits for both:
// work for two inter-op threads and the blocking pool.
Graph SpinLoopGraph(int64_t spin_us, int64_t sleep_us) {
  auto body =
      MakeSubgraph({Placeholder("i", DataType::kInt64),
                    Placeholder("c", DataType::kBool),
                    Placeholder("t", DataType::kFloat32),
                    {"a", "Spin", {"t"}, {{"micros", spin_us}}, ""},
                    {"b", "Spin", {"t"}, {{"micros", spin_us}}, ""},
                    {"s", "Sleep", {"a", "b"}, {{"micros", sleep_us}}, ""},
                    {"t1", "Add", {"t", "s"}, {}, ""}},
                   {"i", "c", "t"}, {"c", "t1"});
  Graph g;
  test::MustAdd(g, Placeholder("m", DataType::kInt64));
  test::MustAdd(g, Placeholder("t0", DataType::kFloat32));
  test::MustAdd(g, {"loop",
                    "Loop",
                    {"m", "t0"},
                    {{"body", body},
                     {"has_trip_count", true},
                     {"Tout", std::vector<DataType>{DataType::kFloat32}}},
                    ""});
  return g;
}

NamedTensors SpinFeeds(int64_t m) {
  return {{"m", Tensor::Scalar<int64_t>(m)}, {"t0", Tensor::Scalar<float>(0)}};
}

// With one inter-op thread, the thread running the Loop is the only one
// that can run the body's second Spin and the node after the Sleep (which
// the blocking pool hands back): a plain wait would deadlock.
TEST(LoopTest, CompletesWhenTheBodyNeedsTheOnlyInterOpThread) {
  for (int inter : {1, -1, 2}) {
    SCOPED_TRACE("inter " + std::to_string(inter));
    auto session = test::MustCreate(SpinLoopGraph(2000, 1000),
                                    ControlFlowOptions(inter, 1));
    auto out = test::MustRun(*session, {"loop"}, SpinFeeds(4));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(*out[0].data<float>(), 4000.0f);  // Four Sleeps of 1000 us.
  }
}

TEST(LoopTest, IndependentBodyNodesOverlapOnTwoInterOpThreads) {
  // Two 30 ms Spins in each of 3 iterations: on two threads at least one
  // iteration runs them at the same time. Tried a few times: a loaded
  // machine may hold one thread back for a whole iteration.
  auto session =
      test::MustCreate(SpinLoopGraph(30'000, 0), ControlFlowOptions(2, 1));
  bool overlapped = false;
  for (int attempt = 0; attempt < 5 && !overlapped; ++attempt) {
    RunMetadata metadata =
        test::MustRunTraced(*session, {"loop"}, SpinFeeds(3));
    for (const NodeExecStats& a : metadata.node_stats) {
      if (a.node_name != "loop/a") continue;
      for (const NodeExecStats& b : metadata.node_stats) {
        if (b.node_name == "loop/b" && b.iteration == a.iteration &&
            a.start_ns < b.end_ns && b.start_ns < a.end_ns) {
          overlapped = true;
        }
      }
    }
  }
  EXPECT_TRUE(overlapped);
}

TEST(LoopTest, TraceShowsBodyNodesWithTheirIteration) {
  auto session = test::MustCreate(SumLoopGraph(), ControlFlowOptions(2, 2));
  RunMetadata metadata = test::MustRunTraced(*session, {"loop:0"}, SumFeeds(3));
  std::vector<int64_t> sum_iterations;
  for (const NodeExecStats& s : metadata.node_stats) {
    if (s.node_name == "loop/sum") sum_iterations.push_back(s.iteration);
    if (s.node_name == "loop") EXPECT_EQ(s.iteration, -1);
  }
  std::sort(sum_iterations.begin(), sum_iterations.end());
  EXPECT_EQ(sum_iterations, (std::vector<int64_t>{0, 1, 2}));
}

TEST(LoopTest, BodyKernelsSplitOverTheIntraOpPool) {
  // A 256 x 256 product in the body: with intra = 2 and nothing else
  // running, its ParallelFor enlists the second thread.
  auto body = MakeSubgraph({Placeholder("i", DataType::kInt64),
                            Placeholder("c", DataType::kBool),
                            Placeholder("a", DataType::kFloat32),
                            {"p", "MatMul", {"a", "a"}, {}, ""}},
                           {"i", "c", "a"}, {"c", "p"});
  Graph g;
  test::MustAdd(g, Placeholder("m", DataType::kInt64));
  test::MustAdd(g, Placeholder("a", DataType::kFloat32));
  test::MustAdd(g, {"loop",
                    "Loop",
                    {"m", "a"},
                    {{"body", body},
                     {"has_trip_count", true},
                     {"Tout", std::vector<DataType>{DataType::kFloat32}}},
                    ""});
  const Tensor a = test::SeededFloats(Shape{256, 256}, 3);
  std::vector<Tensor> results;
  for (int intra : {1, 2}) {
    auto session = test::MustCreate(g, ControlFlowOptions(1, intra));
    RunOptions options;
    options.trace_level = RunOptions::TraceLevel::kFull;
    RunMetadata metadata;
    std::vector<Tensor> out;
    ASSERT_TRUE(session
                    ->Run(options,
                          {{"m", Tensor::Scalar<int64_t>(3)}, {"a", a}},
                          {"loop"}, {}, &out, &metadata)
                    .ok());
    int most_shards = 0;
    for (const NodeExecStats& s : metadata.node_stats) {
      if (s.node_name == "loop/p") {
        most_shards = std::max(most_shards, s.intra_op_shards);
      }
    }
    EXPECT_EQ(most_shards, intra);
    results.push_back(out[0]);
  }
  // The determinism rule holds through the body: the same bits.
  ASSERT_EQ(results[0].size_bytes(), results[1].size_bytes());
  EXPECT_EQ(0, std::memcmp(results[0].raw_data(), results[1].raw_data(),
                           results[0].size_bytes()));
}

TEST(LoopTest, ADeadlineStopsALongLoopBetweenIterations) {
  for (int inter : {1, 2, -1}) {
    SCOPED_TRACE("inter " + std::to_string(inter));
    auto session = test::MustCreate(SpinLoopGraph(100, 2000),
                                    ControlFlowOptions(inter, 1));
    RunOptions options;
    options.timeout_ms = 50;
    std::vector<Tensor> out;
    const Status status = session->Run(options, SpinFeeds(1'000'000), {"loop"},
                                       {}, &out, nullptr);
    EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status;
  }
}

TEST(LoopTest, CloseStopsALongLoop) {
  for (int inter : {1, 2, -1}) {
    SCOPED_TRACE("inter " + std::to_string(inter));
    auto session = test::MustCreate(SpinLoopGraph(100, 2000),
                                    ControlFlowOptions(inter, 1));
    std::thread closer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      EXPECT_TRUE(session->Close().ok());
    });
    std::vector<Tensor> out;
    const Status status =
        session->Run(SpinFeeds(1'000'000), {"loop"}, {}, &out);
    closer.join();
    EXPECT_EQ(status.code(), StatusCode::kCancelled) << status;
  }
}

TEST(LoopTest, ABodyOfTheWrongDtypeFailsAtSessionCreation) {
  Graph g = SumLoopGraph();
  Graph wrong;
  for (NodeDef node : g.nodes()) {
    if (node.name == "loop") {
      node.attrs["Tout"] =
          std::vector<DataType>{DataType::kFloat32, DataType::kInt32};
    }
    test::MustAdd(wrong, std::move(node));
  }
  auto session = Session::Create(wrong, ControlFlowOptions(1, 1));
  ASSERT_FALSE(session.ok());
  EXPECT_THAT(session.status().message(), HasSubstr("attribute 'body'"));
  EXPECT_THAT(session.status().message(), HasSubstr("int32"));
}

// If: y = cond ? x + x : -x, x captured by both branches.
Graph IfGraph() {
  auto then_branch = MakeSubgraph(
      {Placeholder("x", DataType::kFloat32), {"y", "Add", {"x", "x"}, {}, ""}},
      {"x"}, {"y"});
  auto else_branch = MakeSubgraph(
      {Placeholder("x", DataType::kFloat32), {"y", "Neg", {"x"}, {}, ""}},
      {"x"}, {"y"});
  Graph g;
  test::MustAdd(g, Placeholder("cond", DataType::kBool));
  test::MustAdd(g, Placeholder("x", DataType::kFloat32));
  test::MustAdd(g, {"if",
                    "If",
                    {"cond", "x"},
                    {{"then_branch", then_branch},
                     {"else_branch", else_branch},
                     {"Tout", std::vector<DataType>{DataType::kFloat32}}},
                    ""});
  return g;
}

TEST(IfTest, RunsTheBranchTheConditionChooses) {
  for (auto [inter, intra] : kSettings) {
    auto session =
        test::MustCreate(IfGraph(), ControlFlowOptions(inter, intra));
    const Tensor x = Tensor::FromVector<float>({2}, {1, -3});
    auto yes = test::MustRun(*session, {"if"},
                             {{"cond", Tensor::Scalar<bool>(true)}, {"x", x}});
    auto no = test::MustRun(*session, {"if"},
                            {{"cond", Tensor::Scalar<bool>(false)}, {"x", x}});
    ASSERT_EQ(yes.size(), 1u);
    ASSERT_EQ(no.size(), 1u);
    EXPECT_EQ(test::Values<float>(yes[0]), (std::vector<float>{2, -6}));
    EXPECT_EQ(test::Values<float>(no[0]), (std::vector<float>{-1, 3}));
  }
}

TEST(IfTest, AConditionOfManyElementsIsAnError) {
  auto session = test::MustCreate(IfGraph(), ControlFlowOptions(1, 1));
  std::vector<Tensor> out;
  Tensor two(DataType::kBool, Shape{2});
  const Status status = session->Run(
      {{"cond", two}, {"x", Tensor::Scalar<float>(1)}}, {"if"}, {}, &out);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("cond has 2 elements"));
}

// Scan: a running sum over the rows of x (axis 1, reversed), the partial
// sums stacked along output axis 1 in reverse.
TEST(ScanTest, SlicesAndStacksAlongAxesInEitherDirection) {
  auto body = MakeSubgraph({Placeholder("s", DataType::kFloat32),
                            Placeholder("row", DataType::kFloat32),
                            {"s1", "Add", {"s", "row"}, {}, ""},
                            {"out", "Identity", {"s1"}, {}, ""}},
                           {"s", "row"}, {"s1", "out"});
  Graph g;
  test::MustAdd(g, Placeholder("s0", DataType::kFloat32));
  test::MustAdd(g, Placeholder("x", DataType::kFloat32));
  test::MustAdd(g, {"scan",
                    "Scan",
                    {"s0", "x"},
                    {{"body", body},
                     {"num_scan_inputs", int64_t{1}},
                     {"scan_input_axes", std::vector<int64_t>{1}},
                     {"scan_input_directions", std::vector<int64_t>{1}},
                     {"scan_output_axes", std::vector<int64_t>{-1}},
                     {"scan_output_directions", std::vector<int64_t>{1}},
                     {"Tout", std::vector<DataType>{DataType::kFloat32,
                                                    DataType::kFloat32}}},
                    ""});
  // x is [2, 3]: scanning axis 1 backwards gives columns 2, 1, 0.
  const Tensor x = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 10, 20, 30});
  for (auto [inter, intra] : kSettings) {
    auto session = test::MustCreate(g, ControlFlowOptions(inter, intra));
    auto out = test::MustRun(
        *session, {"scan:0", "scan:1"},
        {{"s0", Tensor::FromVector<float>({2}, {0, 0})}, {"x", x}});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{6, 60}));
    // Partial sums in step order: [3, 30], [5, 50], [6, 60]; stacked on the
    // last axis in reverse: row 0 = 6 5 3, row 1 = 60 50 30.
    EXPECT_EQ(out[1].shape(), (Shape{2, 3}));
    EXPECT_EQ(test::Values<float>(out[1]),
              (std::vector<float>{6, 5, 3, 60, 50, 30}));
  }
}

// Opset 8's batched Scan: each batch entry scanned on its own, results
// stacked along the batch axis.
TEST(ScanTest, BatchedScansEachEntry) {
  auto body = MakeSubgraph({Placeholder("s", DataType::kFloat32),
                            Placeholder("row", DataType::kFloat32),
                            {"s1", "Add", {"s", "row"}, {}, ""}},
                           {"s", "row"}, {"s1", "s1"});
  Graph g;
  test::MustAdd(g, Placeholder("s0", DataType::kFloat32));
  test::MustAdd(g, Placeholder("x", DataType::kFloat32));
  test::MustAdd(g, {"scan",
                    "Scan",
                    {"s0", "x"},
                    {{"body", body},
                     {"num_scan_inputs", int64_t{1}},
                     {"batched", true},
                     {"Tout", std::vector<DataType>{DataType::kFloat32,
                                                    DataType::kFloat32}}},
                    ""});
  // x is [batch 2, steps 3]: entry 0 sums 1 2 3, entry 1 sums 10 20 30.
  auto session = test::MustCreate(g, ControlFlowOptions(2, 1));
  auto out = test::MustRun(
      *session, {"scan:0", "scan:1"},
      {{"s0", Tensor::FromVector<float>({2}, {0, 100})},
       {"x", Tensor::FromVector<float>({2, 3}, {1, 2, 3, 10, 20, 30})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{6, 160}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 3}));
  EXPECT_EQ(test::Values<float>(out[1]),
            (std::vector<float>{1, 3, 6, 110, 130, 160}));
}

TEST(SubgraphTest, JsonGraphFilesKeepSubgraphs) {
  GraphFile file{SumLoopGraph(), {"loop:0", "loop:1"}};
  const std::string text = SerializeGraph(file);
  auto parsed = ParseGraph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(SerializeGraph(*parsed), text);
  auto session = test::MustCreate(parsed->graph, ControlFlowOptions(2, 1));
  auto out = test::MustRun(*session, {"loop:0"}, SumFeeds(2));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{2.5f, 4}));
}

TEST(SubgraphTest, AParameterThatIsNoPlaceholderIsRefused) {
  auto body = SumBody();
  auto broken = std::make_shared<Subgraph>(*body);
  broken->inputs[3] = "sum";
  auto session =
      Session::Create(SumLoopGraph(broken), ControlFlowOptions(1, 1));
  ASSERT_FALSE(session.ok());
  EXPECT_THAT(session.status().message(),
              HasSubstr("input 'sum' is not a Placeholder of the subgraph"));
}

}  // namespace
}  // namespace weft
