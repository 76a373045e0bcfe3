// Passes that merge a producer into the node that reads it: batch-norm
// folding into Conv and Gemm weights, MatMul + Add into Gemm, a residual
// Add into the convolution (FusedConv's Z), and an activation into the
// convolution or Gemm before it (FusedConv, FusedGemm). Apart from
// batch-norm folding, the fused kernels compute what the separate nodes
// did, operation for operation, so results keep their bits.
#include <cmath>
#include <limits>

#include "framework/op_registry_impl.h"
#include "optimize/passes.h"
#include "weft/op_registry.h"

namespace weft::internal {
namespace {

bool IsFloatOrDouble(std::optional<DataType> dtype) {
  return dtype &&
         (*dtype == DataType::kFloat32 || *dtype == DataType::kFloat64);
}

// A float attribute of the node, else the op's declared default.
std::optional<double> FloatAttr(const NodeDef& node, const std::string& name) {
  auto it = node.attrs.find(name);
  if (it != node.attrs.end()) {
    if (const double* d = it->second.get_if<double>()) return *d;
    if (const int64_t* i = it->second.get_if<int64_t>()) {
      return static_cast<double>(*i);
    }
    return std::nullopt;
  }
  const OpDef* def = FindOpDef(node.op);
  if (def == nullptr) return std::nullopt;
  for (const AttrDef& attr : def->attrs) {
    if (attr.name == name && attr.default_value) {
      if (const double* d = attr.default_value->get_if<double>()) return *d;
    }
  }
  return std::nullopt;
}

// Element i of a float tensor as double.
double At(const Tensor& t, int64_t i) { return t.ValueAsDouble(i); }

// A float tensor of `shape` and `dtype` from doubles (rounded once).
Tensor FromDoubles(DataType dtype, const weft::Shape& shape,
                   const std::vector<double>& values) {
  Tensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DataType::kFloat32) {
      t.data<float>()[i] = static_cast<float>(values[i]);
    } else {
      t.data<double>()[i] = values[i];
    }
  }
  return t;
}

// Adds a Const node and returns its name.
std::string AddConst(GraphEditor& graph, const std::string& base,
                     const std::string& device, Tensor value) {
  std::string name = graph.UniqueName(base);
  const DataType dtype = value.dtype();
  graph.Add({name,
             "Const",
             {},
             {{"value", std::move(value)}, {"dtype", dtype}},
             device});
  return name;
}

// The convolution's bias input, or a zero one made for it (FusedConv takes
// a bias always); "" when the output channel count is unknown.
std::string BiasOrZeros(GraphEditor& graph, const NodeDef& conv,
                        DataType dtype) {
  if (conv.inputs.size() > 2) return conv.inputs[2];
  const std::optional<PartialShape> w = graph.Shape(conv.inputs[1]);
  if (!w || !w->rank_known() || w->rank() < 1 || w->dim(0) < 0) return "";
  return AddConst(graph, conv.name + "/zero_bias", conv.device,
                  Tensor(dtype, weft::Shape{w->dim(0)}));
}

// Whether node p is a Conv or Gemm (or their fused forms without an
// activation yet) that only `consumer` reads.
bool IsFusableProducer(GraphEditor& graph, int p, int consumer) {
  if (p < 0 || graph.claimed(p) || graph.SoleConsumer(p) != consumer) {
    return false;
  }
  const NodeDef& node = graph.node(p);
  if (node.op == "Conv" || node.op == "Gemm") return true;
  return (node.op == "FusedConv" || node.op == "FusedGemm" ||
          node.op == "FusedMatMulInteger") &&
         AttrOr<std::string>(node, "activation", "").empty();
}

// Per channel c of a batch normalisation: y = x * scale[c] + shift[c].
struct ChannelAffine {
  std::vector<double> scale, shift;
};

