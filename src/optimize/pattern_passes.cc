// Passes that take out or replace whole patterns of nodes: identity
// elimination, and the recognition of the decomposed LayerNormalization and
// Erf-form Gelu that exporters write for opsets without those ops.
#include <cmath>

#include "optimize/passes.h"

namespace weft::internal {
namespace {

bool IsScalarNear(const GraphEditor& graph, const std::string& input,
                  double value) {
  const std::optional<double> v = ScalarConstant(graph, input);
  return v && std::abs(*v - value) <= 1e-5 * std::max(1.0, std::abs(value));
}

// For a commutative binary node, the operand that is not `known`; "" when
// neither input is `known`.
std::string OtherOperand(const NodeDef& node, const std::string& known) {
  if (node.inputs.size() != 2) return "";
  if (node.inputs[0] == known) return node.inputs[1];
  if (node.inputs[1] == known) return node.inputs[0];
  return "";
}

// The input of a binary commutative `node` that is a scalar constant near
// `value`: the other operand, or "" when neither is.
std::string OperandBesideScalar(const GraphEditor& graph, const NodeDef& node,
                                double value) {
  if (node.inputs.size() != 2) return "";
  if (IsScalarNear(graph, node.inputs[1], value)) return node.inputs[0];
  if (IsScalarNear(graph, node.inputs[0], value)) return node.inputs[1];
  return "";
}

// The node a data input reads, when it reads output 0 of a live node with
// op `op`; else -1.
int ProducerWithOp(const GraphEditor& graph, const std::string& input,
                   const char* op) {
  const NodeUse p = graph.Producer(input);
  if (p.node < 0 || p.slot != 0 || graph.claimed(p.node)) return -1;
  return graph.node(p.node).op == op ? p.node : -1;
}

// Whether Dropout node i passes its input through: inference (no
// training_mode, or a constant false one) and its mask unread.
bool IsInferenceDropout(const GraphEditor& graph, int i) {
  const NodeDef& node = graph.node(i);
  if (node.inputs.empty() || node.inputs.size() > 3) return false;
  if (node.inputs.size() == 3) {
    const Tensor* mode = graph.Constant(node.inputs[2]);
    if (mode == nullptr || mode->dtype() != DataType::kBool ||
        mode->NumElements() != 1 || *mode->data<bool>()) {
      return false;
    }
  }
  for (const NodeUse& use : graph.uses(i)) {
    if (!use.control && use.slot != 0) return false;
  }
  return true;
}

// The axes of a reduction node that reduces the last axis only, keeping
// it: true when its axes are [-1] or [rank - 1].
bool ReducesLastAxisKeepingIt(GraphEditor& graph, const NodeDef& node) {
  if (AttrOr<int64_t>(node, "keepdims", 1) != 1) return false;
  std::vector<int64_t> axes;
  if (node.inputs.size() == 2) {
    const Tensor* t = graph.Constant(node.inputs[1]);
    if (t == nullptr || t->dtype() != DataType::kInt64) return false;
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->NumElements());
  } else if (node.inputs.size() == 1) {
    axes = AttrOr<std::vector<int64_t>>(node, "axes", {});
  } else {
    return false;
  }
  if (axes.size() != 1) return false;
  if (axes[0] == -1) return true;
  const std::optional<PartialShape> shape = graph.Shape(node.inputs[0]);
  return shape && shape->rank_known() && axes[0] == shape->rank() - 1;
}

}  // namespace

std::optional<double> ScalarConstant(const GraphEditor& graph,
                                     const std::string& input) {
  const Tensor* t = graph.Constant(input);
  if (t == nullptr || t->NumElements() != 1) return std::nullopt;
  switch (t->dtype()) {
    case DataType::kFloat32:
      return *t->data<float>();
    case DataType::kFloat64:
      return *t->data<double>();
    case DataType::kFloat16:
      return static_cast<float>(*t->data<Float16>());
    default:
      return std::nullopt;
  }
}

bool Takeable(const GraphEditor& graph, int i) {
  return i >= 0 && graph.alive(i) && !graph.claimed(i) &&
         !graph.HasControlInputs(i);
}

void AddProducers(const GraphEditor& graph, int node, std::vector<int>* out) {
  for (const std::string& input : graph.node(node).inputs) {
    auto spec = ParseInput(input);
    const int p = spec.ok() ? graph.Find(spec->node) : -1;
    if (p >= 0) out->push_back(p);
  }
}

