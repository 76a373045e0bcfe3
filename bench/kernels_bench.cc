// Kernel benchmarks, side by side with the peers in the same binary:
// MatMul through Session::Run against OpenBLAS cblas_sgemm (pthread build,
// thread count set per case); Conv on the layer shapes of ResNet-18 and
// SqueezeNet at batch 1, with W a constant (packed when the session is made).
//
//   build/bin/weft_kernels_bench --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <memory>
#include <vector>

#include "openblas_peer.h"
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
  // The caller's thread runs the node, as cblas_sgemm computes on its
  // caller: the same threads compute on both sides (intra 2 = the caller
  // and one helper). With a separate inter-op thread the caller would wait
  // beside two computing threads on a 2-core machine, and the hand-off to
  // that thread would count against a 0.2 ms product.
  options.inter_op_parallelism_threads = -1;
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
  if (const std::string why = weft_bench::CblasSgemmIsNotOpenBlas();
      !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
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

weft::Tensor RandomVector(int64_t n, uint32_t seed) {
  weft::Tensor t(weft::DataType::kFloat32, {n});
  uint32_t x = seed;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(x >> 8) * 0x1p-24f - 0.5f;
  }
  return t;
}

// --- Conv on real models' layer shapes ---------------------------------------

struct ConvShape {
  const char* name;
  int64_t c, hw, m, kernel, stride, pad, group = 1;
};

constexpr ConvShape kConvShapes[] = {
    {"resnet_stem_7x7s2", 3, 224, 64, 7, 2, 3},
    {"resnet_layer1_3x3", 64, 56, 64, 3, 1, 1},
    {"resnet_layer2_3x3", 128, 28, 128, 3, 1, 1},
    {"resnet_layer3_3x3", 256, 14, 256, 3, 1, 1},
    {"resnet_layer4_3x3", 512, 7, 512, 3, 1, 1},
    {"resnet_downsample_1x1s2", 256, 14, 512, 1, 2, 0},
    {"squeezenet_squeeze_1x1", 128, 55, 16, 1, 1, 0},
    {"squeezenet_classifier_1x1", 512, 13, 1000, 1, 1, 0},
    {"mobilenet_expand_1x1_7", 160, 7, 960, 1, 1, 0},
    {"mobilenet_project_1x1_7", 960, 7, 160, 1, 1, 0},
    {"mobilenet_last_1x1_7", 320, 7, 1280, 1, 1, 0},
    {"mobilenet_expand_1x1_112", 16, 112, 96, 1, 1, 0},
    {"mobilenet_depthwise_3x3_112", 32, 112, 32, 3, 1, 1, 32},
    {"mobilenet_depthwise_3x3s2_112", 96, 112, 96, 3, 2, 1, 96},
    {"mobilenet_depthwise_3x3_56", 144, 56, 144, 3, 1, 1, 144},
    {"mobilenet_depthwise_3x3_7", 960, 7, 960, 3, 1, 1, 960},
    {"mobilenet_depthwise_3x3_14", 576, 14, 576, 3, 1, 1, 576},
    {"mobilenet_depthwise_3x3_28", 192, 28, 192, 3, 1, 1, 192},
    {"mobilenet_project_1x1_56", 144, 56, 24, 1, 1, 0},
    {"mobilenet_project_1x1_112", 32, 112, 16, 1, 1, 0},
    {"squeezenet_squeeze_1x1_32", 256, 27, 32, 1, 1, 0},
    {"mobilenet_project_1x1_14", 384, 14, 64, 1, 1, 0},
    {"mobilenet_project_1x1_14_96", 576, 14, 96, 1, 1, 0},
    {"mobilenet_depthwise_3x3s2_56", 144, 56, 144, 3, 2, 1, 144},
    {"mobilenet_depthwise_3x3s2_14", 576, 14, 576, 3, 2, 1, 576},
    {"mobilenet_stem_3x3s2", 3, 224, 32, 3, 2, 1},
    {"squeezenet_stem_3x3s2", 3, 224, 64, 3, 2, 0},
};

// Times Runs of `g`, whose node "y" reads a 1 x c x hw x hw image "x", with
// one inter-op thread and state.range(1) intra-op threads. `added` is the
// status of adding the node. Returns false after reporting an error.
bool RunImageNode(benchmark::State& state, weft::Graph g, weft::Status added,
                  int64_t c, int64_t hw) {
  weft::SessionOptions options;
  options.use_per_session_threads = true;
  options.inter_op_parallelism_threads = 1;
  options.intra_op_parallelism_threads = static_cast<int>(state.range(1));
  auto session = added.ok()
                     ? weft::Session::Create(std::move(g), options)
                     : weft::StatusOr<std::unique_ptr<weft::Session>>(added);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return false;
  }
  const std::vector<std::pair<std::string, weft::Tensor>> feeds = {
      {"x", RandomVector(c * hw * hw, 1).WithShape({1, c, hw, hw})}};
  std::vector<weft::Tensor> out;
  for (auto _ : state) {
    weft::Status s = (*session)->Run(feeds, {"y"}, {}, &out);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return false;
    }
  }
  return true;
}

