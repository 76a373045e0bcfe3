// Scheduling benchmarks: inter-op against intra-op parallelism on the same
// cores, against hand-written references in the same binary, and the wake-up
// of a parked pool.
//
//  - Branches: two independent branches of 8 chained 512x512 MatMuls joined
//    by an Add. weft at inter x intra in {1, 2}^2 (BM_Branches_Weft/inter/
//    intra), against (i) the branches as two OpenMP sections each calling
//    single-threaded cblas_sgemm (BM_Branches_OmpSections) and (ii) one
//    thread calling 2-thread cblas_sgemm for every product in sequence
//    (BM_Branches_BlasTwoThreads).
//  - Chain16: one chain of 16 such MatMuls; Mlp: a 3-layer MLP
//    (784-1024-1024-10, batch 256, bias + Relu), both on the same grid.
//  - WakeLatency: with default options, the pools parked (5 ms idle between
//    Runs), the time from Run entry to the first kernel's start (the
//    reported time is the mean; median_us and p90_us are counters).
//
// bench/compare prints the grid's ratios (scheduling issue, items 3 to 5).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "openblas_peer.h"
#include "weft/weft.h"

namespace {

constexpr int64_t kSize = 512;
constexpr int kBranchDepth = 8;

weft::Tensor Random(const weft::Shape& shape, uint32_t seed, float scale) {
  weft::Tensor t(weft::DataType::kFloat32, shape);
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = (static_cast<float>(x >> 8) * 0x1p-24f - 0.5f) * scale;
  }
  return t;
}

// Weights scaled by 1/sqrt(n) keep activations of order 1 along a chain.
float WeightScale(int64_t fan_in) {
  return 2.0f / std::sqrt(static_cast<float>(fan_in));
}

struct Workload {
  weft::Graph graph;
  std::vector<std::pair<std::string, weft::Tensor>> feeds;
  std::string fetch;
};

// `chains` independent chains of `depth` MatMuls from fed inputs, summed.
Workload MatMulChains(int chains, int depth) {
  Workload w;
  std::vector<std::string> outs;
  for (int c = 0; c < chains; ++c) {
    const std::string prefix = "chain" + std::to_string(c);
    std::string x = w.graph.Placeholder(prefix + "_x", weft::DataType::kFloat32,
                                        {kSize, kSize});
    w.feeds.push_back({x, Random({kSize, kSize}, 10 + c, 1.0f)});
    for (int i = 0; i < depth; ++i) {
      auto weight = w.graph.Const(
          prefix + "_w" + std::to_string(i),
          Random({kSize, kSize}, 100 * c + i, WeightScale(kSize)));
      x = w.graph.MatMul(prefix + "_matmul" + std::to_string(i), x, weight);
    }
    outs.push_back(x);
  }
  w.fetch = outs.size() == 1 ? outs[0] : w.graph.Add("join", outs[0], outs[1]);
  return w;
}

Workload Mlp() {
  Workload w;
  const int64_t batch = 256;
  const int64_t widths[] = {784, 1024, 1024, 10};
  std::string h =
      w.graph.Placeholder("x", weft::DataType::kFloat32, {batch, widths[0]});
  w.feeds.push_back({h, Random({batch, widths[0]}, 7, 1.0f)});
  for (int layer = 0; layer < 3; ++layer) {
    const std::string l = "layer" + std::to_string(layer + 1);
    auto weight = w.graph.Const(
        l + "_w", Random({widths[layer], widths[layer + 1]}, 200 + layer,
                         WeightScale(widths[layer])));
    auto bias =
        w.graph.Const(l + "_b", Random({widths[layer + 1]}, 300 + layer, 0.1f));
    h = w.graph.Add(l + "_bias", w.graph.MatMul(l + "_matmul", h, weight),
                    bias);
    if (layer < 2) h = w.graph.Relu(l + "_relu", h);
  }
  w.fetch = h;
  return w;
}

// args: inter, intra (per-session pools).
void RunGrid(benchmark::State& state, Workload w) {
  weft::SessionOptions options;
  options.use_per_session_threads = true;
  options.inter_op_parallelism_threads = static_cast<int>(state.range(0));
  options.intra_op_parallelism_threads = static_cast<int>(state.range(1));
  auto session = weft::Session::Create(std::move(w.graph), options);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return;
  }
  std::vector<weft::Tensor> out;
  for (auto _ : state) {
    const weft::Status s = (*session)->Run(w.feeds, {w.fetch}, {}, &out);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
}

void BM_Branches_Weft(benchmark::State& state) {
  RunGrid(state, MatMulChains(2, kBranchDepth));
}
void BM_Chain16_Weft(benchmark::State& state) {
  RunGrid(state, MatMulChains(1, 2 * kBranchDepth));
}
void BM_Mlp_Weft(benchmark::State& state) { RunGrid(state, Mlp()); }

