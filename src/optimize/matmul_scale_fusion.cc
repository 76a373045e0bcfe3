// matmul-scale-fusion: attention's scores / sqrt(d) taken into the MatMul
// before them (ONNX Runtime's FusedMatMul does the same with alpha). A Div
// by a power of two, or a Mul by any scalar, after a MatMul becomes its
// alpha: one multiply of each product, the one the Mul (or the exact Div)
// made, so the bits are kept.
#include <cmath>

#include "optimize/passes.h"

namespace weft::internal {
namespace {

// 1 / c when multiplying by it gives the bits dividing by c gives for
// every x: c = +-2^k, with 2^-k a normal float (both are then the one
// correctly rounded value of x / c).
std::optional<double> ExactReciprocal(double c) {
  if (!std::isfinite(c) || c == 0.0) return std::nullopt;
  int exponent = 0;
  const double mantissa = std::frexp(c, &exponent);
  if (std::abs(mantissa) != 0.5 || std::abs(exponent) > 100) {
    return std::nullopt;
  }
  return 1.0 / c;
}

}  // namespace

int FuseMatMulScales(GraphEditor& graph) {
  constexpr char kPass[] = "matmul-scale-fusion";
  int rewrites = 0;
  for (int s = 0; s < graph.size(); ++s) {
    if (!Takeable(graph, s) || graph.node(s).inputs.size() != 2) continue;
    const NodeDef& scaling = graph.node(s);
    const bool divides = scaling.op == "Div";
    if (!divides && scaling.op != "Mul") continue;
    // Div: the product first; Mul: either way round.
    for (int side = 0; side < (divides ? 1 : 2); ++side) {
      const std::string& factor_name =
          scaling.inputs[static_cast<size_t>(1 - side)];
      const NodeUse producer =
          graph.Producer(scaling.inputs[static_cast<size_t>(side)]);
      const int mm = producer.node;
      if (!Takeable(graph, mm) || producer.slot != 0 ||
          graph.node(mm).op != "MatMul" || graph.SoleConsumer(mm) != s ||
          AttrOr<double>(graph.node(mm), "alpha", 1.0) != 1.0) {
        continue;
      }
      const NodeDef& product = graph.node(mm);
      const std::optional<DataType> dtype = graph.Dtype(product.name);
      const std::optional<double> factor = ScalarConstant(graph, factor_name);
      const Tensor* constant = graph.Constant(factor_name);
      const std::optional<PartialShape> out = graph.Shape(product.name);
      // float32 and float64: float16 products are rounded to float16 before
      // a Mul would scale them. A factor of higher rank would broadcast the
      // output up.
      if (!factor || constant == nullptr || !out || !out->rank_known() ||
          constant->shape().rank() > out->rank() ||
          graph.Dtype(scaling.name) != dtype ||
          (dtype != DataType::kFloat32 && dtype != DataType::kFloat64)) {
        continue;
      }
      const std::optional<double> alpha =
          divides ? ExactReciprocal(*factor) : factor;
      if (!alpha) continue;
      NodeDef fused = product;
      fused.name = scaling.name;
      fused.attrs["alpha"] = AttrValue(*alpha);
      fused.device = scaling.device;
      graph.Claim(mm);
      graph.Claim(s);
      graph.Remove(mm, {kPass, scaling.name});
      graph.Replace(s, std::move(fused));
      ++rewrites;
      break;
    }
  }
  if (rewrites > 0) graph.Commit();
  return rewrites;
}

}  // namespace weft::internal
