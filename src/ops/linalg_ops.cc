// Linear algebra and statistics over whole axes (ONNX names): Det, the
// determinant of each square matrix of the last two axes, Einsum, and
// MeanVarianceNormalization. Both compute in double on one thread in a
// fixed order, so results do not depend on the thread count.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// The determinant of the n x n row-major matrix `a` (overwritten): LU
// decomposition with partial pivoting, the product of the pivots with the
// sign of the row swaps (what NumPy's det does through LAPACK's getrf).
double Determinant(std::vector<double>& a, int64_t n) {
  double det = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < n; ++r) {
      if (std::abs(a[r * n + k]) > std::abs(a[pivot * n + k])) pivot = r;
    }
    if (a[pivot * n + k] == 0) return 0;
    if (pivot != k) {
      for (int64_t c = 0; c < n; ++c) std::swap(a[k * n + c], a[pivot * n + c]);
      det = -det;
    }
    const double p = a[k * n + k];
    det *= p;
    for (int64_t r = k + 1; r < n; ++r) {
      const double f = a[r * n + k] / p;
      for (int64_t c = k + 1; c < n; ++c) a[r * n + c] -= f * a[k * n + c];
    }
  }
  return det;
}

class DetKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& shape = x.shape();
    const int rank = shape.rank();
    if (rank < 2 || shape.dim(rank - 1) != shape.dim(rank - 2)) {
      return InvalidArgumentError(
          "needs square matrices in the last two axes, got " +
          shape.ToString());
    }
    const int64_t n = shape.dim(rank - 1);
    std::vector<int64_t> batch_dims = shape.dims();
    batch_dims.resize(rank - 2);
    WEFT_ASSIGN_OR_RETURN(
        Tensor * y, ctx.AllocateOutputUninitialized(0, Shape(batch_dims)));
    const int64_t matrices = DimProduct(shape, 0, rank - 2);
    return DispatchAmong<FloatDtypes>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* in = x.data<T>();
      T* out = y->data<T>();
      std::vector<double> a(static_cast<size_t>(n * n));
      for (int64_t m = 0; m < matrices; ++m) {
        for (int64_t i = 0; i < n * n; ++i) {
          a[i] = static_cast<double>(in[m * n * n + i]);
        }
        out[m] = static_cast<T>(Determinant(a, n));
      }
      return Status::OK();
    });
  }
};

// An Einsum equation with each term's labels resolved: a letter is its
// character code; the dims an ellipsis stands for get the codes 0, 1, ...
// (right-aligned across terms, so they broadcast as NumPy's do).
struct EinsumPlan {
  std::vector<std::vector<int>> inputs;  // Labels per input axis.
  std::vector<int> output;               // Labels of the output axes.
  std::vector<int> summed;               // Labels only the inputs have.
  std::map<int, int64_t> size;           // Size of each label.
};

bool IsLetterLabel(int label) { return label >= 'A'; }

