// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp (ONNX: `axes` as
// an attribute or, as opset 13+ ReduceSum and opset 18 all of them, an
// optional second input; `keepdims` = 1 by default; no axes = all, or
// nothing with `noop_with_empty_axes`), ArgMax and ArgMin.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <type_traits>

#include "framework/op_registry_impl.h"
#include "kernels/vector_math.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// Elements per partial sum of a full reduction: fixed, so the order in which
// partial sums combine does not depend on the thread count.
constexpr int64_t kReduceBlock = 8192;

StatusOr<std::vector<int>> NormalizeAxes(const std::vector<int64_t>& axes,
                                         int rank) {
  std::set<int> out;
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) out.insert(i);
  }
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return InvalidArgumentError("axis " + std::to_string(axis) +
                                  " is out of range for rank " +
                                  std::to_string(rank));
    }
    if (!out.insert(static_cast<int>(axis < 0 ? axis + rank : axis)).second) {
      return InvalidArgumentError("axis " + std::to_string(axis) +
                                  " is given twice");
    }
  }
  return std::vector<int>(out.begin(), out.end());
}

// Whether each output's inputs are one contiguous run: axes of size 1
// aside, every reduced axis comes after every kept one.
bool ReducesOneRunEach(const Shape& shape, const std::vector<int>& axes,
                       const std::vector<int>& kept) {
  for (int axis : axes) {
    for (int k : kept) {
      if (k > axis && shape.dim(k) > 1 && shape.dim(axis) > 1) return false;
    }
  }
  return true;
}

// The offsets of the reduced sub-space, ascending because `axes` is
// (NormalizeAxes): the terms then add in input order. Built ascending, not
// sorted after: a sort of 50,176 offsets (a mean over 224 x 224) took
// longer than the reduction, on every Run.
std::vector<int64_t> ReducedOffsets(const Shape& shape,
                                    const std::vector<int>& axes,
                                    const std::vector<int64_t>& strides) {
  std::vector<int64_t> offsets = {0};
  for (int axis : axes) {
    std::vector<int64_t> next;
    next.reserve(offsets.size() * shape.dim(axis));
    for (int64_t base : offsets) {
      for (int64_t c = 0; c < shape.dim(axis); ++c) {
        next.push_back(base + c * strides[axis]);
      }
    }
    offsets.swap(next);
  }
  return offsets;
}

PartialShape ReducedShape(const PartialShape& in, const std::vector<int>& axes,
                          bool keepdims) {
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced) {
      dims.push_back(in.dim(i));
    } else if (keepdims) {
      dims.push_back(1);
    }
  }
  return PartialShape(std::move(dims));
}

enum class Reducer {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL1,         // sum |x|
  kL2,         // sqrt(sum x^2)
  kSumSquare,  // sum x^2
  kLogSum,     // log(sum x)
  kLogSumExp,  // m + log(sum exp(x - m)), m the maximum; sums in double
};

// The dtypes each reducer registers and is compiled for: the extremes all
// numeric types and bool (ONNX's ReduceMax/ReduceMin take the narrow and
// unsigned integers from opset 12, a quantized tensor's range, and bool
// from opset 20, as "any" and "all"), the logarithms the floats, the rest
// the floats and the wide signed integers.
using ExtremeDtypes =
    DtypeSet<float, double, int32_t, int64_t, Float16, int8_t, uint8_t, int16_t,
             uint16_t, uint32_t, uint64_t, bool>;
template <Reducer kR>
using ReducerDtypes = std::conditional_t<
    kR == Reducer::kMax || kR == Reducer::kMin, ExtremeDtypes,
    std::conditional_t<kR == Reducer::kLogSum || kR == Reducer::kLogSumExp,
                       FloatDtypesWithHalf, NumericDtypesWithHalf>>;

// Sums and products of floats accumulate in double: more accurate, and as
// deterministic (the order is fixed either way).
template <class T, Reducer kR>
using Accumulator =
    std::conditional_t<(std::is_floating_point_v<T> ||
                        std::is_same_v<T, Float16>)&&kR != Reducer::kMax &&
                           kR != Reducer::kMin,
                       double, T>;