std::optional<ChannelAffine> BatchNormAffine(const GraphEditor& graph,
                                             const NodeDef& bn) {
  const Tensor* gamma = graph.Constant(bn.inputs[1]);
  const Tensor* beta = graph.Constant(bn.inputs[2]);
  const Tensor* mean = graph.Constant(bn.inputs[3]);
  const Tensor* var = graph.Constant(bn.inputs[4]);
  const std::optional<double> eps = FloatAttr(bn, "epsilon");
  if (!gamma || !beta || !mean || !var || !eps) return std::nullopt;
  const int64_t c = gamma->NumElements();
  for (const Tensor* t : {gamma, beta, mean, var}) {
    if (t->shape().rank() != 1 || t->NumElements() != c ||
        !IsFloatOrDouble(t->dtype())) {
      return std::nullopt;
    }
  }
  ChannelAffine affine;
  for (int64_t i = 0; i < c; ++i) {
    const double s = At(*gamma, i) / std::sqrt(At(*var, i) + *eps);
    affine.scale.push_back(s);
    affine.shift.push_back(At(*beta, i) - At(*mean, i) * s);
  }
  return affine;
}

}  // namespace

int FoldBatchNorm(GraphEditor& graph) {
  int rewrites = 0;
  std::vector<int> read;
  for (int bn = 0; bn < graph.size(); ++bn) {
    if (!graph.alive(bn) || graph.claimed(bn) ||
        graph.node(bn).op != "BatchNormalization" ||
        graph.node(bn).inputs.size() != 5 || graph.HasControlInputs(bn)) {
      continue;
    }
    const NodeDef& norm = graph.node(bn);
    const NodeUse in = graph.Producer(norm.inputs[0]);
    if (in.node < 0 || in.slot != 0 || graph.claimed(in.node) ||
        graph.SoleConsumer(in.node) != bn) {
      continue;
    }
    const NodeDef& p = graph.node(in.node);
    const bool conv = p.op == "Conv" && p.inputs.size() <= 3;
    const bool gemm = p.op == "Gemm" && p.inputs.size() <= 3;
    if (!conv && !gemm) continue;
    const Tensor* w = graph.Constant(p.inputs[1]);
    const Tensor* bias =
        p.inputs.size() > 2 ? graph.Constant(p.inputs[2]) : nullptr;
    if (w == nullptr || (p.inputs.size() > 2 && bias == nullptr) ||
        !IsFloatOrDouble(w->dtype())) {
      continue;
    }
    const std::optional<ChannelAffine> affine = BatchNormAffine(graph, norm);
    if (!affine || (bias && bias->dtype() != w->dtype())) continue;
    const int64_t channels = static_cast<int64_t>(affine->scale.size());
    std::vector<double> new_w(w->NumElements()), new_b(channels);
    NodeDef fused{norm.name, p.op, {p.inputs[0]}, p.attrs, norm.device};
    if (conv) {  // W [M, C/g, k...]: row c scales by scale[c].
      if (w->shape().rank() < 3 || w->shape().dim(0) != channels ||
          (bias && bias->NumElements() != channels)) {
        continue;
      }
      const int64_t per_channel = w->NumElements() / channels;
      for (int64_t i = 0; i < w->NumElements(); ++i) {
        new_w[i] = At(*w, i) * affine->scale[i / per_channel];
      }
      for (int64_t c = 0; c < channels; ++c) {
        const double b = bias ? At(*bias, c) : 0.0;
        new_b[c] = b * affine->scale[c] + affine->shift[c];
      }
    } else {  // Y = alpha A B + beta C; channel j is column j of Y.
      const bool tb = AttrOr<int64_t>(p, "transB", 0) != 0;
      const std::optional<double> beta = FloatAttr(p, "beta");
      if (w->shape().rank() != 2 || !beta ||
          w->shape().dim(tb ? 0 : 1) != channels ||
          (bias && bias->NumElements() != 1 &&
           !(bias->NumElements() == channels &&
             bias->shape().dim(bias->shape().rank() - 1) == channels))) {
        continue;
      }
      const int64_t cols = w->shape().dim(1);
      for (int64_t i = 0; i < w->NumElements(); ++i) {
        new_w[i] = At(*w, i) * affine->scale[tb ? i / cols : i % cols];
      }
      for (int64_t j = 0; j < channels; ++j) {
        const double c =
            bias ? At(*bias, bias->NumElements() == 1 ? 0 : j) : 0.0;
        new_b[j] = *beta * c * affine->scale[j] + affine->shift[j];
      }
      fused.attrs["beta"] = 1.0;
    }
    const DataType dtype = w->dtype();
    fused.inputs.push_back(AddConst(graph, norm.name + "/folded_weight",
                                    norm.device,
                                    FromDoubles(dtype, w->shape(), new_w)));
    fused.inputs.push_back(AddConst(graph, norm.name + "/folded_bias",
                                    norm.device,
                                    FromDoubles(dtype, {channels}, new_b)));
    AddProducers(graph, in.node, &read);
    AddProducers(graph, bn, &read);
    graph.Claim(in.node);
    graph.Claim(bn);
    graph.Remove(in.node, {"batchnorm-folding", norm.name});
    graph.Replace(bn, std::move(fused));
    ++rewrites;
  }
  SweepUnused(graph, read, {}, "batchnorm-folding");
  return rewrites;
}