// Plans "ab,bc->ac" (spaces ignored; the implicit form without "->" keeps
// the ellipsis dims and the letters used once, in alphabetical order).
StatusOr<EinsumPlan> PlanEinsum(const std::string& equation,
                                const std::vector<const Tensor*>& tensors) {
  std::string text;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  }
  const size_t arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != tensors.size()) {
    return InvalidArgumentError(
        "equation '" + equation + "' has " + std::to_string(terms.size()) +
        " input terms for " + std::to_string(tensors.size()) + " inputs");
  }
  // The ellipsis covers, in every term, up to the most dims it covers in
  // any (right-aligned).
  int ellipsis_rank = 0;
  for (size_t t = 0; t < terms.size(); ++t) {
    if (terms[t].find("...") == std::string::npos) continue;
    const int letters = static_cast<int>(terms[t].size()) - 3;
    ellipsis_rank =
        std::max(ellipsis_rank, tensors[t]->shape().rank() - letters);
  }
  // Ellipsis labels are 0 ... ellipsis_rank - 1, below every letter's code.
  if (ellipsis_rank >= 'A') {
    return InvalidArgumentError("equation '" + equation +
                                "': '...' stands for more than 64 dims");
  }
  // Labels of one term; `rank` -1 for the output (its ellipsis is the
  // full ellipsis_rank).
  auto parse = [&](const std::string& term, int rank,
                   std::vector<int>* labels) -> Status {
    const size_t dots = term.find("...");
    const bool has_dots = dots != std::string::npos;
    int letters = 0;
    for (size_t i = 0; i < term.size(); ++i) {
      if (has_dots && i >= dots && i < dots + 3) continue;
      if (!std::isalpha(static_cast<unsigned char>(term[i]))) {
        return InvalidArgumentError("equation '" + equation + "': '" +
                                    std::string(1, term[i]) +
                                    "' is not a letter or '...'");
      }
      ++letters;
    }
    const int ellipsis =
        !has_dots ? 0 : (rank < 0 ? ellipsis_rank : rank - letters);
    if (ellipsis < 0 || (rank >= 0 && !has_dots && letters != rank)) {
      return InvalidArgumentError("equation '" + equation + "': term '" + term +
                                  "' does not fit an input of rank " +
                                  std::to_string(rank));
    }
    for (size_t i = 0; i < term.size(); ++i) {
      if (has_dots && i == dots) {
        for (int e = 0; e < ellipsis; ++e) {
          labels->push_back(ellipsis_rank - ellipsis + e);
        }
        i += 2;
        continue;
      }
      labels->push_back(static_cast<unsigned char>(term[i]));
    }
    return Status::OK();
  };
  EinsumPlan plan;
  std::map<int, int> uses;
  for (size_t t = 0; t < terms.size(); ++t) {
    const Shape& shape = tensors[t]->shape();
    std::vector<int> labels;
    WEFT_RETURN_IF_ERROR(parse(terms[t], shape.rank(), &labels));
    for (int d = 0; d < shape.rank(); ++d) {
      const int label = labels[d];
      const int64_t size = shape.dim(d);
      auto [it, fresh] = plan.size.emplace(label, size);
      if (!fresh && it->second != size) {
        if (IsLetterLabel(label)) {
          return InvalidArgumentError("equation '" + equation + "': label '" +
                                      std::string(1, static_cast<char>(label)) +
                                      "' is " + std::to_string(it->second) +
                                      " in one place and " +
                                      std::to_string(size) + " in another");
        }
        if (it->second == 1) {
          it->second = size;  // An ellipsis dim of 1 broadcasts.
        } else if (size != 1) {
          return InvalidArgumentError("equation '" + equation +
                                      "': the '...' dims do not broadcast");
        }
      }
      ++uses[label];
    }
    plan.inputs.push_back(std::move(labels));
  }
  if (arrow != std::string::npos) {
    WEFT_RETURN_IF_ERROR(parse(text.substr(arrow + 2), -1, &plan.output));
    for (int label : plan.output) {
      if (!plan.size.count(label)) {
        return InvalidArgumentError("equation '" + equation +
                                    "': an output label is in no input");
      }
    }
  } else {
    for (int e = 0; e < ellipsis_rank; ++e) plan.output.push_back(e);
    for (const auto& [label, count] : uses) {
      if (IsLetterLabel(label) && count == 1) plan.output.push_back(label);
    }
  }
  for (const auto& [label, size] : plan.size) {
    if (std::find(plan.output.begin(), plan.output.end(), label) ==
        plan.output.end()) {
      plan.summed.push_back(label);
    }
  }
  return plan;
}

// out[o] = sum over the summed labels of the product of the inputs, in
// double, each output element by one thread in a fixed order (so the
// thread count changes no bit). A direct loop: fine for what models use
// Einsum for (transposes, traces, small batched products); not a fast
// matrix product.
class EinsumKernel : public OpKernel {
 public:
  explicit EinsumKernel(const KernelConstruction& c)
      : equation_(c.attr<std::string>("equation")) {}

  Status Compute(KernelContext& ctx) const override {
    std::vector<const Tensor*> tensors;
    for (int i = 0; i < ctx.num_inputs(); ++i) tensors.push_back(&ctx.input(i));
    WEFT_ASSIGN_OR_RETURN(EinsumPlan plan, PlanEinsum(equation_, tensors));
    std::vector<int64_t> out_dims;
    for (int label : plan.output) out_dims.push_back(plan.size[label]);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape(out_dims)));
    // The output labels then the summed ones make one combined index; per
    // input, the stride each label adds (none for a broadcast dim of 1).
    std::vector<int> labels = plan.output;
    labels.insert(labels.end(), plan.summed.begin(), plan.summed.end());
    std::map<int, size_t> slot;
    for (size_t i = 0; i < labels.size(); ++i) slot[labels[i]] = i;
    std::vector<std::vector<int64_t>> strides(
        tensors.size(), std::vector<int64_t>(labels.size(), 0));
    for (size_t t = 0; t < tensors.size(); ++t) {
      const Shape& shape = tensors[t]->shape();
      int64_t stride = 1;
      for (int d = shape.rank() - 1; d >= 0; --d) {
        if (shape.dim(d) != 1) strides[t][slot[plan.inputs[t][d]]] += stride;
        stride *= shape.dim(d);
      }
    }
    std::vector<int64_t> sizes;
    for (int label : labels) sizes.push_back(plan.size[label]);
    int64_t sum_count = 1;
    for (int label : plan.summed) sum_count *= plan.size[label];
    const size_t out_rank = plan.output.size();
    return DispatchAmong<NumericDtypes>(tensors[0]->dtype(), [&](auto zero) {
      using T = decltype(zero);
      std::vector<const T*> data;
      for (const Tensor* t : tensors) data.push_back(t->data<T>());
      T* out = y->data<T>();
      const double cost =
          static_cast<double>(sum_count) * static_cast<double>(data.size());
      ctx.ParallelFor(y->NumElements(), cost, [&](int64_t begin, int64_t end) {
        std::vector<int64_t> index(labels.size(), 0);
        for (int64_t o = begin; o < end; ++o) {
          int64_t rest = o;
          for (size_t d = out_rank; d-- > 0;) {
            index[d] = rest % sizes[d];
            rest /= sizes[d];
          }
          std::fill(index.begin() + static_cast<std::ptrdiff_t>(out_rank),
                    index.end(), 0);
          double total = 0;
          for (int64_t s = 0; s < sum_count; ++s) {
            double product = 1;
            for (size_t t = 0; t < data.size(); ++t) {
              int64_t offset = 0;
              for (size_t d = 0; d < labels.size(); ++d) {
                offset += index[d] * strides[t][d];
              }
              product *= static_cast<double>(data[t][offset]);
            }
            total += product;
            for (size_t d = labels.size(); d-- > out_rank;) {
              if (++index[d] < sizes[d]) break;
              index[d] = 0;
            }
          }
          out[o] = ConvertValue<T>(total);  // Integers saturate, as Cast.
        }
      });
      return Status::OK();
    });
  }

 private:
  const std::string equation_;
};

