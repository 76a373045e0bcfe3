// Growth with graph size: Session::Create (compile) plus Prepare (the
// execution plan) for a chain and a wide graph of 10k, 100k and 1M nodes.
// Counters: ns_per_node (compile time / nodes), the heap the session holds
// afterwards (heap_mib, bytes_per_node), and the process's peak resident
// memory so far (peak_rss_mib: graph and compiled graph at once).
//
//   chain(n): x -> Add(x, c) -> Add(., c) ... n - 2 Adds deep (plus x, c).
//   wide(n):  n/2 independent Add(x, c), summed by a tree of Adds.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

// Heap bytes in use (malloc's own count: freed memory that malloc keeps
// does not count, unlike resident memory).
int64_t HeapBytesInUse() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

int64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

weft::Tensor Small() {
  weft::Tensor t(weft::DataType::kFloat32, {16});
  for (int i = 0; i < 16; ++i) t.data<float>()[i] = 0.5f;
  return t;
}

std::string Chain(weft::Graph& g, int64_t nodes) {
  std::string prev = g.Placeholder("x", weft::DataType::kFloat32, {16});
  const std::string c = g.Const("c", Small());
  for (int64_t i = 0; i + 2 < nodes; ++i) {
    prev = g.Add("n" + std::to_string(i), prev, c);
  }
  return prev;
}

std::string Wide(weft::Graph& g, int64_t nodes) {
  const std::string x = g.Placeholder("x", weft::DataType::kFloat32, {16});
  const std::string c = g.Const("c", Small());
  std::vector<std::string> level;
  for (int64_t i = 0; i < nodes / 2; ++i) {
    level.push_back(g.Add("leaf" + std::to_string(i), x, c));
  }
  int64_t id = 0;
  while (level.size() > 1) {
    std::vector<std::string> up;
    for (size_t i = 0; i + 1 < level.size(); i += 2) {
      up.push_back(g.Add("sum" + std::to_string(id++), level[i], level[i + 1]));
    }
    if (level.size() % 2 == 1) up.push_back(level.back());
    level.swap(up);
  }
  return level[0];
}

template <std::string (*kBuild)(weft::Graph&, int64_t)>
void Compile(benchmark::State& state) {
  const int64_t nodes = state.range(0);
  double seconds = 0;
  int64_t held = 0;
  int64_t graph_nodes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const int64_t before = HeapBytesInUse();
    weft::Graph g;
    const std::string fetch = kBuild(g, nodes);
    graph_nodes = static_cast<int64_t>(g.nodes().size());
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    auto session = weft::Session::Create(std::move(g), {});
    if (!session.ok()) {
      state.SkipWithError(session.status().ToString().c_str());
      return;
    }
    const weft::Status prepared =
        (*session)->Prepare({{"x", Small()}}, {fetch}, {});
    if (!prepared.ok()) {
      state.SkipWithError(prepared.ToString().c_str());
      return;
    }
    seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    state.PauseTiming();
    // The Graph is gone (moved into Create); what remains is the session.
    held = HeapBytesInUse() - before;
    session->reset();
    state.ResumeTiming();
  }
  state.counters["nodes"] = static_cast<double>(graph_nodes);
  state.counters["ns_per_node"] =
      seconds * 1e9 / static_cast<double>(graph_nodes);
  state.counters["heap_mib"] = static_cast<double>(held) / (1 << 20);
  state.counters["peak_rss_mib"] =
      static_cast<double>(PeakResidentBytes()) / (1 << 20);
  state.counters["bytes_per_node"] =
      static_cast<double>(held) / static_cast<double>(graph_nodes);
}

void BM_CompileChain(benchmark::State& state) { Compile<Chain>(state); }
void BM_CompileWide(benchmark::State& state) { Compile<Wide>(state); }

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {10'000, 100'000, 1'000'000}) b->Arg(n);
  b->Iterations(1)->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_CompileChain)->Apply(Sizes);
BENCHMARK(BM_CompileWide)->Apply(Sizes);

}  // namespace

BENCHMARK_MAIN();
