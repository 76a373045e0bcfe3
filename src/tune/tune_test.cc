// The tune engine on profiles with known answers: work, span and critical
// path; the executor model's predictions for chains, branches, splitting
// ops and the core budget.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "test_support/session_util.h"
#include "tune/profile.h"
#include "tune/simulate.h"
#include "tune/tuner.h"

namespace weft::tune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

NodeDef TuneNode(const std::string& name, const std::string& op,
                 std::vector<std::string> inputs = {}) {
  return {name, op, std::move(inputs), {}, ""};
}

// x (fed, so not executed) -> a -> b, x -> c, and d reads b and c: two
// branches, the first twice as long. d is listed first: the profile must
// not take the list's order for a topological one.
GraphProfile BranchesProfile(double speedup_at_2 = 1.0) {
  const std::vector<ExecutedNode> g = {{"d", "Add", {"b", "c"}},
                                       {"a", "Spin", {"x"}},
                                       {"b", "Spin", {"a"}},
                                       {"c", "Spin", {"x"}}};
  const NodeTimes serial = {{"a", 10}, {"b", 10}, {"c", 20}, {"d", 1}};
  const NodeTimes at_2 = {{"a", 10 / speedup_at_2},
                          {"b", 10 / speedup_at_2},
                          {"c", 20 / speedup_at_2},
                          {"d", 1}};
  return BuildProfile(g, serial, {{2, at_2}}, /*run_ms_at=*/{{1, 42}},
                      /*cores=*/2);
}

TEST(TuneProfileTest, WorkSpanCriticalPathAndTopologicalOrder) {
  GraphProfile p = BranchesProfile();
  ASSERT_EQ(p.nodes.size(), 4u);  // x was fed: not a node here.
  // d comes after its predecessors although the Run listed it first.
  EXPECT_EQ(p.nodes.back().name, "d");
  EXPECT_DOUBLE_EQ(p.work_ms, 41);
  EXPECT_DOUBLE_EQ(p.span_ms, 21);
  EXPECT_NEAR(p.parallelism(), 41.0 / 21, 1e-12);
  std::vector<std::string> path;
  for (int i : p.critical_path) path.push_back(p.nodes[i].name);
  EXPECT_THAT(path, ElementsAre("a", "b", "d"));  // Ties: the first.
  EXPECT_DOUBLE_EQ(p.overhead_ms, 1);             // 42 measured - 41 of nodes.
  EXPECT_FALSE(p.Splits("Spin"));
}

TEST(TuneProfileTest, SpeedupCurvesArePerOpAndNeverBelowOne) {
  GraphProfile p = BranchesProfile(1.8);
  EXPECT_NEAR(p.Speedup("Spin", 2), 1.8, 1e-12);
  EXPECT_NEAR(p.Speedup("Spin", 8), 1.8, 1e-12);  // The last measured.
  EXPECT_DOUBLE_EQ(p.Speedup("Add", 2), 1.0);
  EXPECT_DOUBLE_EQ(p.Speedup("Unknown", 2), 1.0);
  EXPECT_TRUE(p.Splits("Spin"));
  EXPECT_NEAR(p.SplittingShare(), 40.0 / 41, 1e-12);
}

// A traced Run of nodes taking the given milliseconds, one shard each
// unless `split`.
RunMetadata TuneTracedRun(const std::map<std::string, double>& ms,
                          bool split = false) {
  RunMetadata run;
  for (const auto& [name, t] : ms) {
    NodeExecStats stats;
    stats.node_name = name;
    stats.end_ns = static_cast<int64_t>(t * 1e6);
    stats.intra_op_shards = split ? 2 : 1;
    run.node_stats.push_back(stats);
  }
  return run;
}

// Each node's median is 1 ms, but every Run had one node slow (3 ms): the
// median Run's nodes took 5 ms, not the 3 their medians add up to, and
// the times are scaled to that total.
TEST(TuneProfileTest, NodeMediansAddUpToTheMedianRun) {
  const std::vector<RunMetadata> runs = {
      TuneTracedRun({{"a", 3}, {"b", 1}, {"c", 1}}),
      TuneTracedRun({{"a", 1}, {"b", 3}, {"c", 1}}),
      TuneTracedRun({{"a", 1}, {"b", 1}, {"c", 3}})};
  const NodeTimes times = MedianNodeTimes(runs);
  EXPECT_NEAR(times.at("a"), 5.0 / 3, 1e-9);
  EXPECT_NEAR(times.at("b"), 5.0 / 3, 1e-9);
  EXPECT_NEAR(times.at("c"), 5.0 / 3, 1e-9);
  // Steady Runs keep their medians.
  const NodeTimes steady =
      MedianNodeTimes({TuneTracedRun({{"a", 2}, {"b", 1}}),
                       TuneTracedRun({{"a", 2}, {"b", 1}})});
  EXPECT_NEAR(steady.at("a"), 2, 1e-9);
  EXPECT_NEAR(steady.at("b"), 1, 1e-9);
}