// MeanVarianceNormalization: (x - mean) / (std + 1e-9) with the mean and
// the (population) standard deviation taken over `axes`, as ONNX's function
// body defines it: std = sqrt(mean(x^2) - mean(x)^2).
class MeanVarianceNormalizationKernel : public OpKernel {
 public:
  explicit MeanVarianceNormalizationKernel(const KernelConstruction& c)
      : axes_(c.attr<std::vector<int64_t>>("axes")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& shape = x.shape();
    const int rank = shape.rank();
    std::vector<bool> reduced(rank, false);
    for (int64_t axis : axes_) {
      WEFT_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, rank));
      reduced[a] = true;
    }
    // Group of each element: its index with the reduced axes dropped.
    std::vector<int64_t> group_stride(rank, 0);
    int64_t groups = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (reduced[d]) continue;
      group_stride[d] = groups;
      groups *= shape.dim(d);
    }
    const int64_t count = x.NumElements();
    std::vector<int64_t> group_of(static_cast<size_t>(count));
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0; i < count; ++i) {
      int64_t g = 0;
      for (int d = 0; d < rank; ++d) g += index[d] * group_stride[d];
      group_of[i] = g;
      for (int d = rank - 1; d >= 0; --d) {
        if (++index[d] < shape.dim(d)) break;
        index[d] = 0;
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, shape));
    return DispatchAmong<FloatDtypes>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* in = x.data<T>();
      T* out = y->data<T>();
      std::vector<double> sum(groups, 0), sum_sq(groups, 0);
      std::vector<int64_t> n(groups, 0);
      for (int64_t i = 0; i < count; ++i) {
        const double v = static_cast<double>(in[i]);
        sum[group_of[i]] += v;
        sum_sq[group_of[i]] += v * v;
        ++n[group_of[i]];
      }
      for (int64_t i = 0; i < count; ++i) {
        const int64_t g = group_of[i];
        const double mean = sum[g] / static_cast<double>(n[g]);
        const double variance =
            std::max(sum_sq[g] / static_cast<double>(n[g]) - mean * mean, 0.0);
        out[i] = static_cast<T>((static_cast<double>(in[i]) - mean) /
                                (std::sqrt(variance) + 1e-9));
      }
      return Status::OK();
    });
  }

 private:
  const std::vector<int64_t> axes_;
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Det", "determinant of each square matrix of the last two axes"},
    {"Einsum", "sum of products over labelled axes, as in NumPy einsum"},
    {"MeanVarianceNormalization", "(x - mean) / std over axes"},
};

}  // namespace

void RegisterLinalgOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Det")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Det", KernelFactoryFor<DetKernel>()));

  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("Einsum")
                              .Input(ArgDef::Repeated("Inputs", "T", "N"))
                              .Output(ArgDef::Typed("Output", "T"))
                              .Attr("T", AttrType::kType, std::nullopt,
                                    {DataType::kFloat32, DataType::kFloat64,
                                     DataType::kInt32, DataType::kInt64})
                              .Attr("N", AttrType::kInt)
                              .Attr("equation", AttrType::kString)
                              .SetShapeFn([](InferenceContext& ctx) -> Status {
                                ctx.set_output(0, PartialShape::UnknownRank());
                                return Status::OK();
                              })
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("Einsum", KernelFactoryFor<EinsumKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("MeanVarianceNormalization")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Attr("axes", AttrType::kListInt, std::vector<int64_t>{0, 2, 3})
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "MeanVarianceNormalization",
      KernelFactoryFor<MeanVarianceNormalizationKernel>()));
}

}  // namespace weft::internal