// args: index into kConvShapes, intra-op threads (inter = 1).
void BM_Conv_Weft(benchmark::State& state) {
  const ConvShape& p = kConvShapes[state.range(0)];
  state.SetLabel(p.name);
  weft::Graph g;
  g.Placeholder("x", weft::DataType::kFloat32, {1, p.c, p.hw, p.hw});
  const int64_t cg = p.c / p.group;
  g.Const("w", RandomVector(p.m * cg * p.kernel * p.kernel, 2)
                   .WithShape({p.m, cg, p.kernel, p.kernel}));
  g.Const("b", RandomVector(p.m, 3));
  weft::Status added = g.AddNode(
      {"y",
       "Conv",
       {"x", "w", "b"},
       {{"group", weft::AttrValue(p.group)},
        {"strides", weft::AttrValue(std::vector<int64_t>{p.stride, p.stride})},
        {"pads", weft::AttrValue(std::vector<int64_t>(4, p.pad))}},
       ""});
  if (!RunImageNode(state, std::move(g), added, p.c, p.hw)) return;
  const int64_t out_hw = (p.hw + 2 * p.pad - p.kernel) / p.stride + 1;
  SetFlops(state, 2.0 * p.m * cg * p.kernel * p.kernel * out_hw * out_hw);
}

void ConvArgs(benchmark::internal::Benchmark* b) {
  for (int64_t i = 0; i < static_cast<int64_t>(std::size(kConvShapes)); ++i) {
    for (int64_t threads : {1, 2}) b->Args({i, threads});
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_Conv_Weft)->Apply(ConvArgs);

// --- MaxPool over the models' planes -----------------------------------------

struct PoolShape {
  const char* name;
  int64_t c, hw, kernel, stride, pad, ceil_mode;
};

constexpr PoolShape kPoolShapes[] = {
    {"resnet_3x3s2_112", 64, 112, 3, 2, 1, 0},
    {"squeezenet_3x3s2_111", 64, 111, 3, 2, 0, 1},
    {"squeezenet_3x3s2_55", 128, 55, 3, 2, 0, 1},
    {"squeezenet_3x3s2_27", 256, 27, 3, 2, 0, 1},
};

// args: index into kPoolShapes, intra-op threads (inter = 1).
void BM_MaxPool_Weft(benchmark::State& state) {
  const PoolShape& p = kPoolShapes[state.range(0)];
  state.SetLabel(p.name);
  weft::Graph g;
  g.Placeholder("x", weft::DataType::kFloat32, {1, p.c, p.hw, p.hw});
  weft::Status added = g.AddNode(
      {"y",
       "MaxPool",
       {"x"},
       {{"kernel_shape",
         weft::AttrValue(std::vector<int64_t>{p.kernel, p.kernel})},
        {"strides", weft::AttrValue(std::vector<int64_t>{p.stride, p.stride})},
        {"pads", weft::AttrValue(std::vector<int64_t>(4, p.pad))},
        {"ceil_mode", weft::AttrValue(p.ceil_mode)}},
       ""});
  RunImageNode(state, std::move(g), added, p.c, p.hw);
}

void PoolArgs(benchmark::internal::Benchmark* b) {
  for (int64_t i = 0; i < static_cast<int64_t>(std::size(kPoolShapes)); ++i) {
    for (int64_t threads : {1, 2}) b->Args({i, threads});
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_MaxPool_Weft)->Apply(PoolArgs);

// --- Element-wise and reductions against OpenMP loops -----------------------

void SetBytes(benchmark::State& state, double bytes_per_iteration) {
  state.counters["GBps"] = benchmark::Counter(
      bytes_per_iteration * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

// A session computing `op` over placeholders shaped like `inputs`, with
// inter = 1 and intra = threads.
class OpSession {
 public:
  OpSession(const std::string& op, std::vector<weft::Tensor> inputs,
            weft::AttrMap attrs, int threads) {
    weft::Graph g;
    std::vector<std::string> names;
    for (size_t i = 0; i < inputs.size(); ++i) {
      names.push_back(g.Placeholder("in" + std::to_string(i), inputs[i].dtype(),
                                    inputs[i].shape()));
      feeds_.emplace_back(names.back(), inputs[i]);
    }
    status_ = g.AddNode({"out", op, names, std::move(attrs), ""});
    weft::SessionOptions options;
    options.use_per_session_threads = true;
    options.inter_op_parallelism_threads = 1;
    options.intra_op_parallelism_threads = threads;
    auto session = weft::Session::Create(std::move(g), options);
    if (session.ok()) {
      session_ = std::move(session).value();
    } else {
      status_ = session.status();
    }
  }

  // Runs the benchmark loop; false (and the state marked) on error.
  void Loop(benchmark::State& state) {
    if (!status_.ok()) {
      state.SkipWithError(status_.ToString().c_str());
      return;
    }
    std::vector<weft::Tensor> out;
    for (auto _ : state) {
      weft::Status s = session_->Run(feeds_, {"out"}, {}, &out);
      if (!s.ok()) {
        state.SkipWithError(s.ToString().c_str());
        return;
      }
    }
  }

 private:
  weft::Status status_;
  std::unique_ptr<weft::Session> session_;
  std::vector<std::pair<std::string, weft::Tensor>> feeds_;
};

constexpr int64_t kReduceN = int64_t{64} << 20;  // 64M float32
constexpr int64_t kMapN = int64_t{16} << 20;     // 16M float32

void BM_ReduceSum_Weft(benchmark::State& state) {
  OpSession op("ReduceSum", {RandomVector(kReduceN, 1)}, {{"keepdims", 0}},
               static_cast<int>(state.range(0)));
  op.Loop(state);
  SetBytes(state, 4.0 * kReduceN);
}

void BM_ReduceSum_OpenMP(benchmark::State& state) {
  const weft::Tensor x = RandomVector(kReduceN, 1);
  const float* p = x.data<float>();
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    float s = 0;
#pragma omp parallel for reduction(+ : s) num_threads(threads) schedule(static)
    for (int64_t i = 0; i < kReduceN; ++i) s += p[i];
    benchmark::DoNotOptimize(s);
  }
  SetBytes(state, 4.0 * kReduceN);
}

void BM_Add_Weft(benchmark::State& state) {
  OpSession op("Add", {RandomVector(kMapN, 1), RandomVector(kMapN, 2)}, {},
               static_cast<int>(state.range(0)));
  op.Loop(state);
  SetBytes(state, 12.0 * kMapN);
}

void BM_Add_OpenMP(benchmark::State& state) {
  const weft::Tensor a = RandomVector(kMapN, 1), b = RandomVector(kMapN, 2);
  std::vector<float> c(kMapN);
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* pc = c.data();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < kMapN; ++i) pc[i] = pa[i] + pb[i];
    benchmark::DoNotOptimize(pc);
  }
  SetBytes(state, 12.0 * kMapN);
}

void BM_Exp_Weft(benchmark::State& state) {
  OpSession op("Exp", {RandomVector(kMapN, 1)}, {},
               static_cast<int>(state.range(0)));
  op.Loop(state);
  SetBytes(state, 8.0 * kMapN);
}

void BM_Exp_OpenMP(benchmark::State& state) {
  const weft::Tensor a = RandomVector(kMapN, 1);
  std::vector<float> c(kMapN);
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const float* pa = a.data<float>();
    float* pc = c.data();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < kMapN; ++i) pc[i] = std::exp(pa[i]);
    benchmark::DoNotOptimize(pc);
  }
  SetBytes(state, 8.0 * kMapN);
}