std::vector<int> DependencyOrder(const GraphEditor& graph) {
  std::vector<int> order;
  std::vector<char> state(graph.size(), 0);  // 0 new, 1 open, 2 done.
  std::vector<std::pair<int, size_t>> stack;
  for (int root = 0; root < graph.size(); ++root) {
    if (!graph.alive(root) || state[root] != 0) continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const std::vector<std::string>& inputs = graph.node(node).inputs;
      if (next < inputs.size()) {
        const std::string& input = inputs[next++];
        const std::string name =
            input.empty() || input[0] != '^' ? input : input.substr(1);
        const int producer = graph.Producer(name).node >= 0
                                 ? graph.Producer(name).node
                                 : graph.Find(name);
        if (producer >= 0 && state[producer] == 0) {
          state[producer] = 1;
          stack.push_back({producer, 0});
        }
        continue;
      }
      state[node] = 2;
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

int SweepUnused(GraphEditor& graph, std::vector<int> candidates,
                const std::vector<char>& removable, const std::string& pass) {
  int removed = 0;
  graph.Commit();
  std::vector<int> uses(graph.size());
  for (int i = 0; i < graph.size(); ++i) {
    uses[i] = static_cast<int>(graph.uses(i).size());
  }
  while (!candidates.empty()) {
    const int i = candidates.back();
    candidates.pop_back();
    if (!graph.alive(i) || uses[i] != 0) continue;
    const NodeDef& node = graph.node(i);
    const bool allowed =
        node.op == "Const" ||
        (i < static_cast<int>(removable.size()) && removable[i]);
    if (!allowed) continue;
    for (const std::string& input : node.inputs) {
      auto spec = ParseInput(input);
      const int p = spec.ok() ? graph.Find(spec->node) : -1;
      if (p >= 0 && --uses[p] == 0) candidates.push_back(p);
    }
    graph.Remove(i, {pass, ""});
    ++removed;
  }
  graph.Commit();
  return removed;
}

int EliminateIdentities(GraphEditor& graph) {
  const int n = graph.size();
  std::vector<char> drop(n, 0);
  for (int i = 0; i < n; ++i) {
    if (!graph.alive(i) || graph.uses(i).empty()) continue;  // Keep outputs.
    const NodeDef& node = graph.node(i);
    const bool identity = node.op == "Identity" && node.inputs.size() == 1;
    const bool dropout = node.op == "Dropout" && IsInferenceDropout(graph, i);
    if ((identity || dropout) && !graph.HasControlInputs(i) &&
        graph.Producer(node.inputs[0]).node >= 0) {
      drop[i] = 1;
    }
  }
  // What each dropped node passes on, looking through chains of them
  // (resolved once per node: a chain of a million costs a million steps).
  std::vector<std::string> source(n);
  std::vector<int> chain;
  for (int i = 0; i < n; ++i) {
    if (!drop[i] || !source[i].empty()) continue;
    int at = i;
    while (drop[at] && source[at].empty()) {
      chain.push_back(at);
      at = graph.Producer(graph.node(at).inputs[0]).node;
    }
    std::string value =
        drop[at] ? source[at] : graph.node(chain.back()).inputs[0];
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      source[*it] = value;
    }
    chain.clear();
  }
  int rewrites = 0;
  for (int i = 0; i < n; ++i) {
    if (!drop[i]) continue;
    const std::string producer = ParseInput(source[i])->node;
    for (const NodeUse& use : graph.uses(i)) {
      graph.SetInput(use.node, use.input,
                     use.control ? "^" + producer : source[i]);
    }
    graph.Remove(i, {"identity-elimination", ""});
    ++rewrites;
  }
  graph.Commit();
  return rewrites;
}

// The nodes of 1 + Erf(x / sqrt 2) (or of x * (1 / sqrt 2)) whose output is
// `sum`: the Add, the Erf and the scaling; nullopt when `sum` is not that.
std::optional<std::vector<int>> MatchErfChain(const GraphEditor& graph,
                                              const std::string& x,
                                              const std::string& sum) {
  const int add = ProducerWithOp(graph, sum, "Add");
  if (add < 0) return std::nullopt;
  const std::string erf_out = OperandBesideScalar(graph, graph.node(add), 1.0);
  const int erf = erf_out.empty() ? -1 : ProducerWithOp(graph, erf_out, "Erf");
  if (erf < 0 || graph.node(erf).inputs.size() != 1) return std::nullopt;
  const int scale = graph.Producer(graph.node(erf).inputs[0]).node;
  if (scale < 0 || graph.claimed(scale)) return std::nullopt;
  const NodeDef& s = graph.node(scale);
  const bool divides = s.op == "Div" && s.inputs.size() == 2 &&
                       s.inputs[0] == x &&
                       IsScalarNear(graph, s.inputs[1], std::sqrt(2.0));
  const bool multiplies =
      s.op == "Mul" && OperandBesideScalar(graph, s, std::sqrt(0.5)) == x;
  if (!divides && !multiplies) return std::nullopt;
  return std::vector<int>{add, erf, scale};
}

// x * 0.5 * (1 + erf(x / sqrt 2)) in the orders exporters write it, as one
// Gelu node named after the last Mul.
int RecognizeGelu(GraphEditor& graph) {
  int rewrites = 0;
  std::vector<int> swept;
  for (int e = 0; e < graph.size(); ++e) {
    if (!graph.alive(e) || graph.claimed(e) || graph.node(e).op != "Mul") {
      continue;
    }
    // The Add of 1 + erf(...) is one operand of the last Mul; the other is
    // x * 0.5 (form B), or the last Mul multiplies (x * (1 + erf)) by 0.5
    // (form A). Each way of reading the operands is a candidate (x, the
    // Add's output, the Mul between), tried until one matches throughout.
    const NodeDef& last = graph.node(e);
    if (last.inputs.size() != 2) continue;
    struct Candidate {
      std::string x, sum;
      int mul;
    };
    std::vector<Candidate> candidates;
    const std::string by_half = OperandBesideScalar(graph, last, 0.5);
    const int d = by_half.empty() ? -1 : ProducerWithOp(graph, by_half, "Mul");
    if (d >= 0 && graph.node(d).inputs.size() == 2) {
      for (int k = 0; k < 2; ++k) {
        candidates.push_back(
            {graph.node(d).inputs[1 - k], graph.node(d).inputs[k], d});
      }
    }
    for (int k = 0; k < 2; ++k) {
      const int h = ProducerWithOp(graph, last.inputs[k], "Mul");
      if (h < 0) continue;
      candidates.push_back({OperandBesideScalar(graph, graph.node(h), 0.5),
                            last.inputs[1 - k], h});
    }
    std::string x;
    std::vector<int> inner;  // The pattern's nodes but the last Mul.
    for (const Candidate& c : candidates) {
      const std::optional<std::vector<int>> chain =
          MatchErfChain(graph, c.x, c.sum);
      if (!c.x.empty() && chain) {
        x = c.x;
        inner = {c.mul};
        inner.insert(inner.end(), chain->begin(), chain->end());
        break;
      }
    }
    if (x.empty()) continue;
    // Every inner node must feed the next one only (x alone has other
    // readers), or removing it would take a value someone else reads.
    bool sole = true;
    for (int node : inner) {
      sole = sole && graph.SoleConsumer(node) >= 0 && !graph.claimed(node);
    }
    if (!sole || graph.HasControlInputs(e)) continue;
    const std::optional<DataType> dtype = graph.Dtype(x);
    if (!dtype ||
        (*dtype != DataType::kFloat32 && *dtype != DataType::kFloat64 &&
         *dtype != DataType::kFloat16)) {
      continue;
    }
    // The constants the pattern read (0.5, 1, sqrt 2) go when nothing else
    // reads them.
    AddProducers(graph, e, &swept);
    for (int node : inner) AddProducers(graph, node, &swept);
    for (int node : inner) {
      graph.Claim(node);
      graph.Remove(node, {"gelu-recognition", last.name});
    }
    graph.Claim(e);
    NodeDef gelu{last.name,
                 "Gelu",
                 {x},
                 {{"approximate", std::string("none")}},
                 last.device};
    graph.Replace(e, std::move(gelu));
    ++rewrites;
  }
  SweepUnused(graph, swept, {}, "gelu-recognition");
  return rewrites;
}

// mean = ReduceMean(x); d = x - mean; var = ReduceMean(d ^ 2);
// y = d / Sqrt(var + eps) [* gamma [+ beta]] over the last axis, as one
// LayerNormalization named after the last node.
int RecognizeLayerNorm(GraphEditor& graph) {
  int rewrites = 0;
  std::vector<int> swept;
  for (int m1 = 0; m1 < graph.size(); ++m1) {
    if (!graph.alive(m1) || graph.claimed(m1) ||
        graph.node(m1).op != "ReduceMean" ||
        !ReducesLastAxisKeepingIt(graph, graph.node(m1))) {
      continue;
    }
    const std::string x = graph.node(m1).inputs[0];
    const std::string mean = graph.node(m1).name;
    const int sub = graph.SoleConsumer(m1);
    if (sub < 0 || graph.node(sub).op != "Sub" ||
        graph.node(sub).inputs != std::vector<std::string>{x, mean} ||
        graph.HasControlInputs(sub)) {
      continue;
    }
    // d feeds the Pow and the Div, nothing else.
    int pow = -1, div = -1;
    const std::string d = graph.node(sub).name;
    if (graph.uses(sub).size() != 2) continue;
    for (const NodeUse& use : graph.uses(sub)) {
      if (use.control || use.slot != 0 || use.input != 0) continue;
      const std::string& op = graph.node(use.node).op;
      if (op == "Pow") pow = use.node;
      if (op == "Div") div = use.node;
    }
    if (pow < 0 || div < 0 || graph.node(pow).inputs.size() != 2 ||
        !IsScalarNear(graph, graph.node(pow).inputs[1], 2.0)) {
      continue;
    }
    const int m2 = graph.SoleConsumer(pow);
    if (m2 < 0 || graph.node(m2).op != "ReduceMean" ||
        !ReducesLastAxisKeepingIt(graph, graph.node(m2))) {
      continue;
    }
    const int add_eps = graph.SoleConsumer(m2);
    if (add_eps < 0 || graph.node(add_eps).op != "Add") continue;
    const std::string var = graph.node(m2).name;
    const std::string eps_input = OtherOperand(graph.node(add_eps), var);
    const std::optional<double> eps = ScalarConstant(graph, eps_input);
    const int sqrt = graph.SoleConsumer(add_eps);
    if (!eps || sqrt < 0 || graph.node(sqrt).op != "Sqrt" ||
        graph.SoleConsumer(sqrt) != div ||
        graph.node(div).inputs !=
            std::vector<std::string>{d, graph.node(sqrt).name}) {
      continue;
    }
    // The scale (required by LayerNormalization) and an optional shift,
    // each a constant vector over the last axis.
    const int mul = graph.SoleConsumer(div);
    if (mul < 0 || graph.node(mul).op != "Mul") continue;
    const std::string gamma =
        OtherOperand(graph.node(mul), graph.node(div).name);
    const Tensor* gamma_value = graph.Constant(gamma);
    if (gamma_value == nullptr || gamma_value->shape().rank() != 1) continue;
    int last = mul;
    std::string beta;
    const int add = graph.SoleConsumer(mul);
    if (add >= 0 && graph.node(add).op == "Add" && !graph.claimed(add)) {
      beta = OtherOperand(graph.node(add), graph.node(mul).name);
      const Tensor* beta_value = graph.Constant(beta);
      if (beta_value != nullptr &&
          beta_value->shape() == gamma_value->shape()) {
        last = add;
      } else {
        beta.clear();
      }
    }
    const std::optional<PartialShape> x_shape = graph.Shape(x);
    if (!x_shape || !x_shape->rank_known() || x_shape->rank() < 1 ||
        x_shape->dim(x_shape->rank() - 1) != gamma_value->NumElements()) {
      continue;
    }
    const std::vector<int> inner = {m1, sub, pow, m2, add_eps, sqrt, div, mul};
    bool free = !graph.claimed(last);
    for (int node : inner) free = free && !graph.claimed(node);
    if (!free || graph.HasControlInputs(last)) continue;
    const NodeDef& anchor = graph.node(last);
    NodeDef norm{anchor.name,
                 "LayerNormalization",
                 {x, gamma},
                 {{"axis", int64_t{-1}}, {"epsilon", *eps}},
                 anchor.device};
    if (!beta.empty()) norm.inputs.push_back(beta);
    std::vector<int> read;  // The axes, exponent and epsilon constants.
    for (int node : inner) AddProducers(graph, node, &read);
    swept.insert(swept.end(), read.begin(), read.end());
    for (int node : inner) {
      if (node == last) continue;
      graph.Claim(node);
      graph.Remove(node, {"layernorm-recognition", anchor.name});
    }
    graph.Claim(last);
    graph.Replace(last, std::move(norm));
    ++rewrites;
  }
  SweepUnused(graph, swept, {}, "layernorm-recognition");
  return rewrites;
}

}  // namespace weft::internal
