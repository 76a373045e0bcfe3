// Element-wise unary ops (ONNX names): Neg, Abs, Exp, Log, Sqrt, Reciprocal,
// Sigmoid, Tanh, Gelu (approximate = "none" | "tanh"), and the variadic Sum,
// Max, Min and Mean.
// The binary ops are in math_ops.cc.
//
// Unary ops split over fixed blocks (ParallelForFixedBlocks): every element
// is computed by the same code path (vector body or scalar tail of the same
// block) whatever the thread count, so results are bitwise reproducible even
// where the compiler vectorises.
#include <cmath>
#include <functional>
#include <string>
#include <type_traits>

#include "framework/op_registry_impl.h"
#include "kernels/math_rows.h"
#include "kernels/vector_math.h"
#include "ops/broadcast.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

enum class Unary {
  kNeg,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kReciprocal,
  kSigmoid,
  kTanh,
  kGelu,
  kGeluTanh
};

// Integer negation that wraps (as NumPy's) instead of overflowing on MIN.
template <class T>
T Negate(T x) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U(0) - static_cast<U>(x));
  } else {
    return -x;
  }
}

// float32 uses the vectorisable functions of vector_math.h; float64 keeps
// libm (scalar, but the float64 path is there for accuracy, not speed).
using vmath::Exp;

template <class T>
T Apply(Unary op, T x) {
  switch (op) {
    case Unary::kNeg:
      return Negate(x);
    case Unary::kAbs:
      return x < 0 ? Negate(x) : x;
    case Unary::kExp:
      return Exp(x);
    case Unary::kLog:
      if constexpr (std::is_same_v<T, float>) return vmath::LogF(x);
      return std::log(x);
    case Unary::kSqrt:
      return std::sqrt(x);
    case Unary::kReciprocal:
      return T(1) / x;
    case Unary::kSigmoid:
      return T(1) / (T(1) + Exp(-x));
    case Unary::kTanh:
      if constexpr (std::is_same_v<T, float>) return vmath::TanhF(x);
      return std::tanh(x);
    // Both Gelu forms are written without 1 + erf(..) / 1 + tanh(..), which
    // cancel catastrophically for negative x.
    case Unary::kGelu: {  // 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x/sqrt 2)
      // float32 rows go through GeluRow (GeluKernel), with these bits.
      if constexpr (std::is_same_v<T, float>) return GeluF(x);
      return T(0.5) * x * std::erfc(-x * T(0.70710678118654752440));
    }
    case Unary::kGeluTanh: {  // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u))
      const T u = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
      return x / (T(1) + Exp(T(-2) * u));
    }
  }
  return x;
}

template <class T, Unary kOp>
void MapBlocks(KernelContext& ctx, const Tensor& x, Tensor* y) {
  MapElements(ctx, x.data<T>(), y->data<T>(), x.NumElements(), [](T v) {
    if constexpr (std::is_same_v<T, Float16>) {  // Computed in float32.
      return T(Apply<float>(kOp, v));
    } else {
      return Apply<T>(kOp, v);
    }
  });
}

// ONNX's types: Neg the signed ones, Abs every numeric type, the rest the
// floats.
template <Unary kOp>
using UnaryDtypes = std::conditional_t<
    kOp == Unary::kNeg,
    DtypeSet<float, double, Float16, int8_t, int16_t, int32_t, int64_t>,
    std::conditional_t<kOp == Unary::kAbs, AllNumericDtypes,
                       FloatDtypesWithHalf>>;

template <Unary kOp>
class UnaryKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    return DispatchAmong<UnaryDtypes<kOp>>(x.dtype(), [&](auto zero) {
      MapBlocks<decltype(zero), kOp>(ctx, x, y);
      return Status::OK();
    });
  }
};

class GeluKernel : public OpKernel {
 public:
  explicit GeluKernel(const KernelConstruction& c)
      : tanh_(c.attr<std::string>("approximate") == "tanh") {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    if (x.dtype() == DataType::kFloat16) {
      tanh_ ? MapBlocks<Float16, Unary::kGeluTanh>(ctx, x, y)
            : MapBlocks<Float16, Unary::kGelu>(ctx, x, y);
    } else if (x.dtype() == DataType::kFloat32 && tanh_) {
      MapBlocks<float, Unary::kGeluTanh>(ctx, x, y);
    } else if (x.dtype() == DataType::kFloat32) {
      const float* in = x.data<float>();
      float* out = y->data<float>();
      ctx.ParallelForFixedBlocks(
          x.NumElements(), kElementBlock,
          [&](int64_t b, int64_t e) { GeluRow(in + b, out + b, e - b); });
    } else {
      tanh_ ? MapBlocks<double, Unary::kGeluTanh>(ctx, x, y)
            : MapBlocks<double, Unary::kGelu>(ctx, x, y);
    }
    return Status::OK();
  }

 private:
  const bool tanh_;
};

template <Unary kOp>
void RegisterUnary(OpRegistry& registry, const char* name,
                   double cost_per_element) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder(name)
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, UnaryDtypes<kOp>::Vector())
          .SetShapeFn(shape_fns::SameAsInput0)
          .SetCostFn([cost_per_element](const InferenceContext& ctx) {
            const PartialShape& s = ctx.input_shape(0);
            return s.IsFullyDefined()
                       ? cost_per_element *
                             static_cast<double>(s.ToShape().NumElements())
                       : 1e4;
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel(name, KernelFactoryFor<UnaryKernel<kOp>>()));
}

// Sum, Max, Min, Mean (variadic, NumPy broadcasting): combined left to
// right in input order; Mean divides the sum by the input count. Max and
// Min propagate NaN.
enum class Variadic { kSum, kMax, kMin, kMean };