// What each element contributes before it is combined.
template <class A, Reducer kR>
A Contribution(A x) {
  // Integer sums and products wrap on overflow (WrappingAdd), as NumPy's.
  if constexpr (kR == Reducer::kL1) return x < A(0) ? WrappingSub(A(0), x) : x;
  if constexpr (kR == Reducer::kL2 || kR == Reducer::kSumSquare) {
    return WrappingMul(x, x);
  }
  if constexpr (kR == Reducer::kLogSumExp && std::is_floating_point_v<A>) {
    return std::exp(x);  // Registered for floats only.
  }
  return x;
}

// Where a reduction starts. Max and min start from -inf and +inf where the
// type has them: from the lowest and highest finite values, a reduction
// over nothing but -inf (or +inf) would answer a finite number.
template <class A, Reducer kR>
A Identity() {
  constexpr bool kInfinite = std::numeric_limits<A>::has_infinity;
  if constexpr (kR == Reducer::kProd) return A(1);
  if constexpr (kR == Reducer::kMax) {
    if constexpr (kInfinite) return -std::numeric_limits<A>::infinity();
    return std::numeric_limits<A>::lowest();
  }
  if constexpr (kR == Reducer::kMin) {
    if constexpr (kInfinite) return std::numeric_limits<A>::infinity();
    return std::numeric_limits<A>::max();
  }
  return A(0);
}

template <class A, Reducer kR>
A Combine(A acc, A x) {
  if constexpr (kR == Reducer::kProd) return WrappingMul(acc, x);
  if constexpr (kR == Reducer::kMax) return vmath::MaxPropagatingNaN(acc, x);
  if constexpr (kR == Reducer::kMin) return (x < acc || x != x) ? x : acc;
  return WrappingAdd(acc, x);
}

// The axes of a reduction node: its second input when given (ONNX opset 13+
// ReduceSum), else the attribute.
StatusOr<std::vector<int64_t>> AxesOf(const std::vector<int64_t>& attr,
                                      const Tensor* input) {
  if (input == nullptr) return attr;
  return IntsFromTensor(*input, "the axes input");
}