int FuseMatMulAdd(GraphEditor& graph) {
  int rewrites = 0;
  for (int mm = 0; mm < graph.size(); ++mm) {
    if (!graph.alive(mm) || graph.claimed(mm) ||
        graph.node(mm).op != "MatMul" || graph.node(mm).inputs.size() != 2) {
      continue;
    }
    const int add = graph.SoleConsumer(mm);
    if (add < 0 || graph.claimed(add) || graph.node(add).op != "Add" ||
        graph.node(add).inputs.size() != 2 || graph.HasControlInputs(add)) {
      continue;
    }
    const NodeDef& product = graph.node(mm);
    const std::string bias =
        graph.node(add).inputs[1 - graph.uses(mm)[0].input];
    const std::optional<PartialShape> a = graph.Shape(product.inputs[0]);
    const std::optional<PartialShape> b = graph.Shape(product.inputs[1]);
    const std::optional<PartialShape> out = graph.Shape(product.name);
    const std::optional<PartialShape> c = graph.Shape(bias);
    if (!a || !b || !out || !c || !a->rank_known() || a->rank() < 2 ||
        !b->rank_known() || b->rank() != 2 || !out->rank_known() ||
        !c->rank_known() || c->rank() > 2 ||
        !IsFloatOrDouble(graph.Dtype(product.name)) ||
        graph.Dtype(bias) != graph.Dtype(product.name)) {
      continue;
    }
    // A batch of rows times one matrix (a projection in a transformer) is
    // one 2-D product over all the rows: Reshape (no copy) to [rows, K],
    // Gemm, Reshape back. Its shapes must be known (a session knows them
    // per feed shape), and the bias must broadcast along the last axis only.
    const bool batched = a->rank() > 2;
    if (batched && (!a->IsFullyDefined() || !out->IsFullyDefined() ||
                    (c->rank() == 2 && c->dim(0) != 1) ||
                    AttrOr<bool>(product, "transpose_a", false))) {
      continue;
    }
    // Gemm's C broadcasts one way only: to [M, N], never growing it.
    bool broadcasts = true;
    for (int i = 0; i < c->rank(); ++i) {
      const int64_t cd = c->dim(c->rank() - 1 - i);
      const int64_t od = out->dim(out->rank() - 1 - i);
      broadcasts = broadcasts && (cd == 1 || (cd >= 0 && cd == od));
    }
    if (!broadcasts) continue;
    auto flag = [&](const char* name) -> int64_t {
      return AttrOr<bool>(product, name, false) ? 1 : 0;
    };
    const NodeDef& sum = graph.node(add);
    NodeDef gemm{sum.name,
                 "Gemm",
                 {product.inputs[0], product.inputs[1], bias},
                 {{"transA", flag("transpose_a")},
                  {"transB", flag("transpose_b")},
                  {"alpha", AttrOr<double>(product, "alpha", 1.0)},
                  {"beta", 1.0}},
                 sum.device};
    graph.Claim(mm);
    graph.Claim(add);
    graph.Remove(mm, {"matmul-add-to-gemm", sum.name});
    if (batched) {
      const std::vector<int64_t> dims = a->ToShape().dims();
      int64_t rows = 1;
      for (size_t i = 0; i + 1 < dims.size(); ++i) rows *= dims[i];
      const std::string flat = graph.UniqueName(sum.name + "/rows");
      graph.Add(
          {flat,
           "Reshape",
           {product.inputs[0],
            AddConst(graph, flat + "_shape", sum.device,
                     Tensor::FromVector<int64_t>({2}, {rows, dims.back()}))},
           {},
           sum.device});
      gemm.name = graph.UniqueName(sum.name + "/gemm");
      gemm.inputs[0] = flat;
      const std::vector<int64_t> out_dims = out->ToShape().dims();
      NodeDef back{
          sum.name,
          "Reshape",
          {gemm.name,
           AddConst(graph, sum.name + "/shape", sum.device,
                    Tensor::FromVector<int64_t>(
                        {static_cast<int64_t>(out_dims.size())}, out_dims))},
          {},
          sum.device};
      graph.Add(std::move(gemm));
      graph.Replace(add, std::move(back));
    } else {
      graph.Replace(add, std::move(gemm));
    }
    ++rewrites;
  }
  graph.Commit();
  return rewrites;
}

