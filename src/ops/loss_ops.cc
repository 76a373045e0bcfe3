// Losses with ONNX semantics: NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (which is LogSoftmax over axis 1, then the same
// loss, and can also return the log-probabilities).
//
// Input [N, C, d1, ...], target [N, d1, ...] of class indices, optional
// per-class weight [C]; reduction none | sum | mean (the weighted mean:
// divided by the sum of the weights of the targets not ignored; NaN when
// that is 0). Sums run in double in element order, so results do not
// depend on the thread count.
#include <cmath>
#include <limits>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// "No ignore_index" (ONNX tells by the attribute's absence).
constexpr int64_t kNoIgnoreIndex = std::numeric_limits<int64_t>::min();

class LossKernel : public OpKernel {
 public:
  LossKernel(const KernelConstruction& c, bool softmax)
      : reduction_(c.attr<std::string>("reduction")),
        ignore_index_(c.attr<int64_t>("ignore_index")),
        softmax_(softmax) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& target = ctx.input(1);
    const Tensor* weight = ctx.num_inputs() > 2 ? &ctx.input(2) : nullptr;
    const Shape& is = input.shape();
    const Shape& ts = target.shape();
    bool shapes_ok =
        is.rank() >= 2 && ts.rank() == is.rank() - 1 && ts.dim(0) == is.dim(0);
    for (int i = 1; shapes_ok && i < ts.rank(); ++i) {
      shapes_ok = ts.dim(i) == is.dim(i + 1);
    }
    if (!shapes_ok) {
      return InvalidArgumentError("input shape " + is.ToString() +
                                  " (N, C, d1...) and target shape " +
                                  ts.ToString() + " (N, d1...) do not match");
    }
    const int64_t classes = is.dim(1);
    if (weight != nullptr && weight->NumElements() != classes) {
      return InvalidArgumentError("weight must have " +
                                  std::to_string(classes) + " elements, got " +
                                  weight->shape().ToString());
    }
    if (reduction_ != "none" && reduction_ != "sum" && reduction_ != "mean") {
      return InvalidArgumentError("reduction \"" + reduction_ +
                                  "\" is not one of none, sum, mean");
    }
    std::vector<int64_t> labels(target.NumElements());
    for (size_t i = 0; i < labels.size(); ++i) {
      labels[i] = target.dtype() == DataType::kInt64
                      ? target.data<int64_t>()[i]
                      : target.data<int32_t>()[i];
      if (labels[i] != ignore_index_ &&
          (labels[i] < 0 || labels[i] >= classes)) {
        return InvalidArgumentError(
            "target " + std::to_string(i) + " is " + std::to_string(labels[i]) +
            ", out of range for " + std::to_string(classes) + " classes");
      }
    }
    if (input.dtype() == DataType::kFloat32) {
      return Run<float>(ctx, input, labels, weight);
    }
    return Run<double>(ctx, input, labels, weight);
  }

 private:
  template <class T>
  Status Run(KernelContext& ctx, const Tensor& input,
             const std::vector<int64_t>& labels, const Tensor* weight) const {
    const Shape& is = input.shape();
    const int64_t n = is.dim(0), classes = is.dim(1);
    const int64_t inner =
        n * classes == 0 ? 0 : input.NumElements() / (n * classes);
    // Log-probabilities: the input itself, or its LogSoftmax over axis 1.
    const T* logp = input.data<T>();
    if (softmax_) {
      WEFT_ASSIGN_OR_RETURN(Tensor * lp,
                            ctx.AllocateOutputUninitialized(1, is));
      T* out = lp->data<T>();
      const T* x = input.data<T>();
      ctx.ParallelFor(n * inner, 4.0 * classes, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t base = (r / inner) * classes * inner + r % inner;
          double max = -std::numeric_limits<double>::infinity();
          for (int64_t c = 0; c < classes; ++c) {
            max = std::max(max, static_cast<double>(x[base + c * inner]));
          }
          double sum = 0;
          for (int64_t c = 0; c < classes; ++c) {
            sum += std::exp(static_cast<double>(x[base + c * inner]) - max);
          }
          const double log_sum = std::log(sum) + max;
          for (int64_t c = 0; c < classes; ++c) {
            out[base + c * inner] = static_cast<T>(
                static_cast<double>(x[base + c * inner]) - log_sum);
          }
        }
      });
      logp = out;
    }
    const T* w = weight ? weight->data<T>() : nullptr;
    std::vector<double> loss(labels.size());
    double weight_sum = 0;
    for (size_t i = 0; i < labels.size(); ++i) {
      if (labels[i] == ignore_index_) continue;
      const int64_t image = static_cast<int64_t>(i) / inner;
      const int64_t pos = static_cast<int64_t>(i) % inner;
      const double wi = w ? static_cast<double>(w[labels[i]]) : 1.0;
      loss[i] = -static_cast<double>(
                    logp[(image * classes + labels[i]) * inner + pos]) *
                wi;
      weight_sum += wi;
    }
    if (reduction_ == "none") {
      std::vector<int64_t> dims = {n};
      for (int i = 2; i < is.rank(); ++i) dims.push_back(is.dim(i));
      WEFT_ASSIGN_OR_RETURN(Tensor * y,
                            ctx.AllocateOutputUninitialized(0, Shape(dims)));
      for (size_t i = 0; i < loss.size(); ++i) {
        y->data<T>()[i] = static_cast<T>(loss[i]);
      }
      return Status::OK();
    }
    double total = 0;
    for (double l : loss) total += l;
    // Every target ignored (or weighted 0): 0 / 0, NaN, as ONNX's function
    // body and PyTorch give.
    if (reduction_ == "mean") {
      total = weight_sum == 0 ? std::numeric_limits<double>::quiet_NaN()
                              : total / weight_sum;
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape{}));
    *y->data<T>() = static_cast<T>(total);
    return Status::OK();
  }

  const std::string reduction_;
  const int64_t ignore_index_;
  const bool softmax_;
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"NegativeLogLikelihoodLoss", "negative log-likelihood loss with weights"},
    {"SoftmaxCrossEntropyLoss", "softmax cross-entropy loss with weights"},
};

}  // namespace

void RegisterLossOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  for (const char* name :
       {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
    const bool softmax = name[0] == 'S';
    OpDefBuilder b(name);
    b.Input(ArgDef::Typed("input", "T"))
        .Input(ArgDef::Typed("target", "Tind"))
        .Input(ArgDef::AnyList("weight"))
        .Output(ArgDef::Typed("loss", "T"));
    if (softmax) b.Output(ArgDef::Typed("log_prob", "T"));
    b.Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
        .Attr("Tind", AttrType::kType, std::nullopt,
              {DataType::kInt32, DataType::kInt64})
        .Attr("reduction", AttrType::kString, std::string("mean"))
        .Attr("ignore_index", AttrType::kInt, kNoIgnoreIndex);
    CheckRegistered(registry.RegisterOp(b.Build()));
    CheckRegistered(
        registry.RegisterKernel(name,
                                [softmax](const KernelConstruction& c)
                                    -> StatusOr<std::unique_ptr<OpKernel>> {
                                  return std::unique_ptr<OpKernel>(
                                      std::make_unique<LossKernel>(c, softmax));
                                }));
  }
}

}  // namespace weft::internal