void BM_Softmax_Weft(benchmark::State& state) {
  weft::Tensor x = RandomVector(4096 * 4096, 3).WithShape({4096, 4096});
  OpSession op("Softmax", {x}, {}, static_cast<int>(state.range(0)));
  op.Loop(state);
  SetBytes(state, 8.0 * 4096 * 4096);
}

void BM_LayerNorm_Weft(benchmark::State& state) {
  weft::Tensor x = RandomVector(8192 * 1024, 4).WithShape({8192, 1024});
  OpSession op("LayerNormalization",
               {x, RandomVector(1024, 5), RandomVector(1024, 6)}, {},
               static_cast<int>(state.range(0)));
  op.Loop(state);
  SetBytes(state, 8.0 * 8192 * 1024);
}

void ThreadArgs(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_ReduceSum_Weft)->Apply(ThreadArgs);
BENCHMARK(BM_ReduceSum_OpenMP)->Apply(ThreadArgs);
BENCHMARK(BM_Add_Weft)->Apply(ThreadArgs);
BENCHMARK(BM_Add_OpenMP)->Apply(ThreadArgs);
BENCHMARK(BM_Exp_Weft)->Apply(ThreadArgs);
BENCHMARK(BM_Exp_OpenMP)->Apply(ThreadArgs);
BENCHMARK(BM_Softmax_Weft)->Apply(ThreadArgs);
BENCHMARK(BM_LayerNorm_Weft)->Apply(ThreadArgs);

}  // namespace

BENCHMARK_MAIN();