int FuseConvResidual(GraphEditor& graph) {
  int rewrites = 0;
  for (int add = 0; add < graph.size(); ++add) {
    const NodeDef& sum = graph.node(add);
    if (!graph.alive(add) || graph.claimed(add) || sum.op != "Add" ||
        sum.inputs.size() != 2 || graph.HasControlInputs(add)) {
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      const NodeUse in = graph.Producer(sum.inputs[k]);
      if (in.node < 0 || in.slot != 0 ||
          !IsFusableProducer(graph, in.node, add)) {
        continue;
      }
      const NodeDef& conv = graph.node(in.node);
      const bool plain = conv.op == "Conv";
      // A dynamically quantized product with its bias (a transformer's
      // projection before the skip connection) takes z as its residual.
      const bool integer =
          conv.op == "FusedMatMulInteger" && conv.inputs.size() == 6;
      if (!plain && !integer &&
          !(conv.op == "FusedConv" && conv.inputs.size() == 3)) {
        continue;
      }
      const std::string& z = sum.inputs[1 - k];
      const std::optional<PartialShape> y_shape = graph.Shape(conv.name);
      const std::optional<PartialShape> z_shape = graph.Shape(z);
      const std::optional<DataType> dtype = graph.Dtype(conv.name);
      if (!y_shape || !z_shape || !y_shape->IsFullyDefined() ||
          !z_shape->IsFullyDefined() ||
          !(y_shape->ToShape() == z_shape->ToShape()) ||
          !IsFloatOrDouble(dtype) || graph.Dtype(z) != dtype) {
        continue;
      }
      NodeDef fused{sum.name, conv.op, conv.inputs, conv.attrs, sum.device};
      if (integer) {
        fused.inputs.push_back(z);
      } else {
        const std::string b = BiasOrZeros(graph, conv, *dtype);
        if (b.empty()) continue;
        fused.op = "FusedConv";
        fused.inputs = {conv.inputs[0], conv.inputs[1], b, z};
      }
      if (plain) {
        fused.attrs["activation"] = std::string();
        fused.attrs["activation_params"] = std::vector<double>{};
      }
      graph.Claim(in.node);
      graph.Claim(add);
      graph.Remove(in.node, {"conv-residual-fusion", sum.name});
      graph.Replace(add, std::move(fused));
      ++rewrites;
      break;
    }
  }
  graph.Commit();
  return rewrites;
}

