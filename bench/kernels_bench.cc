// Kernel benchmarks, side by side with the peers in the same binary:
// MatMul through Session::Run against OpenBLAS cblas_sgemm (pthread build,
// thread count set per case).
//
//   build/bin/weft_kernels_bench --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <memory>
#include <vector>

#include "weft/weft.h"

namespace {

void SetFlops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOPS"] = benchmark::Counter(
      flops_per_iteration * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

weft::Tensor RandomMatrix(int64_t n, uint32_t seed) {
  weft::Tensor t(weft::DataType::kFloat32, {n, n});
  uint32_t x = seed;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(x >> 8) * 0x1p-24f - 0.5f;
  }
  return t;
}

// args: n, intra-op threads (inter = 1).
void BM_MatMul_Weft(benchmark::State& state) {
  const int64_t n = state.range(0);
  weft::Graph g;
  auto a = g.Placeholder("a", weft::DataType::kFloat32, {n, n});
  auto b = g.Placeholder("b", weft::DataType::kFloat32, {n, n});
  g.MatMul("c", a, b);
  weft::SessionOptions options;
  options.use_per_session_threads = true;
  options.inter_op_parallelism_threads = 1;
  options.intra_op_parallelism_threads = static_cast<int>(state.range(1));
  auto session = weft::Session::Create(std::move(g), options);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return;
  }
  const std::vector<std::pair<std::string, weft::Tensor>> feeds = {
      {"a", RandomMatrix(n, 1)}, {"b", RandomMatrix(n, 2)}};
  std::vector<weft::Tensor> out;
  for (auto _ : state) {
    weft::Status s = (*session)->Run(feeds, {"c"}, {}, &out);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  SetFlops(state, 2.0 * n * n * n);
}

// args: n, OpenBLAS threads.
void BM_MatMul_OpenBLAS(benchmark::State& state) {
  const int64_t n = state.range(0);
  openblas_set_num_threads(static_cast<int>(state.range(1)));
  const weft::Tensor a = RandomMatrix(n, 1), b = RandomMatrix(n, 2);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                a.data<float>(), n, b.data<float>(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, 2.0 * n * n * n);
}

void MatMulArgs(benchmark::internal::Benchmark* b) {
  for (int64_t n : {256, 1024, 2048}) {
    for (int64_t threads : {1, 2}) b->Args({n, threads});
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_MatMul_Weft)->Apply(MatMulArgs);
BENCHMARK(BM_MatMul_OpenBLAS)->Apply(MatMulArgs);

}  // namespace

BENCHMARK_MAIN();