// With only_split, nodes that never enlisted a helper are left out, of
// the medians and of the Runs' totals alike.
TEST(TuneProfileTest, OnlySplitNodesCountWhenAsked) {
  RunMetadata run = TuneTracedRun({{"m", 4}}, /*split=*/true);
  run.node_stats.push_back(TuneTracedRun({{"r", 9}}).node_stats.front());
  const NodeTimes times = MedianNodeTimes({run, run}, /*only_split=*/true);
  EXPECT_EQ(times.size(), 1u);
  EXPECT_NEAR(times.at("m"), 4, 1e-9);
}

TEST(TuneProfileTest, SpeedupsBetweenMeasuredCountsAreInterpolated) {
  const std::vector<ExecutedNode> g = {{"m", "MatMul", {}}};
  // Measured at 1 (10 ms) and 4 threads (4 ms): 2.5x; 2 and 3 in between.
  GraphProfile p = BuildProfile(g, {{"m", 10}}, {{4, {{"m", 4}}}},
                                /*run_ms_at=*/{{1, 10}}, 4);
  EXPECT_NEAR(p.Speedup("MatMul", 2), 1.5, 1e-12);
  EXPECT_NEAR(p.Speedup("MatMul", 3), 2.0, 1e-12);
  EXPECT_NEAR(p.Speedup("MatMul", 4), 2.5, 1e-12);
  EXPECT_NEAR(p.Speedup("MatMul", 64), 2.5, 1e-12);
}

// The untraced Run at (1, k) sets the overhead at k: the model's (1, k)
// prediction is that Run's time, and every setting at k pays the same.
TEST(TuneProfileTest, EachIntraOpCountHasTheOverheadItsRunMeasured) {
  const std::vector<ExecutedNode> g = {{"a", "MatMul", {}},
                                       {"b", "MatMul", {}}};
  const NodeTimes serial = {{"a", 10}, {"b", 10}};
  // Nodes 2x faster at 4 threads, 4/3x at 2 (interpolated); untraced Runs
  // took 21 ms at 1, 17 at 2 (15 of nodes) and 9 at 4 (10 of nodes: the
  // traced nodes took longer than the untraced Run).
  GraphProfile p =
      BuildProfile(g, serial, {{4, {{"a", 5}, {"b", 5}}}},
                   /*run_ms_at=*/{{1, 21}, {2, 17}, {4, 9}}, /*cores=*/4);
  EXPECT_NEAR(p.overhead_ms, 1, 1e-9);
  EXPECT_NEAR(p.OverheadMs(1), 1, 1e-9);
  EXPECT_NEAR(p.OverheadMs(2), 2, 1e-9);
  EXPECT_NEAR(p.OverheadMs(3), 0.5, 1e-9);  // Between 2 and 4.
  EXPECT_NEAR(p.OverheadMs(4), -1, 1e-9);
  EXPECT_NEAR(p.OverheadMs(64), -1, 1e-9);  // The last timed.
  for (int k : {1, 2, 4}) {
    EXPECT_NEAR(PredictRunMs(p, {1, k}, 4),
                k == 1   ? 21
                : k == 2 ? 17
                         : 9,
                1e-9)
        << "intra " << k;
  }
  // Two inter-op threads overlap a and b; the overhead stays the count's.
  EXPECT_NEAR(PredictRunMs(p, {2, 1}, 4), 11, 1e-9);
  // Timed at (1, 1) only, every count pays the serial Run's overhead.
  GraphProfile serial_only =
      BuildProfile(g, serial, {{4, {{"a", 5}, {"b", 5}}}},
                   /*run_ms_at=*/{{1, 21}}, /*cores=*/4);
  EXPECT_NEAR(serial_only.OverheadMs(4), 1, 1e-9);
}

