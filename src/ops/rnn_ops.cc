// The recurrent ops of ONNX (opsets 7-17): RNN, GRU and LSTM, forward,
// reverse or bidirectional, layout 0 ([seq, batch, ...]) or 1 ([batch, seq,
// ...]), with sequence_lens, initial states, LSTM's peepholes and
// input_forget, GRU's linear_before_reset, clip, and the ONNX activation
// functions with their alpha / beta.
//
// Each batch row is an independent recurrence computed by one thread in a
// fixed order (double accumulators), so results do not depend on the thread
// count.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <utility>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

enum class Cell { kRnn, kGru, kLstm };

int GatesOf(Cell cell) {
  return cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
}

// The ONNX activation functions, by name (the table is the one place that
// lists them).
enum class ActivationKind {
  kSigmoid,
  kTanh,
  kRelu,
  kHardSigmoid,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kAffine,
  kElu,
  kSoftsign,
  kSoftplus,
};
constexpr std::pair<const char*, ActivationKind> kActivations[] = {
    {"Sigmoid", ActivationKind::kSigmoid},
    {"Tanh", ActivationKind::kTanh},
    {"Relu", ActivationKind::kRelu},
    {"HardSigmoid", ActivationKind::kHardSigmoid},
    {"LeakyRelu", ActivationKind::kLeakyRelu},
    {"ThresholdedRelu", ActivationKind::kThresholdedRelu},
    {"ScaledTanh", ActivationKind::kScaledTanh},
    {"Affine", ActivationKind::kAffine},
    {"Elu", ActivationKind::kElu},
    {"Softsign", ActivationKind::kSoftsign},
    {"Softplus", ActivationKind::kSoftplus},
};

std::optional<ActivationKind> ActivationByName(const std::string& name) {
  for (const auto& [known, kind] : kActivations) {
    if (name == known) return kind;
  }
  return std::nullopt;
}

// An ONNX activation function with its parameters, resolved from its name
// once (it runs per element per time step).
struct Activation {
  ActivationKind kind = ActivationKind::kTanh;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    switch (kind) {
      case ActivationKind::kSigmoid:
        return 1 / (1 + std::exp(-x));
      case ActivationKind::kTanh:
        return std::tanh(x);
      case ActivationKind::kRelu:
        return x > 0 ? x : 0;
      case ActivationKind::kHardSigmoid:
        return std::clamp(alpha * x + beta, 0.0, 1.0);
      case ActivationKind::kLeakyRelu:
        return x >= 0 ? x : alpha * x;
      case ActivationKind::kThresholdedRelu:
        return x > alpha ? x : 0;
      case ActivationKind::kScaledTanh:
        return alpha * std::tanh(beta * x);
      case ActivationKind::kAffine:
        return alpha * x + beta;
      case ActivationKind::kElu:
        return x >= 0 ? x : alpha * (std::exp(x) - 1);
      case ActivationKind::kSoftsign:
        return x / (1 + std::fabs(x));
      case ActivationKind::kSoftplus:
        return std::log1p(std::exp(x));
    }
    return x;
  }
};

// Which of alpha and beta an activation reads.
std::pair<bool, bool> ParametersOf(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::kHardSigmoid:
    case ActivationKind::kScaledTanh:
    case ActivationKind::kAffine:
      return {true, true};
    case ActivationKind::kLeakyRelu:
    case ActivationKind::kThresholdedRelu:
    case ActivationKind::kElu:
      return {true, false};
    default:
      return {false, false};
  }
}