template <Reducer kR>
class ReduceKernel : public OpKernel {
 public:
  explicit ReduceKernel(const KernelConstruction& c)
      : axes_(c.attr<std::vector<int64_t>>("axes")),
        keepdims_(c.attr<int64_t>("keepdims") != 0),
        noop_with_empty_axes_(c.attr<int64_t>("noop_with_empty_axes") != 0) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(
        std::vector<int64_t> given,
        AxesOf(axes_, ctx.num_inputs() > 1 ? &ctx.input(1) : nullptr));
    // noop_with_empty_axes: a reduction over no axes, which is X itself
    // for the sums, means and extremes, and each element's own term for
    // the others (|x|, x^2, log x: what the ONNX reference gives).
    const bool over_none = given.empty() && noop_with_empty_axes_;
    if (over_none && (kR == Reducer::kSum || kR == Reducer::kMean ||
                      kR == Reducer::kMax || kR == Reducer::kMin ||
                      kR == Reducer::kProd || kR == Reducer::kLogSumExp)) {
      return ctx.SetOutput(0, x);
    }
    std::vector<int> axes;
    if (!over_none) {
      WEFT_ASSIGN_OR_RETURN(axes, NormalizeAxes(given, x.shape().rank()));
    }
    // Over an empty axis each output is the reduction's identity: as ONNX
    // defines it (onnx/onnx#5568), 0 for the sums, 1 for the product,
    // -inf for the logarithms, and for ReduceMax -inf (the lowest value of
    // a type without it, false for bool) and ReduceMin +inf (the highest,
    // true).
    const Shape out_shape = ReducedShape(x.shape(), axes, keepdims_).ToShape();
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, out_shape));
    return DispatchAmong<ReducerDtypes<kR>>(x.dtype(), [&](auto zero) {
      return ReduceShifted<decltype(zero)>(ctx, x, axes, y);
    });
  }

  // x reduced over `axes` into y. `shift`, for LogSumExp only, holds each
  // output's maximum: the sum is of exp(x - shift) and the result shift +
  // log(sum), so that no exp overflows (exp(1000) is inf even in double,
  // where log(e^1000 + e^1000) is 1000.69).
  template <class T>
  static Status Reduce(KernelContext& ctx, const Tensor& x,
                       const std::vector<int>& axes, Tensor* y,
                       const T* shift = nullptr) {
    using A = Accumulator<T, kR>;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    const Shape& shape = x.shape();
    const int rank = shape.rank();
    int64_t count = 1;  // Elements per output.
    for (int axis : axes) count *= shape.dim(axis);
    // The shift of output o (LogSumExp), as the accumulator's type.
    auto shift_of = [shift](int64_t o) -> A {
      if constexpr (kR == Reducer::kLogSumExp) {
        // No shift over an empty input: each sum is of nothing, log 0.
        if (shift != nullptr)
          return static_cast<A>(static_cast<double>(shift[o]));
      }
      return A(0);
    };
    auto finish = [&](A acc, int64_t o) -> T {
      if constexpr (kR == Reducer::kLogSumExp) {
        const A m = shift_of(o);
        // An infinite or NaN maximum is the answer itself: all -inf gives
        // -inf, a +inf gives +inf, a NaN gives NaN.
        if (!std::isfinite(static_cast<double>(m))) return static_cast<T>(m);
        return static_cast<T>(m + std::log(static_cast<double>(acc)));
      }
      if constexpr (kR == Reducer::kMean) {
        return static_cast<T>(acc / static_cast<A>(count == 0 ? 0 : count));
      }
      if constexpr (kR == Reducer::kL2) {
        return static_cast<T>(std::sqrt(static_cast<double>(acc)));
      }
      if constexpr (kR == Reducer::kLogSum) {
        return static_cast<T>(std::log(static_cast<double>(acc)));
      }
      return static_cast<T>(acc);
    };
    if (y->NumElements() == 1) {
      // Everything into one value: fixed blocks of partial results,
      // combined in block order.
      const int64_t n = x.NumElements();
      const int64_t blocks = (n + kReduceBlock - 1) / kReduceBlock;
      // One byte per block for bool: std::vector<bool> packs its elements
      // into shared words, which threads writing neighbours would race on.
      using Partial = std::conditional_t<std::is_same_v<A, bool>, uint8_t, A>;
      std::vector<Partial> partial(blocks, Partial(Identity<A, kR>()));
      ctx.ParallelForFixedBlocks(n, kReduceBlock, [&](int64_t b, int64_t e) {
        partial[b / kReduceBlock] =
            Partial(ReduceRun<T, A>(px + b, e - b, shift_of(0)));
      });
      A total = Identity<A, kR>();
      for (const Partial p : partial) {
        total = Combine<A, kR>(total, static_cast<A>(p));
      }
      py[0] = finish(total, 0);
      return Status::OK();
    }
    // Row-major strides.
    std::vector<int64_t> strides(rank, 1);
    for (int i = rank - 2; i >= 0; --i) {
      strides[i] = strides[i + 1] * shape.dim(i + 1);
    }
    std::vector<int> kept;
    for (int i = 0; i < rank; ++i) {
      if (!std::binary_search(axes.begin(), axes.end(), i)) kept.push_back(i);
    }
    const bool contiguous = ReducesOneRunEach(shape, axes, kept);
    const std::vector<int64_t> reduced_offsets =
        contiguous ? std::vector<int64_t>{}
                   : ReducedOffsets(shape, axes, strides);
    const double cost = static_cast<double>(count);
    ctx.ParallelFor(y->NumElements(), cost, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        // Output index o -> input offset of its first element.
        int64_t rest = o, base = 0;
        for (int k = static_cast<int>(kept.size()) - 1; k >= 0; --k) {
          const int64_t dim = shape.dim(kept[k]);
          base += (rest % dim) * strides[kept[k]];
          rest /= dim;
        }
        const A s = shift_of(o);
        if (contiguous) {
          py[o] = finish(ReduceRun<T, A>(px + base, count, s), o);
          continue;
        }
        A acc = Identity<A, kR>();
        for (int64_t off : reduced_offsets) {
          acc = Combine<A, kR>(acc,
                               Contribution<A, kR>(Shifted(px[base + off], s)));
        }
        py[o] = finish(acc, o);
      }
    });
    return Status::OK();
  }

 private:
  // x[0..n-1] reduced in a fixed order that depends on n only: several
  // independent lanes, so the loop vectorises (vector_math.h).
  template <class T, class A>
  static A ReduceRun(const T* x, int64_t n, A shift) {
    return vmath::LaneReduce<A>(
        n, Identity<A, kR>(),
        [x, shift](int64_t i) {
          return Contribution<A, kR>(Shifted(x[i], shift));
        },
        Combine<A, kR>);
  }

  // x as the accumulator's type, less the output's shift (LogSumExp only).
  template <class T, class A>
  static A Shifted(T x, A shift) {
    if constexpr (kR == Reducer::kLogSumExp) return A(x) - shift;
    return A(x);
  }

  // Reduce, after the maxima LogSumExp shifts by (ReduceMax over the same
  // axes, one per output).
  template <class T>
  Status ReduceShifted(KernelContext& ctx, const Tensor& x,
                       const std::vector<int>& axes, Tensor* y) const {
    if constexpr (kR == Reducer::kLogSumExp && !std::is_integral_v<T>) {
      if (x.NumElements() > 0) {
        WEFT_ASSIGN_OR_RETURN(Tensor max,
                              Tensor::Create(x.dtype(), y->shape()));
        WEFT_RETURN_IF_ERROR(
            ReduceKernel<Reducer::kMax>::Reduce<T>(ctx, x, axes, &max));
        return Reduce<T>(ctx, x, axes, y, max.data<T>());
      }
    }
    return Reduce<T>(ctx, x, axes, y);
  }

  const std::vector<int64_t> axes_;
  const bool keepdims_;
  const bool noop_with_empty_axes_;
};

