// qdq-fusion: the QDQ form of a quantized model (ONNX Runtime's
// quantize_static writes it: every quantized tensor goes through
// QuantizeLinear -> DequantizeLinear, and the ops between compute in float)
// becomes integer kernels at load, as ONNX Runtime's QDQ transformer does.
// Each rewrite takes a QuantizeLinear node and the group that feeds it:
//
//   DQ(x), DQ(w const int8)[, DQ(b const int32)] -> Conv [-> Relu|Clip] -> Q
//       => QLinearConv on x's integers, w packed at session creation
//   DQ(a), DQ(b const int8, 2-D) -> MatMul [-> Relu|Clip] -> Q
//       => QLinearMatMul
//   DQ(a), DQ(b const int8, 2-D)[, DQ(c const int32)] -> Gemm (alpha and
//   beta 1, A not transposed) [-> Relu|Clip] -> Q
//       => QLinearMatMul with C as its int32 bias (B transposed by a
//          Transpose that constant folding folds where transB is set),
//          unless Q's output goes only to DequantizeLinear nodes that
//          nothing reads: the pair a quantizer adds after a graph's output
//          (weft.quantize's classifier), where the Gemm's float output is
//          what a Run fetches, and a fetched node removed would send every
//          Run back to the graph as given
//   DQ(a), DQ(b const int8, 2-D)[, DQ(c const int32)] -> Gemm (as above)
//   whose float output no fused group took (a classifier, the graph's
//   output, with or without the unread pair after it)
//       => FusedMatMulInteger: the exact integer sums times a_scale x
//          b_scale plus C, in float, as ONNX Runtime's QGemm with a float
//          output; the weight packed for the integer product
//   DQ(a), DQ(b) -> Add [-> Relu|Clip] -> Q
//       => QLinearAdd
//   DQ(x) -> MaxPool|Reshape|Transpose|Flatten|Squeeze|Unsqueeze -> Q,
//   with Q's scale and zero point x's
//       => the op on x's integers (the pair moved through it)
//
// The fused node takes the QuantizeLinear's name, so what read the
// quantized tensor reads it still; the DequantizeLinear nodes nothing reads
// any more are swept.
//
// What each rewrite keeps:
// - A Relu or Clip is absorbed only where it cannot change the quantized
//   result: its bounds, quantized, lie at or beyond the ends of the output
//   dtype's range (ReLU before a uint8 output with zero point 0; ReLU6
//   whose range the calibration took). Then saturation does its work.
// - QLinearAdd and the moved shape-only ops give the graph's bits exactly
//   (QLinearAdd repeats the float operations of the three nodes).
// - QLinearConv and QLinearMatMul sum the integers exactly and requantize
//   once, where the float graph rounded each product and partial sum: an
//   output may differ from the float graph's by one quantisation step, as
//   it does in ONNX Runtime. A Gemm's float output from its integer sums
//   differs from the float graph's by that graph's own rounding. This is the
//   one pass that does not keep a graph's bits; disabling it
//   (disabled_graph_passes) runs the float form as written.
#include <cmath>
#include <limits>
#include <set>

#include "framework/op_registry_impl.h"
#include "optimize/passes.h"