// The node's activations with their parameters. activation_alpha and
// activation_beta are consumed in the order of the activations, each value
// by the next activation that reads one (as ONNX Runtime reads them, and as
// keras2onnx and tf2onnx write them: [HardSigmoid, Tanh, Tanh] carries
// alpha [0.2]); an activation past the end of a list takes the default of
// the ONNX operator of its name (Affine and ScaledTanh: alpha 1; Affine's
// beta 0, ScaledTanh's 1). REQUIRES: known names (the shape function
// checks).
std::vector<Activation> MakeActivations(const std::vector<std::string>& names,
                                        const std::vector<double>& alphas,
                                        const std::vector<double>& betas) {
  std::vector<Activation> out;
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    Activation a;
    a.kind = ActivationByName(name).value_or(ActivationKind::kTanh);
    switch (a.kind) {
      case ActivationKind::kHardSigmoid:
        a.alpha = 0.2, a.beta = 0.5;
        break;
      case ActivationKind::kLeakyRelu:
        a.alpha = 0.01;
        break;
      case ActivationKind::kThresholdedRelu:
      case ActivationKind::kElu:
        a.alpha = 1.0;
        break;
      case ActivationKind::kScaledTanh:
        a.alpha = 1.0, a.beta = 1.0;
        break;
      case ActivationKind::kAffine:
        a.alpha = 1.0, a.beta = 0.0;
        break;
      default:
        break;
    }
    const auto [reads_alpha, reads_beta] = ParametersOf(a.kind);
    if (reads_alpha && next_alpha < alphas.size()) {
      a.alpha = alphas[next_alpha++];
    }
    if (reads_beta && next_beta < betas.size()) {
      a.beta = betas[next_beta++];
    }
    out.push_back(a);
  }
  return out;
}