// The branches' data for the references: inputs and weights as in
// MatMulChains(2, 8), and two ping-pong buffers per branch.
struct BranchData {
  std::vector<weft::Tensor> x, w;
  std::vector<std::vector<float>> buf;
  BranchData() {
    for (int c = 0; c < 2; ++c) {
      x.push_back(Random({kSize, kSize}, 10 + c, 1.0f));
      for (int i = 0; i < kBranchDepth; ++i) {
        w.push_back(Random({kSize, kSize}, 100 * c + i, WeightScale(kSize)));
      }
      buf.emplace_back(kSize * kSize);
      buf.emplace_back(kSize * kSize);
    }
  }
  // Branch c's chain of products with the calling thread's BLAS settings.
  const float* Chain(int c) {
    const float* in = x[c].data<float>();
    for (int i = 0; i < kBranchDepth; ++i) {
      float* out = buf[2 * c + i % 2].data();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kSize, kSize,
                  kSize, 1.0f, in, kSize, w[kBranchDepth * c + i].data<float>(),
                  kSize, 0.0f, out, kSize);
      in = out;
    }
    return in;
  }
};

void Join(const float* a, const float* b, std::vector<float>* sum) {
  for (int64_t i = 0; i < kSize * kSize; ++i) (*sum)[i] = a[i] + b[i];
}

// (i) Two OpenMP sections, each a single-threaded BLAS chain.
void BM_Branches_OmpSections(benchmark::State& state) {
  if (const std::string why = weft_bench::CblasSgemmIsNotOpenBlas();
      !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  openblas_set_num_threads(1);
  BranchData data;
  std::vector<float> sum(kSize * kSize);
  for (auto _ : state) {
    const float* out[2];
#pragma omp parallel sections num_threads(2)
    {
#pragma omp section
      out[0] = data.Chain(0);
#pragma omp section
      out[1] = data.Chain(1);
    }
    Join(out[0], out[1], &sum);
    benchmark::DoNotOptimize(sum.data());
  }
}

// (ii) One thread, every product on 2-thread BLAS, in sequence.
void BM_Branches_BlasTwoThreads(benchmark::State& state) {
  if (const std::string why = weft_bench::CblasSgemmIsNotOpenBlas();
      !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  openblas_set_num_threads(2);
  BranchData data;
  std::vector<float> sum(kSize * kSize);
  for (auto _ : state) {
    const float* a = data.Chain(0);
    const float* b = data.Chain(1);
    Join(a, b, &sum);
    benchmark::DoNotOptimize(sum.data());
  }
}

void Grid(benchmark::internal::Benchmark* b) {
  for (int inter : {1, 2}) {
    for (int intra : {1, 2}) b->Args({inter, intra});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_Branches_Weft)->Apply(Grid);
BENCHMARK(BM_Branches_OmpSections)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Branches_BlasTwoThreads)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Chain16_Weft)->Apply(Grid);
BENCHMARK(BM_Mlp_Weft)->Apply(Grid);

// Run entry to the first kernel's start, on parked pools (default options:
// the process-wide pools at auto sizes). The node is a Relu over 64K floats:
// big enough to go to the pool (a Run cheaper than inline_node_cost_ns runs
// on the calling thread and would wake nothing).
constexpr int64_t kWakeElements = int64_t{1} << 16;

void BM_WakeLatency_Weft(benchmark::State& state) {
  weft::Graph g;
  auto x = g.Placeholder("x", weft::DataType::kFloat32, {kWakeElements});
  g.Relu("y", x);
  auto session = weft::Session::Create(std::move(g), {});
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return;
  }
  const std::vector<std::pair<std::string, weft::Tensor>> feeds = {
      {"x", Random({kWakeElements}, 1, 1.0f)}};
  weft::RunOptions trace;
  trace.trace_level = weft::RunOptions::TraceLevel::kFull;
  std::vector<weft::Tensor> out;
  std::vector<double> latencies_us;
  for (auto _ : state) {
    // Idle far longer than any spin window: every worker parks.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    weft::RunMetadata metadata;
    const weft::Status s =
        (*session)->Run(trace, feeds, {"y"}, {}, &out, &metadata);
    if (!s.ok() || metadata.node_stats.empty()) {
      state.SkipWithError("Run failed");
      return;
    }
    if (metadata.node_stats[0].pool == "caller") {
      state.SkipWithError("the node ran on the calling thread");
      return;
    }
    const int64_t latency_ns =
        metadata.node_stats[0].start_ns - metadata.run_start_ns;
    state.SetIterationTime(static_cast<double>(latency_ns) * 1e-9);
    latencies_us.push_back(static_cast<double>(latency_ns) * 1e-3);
  }
  std::sort(latencies_us.begin(), latencies_us.end());
  state.counters["median_us"] = latencies_us[latencies_us.size() / 2];
  state.counters["p90_us"] = latencies_us[latencies_us.size() * 9 / 10];
}
BENCHMARK(BM_WakeLatency_Weft)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);

}  // namespace

BENCHMARK_MAIN();