TEST(TuneSimulateTest, BranchesOverlapOnlyWithInterOpThreads) {
  GraphProfile p = BranchesProfile();
  // Serial: the work plus the overhead, whatever intra (nothing splits).
  EXPECT_NEAR(PredictRunMs(p, {1, 1}, 2), 42, 1e-9);
  EXPECT_NEAR(PredictRunMs(p, {-1, 2}, 2), 42, 1e-9);
  EXPECT_NEAR(PredictRunMs(p, {1, 2}, 2), 42, 1e-9);
  // Two workers: c overlaps a -> b; then d.
  EXPECT_NEAR(PredictRunMs(p, {2, 1}, 2), 22, 1e-9);
  EXPECT_NEAR(PredictRunMs(p, {0, 1}, 2), 22, 1e-9);  // 0: the cores.
  // Four workers on one core: the two branches share it.
  EXPECT_NEAR(PredictRunMs(p, {4, 1}, 1), 42, 1e-9);
}

TEST(TuneSimulateTest, SplittingOpsShareTheCoreBudget) {
  GraphProfile p = BranchesProfile(1.8);
  // Alone, each Spin gets both cores.
  EXPECT_NEAR(PredictRunMs(p, {1, 2}, 2), 40 / 1.8 + 1 + 1, 1e-9);
  // Two at once get one core each (the budget is spent); when the short
  // branch ends at 20 ms the long one takes the freed core for its last
  // 0 ms... here both end together: c (20) against a -> b (10 + 10).
  EXPECT_NEAR(PredictRunMs(p, {2, 2}, 2), 20 + 1 + 1, 1e-9);
}

TEST(TuneSimulateTest, AFreedCoreGoesToTheNodeStillRunning) {
  const std::vector<ExecutedNode> g = {{"short", "MatMul", {}},
                                       {"long", "MatMul", {}}};
  GraphProfile p = BuildProfile(g, {{"short", 10}, {"long", 30}},
                                {{2, {{"short", 5}, {"long", 15}}}},
                                /*run_ms_at=*/{{1, 40}}, 2);
  // Both start with one core; at 10 ms `long` has 20 ms of serial work
  // left and runs on two threads from then: 10 ms more.
  EXPECT_NEAR(PredictRunMs(p, {2, 2}, 2), 20, 1e-9);
}

// s -> (long, short) -> j, where everything `short` feeds also reads
// `long`: the executor runs `short` beside `long` when it costs less than
// join_inline_cost_ns, and the model does the same.
TEST(TuneSimulateTest, AShortNodeJoiningItsLongSiblingStaysOnItsThread) {
  const std::vector<ExecutedNode> g = {{"s", "Spin", {}},
                                       {"long", "Spin", {"s"}},
                                       {"short", "Spin", {"s"}},
                                       {"j", "Add", {"long", "short"}}};
  const NodeTimes serial = {{"s", 1}, {"long", 10}, {"short", 2}, {"j", 1}};
  GraphProfile p = BuildProfile(g, serial, {}, /*run_ms_at=*/{{1, 14}}, 2);
  p.join_inline_ms = 0;  // Handed over: `short` overlaps `long`.
  EXPECT_NEAR(PredictRunMs(p, {2, 1}, 2), 1 + 10 + 1, 1e-9);
  p.join_inline_ms = 5;  // Kept: one thread runs both.
  std::vector<TimelineEntry> timeline;
  EXPECT_NEAR(PredictRunMs(p, {2, 1}, 2, &timeline), 1 + 2 + 10 + 1, 1e-9);
  std::map<std::string, TimelineEntry> by_name;
  for (const TimelineEntry& e : timeline) by_name[p.nodes[e.node].name] = e;
  EXPECT_EQ(by_name["short"].lane, by_name["long"].lane);
  EXPECT_NEAR(by_name["long"].start_ms, by_name["short"].end_ms, 1e-9);
  p.join_inline_ms = 1.5;  // `short` costs more: handed over again.
  EXPECT_NEAR(PredictRunMs(p, {2, 1}, 2), 1 + 10 + 1, 1e-9);
}

// A short node whose output leads elsewhere is handed over whatever its
// cost, so its branch overlaps the long one.
TEST(TuneSimulateTest, AShortNodeLeadingToOtherWorkIsHandedOver) {
  const std::vector<ExecutedNode> g = {{"s", "Spin", {}},
                                       {"long", "Spin", {"s"}},
                                       {"short", "Spin", {"s"}},
                                       {"tail", "Spin", {"short"}},
                                       {"j", "Add", {"long", "tail"}}};
  const NodeTimes serial = {
      {"s", 1}, {"long", 10}, {"short", 2}, {"tail", 8}, {"j", 1}};
  GraphProfile p = BuildProfile(g, serial, {}, /*run_ms_at=*/{{1, 22}}, 2);
  p.join_inline_ms = 5;
  EXPECT_NEAR(PredictRunMs(p, {2, 1}, 2), 1 + 10 + 1, 1e-9);
}