// ArgMax (ArgMin) along one axis; ties go to the first index
// (select_last_index = 0) or the last; NaN counts as the maximum (minimum).
template <bool kMin>
class ArgExtremeKernel : public OpKernel {
 public:
  explicit ArgExtremeKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")),
        keepdims_(c.attr<int64_t>("keepdims") != 0),
        last_(c.attr<int64_t>("select_last_index") != 0) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::vector<int> axes,
                          NormalizeAxes({axis_}, x.shape().rank()));
    const int axis = axes[0];
    const int64_t len = x.shape().dim(axis);
    if (len == 0) {
      return InvalidArgumentError(std::string(kMin ? "ArgMin" : "ArgMax") +
                                  " over an empty axis of shape " +
                                  x.shape().ToString());
    }
    WEFT_ASSIGN_OR_RETURN(
        Tensor * y, ctx.AllocateOutput(
                        0, ReducedShape(x.shape(), axes, keepdims_).ToShape()));
    int64_t inner = 1;
    for (int i = axis + 1; i < x.shape().rank(); ++i) inner *= x.shape().dim(i);
    return DispatchNumeric(x.dtype(), [&](auto zero) -> Status {
      return Run<decltype(zero)>(ctx, x, y, len, inner);
    });
  }

 private:
  template <class T>
  Status Run(KernelContext& ctx, const Tensor& x, Tensor* y, int64_t len,
             int64_t inner) const {
    const T* px = x.data<T>();
    int64_t* py = y->data<int64_t>();
    ctx.ParallelFor(y->NumElements(), static_cast<double>(len),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t o = begin; o < end; ++o) {
                        const int64_t outer = o / inner, in = o % inner;
                        const T* p = px + outer * len * inner + in;
                        int64_t best = 0;
                        for (int64_t j = 1; j < len; ++j) {
                          const T v = p[j * inner], b = p[best * inner];
                          if (b != b) break;  // NaN already wins.
                          const bool better = kMin ? v < b : v > b;
                          if (better || (last_ && v == b) || v != v) best = j;
                        }
                        py[o] = best;
                      }
                    });
    return Status::OK();
  }

  const int64_t axis_;
  const bool keepdims_;
  const bool last_;
};

// Output 0 is input 0 reduced over `axes` (keepdims from the attribute).
Status SetReducedShape(InferenceContext& ctx,
                       const std::vector<int64_t>& axes) {
  const PartialShape& in = ctx.input_shape(0);
  if (!in.rank_known()) {
    ctx.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<int> normalized,
                        NormalizeAxes(axes, in.rank()));
  ctx.set_output(
      0, ReducedShape(in, normalized, ctx.attr<int64_t>("keepdims") != 0));
  return Status::OK();
}