class RecurrentKernel : public OpKernel {
 public:
  RecurrentKernel(const KernelConstruction& c, Cell cell)
      : cell_(cell),
        hidden_(c.attr<int64_t>("hidden_size")),
        direction_(c.attr<std::string>("direction")),
        layout_(c.attr<int64_t>("layout")),
        clip_(c.attr<double>("clip")),
        present_(c.attr<std::vector<int64_t>>("optional_inputs")),
        linear_before_reset_(cell == Cell::kGru &&
                             c.attr<int64_t>("linear_before_reset") != 0),
        input_forget_(cell == Cell::kLstm &&
                      c.attr<int64_t>("input_forget") != 0) {
    activations_ =
        MakeActivations(c.attr<std::vector<std::string>>("activations"),
                        c.attr<std::vector<double>>("activation_alpha"),
                        c.attr<std::vector<double>>("activation_beta"));
    // One list for both directions: the defaults, or a node that gives one.
    const size_t per_dir = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 2 : 3;
    if (direction_ == "bidirectional" && activations_.size() == per_dir) {
      for (size_t i = 0; i < per_dir; ++i) {
        activations_.push_back(activations_[i]);
      }
    }
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& r = ctx.input(2);
    // ONNX input index (3: B, 4: sequence_lens, 5: initial_h, 6: initial_c,
    // 7: P) -> the tensor, when the node passes it.
    const Tensor* optional[8] = {};
    for (size_t i = 0; i < present_.size(); ++i) {
      if (present_[i] >= 3 && present_[i] <= 7 &&
          3 + static_cast<int>(i) < ctx.num_inputs()) {
        const Tensor& t = ctx.input(3 + static_cast<int>(i));
        if (t.NumElements() > 0) optional[present_[i]] = &t;
      }
    }
    const int dirs = direction_ == "bidirectional" ? 2 : 1;
    const int gates = GatesOf(cell_);
    const int64_t h = hidden_;
    if (x.shape().rank() != 3) {
      return InvalidArgumentError("X must be 3-D, got " + x.shape().ToString());
    }
    const int64_t seq = x.shape().dim(layout_ ? 1 : 0);
    const int64_t batch = x.shape().dim(layout_ ? 0 : 1);
    const int64_t in = x.shape().dim(2);
    auto expect = [](const Tensor* t, const Shape& shape,
                     const char* what) -> Status {
      if (t != nullptr && !(t->shape() == shape)) {
        return InvalidArgumentError(std::string(what) + " must have shape " +
                                    shape.ToString() + ", got " +
                                    t->shape().ToString());
      }
      return Status::OK();
    };
    WEFT_RETURN_IF_ERROR(expect(&w, Shape{dirs, gates * h, in}, "W"));
    WEFT_RETURN_IF_ERROR(expect(&r, Shape{dirs, gates * h, h}, "R"));
    WEFT_RETURN_IF_ERROR(expect(optional[3], Shape{dirs, 2 * gates * h}, "B"));
    WEFT_RETURN_IF_ERROR(expect(optional[4], Shape{batch}, "sequence_lens"));
    const Shape state = layout_ ? Shape{batch, dirs, h} : Shape{dirs, batch, h};
    WEFT_RETURN_IF_ERROR(expect(optional[5], state, "initial_h"));
    WEFT_RETURN_IF_ERROR(expect(optional[6], state, "initial_c"));
    WEFT_RETURN_IF_ERROR(expect(optional[7], Shape{dirs, 3 * h}, "P"));
    std::vector<int64_t> lens(batch, seq);
    if (optional[4] != nullptr) {
      WEFT_ASSIGN_OR_RETURN(lens,
                            IntsFromTensor(*optional[4], "sequence_lens"));
      for (int64_t len : lens) {
        if (len < 0 || len > seq) {
          return InvalidArgumentError("sequence_lens entry " +
                                      std::to_string(len) + " is outside [0, " +
                                      std::to_string(seq) + "]");
        }
      }
    }
    const size_t needed = cell_ == Cell::kRnn ? 1 : cell_ == Cell::kGru ? 2 : 3;
    if (activations_.size() != needed * dirs) {
      return InvalidArgumentError(
          "activations lists " + std::to_string(activations_.size()) +
          " functions; " + std::to_string(needed * dirs) + " are needed");
    }
    const Shape y_shape =
        layout_ ? Shape{batch, seq, dirs, h} : Shape{seq, dirs, batch, h};
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, y_shape));
    WEFT_ASSIGN_OR_RETURN(Tensor * y_h, ctx.AllocateOutput(1, state));
    Tensor* y_c = nullptr;
    if (cell_ == Cell::kLstm) {
      WEFT_ASSIGN_OR_RETURN(y_c, ctx.AllocateOutput(2, state));
    }
    if (x.dtype() == DataType::kFloat32) {
      Run<float>(ctx, x, w, r, optional, lens, y, y_h, y_c, seq, batch, in);
    } else {
      Run<double>(ctx, x, w, r, optional, lens, y, y_h, y_c, seq, batch, in);
    }
    return Status::OK();
  }

 private:
  template <class T>
  void Run(KernelContext& ctx, const Tensor& x, const Tensor& w,
           const Tensor& r, const Tensor* const* optional,
           const std::vector<int64_t>& lens, Tensor* y, Tensor* y_h,
           Tensor* y_c, int64_t seq, int64_t batch, int64_t in) const {
    const int dirs = direction_ == "bidirectional" ? 2 : 1;
    const int gates = GatesOf(cell_);
    const int64_t h = hidden_;
    const int per_dir = cell_ == Cell::kRnn ? 1 : cell_ == Cell::kGru ? 2 : 3;
    // Element offsets in layout 0 or 1.
    auto x_at = [&](int64_t t, int64_t b) {
      return (layout_ ? b * seq + t : t * batch + b) * in;
    };
    auto y_at = [&](int64_t t, int dir, int64_t b) {
      return layout_ ? ((b * seq + t) * dirs + dir) * h
                     : ((t * dirs + dir) * batch + b) * h;
    };
    auto state_at = [&](int dir, int64_t b) {
      return layout_ ? (b * dirs + dir) * h : (dir * batch + b) * h;
    };
    const T* px = x.data<T>();
    auto value = [](const Tensor* t, int64_t i) {
      return t ? static_cast<double>(t->data<T>()[i]) : 0.0;
    };
    ctx.ParallelFor(
        batch * dirs, static_cast<double>(seq * gates * h * (in + h)),
        [&](int64_t begin, int64_t end) {
          std::vector<double> hs(h), cs(h), pre(gates * h), next(h), resets(h);
          for (int64_t job = begin; job < end; ++job) {
            const int dir = static_cast<int>(job % dirs);
            const int64_t b = job / dirs;
            const bool reverse =
                direction_ == "reverse" || (dirs == 2 && dir == 1);
            const T* pw = w.data<T>() + dir * gates * h * in;
            const T* pr = r.data<T>() + dir * gates * h * h;
            const int64_t bias = dir * 2 * gates * h;
            const Activation& f = activations_[dir * per_dir];
            const Activation& g =
                activations_[dir * per_dir + (per_dir > 1 ? 1 : 0)];
            const Activation& hact =
                activations_[dir * per_dir + (per_dir > 2 ? 2 : 0)];
            for (int64_t j = 0; j < h; ++j) {
              hs[j] = value(optional[5], state_at(dir, b) + j);
              cs[j] = value(optional[6], state_at(dir, b) + j);
            }
            auto clip = [&](double v) {
              return clip_ > 0 ? std::clamp(v, -clip_, clip_) : v;
            };
            for (int64_t step = 0; step < lens[b]; ++step) {
              const int64_t t = reverse ? lens[b] - 1 - step : step;
              const T* xt = px + x_at(t, b);
              // pre[g*h + j] = x W^T + Wb (+ h R^T + Rb, except GRU's h gate
              // when linear_before_reset, handled below).
              for (int64_t k = 0; k < gates * h; ++k) {
                double acc = value(optional[3], bias + k);
                for (int64_t i = 0; i < in; ++i) acc += xt[i] * pw[k * in + i];
                pre[k] = acc;
              }
              if (cell_ == Cell::kGru) {
                // Gates z, r, h. z and r see H R^T + Rb now.
                for (int64_t k = 0; k < 2 * h; ++k) {
                  double acc = value(optional[3], bias + gates * h + k);
                  for (int64_t i = 0; i < h; ++i) acc += hs[i] * pr[k * h + i];
                  pre[k] += acc;
                }
                // The reset gates first: without linear_before_reset the
                // h gate reads (r (.) H) R^T, unit i of H scaled by r_i.
                for (int64_t j = 0; j < h; ++j) resets[j] = f(clip(pre[h + j]));
                for (int64_t j = 0; j < h; ++j) {
                  const double z = f(clip(pre[j]));
                  const int64_t k = 2 * h + j;
                  double acc = 0;
                  const double rb = value(optional[3], bias + gates * h + k);
                  if (linear_before_reset_) {
                    for (int64_t i = 0; i < h; ++i)
                      acc += hs[i] * pr[k * h + i];
                    acc = resets[j] * (acc + rb);
                  } else {
                    for (int64_t i = 0; i < h; ++i) {
                      acc += resets[i] * hs[i] * pr[k * h + i];
                    }
                    acc += rb;
                  }
                  const double hh = g(clip(pre[k] + acc));
                  next[j] = (1 - z) * hh + z * hs[j];
                }
              } else {
                for (int64_t k = 0; k < gates * h; ++k) {
                  double acc = value(optional[3], bias + gates * h + k);
                  for (int64_t i = 0; i < h; ++i) acc += hs[i] * pr[k * h + i];
                  pre[k] += acc;
                }
                if (cell_ == Cell::kRnn) {
                  for (int64_t j = 0; j < h; ++j) next[j] = f(clip(pre[j]));
                } else {  // LSTM gates i, o, f, c; peepholes i, o, f.
                  const int64_t p = dir * 3 * h;
                  for (int64_t j = 0; j < h; ++j) {
                    const double i_gate =
                        f(clip(pre[j] + value(optional[7], p + j) * cs[j]));
                    double f_gate =
                        f(clip(pre[2 * h + j] +
                               value(optional[7], p + 2 * h + j) * cs[j]));
                    if (input_forget_) f_gate = 1 - i_gate;
                    const double c_in = g(clip(pre[3 * h + j]));
                    cs[j] = f_gate * cs[j] + i_gate * c_in;
                    const double o_gate = f(clip(
                        pre[h + j] + value(optional[7], p + h + j) * cs[j]));
                    next[j] = o_gate * hact(cs[j]);
                  }
                }
              }
              hs.swap(next);
              T* yt = y->data<T>() + y_at(t, dir, b);
              for (int64_t j = 0; j < h; ++j) yt[j] = static_cast<T>(hs[j]);
            }
            T* last = y_h->data<T>() + state_at(dir, b);
            for (int64_t j = 0; j < h; ++j) last[j] = static_cast<T>(hs[j]);
            if (y_c != nullptr) {
              T* c_last = y_c->data<T>() + state_at(dir, b);
              for (int64_t j = 0; j < h; ++j) c_last[j] = static_cast<T>(cs[j]);
            }
          }
        });
  }

  const Cell cell_;
  const int64_t hidden_;
  const std::string direction_;
  const int64_t layout_;
  const double clip_;
  const std::vector<int64_t> present_;
  const bool linear_before_reset_;
  const bool input_forget_;
  std::vector<Activation> activations_;
};