template <Variadic kOp>
using VariadicDtypes = std::conditional_t<
    kOp == Variadic::kMax || kOp == Variadic::kMin, AllNumericDtypes,
    std::conditional_t<kOp == Variadic::kMean, FloatDtypesWithHalf,
                       NumericDtypesWithHalf>>;

template <Variadic kOp>
class VariadicKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    Tensor acc = ctx.input(0);
    const DataType dtype = acc.dtype();
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      const Tensor& next = ctx.input(i);
      WEFT_ASSIGN_OR_RETURN(PartialShape shape,
                            BroadcastShapes(acc.shape(), next.shape()));
      WEFT_ASSIGN_OR_RETURN(Tensor combined,
                            Tensor::Create(dtype, shape.ToShape()));
      WEFT_RETURN_IF_ERROR(
          DispatchAmong<VariadicDtypes<kOp>>(dtype, [&](auto zero) {
            using T = decltype(zero);
            BroadcastBinary<T, T>(ctx, acc, next, &combined, [](T x, T y) -> T {
              // NaN in either input gives NaN, whichever input it is (numpy's
              // maximum, ONNX Runtime's Max, ReduceMax here).
              if constexpr (kOp == Variadic::kMax) {
                return (x < y || y != y) ? y : x;
              }
              if constexpr (kOp == Variadic::kMin) {
                return (y < x || y != y) ? y : x;
              }
              return WrappingAdd<T>(x, y);  // Integers wrap, as in NumPy.
            });
            return Status::OK();
          }));
      acc = std::move(combined);
    }
    if constexpr (kOp == Variadic::kMean) {
      WEFT_ASSIGN_OR_RETURN(Tensor mean, Tensor::Create(dtype, acc.shape()));
      WEFT_RETURN_IF_ERROR(
          DispatchAmong<VariadicDtypes<kOp>>(dtype, [&](auto zero) {
            using T = decltype(zero);
            const T n = static_cast<T>(ctx.num_inputs());
            const T* in = acc.data<T>();
            T* out = mean.data<T>();
            for (int64_t i = 0; i < acc.NumElements(); ++i) {
              out[i] = static_cast<T>(in[i] / n);
            }
            return Status::OK();
          }));
      acc = std::move(mean);
    }
    return ctx.SetOutput(0, std::move(acc));
  }
};

template <Variadic kOp>
void RegisterVariadic(OpRegistry& registry, const char* name) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder(name)
          .Input(ArgDef::Repeated("data", "T", "N"))
          .Output(ArgDef::Typed("result", "T"))
          .Attr("T", AttrType::kType, std::nullopt,
                VariadicDtypes<kOp>::Vector())
          .Attr("N", AttrType::kInt)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            if (ctx.num_inputs() == 0) {
              return InvalidArgumentError("needs at least one input");
            }
            PartialShape shape = ctx.input_shape(0);
            for (int i = 1; i < ctx.num_inputs(); ++i) {
              WEFT_ASSIGN_OR_RETURN(shape,
                                    BroadcastShapes(shape, ctx.input_shape(i)));
            }
            ctx.set_output(0, shape);
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel(name, KernelFactoryFor<VariadicKernel<kOp>>()));
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Abs", "absolute value, element-wise"},
    {"Exp", "e to the x, element-wise"},
    {"Gelu", "Gaussian error linear unit (exact or tanh form)"},
    {"Log", "natural logarithm, element-wise"},
    {"Max", "element-wise maximum of any number of inputs, broadcast"},
    {"Mean", "element-wise mean of any number of inputs, broadcast"},
    {"Min", "element-wise minimum of any number of inputs, broadcast"},
    {"Neg", "-x, element-wise"},
    {"Reciprocal", "1 / x, element-wise"},
    {"Sigmoid", "1 / (1 + e^-x), element-wise"},
    {"Sqrt", "square root, element-wise"},
    {"Sum", "element-wise sum of any number of inputs, broadcast"},
    {"Tanh", "hyperbolic tangent, element-wise"},
};

}  // namespace

void RegisterElementwiseOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  RegisterVariadic<Variadic::kSum>(registry, "Sum");
  RegisterVariadic<Variadic::kMax>(registry, "Max");
  RegisterVariadic<Variadic::kMin>(registry, "Min");
  RegisterVariadic<Variadic::kMean>(registry, "Mean");
  RegisterUnary<Unary::kNeg>(registry, "Neg", 0.5);
  RegisterUnary<Unary::kAbs>(registry, "Abs", 0.5);
  RegisterUnary<Unary::kExp>(registry, "Exp", 3);
  RegisterUnary<Unary::kLog>(registry, "Log", 3);
  RegisterUnary<Unary::kSqrt>(registry, "Sqrt", 1);
  RegisterUnary<Unary::kReciprocal>(registry, "Reciprocal", 1);
  RegisterUnary<Unary::kSigmoid>(registry, "Sigmoid", 4);
  RegisterUnary<Unary::kTanh>(registry, "Tanh", 4);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Gelu")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypesWithHalf)
          .Attr("approximate", AttrType::kString, std::string("none"))
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const std::string& mode = ctx.attr<std::string>("approximate");
            if (mode != "none" && mode != "tanh") {
              return InvalidArgumentError(
                  "attribute 'approximate' must be \"none\" or \"tanh\", got "
                  "\"" +
                  mode + "\"");
            }
            return shape_fns::SameAsInput0(ctx);
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Gelu", KernelFactoryFor<GeluKernel>()));
}

}  // namespace weft::internal