Status ReduceShapeFn(InferenceContext& ctx) {
  if (ctx.num_inputs() > 2) {
    return InvalidArgumentError("takes data and an optional axes input; got " +
                                std::to_string(ctx.num_inputs()) + " inputs");
  }
  std::vector<int64_t> axes = ctx.attr<std::vector<int64_t>>("axes");
  if (ctx.num_inputs() == 2) {
    const Tensor* given = ctx.input_constant(1);
    if (given == nullptr) {  // Known only at Run.
      ctx.set_output(0, PartialShape::UnknownRank());
      return Status::OK();
    }
    WEFT_ASSIGN_OR_RETURN(axes, IntsFromTensor(*given, "the axes input"));
  }
  if (axes.empty() && ctx.attr<int64_t>("noop_with_empty_axes") != 0) {
    return shape_fns::SameAsInput0(ctx);
  }
  return SetReducedShape(ctx, axes);
}

double ReduceCost(const InferenceContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  return in.IsFullyDefined() ? static_cast<double>(in.ToShape().NumElements())
                             : 1e4;
}

template <Reducer kR>
void RegisterReduce(OpRegistry& registry, const char* name) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder(name)
          .Input(ArgDef::Typed("data", "T"))
          .Input(ArgDef::AnyList("axes_input"))
          .Output(ArgDef::Typed("reduced", "T"))
          .Attr("T", AttrType::kType, std::nullopt, ReducerDtypes<kR>::Vector())
          .Attr("axes", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("keepdims", AttrType::kInt, int64_t{1})
          .Attr("noop_with_empty_axes", AttrType::kInt, int64_t{0})
          .SetShapeFn(ReduceShapeFn)
          .SetCostFn(ReduceCost)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel(name, KernelFactoryFor<ReduceKernel<kR>>()));
}

void RegisterArgExtreme(OpRegistry& registry, const char* name,
                        KernelFactory factory) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder(name)
          .Input(ArgDef::Typed("data", "T"))
          .Output(ArgDef::Fixed("reduced", DataType::kInt64))
          .Attr("T", AttrType::kType, std::nullopt, kAllNumericTypes)
          .Attr("axis", AttrType::kInt, int64_t{0})
          .Attr("keepdims", AttrType::kInt, int64_t{1})
          .Attr("select_last_index", AttrType::kInt, int64_t{0})
          .SetShapeFn([](InferenceContext& ctx) {
            return SetReducedShape(ctx, {ctx.attr<int64_t>("axis")});
          })
          .SetCostFn(ReduceCost)
          .Build()));
  CheckRegistered(registry.RegisterKernel(name, std::move(factory)));
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"ArgMax", "index of the largest element along an axis"},
    {"ArgMin", "index of the smallest element along an axis"},
    {"ReduceL1", "sum of absolute values over axes"},
    {"ReduceL2", "square root of the sum of squares over axes"},
    {"ReduceLogSum", "log of the sum over axes"},
    {"ReduceLogSumExp", "log of the sum of exponentials over axes"},
    {"ReduceMax", "maximum over axes"},
    {"ReduceMean", "mean over axes"},
    {"ReduceMin", "minimum over axes"},
    {"ReduceProd", "product over axes"},
    {"ReduceSum",
     "sum over axes (fixed order: same bits for any thread count)"},
    {"ReduceSumSquare", "sum of squares over axes"},
};

}  // namespace

void RegisterReduceOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  RegisterReduce<Reducer::kSum>(registry, "ReduceSum");
  RegisterReduce<Reducer::kMean>(registry, "ReduceMean");
  RegisterReduce<Reducer::kMax>(registry, "ReduceMax");
  RegisterReduce<Reducer::kMin>(registry, "ReduceMin");
  RegisterReduce<Reducer::kProd>(registry, "ReduceProd");
  RegisterReduce<Reducer::kL1>(registry, "ReduceL1");
  RegisterReduce<Reducer::kL2>(registry, "ReduceL2");
  RegisterReduce<Reducer::kSumSquare>(registry, "ReduceSumSquare");
  RegisterReduce<Reducer::kLogSum>(registry, "ReduceLogSum");
  RegisterReduce<Reducer::kLogSumExp>(registry, "ReduceLogSumExp");
  // ArgMax and ArgMin, as ReduceMax and ReduceMin, take every numeric type.
  RegisterArgExtreme(registry, "ArgMax",
                     KernelFactoryFor<ArgExtremeKernel<false>>());
  RegisterArgExtreme(registry, "ArgMin",
                     KernelFactoryFor<ArgExtremeKernel<true>>());
}

}  // namespace weft::internal
