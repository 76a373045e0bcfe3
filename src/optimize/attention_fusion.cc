// attention-fusion: multi-head attention as exporters spell it (torch's
// nn.MultiheadAttention and hand-written encoders, and weft's own expansion
// of ONNX Runtime's Attention),
//
//   q, k, v [B, S, H D] (or the outputs of one Split along the last axis)
//     -> Reshape [B, S, H, D] -> Transpose (0 2 1 3; K: 0 2 3 1)
//     -> MatMul(Q, K^T) (alpha from matmul-scale-fusion) [-> Div by a
//     scalar constant] [-> Add mask]
//     -> Softmax(last axis) -> MatMul(., V) -> Transpose (0 2 1 3)
//     -> Reshape [B, Sq, H D]
//
// becomes one FusedAttention (ops/attention.cc), which reads Q, K and V in
// place, at the Split's column offsets when they come from one. The kernel
// gives the chain's bits. Every shape must be known (the graph as
// specialised for its feeds), the values float32, and every node of the
// chain read only by the next; anything else is left as it is.
#include <array>

#include "optimize/passes.h"

namespace weft::internal {
namespace {

constexpr char kPass[] = "attention-fusion";

std::optional<std::vector<int64_t>> KnownDims(GraphEditor& graph,
                                              const std::string& name) {
  const std::optional<PartialShape> shape = graph.Shape(name);
  if (!shape || !shape->IsFullyDefined()) return std::nullopt;
  return shape->dims();
}

// Whether node i is takeable, has op `op`, and is read by `consumer`
// alone, once (GraphEditor::SoleConsumer).
bool IsSoleStep(const GraphEditor& graph, int i, const char* op, int consumer) {
  return Takeable(graph, i) && graph.node(i).op == op &&
         graph.SoleConsumer(i) == consumer;
}

bool HasPerm(const NodeDef& node, const std::vector<int64_t>& perm) {
  return AttrOr<std::vector<int64_t>>(node, "perm", {}) == perm;
}

// One of Q, K, V in the chain: its Reshape and Transpose, and what the
// Reshape reads.
struct HeadChain {
  int reshape = -1, transpose = -1;
  std::string source;  // [B, S, H D]
  int64_t offset = 0;  // into the source's last dim, when from a Split
  int64_t batch = 0, sequence = 0;
};

// The chain from `input` (an operand of a MatMul, node `product`) back
// through Transpose(perm) and a Reshape from [B, S, H D] to [B, S, H, D].
std::optional<HeadChain> MatchHeads(GraphEditor& graph,
                                    const std::string& input, int product,
                                    const std::vector<int64_t>& perm,
                                    int64_t heads, int64_t size) {
  const NodeUse t = graph.Producer(input);
  if (t.slot != 0 || !IsSoleStep(graph, t.node, "Transpose", product) ||
      !HasPerm(graph.node(t.node), perm)) {
    return std::nullopt;
  }
  const NodeUse r = graph.Producer(graph.node(t.node).inputs[0]);
  if (r.slot != 0 || !IsSoleStep(graph, r.node, "Reshape", t.node)) {
    return std::nullopt;
  }
  const NodeDef& reshape = graph.node(r.node);
  const auto in = KnownDims(graph, reshape.inputs[0]);
  const auto out = KnownDims(graph, reshape.name);
  if (!in || !out || in->size() != 3 || out->size() != 4 ||
      (*out)[0] != (*in)[0] || (*out)[1] != (*in)[1] || (*out)[2] != heads ||
      (*out)[3] != size || (*in)[2] != heads * size) {
    return std::nullopt;
  }
  return HeadChain{r.node, t.node, reshape.inputs[0], 0, (*in)[0], (*in)[1]};
}

// A Split along the last axis of a rank-3 tensor whose every output is
// read by exactly the chains' Reshapes: the chains then read its input at
// the Split's column offsets, and the Split goes. Returns the Split's
// node, or -1 (the chains keep reading its outputs).
int ReadThroughSplit(GraphEditor& graph, std::array<HeadChain, 3>& chains) {
  const NodeUse first = graph.Producer(chains[0].source);
  const int split = first.node;
  if (!Takeable(graph, split) || graph.node(split).op != "Split") return -1;
  const NodeDef& node = graph.node(split);
  const auto in = KnownDims(graph, node.inputs[0]);
  const int64_t axis = AttrOr<int64_t>(node, "axis", 0);
  if (!in || in->size() != 3 || (axis != -1 && axis != 2)) return -1;
  for (const NodeUse& use : graph.uses(split)) {
    bool ours = false;
    for (const HeadChain& c : chains) ours = ours || use.node == c.reshape;
    if (use.control || !ours) return -1;
  }
  // Column offsets of the Split's outputs, from their inferred widths; they
  // must add up to the input's (every output counted).
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (int slot = 0; offset < (*in)[2]; ++slot) {
    const std::string name =
        slot == 0 ? node.name : node.name + ":" + std::to_string(slot);
    const auto dims = KnownDims(graph, name);
    if (!dims || dims->size() != 3) return -1;
    offsets.push_back(offset);
    offset += (*dims)[2];
  }
  if (offset != (*in)[2]) return -1;
  for (const HeadChain& c : chains) {
    const NodeUse p = graph.Producer(c.source);
    if (p.node == split && p.slot >= static_cast<int>(offsets.size())) {
      return -1;
    }
  }
  for (HeadChain& c : chains) {
    const NodeUse p = graph.Producer(c.source);
    if (p.node != split) continue;
    c.offset = offsets[static_cast<size_t>(p.slot)];
    c.source = node.inputs[0];
  }
  return split;
}

// The scores' product as `consumer` reads it through `input`: a MatMul,
// or a Div of one by a float32 scalar constant (a scale matmul-scale-fusion
// leaves as it is: 1 / sqrt(32) is not a power of two, and x / c is then
// not x times any float).
struct ScoresSource {
  int product = -1, div = -1;
  float divisor = 1.0f;
};

std::optional<ScoresSource> MatchScores(GraphEditor& graph,
                                        const std::string& input,
                                        int consumer) {
  ScoresSource found;
  NodeUse p = graph.Producer(input);
  if (p.slot == 0 && Takeable(graph, p.node) &&
      graph.node(p.node).op == "Div") {
    const NodeDef& div = graph.node(p.node);
    const Tensor* c =
        div.inputs.size() == 2 ? graph.Constant(div.inputs[1]) : nullptr;
    if (graph.SoleConsumer(p.node) != consumer || c == nullptr ||
        c->dtype() != DataType::kFloat32 || c->NumElements() != 1 ||
        KnownDims(graph, div.name) != KnownDims(graph, div.inputs[0])) {
      return std::nullopt;
    }
    found.div = p.node;
    found.divisor = *c->data<float>();
    consumer = p.node;
    p = graph.Producer(div.inputs[0]);
  }
  if (p.slot != 0 || !IsSoleStep(graph, p.node, "MatMul", consumer)) {
    return std::nullopt;
  }
  found.product = p.node;
  return found;
}

// What the Softmax normalises: the scores' product (and its Div), and the
// Add of a mask between them and the Softmax, when there is one.
struct MaskedScores {
  ScoresSource source;
  int add = -1;
  std::string mask;
};

std::optional<MaskedScores> MatchMaskedScores(
    GraphEditor& graph, int softmax, const std::vector<int64_t>& scores) {
  const std::string& input = graph.node(softmax).inputs[0];
  const int before = graph.Producer(input).node;
  if (!Takeable(graph, before) || graph.node(before).op != "Add" ||
      graph.SoleConsumer(before) != softmax) {
    std::optional<ScoresSource> source = MatchScores(graph, input, softmax);
    if (!source) return std::nullopt;
    return MaskedScores{*source, -1, ""};
  }
  const NodeDef& adding = graph.node(before);
  for (int side = 0; side < 2 && adding.inputs.size() == 2; ++side) {
    std::optional<ScoresSource> source =
        MatchScores(graph, adding.inputs[side], before);
    if (!source) continue;
    const std::string& mask = adding.inputs[static_cast<size_t>(1 - side)];
    // A float32 mask that broadcasts to the scores without growing them.
    const auto mask_dims = KnownDims(graph, mask);
    if (!mask_dims || mask_dims->size() > 4 ||
        graph.Dtype(mask) != DataType::kFloat32 ||
        KnownDims(graph, adding.name) != scores) {
      return std::nullopt;
    }
    return MaskedScores{*source, before, mask};
  }
  return std::nullopt;
}

// After the Softmax: the product by V's heads, the Transpose (0 2 1 3) and
// the Reshape that merges the heads.
struct ContextChain {
  int product = -1, transpose = -1, merge = -1;
};

std::optional<ContextChain> MatchContext(GraphEditor& graph, int softmax,
                                         int scores_product) {
  const int pv = graph.SoleConsumer(softmax);
  if (!Takeable(graph, pv) || graph.node(pv).op != "MatMul" ||
      graph.node(pv).inputs[0] != graph.node(softmax).name ||
      AttrOr<double>(graph.node(pv), "alpha", 1.0) != 1.0) {
    return std::nullopt;
  }
  for (int product : {scores_product, pv}) {
    const NodeDef& n = graph.node(product);
    if (n.inputs.size() != 2 || AttrOr<bool>(n, "transpose_a", false) ||
        AttrOr<bool>(n, "transpose_b", false)) {
      return std::nullopt;
    }
  }
  const int back = graph.SoleConsumer(pv);
  const int merge = back >= 0 ? graph.SoleConsumer(back) : -1;
  if (merge < 0 || !IsSoleStep(graph, back, "Transpose", merge) ||
      !HasPerm(graph.node(back), {0, 2, 1, 3}) || !Takeable(graph, merge) ||
      graph.node(merge).op != "Reshape") {
    return std::nullopt;
  }
  return ContextChain{pv, back, merge};
}

}  // namespace

int FuseAttention(GraphEditor& graph) {
  int rewrites = 0;
  // What the removed Reshapes and Splits read besides the data: their
  // constant shapes and sizes, swept when nothing else reads them.
  std::vector<int> shape_inputs;
  for (int sm = 0; sm < graph.size(); ++sm) {
    if (!Takeable(graph, sm) || graph.node(sm).op != "Softmax") continue;
    const NodeDef& softmax = graph.node(sm);
    const auto scores = KnownDims(graph, softmax.name);
    const int64_t axis = AttrOr<int64_t>(softmax, "axis", -1);
    if (!scores || scores->size() != 4 || (axis != -1 && axis != 3) ||
        AttrOr<bool>(softmax, "coerce_2d", false) ||
        graph.Dtype(softmax.name) != DataType::kFloat32) {
      continue;
    }
    const std::optional<MaskedScores> masked =
        MatchMaskedScores(graph, sm, *scores);
    if (!masked) continue;
    const ScoresSource& source = masked->source;
    const int qk = source.product;
    const NodeDef& scores_product = graph.node(qk);
    const std::optional<ContextChain> tail = MatchContext(graph, sm, qk);
    if (!tail) continue;
    const int pv = tail->product, back = tail->transpose, merge = tail->merge;
    const int64_t batch = (*scores)[0], heads = (*scores)[1];
    const auto context = KnownDims(graph, graph.node(pv).name);
    if (!context || context->size() != 4) continue;
    const int64_t size = (*context)[3];
    const std::vector<int64_t> merged = {batch, (*scores)[2], heads * size};
    if (KnownDims(graph, graph.node(merge).name) != merged) continue;
    std::array<HeadChain, 3> chains;
    const std::optional<HeadChain> q = MatchHeads(
        graph, scores_product.inputs[0], qk, {0, 2, 1, 3}, heads, size);
    const std::optional<HeadChain> k = MatchHeads(
        graph, scores_product.inputs[1], qk, {0, 2, 3, 1}, heads, size);
    const std::optional<HeadChain> v = MatchHeads(
        graph, graph.node(pv).inputs[1], pv, {0, 2, 1, 3}, heads, size);
    if (!q || !k || !v || q->batch != batch || k->batch != batch ||
        v->batch != batch || q->sequence != (*scores)[2] ||
        k->sequence != (*scores)[3] || v->sequence != (*scores)[3]) {
      continue;
    }
    chains = {*q, *k, *v};
    const int split = ReadThroughSplit(graph, chains);

    NodeDef fused{graph.node(merge).name,
                  "FusedAttention",
                  {chains[0].source, chains[1].source, chains[2].source},
                  {},
                  graph.node(merge).device};
    if (!masked->mask.empty()) fused.inputs.push_back(masked->mask);
    fused.attrs["num_heads"] = AttrValue(heads);
    fused.attrs["head_size"] = AttrValue(size);
    fused.attrs["q_offset"] = AttrValue(chains[0].offset);
    fused.attrs["k_offset"] = AttrValue(chains[1].offset);
    fused.attrs["v_offset"] = AttrValue(chains[2].offset);
    fused.attrs["alpha"] =
        AttrValue(AttrOr<double>(scores_product, "alpha", 1.0));
    fused.attrs["divisor"] = AttrValue(double{source.divisor});
    std::vector<int> taken = {qk, sm, pv, back};
    if (source.div >= 0) {
      taken.push_back(source.div);
      AddProducers(graph, source.div, &shape_inputs);  // The constant.
    }
    if (masked->add >= 0) taken.push_back(masked->add);
    if (split >= 0) {
      taken.push_back(split);
      AddProducers(graph, split, &shape_inputs);  // Its sizes, if given.
    }
    for (const HeadChain& c : chains) {
      taken.push_back(c.reshape);
      taken.push_back(c.transpose);
      AddProducers(graph, c.reshape, &shape_inputs);
    }
    AddProducers(graph, merge, &shape_inputs);
    graph.Claim(merge);
    for (int i : taken) {
      graph.Claim(i);
      graph.Remove(i, {kPass, fused.name});
    }
    graph.Replace(merge, std::move(fused));
    ++rewrites;
  }
  if (rewrites > 0) {
    graph.Commit();
    SweepUnused(graph, shape_inputs, {}, kPass);
  }
  return rewrites;
}

}  // namespace weft::internal