TEST(TuneSimulateTest, TheGridIsInterFromMinusOneAndIntraFromOne) {
  std::vector<std::pair<int, int>> grid;
  for (Setting s : TuneGrid(2)) grid.emplace_back(s.inter, s.intra);
  EXPECT_THAT(grid,
              ElementsAre(std::pair(-1, 1), std::pair(-1, 2), std::pair(1, 1),
                          std::pair(1, 2), std::pair(2, 1), std::pair(2, 2)));
  std::vector<int> intras;
  for (Setting s : TuneGrid(48)) {
    if (s.inter == -1) intras.push_back(s.intra);
  }
  EXPECT_THAT(intras, ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 48));
}

// Predictions closer than kTieFraction are a tie, broken towards fewer
// threads; a clearly faster setting still comes first.
TEST(TuneRankTest, NearTiesGoToTheSettingWithFewerThreads) {
  const std::vector<SettingResult> settings = {
      {{1, 2}, 6.35, {}},   // 0: inter worker + 1 helper.
      {{2, 2}, 6.23, {}},   // 1: best predicted, 2 workers + 1 helper.
      {{-1, 2}, 6.35, {}},  // 2: the caller + 1 helper.
      {{-1, 1}, 11.3, {}},  // 3
      {{2, 1}, 4.0, {}},    // 4 (in the second case only)
  };
  EXPECT_THAT(RankPredictions({settings.begin(), settings.begin() + 4}, 2),
              ElementsAre(2, 0, 1, 3));
  // (2, 1) is clearly best: nothing ties with it, the rest keep their
  // predicted order.
  EXPECT_THAT(RankPredictions(settings, 2), ElementsAre(4, 1, 0, 2, 3));
}

// Measured within kTieFraction of the fastest is a tie, won by the setting
// with fewest threads; a clearly faster setting still wins, and settings
// not measured never do.
TEST(TuneRankTest, MeasuredTiesGoToTheSettingWithFewerThreads) {
  std::vector<SettingResult> settings = {
      {{1, 2}, 5.0, 6.00},   // 0: fastest measured, 2 extra threads
      {{-1, 2}, 5.0, 6.10},  // 1: within 3%, 1 extra thread
      {{2, 2}, 4.0, {}},     // 2: best predicted, not measured
      {{1, 1}, 9.0, 11.0},   // 3
  };
  EXPECT_EQ(ChooseMeasured(settings, 2), 1);
  TuneResult result;
  result.profile = BranchesProfile();
  result.cores = 2;
  result.settings = settings;
  result.best = 1;
  EXPECT_THAT(Explain(result),
              HasSubstr("(1, 2) measured 2% faster, within the 3% a "
                        "measurement does not resolve, and (-1, 2) starts "
                        "fewer threads"));
  settings[1].measured_ms = 6.30;  // 5% slower: no longer a tie.
  EXPECT_EQ(ChooseMeasured(settings, 2), 0);
  EXPECT_EQ(ChooseMeasured({{{1, 1}, 1.0, {}}}, 2), -1);
}

// Two Spin branches whose op runs `speedup` times faster on 2 threads,
// with every setting of the 2-core grid predicted and none measured.
TuneResult PredictedBranches(double speedup) {
  TuneResult result;
  result.profile = BranchesProfile(speedup);
  result.cores = 2;
  for (Setting s : TuneGrid(2)) {
    result.settings.push_back({s, PredictRunMs(result.profile, s, 2), {}});
  }
  return result;
}

// The printed share of work that splits counts the nodes the kernels split
// in traced Runs, whatever speed-up a busy machine measured for their op.
TEST(TuneProfileTest, TheSplitShareCountsTheNodesTheKernelsSplit) {
  GraphProfile profile = BranchesProfile(1.0);  // No measured speed-up.
  ASSERT_GE(profile.nodes.size(), 2u);
  EXPECT_DOUBLE_EQ(profile.SplitNodeShare(), 0.0);
  double split_ms = 0;
  for (const NodeProfile& node : profile.nodes) {
    if (node.op == "Spin") {
      profile.split_nodes.insert(node.name);
      split_ms += node.serial_ms;
    }
  }
  EXPECT_DOUBLE_EQ(profile.SplitNodeShare(), split_ms / profile.work_ms);
  EXPECT_DOUBLE_EQ(profile.SplittingShare(), 0.0);  // The speed rule differs.
}

