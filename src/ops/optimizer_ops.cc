// Training optimizers of ONNX's ai.onnx.preview.training domain: Adagrad,
// Adam and Momentum (standard or Nesterov). Each takes the learning rate R,
// the update count T, then N tensors to update, their N gradients and
// their N (or 2N, Adam) state tensors, and gives the updated tensors and
// states, with the update rules of the ONNX definitions. Element-wise, each
// element by one thread, so results do not depend on the thread count.
#include <cmath>
#include <string>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

enum class Rule { kAdagrad, kAdam, kMomentum, kNesterov };

// The tensors an update of one X reads, in the node's input order after R
// and T: X, G, then the states (Adagrad: H; Adam: V, H; Momentum: V).
int GroupSize(Rule rule) { return rule == Rule::kAdam ? 4 : 3; }

class OptimizerKernel : public OpKernel {
 public:
  OptimizerKernel(const KernelConstruction& c, Rule rule)
      : rule_(rule), attrs_(c.attrs()) {
    auto get = [&](const char* name, double fallback) {
      auto it = attrs_.find(name);
      const double* v =
          it == attrs_.end() ? nullptr : it->second.get_if<double>();
      return v ? *v : fallback;
    };
    alpha_ = get("alpha", 0.9);
    beta_ = get("beta", rule == Rule::kAdam ? 0.999 : 0.0);
    epsilon_ = get("epsilon", 1e-6);
    decay_ = get("decay_factor", 0.0);
    norm_ = get("norm_coefficient", 0.0);
    norm_post_ = get("norm_coefficient_post", 0.0);
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& r_in = ctx.input(0);
    const Tensor& t_in = ctx.input(1);
    if (r_in.NumElements() != 1 || t_in.NumElements() != 1) {
      return InvalidArgumentError("R and T must be scalars, got " +
                                  r_in.shape().ToString() + " and " +
                                  t_in.shape().ToString());
    }
    const double r = r_in.ValueAsDouble(0);
    const double t = static_cast<double>(*t_in.data<int64_t>());
    const int group = GroupSize(rule_);
    const int tensors = ctx.num_inputs() - 2;
    if (tensors % group != 0 || tensors == 0) {
      return InvalidArgumentError(
          std::to_string(tensors) + " tensors after R and T; this rule takes " +
          std::to_string(group) + " per updated tensor");
    }
    const int n = tensors / group;
    if (ctx.num_outputs() != n * (group - 1)) {
      return InvalidArgumentError(std::to_string(ctx.num_outputs()) +
                                  " outputs; this rule gives " +
                                  std::to_string(n * (group - 1)));
    }
    for (int i = 0; i < n; ++i) {
      const Tensor& x = ctx.input(2 + i);
      for (int k = 1; k < group; ++k) {
        const Tensor& other = ctx.input(2 + k * n + i);
        if (!(other.shape() == x.shape())) {
          return InvalidArgumentError("input " + std::to_string(2 + k * n + i) +
                                      " has shape " + other.shape().ToString() +
                                      ", its X " + x.shape().ToString());
        }
      }
      std::vector<Tensor*> out(group - 1);
      for (int k = 0; k < group - 1; ++k) {
        WEFT_ASSIGN_OR_RETURN(
            out[k], ctx.AllocateOutputUninitialized(k * n + i, x.shape()));
      }
      DispatchFloat32Or64(x.dtype(), [&](auto zero) {
        using T = decltype(zero);
        std::vector<const T*> in(group);
        for (int k = 0; k < group; ++k)
          in[k] = ctx.input(2 + k * n + i).data<T>();
        std::vector<T*> o(group - 1);
        for (int k = 0; k < group - 1; ++k) o[k] = out[k]->data<T>();
        ctx.ParallelFor(x.NumElements(), 10.0, [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) Update<T>(in, o, j, r, t);
        });
      });
    }
    return Status::OK();
  }

 private:
  // One element: in = X, G, states; out = X_new, new states.
  template <class T>
  void Update(const std::vector<const T*>& in, const std::vector<T*>& out,
              int64_t j, double r, double t) const {
    const double x = in[0][j];
    const double g = norm_ * x + in[1][j];
    switch (rule_) {
      case Rule::kAdagrad: {
        const double h = in[2][j] + g * g;
        const double rate = r / (1 + t * decay_);
        out[0][j] = static_cast<T>(x - rate * g / (std::sqrt(h) + epsilon_));
        out[1][j] = static_cast<T>(h);
        break;
      }
      case Rule::kAdam: {
        const double v = alpha_ * in[2][j] + (1 - alpha_) * g;
        const double h = beta_ * in[3][j] + (1 - beta_) * g * g;
        const double rate = t > 0 ? r * std::sqrt(1 - std::pow(beta_, t)) /
                                        (1 - std::pow(alpha_, t))
                                  : r;
        const double updated = x - rate * (v / (std::sqrt(h) + epsilon_));
        out[0][j] = static_cast<T>((1 - norm_post_) * updated);
        out[1][j] = static_cast<T>(v);
        out[2][j] = static_cast<T>(h);
        break;
      }
      case Rule::kMomentum:
      case Rule::kNesterov: {
        const double beta = t > 0 ? beta_ : 1.0;
        const double v = alpha_ * in[2][j] + beta * g;
        const double step = rule_ == Rule::kMomentum ? v : g + alpha_ * v;
        out[0][j] = static_cast<T>(x - r * step);
        out[1][j] = static_cast<T>(v);
        break;
      }
    }
  }

  const Rule rule_;
  const AttrMap attrs_;
  double alpha_, beta_, epsilon_, decay_, norm_, norm_post_;
};

