// matmul-integer-fusion: the dynamic quantization ONNX Runtime's
// quantize_dynamic (and weft.quantize(dynamic=True)) writes for a MatMul,
//
//   MatMulInteger(A, B, a_zero_point, b_zero_point) -> Cast(to float)
//       -> Mul(., scale) [-> Add(., bias)]
//
// becomes one FusedMatMulInteger that writes the float result straight from
// the integer sums: one pass over the output instead of four, and no int32
// tensor in between. The fused kernel repeats the Cast, the Mul and the
// Add element by element, each rounded as the node rounds it, so the
// graph's bits are kept. scale must hold one value or one per column, bias
// one per column (what the quantizer writes: a_scale x b_scale, and the
// MatMul's bias); anything else is left as it is.
#include "optimize/passes.h"

namespace weft::internal {
namespace {

constexpr char kPass[] = "matmul-integer-fusion";

// The input of node `i` that is not the output of node `other`, when
// exactly one of its two inputs is; else -1.
int OtherInput(const GraphEditor& graph, int i, int other) {
  const NodeDef& node = graph.node(i);
  if (node.inputs.size() != 2) return -1;
  int found = -1;
  for (int k = 0; k < 2; ++k) {
    const NodeUse p = graph.Producer(node.inputs[static_cast<size_t>(k)]);
    if (p.node == other && p.slot == 0) {
      if (found >= 0) return -1;  // both read it: x * x
      found = k;
    }
  }
  return found < 0 ? -1 : 1 - found;
}

// A float32 tensor of one value, or of shape [n] when `n` is given.
bool IsFloatOf(GraphEditor& graph, const std::string& name, int64_t n,
               bool scalar_ok) {
  const std::optional<PartialShape> shape = graph.Shape(name);
  if (graph.Dtype(name) != DataType::kFloat32 || !shape ||
      !shape->IsFullyDefined()) {
    return false;
  }
  const int64_t elements = shape->ToShape().NumElements();
  if (scalar_ok && elements == 1) return true;
  return shape->rank() == 1 && shape->dim(0) == n;
}

}  // namespace

int FuseIntegerProducts(GraphEditor& graph) {
  int rewrites = 0;
  for (int mi = 0; mi < graph.size(); ++mi) {
    if (!Takeable(graph, mi)) continue;
    const NodeDef& product = graph.node(mi);
    if (product.op != "MatMulInteger" || product.inputs.size() != 4) continue;
    bool all_given = true;
    for (const std::string& input : product.inputs) {
      all_given = all_given && !input.empty() && input[0] != '^';
    }
    const std::optional<PartialShape> out = graph.Shape(product.name);
    if (!all_given || !out || !out->rank_known() || out->rank() < 2 ||
        out->dim(out->rank() - 1) < 0) {
      continue;
    }
    const int64_t n = out->dim(out->rank() - 1);
    const int cast = graph.SoleConsumer(mi);
    if (!Takeable(graph, cast) || graph.node(cast).op != "Cast" ||
        graph.Dtype(graph.node(cast).name) != DataType::kFloat32) {
      continue;
    }
    const int mul = graph.SoleConsumer(cast);
    if (!Takeable(graph, mul) || graph.node(mul).op != "Mul") continue;
    const int scale_at = OtherInput(graph, mul, cast);
    if (scale_at < 0) continue;
    const std::string scale =
        graph.node(mul).inputs[static_cast<size_t>(scale_at)];
    if (!IsFloatOf(graph, scale, n, /*scalar_ok=*/true)) continue;
    // The Mul's output must keep the product's shape (a scale that
    // broadcast it further is not one per column).
    const std::optional<PartialShape> mul_shape =
        graph.Shape(graph.node(mul).name);
    if (!mul_shape || !(mul_shape->dims() == out->dims())) continue;

    NodeDef fused{"", "FusedMatMulInteger", product.inputs, {}, product.device};
    fused.inputs.push_back(scale);
    int last = mul;
    const int add = graph.SoleConsumer(mul);
    if (Takeable(graph, add) && graph.node(add).op == "Add") {
      const int bias_at = OtherInput(graph, add, mul);
      const std::optional<PartialShape> add_shape =
          graph.Shape(graph.node(add).name);
      if (bias_at >= 0 && add_shape && add_shape->dims() == out->dims()) {
        const std::string& bias =
            graph.node(add).inputs[static_cast<size_t>(bias_at)];
        if (IsFloatOf(graph, bias, n, /*scalar_ok=*/false)) {
          fused.inputs.push_back(bias);
          last = add;
        }
      }
    }
    // The fused node takes the last node's name: what read it reads it
    // still.
    fused.name = graph.node(last).name;
    fused.device = graph.node(last).device;
    std::vector<int> taken = {mi, cast, mul};
    if (last == add) taken.push_back(add);
    for (int i : taken) {
      graph.Claim(i);
      if (i != last) graph.Remove(i, {kPass, fused.name});
    }
    graph.Replace(last, std::move(fused));
    ++rewrites;
  }
  graph.Commit();
  return rewrites;
}

}  // namespace weft::internal
