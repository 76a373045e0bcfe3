// Executor overhead through Session::Run, with inter and intra at auto
// (default SessionOptions, the process-wide pools):
//   (a) a chain of 1,000 Adds on 16-element float32 tensors;
//   (b) 1,000 independent Adds reduced by a tree of 999 Adds;
//   (c) the fixed cost of Run on a one-node graph;
//   (d) a Loop of 1,000 iterations whose body is one Add, at inter = -1, 1
//       and 2: the cost of one iteration (a nested Run of the body).
// Each case has a "Direct" twin that does the same arithmetic in a plain
// loop, so weft's cost per node is (weft - direct) / nodes; the counter
// `ns_per_node` is weft's whole time per node. Chain_CallerThread runs the
// chain with inter = -1 (every node on the calling thread): the executor's
// own cost without any hand-off between threads.
//
//   build/bin/weft_executor_bench --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr int kNodes = 1000;
constexpr int64_t kElements = 16;

weft::Tensor Filled(float value) {
  weft::Tensor t(weft::DataType::kFloat32, {kElements});
  for (int64_t i = 0; i < kElements; ++i) t.data<float>()[i] = value;
  return t;
}

// Reported as time / value: nanoseconds per node.
void SetPerNode(benchmark::State& state, int nodes) {
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(nodes) * static_cast<double>(state.iterations()) /
          1e9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void RunLoop(benchmark::State& state, weft::Graph graph,
             const std::string& fetch, int nodes,
             const weft::SessionOptions& options = {}) {
  auto session = weft::Session::Create(std::move(graph), options);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return;
  }
  const std::vector<std::pair<std::string, weft::Tensor>> feeds = {
      {"x", Filled(1.0f)}};
  std::vector<weft::Tensor> out;
  for (auto _ : state) {
    const weft::Status s = (*session)->Run(feeds, {fetch}, {}, &out);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  SetPerNode(state, nodes);
}

// (a) x -> Add(x, c) -> Add(., c) -> ... 1,000 deep; returns the last node.
std::string BuildChain(weft::Graph& g) {
  const std::string c = g.Const("c", Filled(0.5f));
  std::string prev = g.Placeholder("x", weft::DataType::kFloat32, {kElements});
  for (int i = 0; i < kNodes; ++i) {
    prev = g.Add("add" + std::to_string(i), prev, c);
  }
  return prev;
}

// inter = -1, for the CallerThread variants: no hand-off between threads.
weft::SessionOptions CallerThread() {
  weft::SessionOptions options;
  options.inter_op_parallelism_threads = -1;
  return options;
}

void BM_Chain_Weft(benchmark::State& state) {
  weft::Graph g;
  const std::string last = BuildChain(g);
  RunLoop(state, std::move(g), last, kNodes);
}

void BM_Chain_CallerThread(benchmark::State& state) {
  weft::Graph g;
  const std::string last = BuildChain(g);
  RunLoop(state, std::move(g), last, kNodes, CallerThread());
}

void BM_Chain_Direct(benchmark::State& state) {
  std::vector<float> x(kElements, 1.0f), c(kElements, 0.5f);
  for (auto _ : state) {
    std::vector<float> acc = x;
    for (int i = 0; i < kNodes; ++i) {
      std::vector<float> next(kElements);
      for (int64_t j = 0; j < kElements; ++j) next[j] = acc[j] + c[j];
      acc.swap(next);
    }
    benchmark::DoNotOptimize(acc.data());
  }
  SetPerNode(state, kNodes);
}

// (b) 1,000 independent Add(x, c_i), summed pairwise by a tree of Adds.
void BM_WideTree_Weft(benchmark::State& state) {
  weft::Graph g;
  const std::string x =
      g.Placeholder("x", weft::DataType::kFloat32, {kElements});
  const std::string c = g.Const("c", Filled(0.5f));
  std::vector<std::string> level;
  for (int i = 0; i < kNodes; ++i) {
    level.push_back(g.Add("leaf" + std::to_string(i), x, c));
  }
  int next_id = 0;
  while (level.size() > 1) {
    std::vector<std::string> up;
    for (size_t i = 0; i + 1 < level.size(); i += 2) {
      up.push_back(
          g.Add("sum" + std::to_string(next_id++), level[i], level[i + 1]));
    }
    if (level.size() % 2 == 1) up.push_back(level.back());
    level.swap(up);
  }
  RunLoop(state, std::move(g), level[0], kNodes + next_id);
}

void BM_WideTree_Direct(benchmark::State& state) {
  std::vector<float> x(kElements, 1.0f), c(kElements, 0.5f);
  for (auto _ : state) {
    std::vector<std::vector<float>> level(kNodes,
                                          std::vector<float>(kElements));
    for (auto& leaf : level) {
      for (int64_t j = 0; j < kElements; ++j) leaf[j] = x[j] + c[j];
    }
    while (level.size() > 1) {
      std::vector<std::vector<float>> up;
      for (size_t i = 0; i + 1 < level.size(); i += 2) {
        std::vector<float> sum(kElements);
        for (int64_t j = 0; j < kElements; ++j) {
          sum[j] = level[i][j] + level[i + 1][j];
        }
        up.push_back(std::move(sum));
      }
      if (level.size() % 2 == 1) up.push_back(std::move(level.back()));
      level.swap(up);
    }
    benchmark::DoNotOptimize(level[0].data());
  }
  SetPerNode(state, 2 * kNodes - 1);
}

// (c) one Add node: feed, run, fetch; returns the node.
std::string BuildOneNode(weft::Graph& g) {
  const std::string x =
      g.Placeholder("x", weft::DataType::kFloat32, {kElements});
  return g.Add("y", x, g.Const("c", Filled(0.5f)));
}

void BM_OneNode_Weft(benchmark::State& state) {
  weft::Graph g;
  const std::string y = BuildOneNode(g);
  RunLoop(state, std::move(g), y, 1);
}

void BM_OneNode_CallerThread(benchmark::State& state) {
  weft::Graph g;
  const std::string y = BuildOneNode(g);
  RunLoop(state, std::move(g), y, 1, CallerThread());
}

// (d) y = Loop(1000, x) with body (i, c, v) -> (c, v + 0.5).
void BM_LoopIteration(benchmark::State& state) {
  auto body = std::make_shared<weft::Subgraph>();
  weft::Graph& b = body->graph;
  b.Placeholder("i", weft::DataType::kInt64);
  b.Placeholder("cond", weft::DataType::kBool);
  const std::string v = b.Placeholder("v", weft::DataType::kFloat32);
  b.Add("next", v, b.Const("half", Filled(0.5f)));
  body->inputs = {"i", "cond", "v"};
  body->outputs = {"cond", "next"};
  weft::Graph g;
  const std::string x =
      g.Placeholder("x", weft::DataType::kFloat32, {kElements});
  const std::string m = g.Const("m", weft::Tensor::Scalar<int64_t>(kNodes));
  const weft::Status added = g.AddNode(
      {"loop",
       "Loop",
       {m, x},
       {{"body", weft::SubgraphPtr(std::move(body))},
        {"has_trip_count", true},
        {"Tout", std::vector<weft::DataType>{weft::DataType::kFloat32}}},
       ""});
  if (!added.ok() || !b.status().ok() || !g.status().ok()) {
    state.SkipWithError("could not build the loop graph");
    return;
  }
  weft::SessionOptions options;
  options.inter_op_parallelism_threads = static_cast<int>(state.range(0));
  options.use_per_session_threads = true;
  RunLoop(state, std::move(g), "loop", kNodes, options);
}

// (e) y = ConcatFromSequence(SequenceMap(SplitToSequence(X))) with body
// item -> item + 0.5: X, x expanded to [1000, 16], cut into 1,000 rows,
// one body run per row, the results stacked back.
void BM_SequenceMapItem(benchmark::State& state) {
  auto body = std::make_shared<weft::Subgraph>();
  weft::Graph& b = body->graph;
  const std::string item = b.Placeholder("item", weft::DataType::kFloat32);
  b.Add("next", item, b.Const("half", Filled(0.5f)));
  body->inputs = {"item"};
  body->outputs = {"next"};
  weft::Graph g;
  const std::string x =
      g.Placeholder("x", weft::DataType::kFloat32, {kElements});
  const std::string shape = g.Const(
      "shape", weft::Tensor::FromVector<int64_t>({2}, {kNodes, kElements}));
  weft::Status added = g.AddNode({"xs", "Expand", {x, shape}, {}, ""});
  if (added.ok()) {
    added = g.AddNode(
        {"rows", "SplitToSequence", {"xs"}, {{"keepdims", int64_t{0}}}, ""});
  }
  if (added.ok()) {
    added = g.AddNode({"map",
                       "SequenceMap",
                       {"rows"},
                       {{"body", weft::SubgraphPtr(std::move(body))},
                        {"Tout", std::vector<weft::DataType>{weft::SequenceOf(
                                     weft::DataType::kFloat32)}}},
                       ""});
  }
  if (added.ok()) {
    added = g.AddNode({"y",
                       "ConcatFromSequence",
                       {"map"},
                       {{"axis", int64_t{0}}, {"new_axis", int64_t{1}}},
                       ""});
  }
  if (!added.ok() || !b.status().ok() || !g.status().ok()) {
    state.SkipWithError("could not build the sequence graph");
    return;
  }
  weft::SessionOptions options;
  options.inter_op_parallelism_threads = static_cast<int>(state.range(0));
  options.use_per_session_threads = true;
  RunLoop(state, std::move(g), "y", kNodes, options);
}

BENCHMARK(BM_Chain_Weft)->UseRealTime();
BENCHMARK(BM_Chain_CallerThread)->UseRealTime();
BENCHMARK(BM_Chain_Direct)->UseRealTime();
BENCHMARK(BM_WideTree_Weft)->UseRealTime();
BENCHMARK(BM_WideTree_Direct)->UseRealTime();
BENCHMARK(BM_OneNode_Weft)->UseRealTime();
BENCHMARK(BM_OneNode_CallerThread)->UseRealTime();
BENCHMARK(BM_LoopIteration)->Arg(-1)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_SequenceMapItem)->Arg(-1)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