int FuseActivations(GraphEditor& graph) {
  int rewrites = 0;
  std::vector<int> read;
  for (int act = 0; act < graph.size(); ++act) {
    const NodeDef& f = graph.node(act);
    if (!graph.alive(act) || graph.claimed(act) ||
        !OpRegistry::Global().IsFusableActivation(f.op) || f.inputs.empty() ||
        graph.HasControlInputs(act)) {
      continue;
    }
    std::vector<double> params;
    if (f.op == "Gelu") {
      if (f.inputs.size() != 1 ||
          AttrOr<std::string>(f, "approximate", "none") != "none") {
        continue;
      }
    } else if (f.op == "LeakyRelu") {
      const std::optional<double> alpha = FloatAttr(f, "alpha");
      if (f.inputs.size() != 1 || !alpha) continue;
      params = {*alpha};
    } else if (f.op == "Clip") {
      // Bounds from constant inputs (an empty one is omitted), or from the
      // min and max attributes when there are none.
      std::optional<double> lo = -std::numeric_limits<double>::infinity();
      std::optional<double> hi = std::numeric_limits<double>::infinity();
      if (f.inputs.size() == 1) {
        lo = FloatAttr(f, "min");
        hi = FloatAttr(f, "max");
      }
      bool constant = f.inputs.size() <= 3;
      for (size_t i = 1; i < f.inputs.size() && constant; ++i) {
        const Tensor* bound = graph.Constant(f.inputs[i]);
        if (bound == nullptr || bound->NumElements() > 1) {
          constant = false;
        } else if (bound->NumElements() == 1) {
          (i == 1 ? lo : hi) = ScalarConstant(graph, f.inputs[i]);
        }
      }
      if (!constant || !lo || !hi) continue;
      params = {*lo, *hi};
    } else if (f.inputs.size() != 1) {
      continue;
    }
    NodeUse in = graph.Producer(f.inputs[0]);
    // An element-wise activation after Reshape(Gemm) is the Reshape of the
    // activated Gemm (matmul-add-to-gemm writes that for batched rows).
    if (in.node >= 0 && in.slot == 0 && graph.node(in.node).op == "Reshape" &&
        !graph.claimed(in.node) && graph.SoleConsumer(in.node) == act) {
      const int reshape = in.node;
      const NodeUse gemm = graph.Producer(graph.node(reshape).inputs[0]);
      if (gemm.node >= 0 && gemm.slot == 0 &&
          (graph.node(gemm.node).op == "Gemm" ||
           graph.node(gemm.node).op == "FusedGemm") &&
          IsFusableProducer(graph, gemm.node, reshape) &&
          IsFloatOrDouble(graph.Dtype(graph.node(gemm.node).name))) {
        // A new name: the Gemm's own now names a value without the
        // activation, which a Run may still fetch (from the graph as given).
        const NodeDef& g = graph.node(gemm.node);
        NodeDef fused{graph.UniqueName(f.name + "/gemm"), "FusedGemm", g.inputs,
                      g.attrs, g.device};
        fused.attrs["activation"] = f.op;
        fused.attrs["activation_params"] = params;
        NodeDef back = graph.node(reshape);
        back.name = f.name;
        back.device = f.device;
        back.inputs[0] = fused.name;
        graph.Claim(gemm.node);
        graph.Claim(reshape);
        graph.Claim(act);
        graph.Remove(gemm.node, {"activation-fusion", fused.name});
        graph.Remove(reshape, {"activation-fusion", f.name});
        AddProducers(graph, act, &read);
        graph.Add(std::move(fused));
        graph.Replace(act, std::move(back));
        ++rewrites;
        continue;
      }
    }
    if (in.node < 0 || in.slot != 0 ||
        !IsFusableProducer(graph, in.node, act) ||
        !IsFloatOrDouble(graph.Dtype(graph.node(in.node).name))) {
      continue;
    }
    const NodeDef& p = graph.node(in.node);
    NodeDef fused{f.name, p.op, p.inputs, p.attrs, f.device};
    if (p.op == "Conv" || p.op == "Gemm") {
      fused.op = p.op == "Conv" ? "FusedConv" : "FusedGemm";
      if (p.op == "Conv") {
        const std::string b =
            BiasOrZeros(graph, p, *graph.Dtype(graph.node(in.node).name));
        if (b.empty()) continue;
        fused.inputs.resize(2);
        fused.inputs.push_back(b);
      }
    }
    fused.attrs["activation"] = f.op;
    fused.attrs["activation_params"] = params;
    graph.Claim(in.node);
    graph.Claim(act);
    graph.Remove(in.node, {"activation-fusion", f.name});
    // Clip's bound constants go with the Clip when nothing else reads them.
    AddProducers(graph, act, &read);
    graph.Replace(act, std::move(fused));
    ++rewrites;
  }
  SweepUnused(graph, read, {}, "activation-fusion");
  return rewrites;
}

}  // namespace weft::internal
