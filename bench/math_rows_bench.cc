// Gelu and Softmax's exponentials over rows (kernels/math_rows.h), one
// core, on every row path this build and CPU run: nanoseconds an element
// for the shapes the encoders give them (docs/kernels.md).
//   build/bin/weft_math_rows_bench   (items_per_second: elements; a row
//   path's ns an element is 1e9 over it)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/math_rows.h"

namespace {

using weft::internal::MathRowsPath;

constexpr int64_t kElements = 196608;  // An encoder's FFN activation.

std::vector<float> Inputs(float low, float step) {
  std::vector<float> x(kElements);
  for (int64_t i = 0; i < kElements; ++i) {
    x[static_cast<size_t>(i)] = low + step * static_cast<float>(i % 4096);
  }
  return x;
}

// Skips a path this build or CPU does not run; else true.
bool Runs(benchmark::State& state, MathRowsPath path) {
  if (weft::internal::MathRowsPathRuns(path)) return true;
  state.SkipWithError((std::string(weft::internal::MathRowsPathName(path)) +
                       " does not run here")
                          .c_str());
  return false;
}

// Times rows(path, x, y, cols) over kElements inputs from `low` up in
// steps of `step` (repeating every 4,096), on the path and row length of
// the benchmark's two arguments.
template <class Rows>
void TimeRows(benchmark::State& state, float low, float step, Rows rows) {
  const auto path = static_cast<MathRowsPath>(state.range(0));
  const int64_t cols = state.range(1);
  if (!Runs(state, path)) return;
  const std::vector<float> x = Inputs(low, step);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    rows(path, x.data(), y.data(), cols);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(kElements * state.iterations());
}

// Gelu over rows of `cols`, inputs from -6 to 6.
void BM_GeluRows(benchmark::State& state) {
  TimeRows(state, -6.0f, 12.0f / 4096.0f,
           [](MathRowsPath path, const float* x, float* y, int64_t cols) {
             weft::internal::GeluRowsOn(path, x, cols, y, cols,
                                        kElements / cols, cols);
           });
}

// Softmax's exp(x - max) over rows of `cols`, inputs from -20 to 0.
void BM_ExpShiftedRows(benchmark::State& state) {
  TimeRows(state, -20.0f, 20.0f / 4096.0f,
           [](MathRowsPath path, const float* x, float* y, int64_t cols) {
             for (int64_t r = 0; r < kElements / cols; ++r) {
               weft::internal::ExpShiftedRowOn(path, x + r * cols, 0.5f,
                                               y + r * cols, cols);
             }
           });
}

void Paths(benchmark::internal::Benchmark* b,
           const std::vector<int64_t>& cols) {
  b->ArgNames({"path", "cols"});
  for (const MathRowsPath path :
       {MathRowsPath::kPortable, MathRowsPath::kAvx2, MathRowsPath::kAvx512}) {
    for (const int64_t c : cols) b->Args({static_cast<int64_t>(path), c});
  }
}

BENCHMARK(BM_GeluRows)->Apply([](benchmark::internal::Benchmark* b) {
  Paths(b, {128, 1024, 1536});
});
BENCHMARK(BM_ExpShiftedRows)->Apply([](benchmark::internal::Benchmark* b) {
  Paths(b, {128});
});

}  // namespace

BENCHMARK_MAIN();