void RegisterRecurrent(OpRegistry& registry, const char* name, Cell cell,
                       std::vector<std::string> default_activations) {
  OpDefBuilder b(name);
  b.Input(ArgDef::Typed("X", "T"))
      .Input(ArgDef::Typed("W", "T"))
      .Input(ArgDef::Typed("R", "T"))
      .Input(ArgDef::AnyList("optional"))
      .Output(ArgDef::Typed("Y", "T"))
      .Output(ArgDef::Typed("Y_h", "T"));
  if (cell == Cell::kLstm) b.Output(ArgDef::Typed("Y_c", "T"));
  b.Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
      .Attr("hidden_size", AttrType::kInt)
      .Attr("direction", AttrType::kString, std::string("forward"))
      .Attr("layout", AttrType::kInt, int64_t{0})
      .Attr("clip", AttrType::kFloat, 0.0)
      // The ONNX input indices (3..7) of the tensors after R, in order.
      .Attr("optional_inputs", AttrType::kListInt, std::vector<int64_t>{})
      .Attr("activations", AttrType::kListString, default_activations)
      .Attr("activation_alpha", AttrType::kListFloat, std::vector<double>{})
      .Attr("activation_beta", AttrType::kListFloat, std::vector<double>{});
  if (cell == Cell::kGru) {
    b.Attr("linear_before_reset", AttrType::kInt, int64_t{0});
  }
  if (cell == Cell::kLstm) b.Attr("input_forget", AttrType::kInt, int64_t{0});
  b.SetShapeFn([](InferenceContext& ctx) -> Status {
    const std::string& d = ctx.attr<std::string>("direction");
    if (d != "forward" && d != "reverse" && d != "bidirectional") {
      return InvalidArgumentError("direction \"" + d +
                                  "\" is not forward, reverse or "
                                  "bidirectional");
    }
    if (ctx.attr<int64_t>("hidden_size") < 1 ||
        ctx.attr<int64_t>("hidden_size") > (int64_t{1} << 30)) {
      return InvalidArgumentError(
          "hidden_size must be in [1, 2^30], got " +
          std::to_string(ctx.attr<int64_t>("hidden_size")));
    }
    for (const std::string& a :
         ctx.attr<std::vector<std::string>>("activations")) {
      if (!ActivationByName(a).has_value()) {
        return InvalidArgumentError("activation \"" + a +
                                    "\" is not supported");
      }
    }
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      ctx.set_output(i, PartialShape::UnknownRank());
    }
    return Status::OK();
  });
  CheckRegistered(registry.RegisterOp(b.Build()));
  CheckRegistered(registry.RegisterKernel(
      name,
      [cell](
          const KernelConstruction& c) -> StatusOr<std::unique_ptr<OpKernel>> {
        return std::unique_ptr<OpKernel>(
            std::make_unique<RecurrentKernel>(c, cell));
      }));
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"GRU", "gated recurrent unit layer (forward, reverse, bidirectional)"},
    {"LSTM", "long short-term memory layer (forward, reverse, bidirectional)"},
    {"RNN", "simple recurrent layer (forward, reverse, bidirectional)"},
};

}  // namespace

void RegisterRnnOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  RegisterRecurrent(registry, "RNN", Cell::kRnn, {"Tanh"});
  RegisterRecurrent(registry, "GRU", Cell::kGru, {"Sigmoid", "Tanh"});
  RegisterRecurrent(registry, "LSTM", Cell::kLstm, {"Sigmoid", "Tanh", "Tanh"});
}

}  // namespace weft::internal