namespace weft::internal {
namespace {

constexpr const char* kPass = "qdq-fusion";

// A DequantizeLinear node feeding the group: its index, and the names of
// its quantized input, scale and zero point.
struct Dequantized {
  int node = -1;
  std::string values, scale, zero;
};

bool IsQuantizedDtype(std::optional<DataType> dtype) {
  return dtype && (*dtype == DataType::kUInt8 || *dtype == DataType::kInt8);
}

// The DequantizeLinear that `input` reads, with a constant scale and zero
// point (the zero point given: a fused op takes one always); nullopt
// otherwise.
std::optional<Dequantized> DequantizeOf(GraphEditor& graph,
                                        const std::string& input) {
  const NodeUse p = graph.Producer(input);
  if (p.node < 0 || p.slot != 0 || graph.claimed(p.node) ||
      graph.HasControlInputs(p.node)) {
    return std::nullopt;
  }
  const NodeDef& dq = graph.node(p.node);
  // Blocked scales (ONNX 21) have no integer kernel here.
  if (dq.op != "DequantizeLinear" || dq.inputs.size() != 3 ||
      AttrOr<int64_t>(dq, "block_size", 0) != 0) {
    return std::nullopt;
  }
  const Tensor* scale = graph.Constant(dq.inputs[1]);
  const Tensor* zero = graph.Constant(dq.inputs[2]);
  if (scale == nullptr || zero == nullptr ||
      scale->dtype() != DataType::kFloat32 ||
      zero->NumElements() != scale->NumElements()) {
    return std::nullopt;
  }
  return Dequantized{p.node, dq.inputs[0], dq.inputs[1], dq.inputs[2]};
}

// A per-tensor DequantizeLinear of uint8 or int8 values.
std::optional<Dequantized> ScalarDequantizeOf(GraphEditor& graph,
                                              const std::string& input) {
  std::optional<Dequantized> dq = DequantizeOf(graph, input);
  if (!dq || graph.Constant(dq->scale)->NumElements() != 1 ||
      !IsQuantizedDtype(graph.Dtype(dq->values))) {
    return std::nullopt;
  }
  return dq;
}

// A constant weight: DequantizeLinear of a constant `dtype` tensor, its
// scale one entry or one per slice along `axis` of `slices` slices.
std::optional<Dequantized> WeightDequantizeOf(GraphEditor& graph,
                                              const std::string& input,
                                              DataType dtype, int64_t axis) {
  std::optional<Dequantized> dq = DequantizeOf(graph, input);
  if (!dq) return std::nullopt;
  const Tensor* w = graph.Constant(dq->values);
  const Tensor* scale = graph.Constant(dq->scale);
  if (w == nullptr || w->dtype() != dtype || w->shape().rank() <= axis) {
    return std::nullopt;
  }
  if (scale->NumElements() == 1) return dq;
  const NodeDef& node = graph.node(dq->node);
  int64_t dq_axis = AttrOr<int64_t>(node, "axis", 1);
  if (dq_axis < 0) dq_axis += w->shape().rank();
  if (dq_axis != axis || scale->shape().rank() != 1 ||
      scale->NumElements() != w->shape().dim(static_cast<int>(axis))) {
    return std::nullopt;
  }
  return dq;
}

// round_half_even(v / scale) + zero, saturated to the dtype, as
// QuantizeLinear computes it.
int64_t Quantize(double v, float scale, float zero, DataType dtype) {
  const float lo = dtype == DataType::kUInt8 ? 0.f : -128.f;
  const float hi = dtype == DataType::kUInt8 ? 255.f : 127.f;
  const float q = std::nearbyint(static_cast<float>(v) / scale) + zero;
  if (std::isnan(q)) return 0;
  return static_cast<int64_t>(std::clamp(q, lo, hi));
}

// The bounds of a Relu or a Clip with constant bounds; nullopt otherwise.
std::optional<std::pair<double, double>> ActivationBounds(
    const GraphEditor& graph, const NodeDef& act) {
  const double inf = std::numeric_limits<double>::infinity();
  if (act.op == "Relu" && act.inputs.size() == 1) return std::pair{0.0, inf};
  if (act.op != "Clip" || act.inputs.empty() || act.inputs.size() > 3) {
    return std::nullopt;
  }
  double bound[2] = {-inf, inf};
  for (size_t i = 1; i < act.inputs.size(); ++i) {
    if (act.inputs[i].empty()) continue;
    const std::optional<double> v = ScalarConstant(graph, act.inputs[i]);
    if (!v) return std::nullopt;
    bound[i - 1] = *v;
  }
  if (act.inputs.size() == 1) {
    // Clip before opset 11: bounds as attributes.
    bound[0] = AttrOr<double>(act, "min", -inf);
    bound[1] = AttrOr<double>(act, "max", inf);
  }
  return std::pair{bound[0], bound[1]};
}

// Whether quantizing after the activation equals quantizing before it:
// each finite bound quantizes to the end of the range (so saturation clips
// there already). Quantize is monotone, so every value past a bound
// quantizes to that end too.
bool ActivationIsSaturation(std::pair<double, double> bounds, float scale,
                            float zero, DataType dtype) {
  const int64_t lo = dtype == DataType::kUInt8 ? 0 : -128;
  const int64_t hi = dtype == DataType::kUInt8 ? 255 : 127;
  return (std::isinf(bounds.first) ||
          Quantize(bounds.first, scale, zero, dtype) == lo) &&
         (std::isinf(bounds.second) ||
          Quantize(bounds.second, scale, zero, dtype) == hi);
}

// Whether two constants hold the same dtype, shape and bytes.
bool SameConstant(const GraphEditor& graph, const std::string& a,
                  const std::string& b) {
  const Tensor* x = graph.Constant(a);
  const Tensor* y = graph.Constant(b);
  return x != nullptr && y != nullptr && x->BitwiseEqual(*y);
}

// The int32 bias of a QLinearConv (or of the QLinearMatMul of a Gemm) from
// the DequantizeLinear of it: zero point 0, scale x_scale * w_scale (per
// channel as w's, whose channels lie along `w_axis`); "" when the bias does
// not have that form.
std::string IntegerBias(GraphEditor& graph, const std::string& input,
                        const Dequantized& x, const Dequantized& w,
                        int w_axis = 0) {
  std::optional<Dequantized> b =
      WeightDequantizeOf(graph, input, DataType::kInt32, 0);
  if (!b) return "";
  const Tensor* bias = graph.Constant(b->values);
  const Tensor* b_scale = graph.Constant(b->scale);
  const Tensor* b_zero = graph.Constant(b->zero);
  const Tensor* w_scale = graph.Constant(w.scale);
  const Tensor* w_values = graph.Constant(w.values);
  const float xs = *graph.Constant(x.scale)->data<float>();
  const int64_t m = w_values->shape().dim(w_axis);
  if (bias->shape().rank() != 1 || bias->NumElements() != m) return "";
  for (int64_t i = 0; i < b_zero->NumElements(); ++i) {
    if (b_zero->ValueAsDouble(i) != 0) return "";
  }
  for (int64_t i = 0; i < m; ++i) {
    const float want =
        xs * w_scale->data<float>()[w_scale->NumElements() == 1 ? 0 : i];
    const float got =
        b_scale->data<float>()[b_scale->NumElements() == 1 ? 0 : i];
    if (std::abs(got - want) > 1e-6f * std::abs(want)) return "";
  }
  return b->values;
}

bool IsShapeOnly(const std::string& op) {
  static const std::set<std::string> ops = {"MaxPool", "Reshape", "Transpose",
                                            "Flatten", "Squeeze", "Unsqueeze"};
  return ops.count(op) > 0;
}

// The attributes of `node` without its dtype attribute (the fused node's
// dtypes are its inputs').
AttrMap WithoutDtype(const NodeDef& node) {
  AttrMap attrs = node.attrs;
  attrs.erase("T");
  return attrs;
}

// The window and group attributes of a Conv, for QLinearConv.
AttrMap ConvAttrs(const NodeDef& conv) {
  AttrMap attrs;
  for (const char* name :
       {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}) {
    auto it = conv.attrs.find(name);
    if (it != conv.attrs.end()) attrs.emplace(name, it->second);
  }
  return attrs;
}

// Whether node `i`'s readers are all DequantizeLinear nodes that nothing
// reads (none at all counts too).
bool OnlyUnreadDequantizers(const GraphEditor& graph, int i) {
  for (const NodeUse& use : graph.uses(i)) {
    if (graph.node(use.node).op != "DequantizeLinear" ||
        !graph.uses(use.node).empty()) {
      return false;
    }
  }
  return true;
}

// A Gemm's operands in the form its integer rewrites take: Y = A B + C
// with alpha = beta = 1 and A not transposed (what a quantized Linear
// layer exports as), A a per-tensor DequantizeLinear, B one of a constant
// 2-D int8 tensor whose per-channel scales lie along its output axis (0
// where transB is set), C, when given, a DequantizeLinear of int32 with
// scale a_scale * b_scale (IntegerBias: its int32 values).
struct GemmOperands {
  Dequantized a, b;
  bool transposed_b = false;
  std::string bias;  // "" when the Gemm has no C
};

std::optional<GemmOperands> DequantizedGemmOperands(GraphEditor& graph,
                                                    const NodeDef& gemm) {
  GemmOperands g;
  g.transposed_b = AttrOr<int64_t>(gemm, "transB", 0) != 0;
  if (gemm.inputs.size() < 2 || AttrOr<int64_t>(gemm, "transA", 0) != 0 ||
      AttrOr<double>(gemm, "alpha", 1.0) != 1.0 ||
      AttrOr<double>(gemm, "beta", 1.0) != 1.0) {
    return std::nullopt;
  }
  const int b_axis = g.transposed_b ? 0 : 1;
  std::optional<Dequantized> a = ScalarDequantizeOf(graph, gemm.inputs[0]);
  std::optional<Dequantized> b =
      WeightDequantizeOf(graph, gemm.inputs[1], DataType::kInt8, b_axis);
  if (!a || !b || graph.Constant(b->values)->shape().rank() != 2) {
    return std::nullopt;
  }
  g.a = *a;
  g.b = *b;
  if (gemm.inputs.size() > 2 && !gemm.inputs[2].empty()) {
    g.bias = IntegerBias(graph, gemm.inputs[2], *a, *b, b_axis);
    if (g.bias.empty()) return std::nullopt;
  }
  return g;
}

// B's int8 values as [K, N]: through a Transpose, which constant folding
// folds, where transB is set.
std::string WeightAsKByN(GraphEditor& graph, const GemmOperands& g,
                         const std::string& device) {
  if (!g.transposed_b) return g.b.values;
  std::string transposed = graph.UniqueName(g.b.values + "/transposed");
  graph.Add({transposed,
             "Transpose",
             {g.b.values},
             {{"perm", AttrValue(std::vector<int64_t>{1, 0})}},
             device});
  return transposed;
}

// A Gemm group as a QLinearMatMul with C as its int32 bias, which the
// product adds before requantizing, as ONNX Runtime's QGemm does.
std::optional<NodeDef> FusedGemm(GraphEditor& graph, const NodeDef& gemm,
                                 const NodeDef& q,
                                 std::vector<int>* dequantizers) {
  std::optional<GemmOperands> g = DequantizedGemmOperands(graph, gemm);
  if (!g) return std::nullopt;
  if (!g->bias.empty()) {
    dequantizers->push_back(graph.Producer(gemm.inputs[2]).node);
  }
  dequantizers->insert(dequantizers->end(), {g->a.node, g->b.node});
  NodeDef fused{
      q.name,
      "QLinearMatMul",
      {g->a.values, g->a.scale, g->a.zero, WeightAsKByN(graph, *g, q.device),
       g->b.scale, g->b.zero, q.inputs[1], q.inputs[2]},
      {},
      q.device};
  if (!g->bias.empty()) fused.inputs.push_back(g->bias);
  return fused;
}

// The fused node for the group `core` feeding QuantizeLinear `q` (inputs
// y_scale and y_zero_point), or nullopt when the group has no integer form.
std::optional<NodeDef> FusedGroup(GraphEditor& graph, const NodeDef& core,
                                  const NodeDef& q, bool absorbed_activation,
                                  std::vector<int>* dequantizers) {
  const std::string& ys = q.inputs[1];
  const std::string& yz = q.inputs[2];
  if (core.op == "Conv" && core.inputs.size() >= 2) {
    std::optional<Dequantized> x = ScalarDequantizeOf(graph, core.inputs[0]);
    std::optional<Dequantized> w =
        WeightDequantizeOf(graph, core.inputs[1], DataType::kInt8, 0);
    if (!x || !w) return std::nullopt;
    NodeDef fused{
        q.name,
        "QLinearConv",
        {x->values, x->scale, x->zero, w->values, w->scale, w->zero, ys, yz},
        ConvAttrs(core),
        q.device};
    dequantizers->insert(dequantizers->end(), {x->node, w->node});
    if (core.inputs.size() > 2 && !core.inputs[2].empty()) {
      const std::string bias = IntegerBias(graph, core.inputs[2], *x, *w);
      if (bias.empty()) return std::nullopt;
      fused.inputs.push_back(bias);
      dequantizers->push_back(graph.Producer(core.inputs[2]).node);
    }
    return fused;
  }
  // ONNX's MatMul: weft's transposes and alpha (which the matmul passes
  // set) have no QLinearMatMul form.
  if (core.op == "MatMul" && core.inputs.size() == 2 &&
      !AttrOr<bool>(core, "transpose_a", false) &&
      !AttrOr<bool>(core, "transpose_b", false) &&
      AttrOr<double>(core, "alpha", 1.0) == 1.0) {
    std::optional<Dequantized> a = ScalarDequantizeOf(graph, core.inputs[0]);
    std::optional<Dequantized> b =
        WeightDequantizeOf(graph, core.inputs[1], DataType::kInt8, 1);
    if (!a || !b || graph.Constant(b->values)->shape().rank() != 2) {
      return std::nullopt;
    }
    dequantizers->insert(dequantizers->end(), {a->node, b->node});
    return NodeDef{
        q.name,
        "QLinearMatMul",
        {a->values, a->scale, a->zero, b->values, b->scale, b->zero, ys, yz},
        {},
        q.device};
  }
  if (core.op == "Gemm") {
    if (OnlyUnreadDequantizers(graph, graph.Find(q.name))) return std::nullopt;
    return FusedGemm(graph, core, q, dequantizers);
  }
  if (core.op == "Add" && core.inputs.size() == 2) {
    std::optional<Dequantized> a = ScalarDequantizeOf(graph, core.inputs[0]);
    std::optional<Dequantized> b = ScalarDequantizeOf(graph, core.inputs[1]);
    if (!a || !b) return std::nullopt;
    dequantizers->insert(dequantizers->end(), {a->node, b->node});
    return NodeDef{
        q.name,
        "QLinearAdd",
        {a->values, a->scale, a->zero, b->values, b->scale, b->zero, ys, yz},
        {},
        q.device};
  }
  if (IsShapeOnly(core.op) && !absorbed_activation && !core.inputs.empty()) {
    std::optional<Dequantized> x = ScalarDequantizeOf(graph, core.inputs[0]);
    if (!x || !SameConstant(graph, x->scale, ys) ||
        !SameConstant(graph, x->zero, yz)) {
      return std::nullopt;
    }
    NodeDef moved{q.name, core.op, core.inputs, WithoutDtype(core), q.device};
    moved.inputs[0] = x->values;
    dequantizers->push_back(x->node);
    return moved;
  }
  return std::nullopt;
}

// A Gemm of dequantized operands with a float output (FusedGemm's
// conditions) as FusedMatMulInteger(a, b, a_zero, b_zero, a_scale x
// b_scale[, C]): the scale is a Mul of the two scales and C the
// DequantizeLinear of the int32 bias, both folded into constants by the
// constant folding that follows.
std::optional<NodeDef> FloatOutputGemm(GraphEditor& graph, const NodeDef& gemm,
                                       std::vector<int>* dequantizers) {
  std::optional<GemmOperands> g = DequantizedGemmOperands(graph, gemm);
  if (!g) return std::nullopt;
  dequantizers->insert(dequantizers->end(), {g->a.node, g->b.node});
  const std::string scale = graph.UniqueName(gemm.name + "/scale");
  graph.Add({scale, "Mul", {g->a.scale, g->b.scale}, {}, gemm.device});
  NodeDef fused{gemm.name,
                "FusedMatMulInteger",
                {g->a.values, WeightAsKByN(graph, *g, gemm.device), g->a.zero,
                 g->b.zero, scale},
                {},
                gemm.device};
  if (!g->bias.empty()) fused.inputs.push_back(gemm.inputs[2]);
  return fused;
}

}  // namespace

int FuseQdqGroups(GraphEditor& graph) {
  int rewrites = 0;
  std::vector<int> swept;
  std::vector<char> removable(static_cast<size_t>(graph.size()), 0);
  for (int i = 0; i < graph.size(); ++i) {
    removable[static_cast<size_t>(i)] =
        graph.alive(i) && graph.node(i).op == "DequantizeLinear";
  }
  for (int qi = 0; qi < graph.size(); ++qi) {
    if (!graph.alive(qi) || graph.claimed(qi) || graph.HasControlInputs(qi)) {
      continue;
    }
    const NodeDef& q = graph.node(qi);
    if (q.op != "QuantizeLinear" || q.inputs.size() != 3 ||
        AttrOr<int64_t>(q, "block_size", 0) != 0) {
      continue;
    }
    const Tensor* ys = graph.Constant(q.inputs[1]);
    const Tensor* yz = graph.Constant(q.inputs[2]);
    if (ys == nullptr || yz == nullptr || ys->NumElements() != 1 ||
        yz->NumElements() != 1 || ys->dtype() != DataType::kFloat32 ||
        !IsQuantizedDtype(yz->dtype())) {
      continue;
    }
    NodeUse p = graph.Producer(q.inputs[0]);
    if (p.node < 0 || p.slot != 0) continue;
    int act = -1;
    if (graph.node(p.node).op == "Relu" || graph.node(p.node).op == "Clip") {
      std::optional<std::pair<double, double>> bounds =
          ActivationBounds(graph, graph.node(p.node));
      if (!bounds || graph.claimed(p.node) ||
          graph.SoleConsumer(p.node) != qi ||
          !ActivationIsSaturation(*bounds, *ys->data<float>(),
                                  static_cast<float>(yz->ValueAsDouble(0)),
                                  yz->dtype())) {
        continue;
      }
      act = p.node;
      p = graph.Producer(graph.node(act).inputs[0]);
      if (p.node < 0 || p.slot != 0) continue;
    }
    const int core = p.node;
    if (graph.claimed(core) || graph.HasControlInputs(core) ||
        graph.SoleConsumer(core) != (act >= 0 ? act : qi)) {
      continue;
    }
    std::vector<int> dequantizers;
    std::optional<NodeDef> fused =
        FusedGroup(graph, graph.node(core), q, act >= 0, &dequantizers);
    if (!fused) continue;
    graph.Claim(qi);
    graph.Claim(core);
    graph.Remove(core, {kPass, q.name});
    if (act >= 0) {
      graph.Claim(act);
      AddProducers(graph, act, &swept);
      graph.Remove(act, {kPass, q.name});
    }
    swept.insert(swept.end(), dequantizers.begin(), dequantizers.end());
    AddProducers(graph, qi, &swept);
    graph.Replace(qi, std::move(*fused));
    ++rewrites;
  }
  // The Gemms whose float output no group above took.
  const int before_added = graph.size();
  for (int gi = 0; gi < before_added; ++gi) {
    if (!graph.alive(gi) || graph.claimed(gi) || graph.HasControlInputs(gi) ||
        graph.node(gi).op != "Gemm") {
      continue;
    }
    std::vector<int> dequantizers;
    std::optional<NodeDef> fused =
        FloatOutputGemm(graph, graph.node(gi), &dequantizers);
    if (!fused) continue;
    graph.Claim(gi);
    swept.insert(swept.end(), dequantizers.begin(), dequantizers.end());
    graph.Replace(gi, std::move(*fused));
    ++rewrites;
  }
  SweepUnused(graph, swept, removable, kPass);
  return rewrites;
}

}  // namespace weft::internal
