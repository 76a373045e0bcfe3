// The pass pipeline: which passes exist, the order they run in, and
// OptimizeGraph.
#include <functional>
#include <set>

#include "framework/suggest.h"
#include "optimize/fold_cache.h"
#include "optimize/passes.h"
#include "weft/graph_passes.h"

namespace weft {
namespace {

struct Pass {
  GraphPassInfo info;
  std::function<StatusOr<int>(internal::GraphEditor&)> run;
  // Consecutive passes of one group run again, in turn, while a round
  // rewrites anything: a folded Shape makes a Reshape's target constant,
  // whose output shape is then known, so the next Shape folds.
  int group = 0;
};

// Rounds of a group at most (each folds at least one more node, and shape
// chains in exported models are a few steps deep).
constexpr int kMaxRounds = 16;

template <int (*kFn)(internal::GraphEditor&)>
StatusOr<int> Run(internal::GraphEditor& graph) {
  return kFn(graph);
}

// In order: removals and folding first, so that the patterns after them
// see constants as Consts; recognition before fusion, so that a recognised
// Gelu can fuse into the Gemm before it; the residual Add before the
// activation, so that Conv + Add + Relu becomes one node; the layout last,
// so that it converts the fused convolutions.
const std::vector<Pass>& Pipeline() {
  static const std::vector<Pass> passes = {
      {{"identity-elimination",
        "removes Identity and inference Dropout; readers read the input"},
       Run<internal::EliminateIdentities>},
      // Before folding: DequantizeLinear of a constant weight would fold
      // into a float constant, and the integer group with it.
      {{"qdq-fusion",
        "DequantizeLinear -> Conv / MatMul / Gemm / Add [-> Relu / Clip] -> "
        "QuantizeLinear groups become QLinearConv, QLinearMatMul, "
        "QLinearAdd; a Gemm of dequantized operands with a float output "
        "becomes FusedMatMulInteger; a Q/DQ pair moves through MaxPool and "
        "shape-only ops"},
       Run<internal::FuseQdqGroups>},
      {{"shape-folding",
        "Shape and Size of a tensor whose whole shape is inferred become "
        "constants"},
       Run<internal::FoldStaticShapes>,
       1},
      {{"constant-folding",
        "nodes computed from constants alone are computed once, at session "
        "creation"},
       internal::FoldConstants,
       1},
      {{"common-subexpression-elimination",
        "nodes of one op and attributes reading the same tensors (and "
        "constants of equal value) become one"},
       Run<internal::EliminateCommonSubexpressions>,
       1},
      {{"matmul-integer-fusion",
        "MatMulInteger -> Cast -> Mul (scale) [-> Add (bias)], as dynamic "
        "quantization writes a MatMul, becomes FusedMatMulInteger: the "
        "float result from the integer sums in one pass"},
       Run<internal::FuseIntegerProducts>},
      {{"layernorm-recognition",
        "ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add over the last "
        "axis becomes LayerNormalization"},
       Run<internal::RecognizeLayerNorm>},
      {{"gelu-recognition", "x * 0.5 * (1 + Erf(x / sqrt 2)) becomes Gelu"},
       Run<internal::RecognizeGelu>},
      {{"batchnorm-folding",
        "BatchNormalization after a Conv or Gemm with constant weights is "
        "folded into those weights"},
       Run<internal::FoldBatchNorm>},
      {{"matmul-scale-fusion",
        "a Mul by a scalar constant, or a Div by a power of two, after a "
        "MatMul becomes its alpha (attention's 1 / sqrt(d))"},
       Run<internal::FuseMatMulScales>},
      {{"attention-fusion",
        "Reshape/Transpose of Q, K, V into heads -> MatMul [-> Div] [-> Add "
        "mask] -> "
        "Softmax -> MatMul -> Transpose/Reshape becomes FusedAttention, "
        "reading the heads in place (from a Split's columns too)"},
       Run<internal::FuseAttention>},
      {{"matmul-add-to-gemm",
        "a 2-D MatMul and the Add of a bias become one Gemm"},
       Run<internal::FuseMatMulAdd>},
      {{"conv-residual-fusion",
        "Conv + Add of a same-shaped tensor becomes FusedConv (the Add in "
        "the output loop); a FusedMatMulInteger with a bias takes such an "
        "Add (a transformer's skip connection) as its residual"},
       Run<internal::FuseConvResidual>},
      {{"activation-fusion",
        "Relu, Clip, LeakyRelu, HardSwish or Gelu after a Conv or Gemm "
        "runs in its output loop (FusedConv, FusedGemm)"},
       Run<internal::FuseActivations>},
      {{"nhwc-layout",
        "2-D float32 convolutions with constant weights run channels-last "
        "(NHWC) through oneDNN where its AVX-512 kernels run (with AVX2 "
        "alone, in graphs with a depthwise convolution), and QLinearConv "
        "on direct int8 tiles where the int8 kernel is VNNI; the pools, "
        "activations, Adds and Concats between them follow"},
       Run<internal::ConvertToNhwc>},
  };
  return passes;
}

}  // namespace

const std::vector<GraphPassInfo>& GraphPasses() {
  static const std::vector<GraphPassInfo> infos = [] {
    std::vector<GraphPassInfo> out;
    for (const Pass& pass : Pipeline()) out.push_back(pass.info);
    return out;
  }();
  return infos;
}

StatusOr<OptimizedGraph> OptimizeGraph(const Graph& graph,
                                       const GraphPassOptions& options) {
  return internal::OptimizeGraph(graph, options, nullptr);
}

namespace internal {

StatusOr<OptimizedGraph> OptimizeGraph(const Graph& graph,
                                       const GraphPassOptions& options,
                                       FoldCache* fold_cache) {
  std::set<std::string> disabled;
  std::vector<std::string> names;
  for (const Pass& pass : Pipeline()) names.push_back(pass.info.name);
  for (const std::string& name : options.disabled) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return InvalidArgumentError("there is no graph pass '" + name + "'" +
                                  internal::DidYouMean(name, names) +
                                  "; `weft info --passes` lists them");
    }
    disabled.insert(name);
  }
  OptimizedGraph result;
  internal::CompileOptions compile;
  compile.num_cpu_devices = options.num_cpu_devices;
  compile.allow_soft_placement = options.allow_soft_placement;
  compile.prepare_constants = false;  // These compiles' kernels never run.
  // A graph that does not compile goes on as given: its errors are the
  // session's to report, under the names the user wrote.
  if (!graph.status().ok() ||
      !internal::CompiledGraph::Compile(graph, compile).ok()) {
    result.graph = graph;
    return result;
  }
  internal::GraphEditor editor(graph, compile);
  editor.set_fold_cache(fold_cache);
  const std::vector<Pass>& pipeline = Pipeline();
  for (size_t first = 0; first < pipeline.size();) {
    // [first, last): one pass, or a group of them.
    size_t last = first + 1;
    while (pipeline[first].group != 0 && last < pipeline.size() &&
           pipeline[last].group == pipeline[first].group) {
      ++last;
    }
    const size_t results = result.passes.size();
    for (size_t i = first; i < last; ++i) {
      if (disabled.count(pipeline[i].info.name) == 0) {
        result.passes.push_back({pipeline[i].info.name, 0});
      }
    }
    for (int round = 0; round < kMaxRounds; ++round) {
      int round_rewrites = 0;
      size_t slot = results;
      for (size_t i = first; i < last; ++i) {
        if (disabled.count(pipeline[i].info.name) > 0) continue;
        WEFT_ASSIGN_OR_RETURN(int rewrites, pipeline[i].run(editor));
        result.passes[slot++].rewrites += rewrites;
        round_rewrites += rewrites;
      }
      if (round_rewrites == 0 || pipeline[first].group == 0) break;
    }
    first = last;
  }
  result.graph = editor.Snapshot();
  result.removed = std::move(editor.removed());
  if (fold_cache != nullptr) {
    fold_cache->KeepOnlyWhatTheGraphHolds(editor.folds_cached(), result.graph);
  }
  return result;
}

}  // namespace internal
}  // namespace weft