OpDefBuilder OptimizerOp(const char* name) {
  return std::move(OpDefBuilder(name)
                       .Input(ArgDef::Typed("R", "T1"))
                       .Input(ArgDef::Fixed("T", DataType::kInt64))
                       .Input(ArgDef::Repeated("inputs", "T3", "num_inputs"))
                       .Output(ArgDef::Repeated("outputs", "T3", "num_outputs"))
                       .Attr("T1", AttrType::kType, std::nullopt, kFloatTypes)
                       .Attr("T3", AttrType::kType, std::nullopt, kFloatTypes)
                       .Attr("num_inputs", AttrType::kInt)
                       .Attr("num_outputs", AttrType::kInt)
                       .Attr("norm_coefficient", AttrType::kFloat, 0.0));
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Adagrad", "Adagrad update of tensors and their squared-gradient sums"},
    {"Adam", "Adam update of tensors and their two moments"},
    {"Momentum", "SGD with momentum (standard or Nesterov)"},
};

}  // namespace

void RegisterOptimizerOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(
      registry.RegisterOp(OptimizerOp("Adagrad")
                              .Attr("decay_factor", AttrType::kFloat, 0.0)
                              .Attr("epsilon", AttrType::kFloat, 1e-6)
                              .Build()));
  CheckRegistered(registry.RegisterKernel(
      "Adagrad",
      [](const KernelConstruction& c) -> StatusOr<std::unique_ptr<OpKernel>> {
        return std::unique_ptr<OpKernel>(
            std::make_unique<OptimizerKernel>(c, Rule::kAdagrad));
      }));
  CheckRegistered(registry.RegisterOp(
      OptimizerOp("Adam")
          .Attr("alpha", AttrType::kFloat, 0.9)
          .Attr("beta", AttrType::kFloat, 0.999)
          .Attr("epsilon", AttrType::kFloat, 1e-6)
          .Attr("norm_coefficient_post", AttrType::kFloat, 0.0)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "Adam",
      [](const KernelConstruction& c) -> StatusOr<std::unique_ptr<OpKernel>> {
        return std::unique_ptr<OpKernel>(
            std::make_unique<OptimizerKernel>(c, Rule::kAdam));
      }));
  CheckRegistered(registry.RegisterOp(
      OptimizerOp("Momentum")
          .Attr("alpha", AttrType::kFloat)
          .Attr("beta", AttrType::kFloat)
          .Attr("mode", AttrType::kString, std::string("standard"))
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const std::string& mode = ctx.attr<std::string>("mode");
            if (mode != "standard" && mode != "nesterov") {
              return InvalidArgumentError("mode \"" + mode +
                                          "\" is not standard or nesterov");
            }
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "Momentum",
      [](const KernelConstruction& c) -> StatusOr<std::unique_ptr<OpKernel>> {
        const bool nesterov = c.attr<std::string>("mode") == "nesterov";
        return std::unique_ptr<OpKernel>(std::make_unique<OptimizerKernel>(
            c, nesterov ? Rule::kNesterov : Rule::kMomentum));
      }));
}

}  // namespace weft::internal