// The verdicts agree with the setting chosen: an op that runs 1.8x faster
// on 2 threads does not make "intra >= 2 pays" true of a choice of intra
// = 1, nor independent branches "inter >= 2 pays" of inter = 1 (seen in
// the field: "-> intra >= 2 pays", then intra = 1 chosen).
TEST(TuneExplainTest, TheVerdictsNeverContradictTheChoice) {
  TuneResult result = PredictedBranches(1.8);
  for (size_t i = 0; i < result.settings.size(); ++i) {
    result.best = static_cast<int>(i);
    const Setting chosen = result.settings[i].setting;
    const std::string text = Explain(result);
    SCOPED_TRACE(text);
    EXPECT_EQ(text.find("intra >= 2 pays") != std::string::npos,
              chosen.intra >= 2);
    EXPECT_EQ(text.find("inter >= 2 pays") != std::string::npos,
              chosen.inter >= 2);
    if (chosen.intra < 2) {
      EXPECT_THAT(text, HasSubstr("intra could pay, but the chosen setting"));
    }
  }
}

TEST(TuneExplainTest, TheExplanationQuotesTheNumbers) {
  TuneResult result = PredictedBranches(1.8);
  result.best = 3;  // (1, 2)
  result.settings[3].measured_ms = 24.5;
  const std::string text = Explain(result);
  EXPECT_THAT(text, HasSubstr("parallelism 2.0"));
  EXPECT_THAT(text, HasSubstr("Spin is 98% of the work and runs 1.8x faster "
                              "on 2 threads -> intra >= 2 pays"));
  EXPECT_THAT(text, HasSubstr("(1, 1) predicted"));
}

// The profile is of the graph the Runs executed: MatMul, Add and Relu run
// as one FusedGemm, whose time is a node's and may split, not fixed
// overhead (a profile of the graph as given had found none of its nodes).
TEST(TuneGraphTest, TheProfileIsOfTheGraphAsExecutedAfterThePasses) {
  GraphFile file;
  file.graph.Placeholder("x", DataType::kFloat32, {64, 64});
  file.graph.Const("w", test::SeededFloats({64, 64}, 1));
  file.graph.Const("b", test::SeededFloats({64}, 2));
  file.graph.MatMul("m", "x", "w");
  file.graph.Add("biased", "m", "b");
  file.graph.Relu("r", "biased");
  file.graph.Spin("s", 1);
  ASSERT_TRUE(
      file.graph.AddNode(TuneNode("sum", "Add", {"r", "r", "^s"})).ok());
  file.outputs = {"sum"};
  TuneOptions options;
  options.profile_runs = 1;
  options.measure_runs = 1;
  options.warmup = 0;
  auto result =
      TuneGraph(file, {{"x", test::SeededFloats({64, 64}, 3)}}, options);
  ASSERT_TRUE(result.ok()) << result.status();
  std::map<std::string, std::string> ops;
  for (const NodeProfile& node : result->profile.nodes) {
    ops[node.name] = node.op;
  }
  EXPECT_THAT(ops,
              ElementsAre(std::pair("r", "FusedGemm"), std::pair("s", "Spin"),
                          std::pair("sum", "Add")));
  const NodeProfile& sum = result->profile.nodes.back();
  ASSERT_EQ(sum.name, "sum");
  std::vector<std::string> predecessors;
  for (int p : sum.predecessors) {
    predecessors.push_back(result->profile.nodes[p].name);
  }
  EXPECT_THAT(predecessors, UnorderedElementsAre("r", "s"));
}

TEST(TuneGraphTest, BadCoreCountsAreRefused) {
  GraphFile file;
  ASSERT_TRUE(file.graph.AddNode(TuneNode("s", "Spin")).ok());
  file.outputs = {"s"};
  TuneOptions options;
  options.cores = 0;
  EXPECT_THAT(TuneGraph(file, {}, options).status().message(),
              HasSubstr("--cores 0 is out of range: 1 to 4096"));
  options.cores = 10000;
  EXPECT_FALSE(TuneGraph(file, {}, options).ok());
}

}  // namespace
}  // namespace weft::tune
