// Element-wise functions with ONNX names and parameters: the trigonometric
// and hyperbolic family, Erf, Floor, Ceil, Round, Sign, the activations
// (Relu, LeakyRelu, Elu, Selu, Celu, HardSigmoid, HardSwish, Softplus,
// Softsign, ThresholdedRelu, Shrink), Clip, PRelu, Mod and BitShift.
//
// Each output element depends on its own input element(s) alone and is
// computed by one code path, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "framework/op_registry_impl.h"
#include "ops/broadcast.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

enum class Fn {
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kErf,
  kFloor,
  kCeil,
  kRound,
  kSign,
  kSoftplus,
  kSoftsign,
  kLeakyRelu,
  kElu,
  kSelu,
  kCelu,
  kHardSigmoid,
  kHardSwish,
  kThresholdedRelu,
  kShrink,
  kMish,
};

// An op's float parameters, read once from its attributes (absent ones 0).
struct Params {
  double alpha = 0, beta = 0, gamma = 0, lambd = 0, bias = 0;
};

double AttrOr(const KernelConstruction& c, const char* name) {
  auto it = c.attrs().find(name);
  return it == c.attrs().end() ? 0.0 : *it->second.get_if<double>();
}

// log(1 + e^x) without overflow for large x.
template <class T>
T Softplus(T x) {
  return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// Float functions compute in T (float32 or float64) with libm, as the ONNX
// reference does in NumPy.
template <Fn kFn, class T>
T Apply(T x, const Params& p) {
  if constexpr (std::is_same_v<T, Float16>) {  // Computed in float32.
    return T(Apply<kFn, float>(x, p));
  } else if constexpr (kFn == Fn::kSign) {
    // NaN stays NaN (NumPy, ONNX Runtime): it is neither side of 0.
    if constexpr (!std::is_integral_v<T>) {
      if (x != x) return x;
    }
    return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
  } else if constexpr (kFn == Fn::kShrink) {
    const T lambd = static_cast<T>(p.lambd), bias = static_cast<T>(p.bias);
    if (x < -lambd) return static_cast<T>(x + bias);
    if (x > lambd) return static_cast<T>(x - bias);
    return T(0);
  } else {  // Floats alone (FnDtypes).
    const T a = static_cast<T>(p.alpha);
    switch (kFn) {
      case Fn::kSin:
        return std::sin(x);
      case Fn::kCos:
        return std::cos(x);
      case Fn::kTan:
        return std::tan(x);
      case Fn::kAsin:
        return std::asin(x);
      case Fn::kAcos:
        return std::acos(x);
      case Fn::kAtan:
        return std::atan(x);
      case Fn::kSinh:
        return std::sinh(x);
      case Fn::kCosh:
        return std::cosh(x);
      case Fn::kAsinh:
        return std::asinh(x);
      case Fn::kAcosh:
        return std::acosh(x);
      case Fn::kAtanh:
        return std::atanh(x);
      case Fn::kErf:
        return std::erf(x);
      case Fn::kFloor:
        return std::floor(x);
      case Fn::kCeil:
        return std::ceil(x);
      case Fn::kRound:
        return std::nearbyint(x);  // Halves to even.
      case Fn::kSoftplus:
        return Softplus(x);
      case Fn::kSoftsign:
        return x / (T(1) + std::abs(x));
      case Fn::kLeakyRelu:
        return x < T(0) ? a * x : x;
      case Fn::kElu:
        return x < T(0) ? a * std::expm1(x) : x;
      case Fn::kSelu:
        return static_cast<T>(p.gamma) * (x <= T(0) ? a * std::expm1(x) : x);
      case Fn::kCelu:  // max(0, x) + min(0, a (e^(x/a) - 1)), NaN kept.
        return x > T(0) ? x : a * std::expm1(x / a);
      case Fn::kHardSigmoid:
        return std::clamp(a * x + static_cast<T>(p.beta), T(0), T(1));
      case Fn::kHardSwish:
        return x * std::clamp(x / T(6) + T(0.5), T(0), T(1));
      case Fn::kThresholdedRelu:
        return x > a ? x : T(0);
      case Fn::kMish:
        return x * std::tanh(Softplus(x));
      default:
        return x;
    }
  }
}

// Sign and Shrink take every numeric type; the other functions floats.
template <Fn kFn>
using FnDtypes = std::conditional_t<kFn == Fn::kSign || kFn == Fn::kShrink,
                                    AllNumericDtypes, FloatDtypesWithHalf>;

template <Fn kFn>
class FnKernel : public OpKernel {
 public:
  explicit FnKernel(const KernelConstruction& c) {
    params_.alpha = AttrOr(c, "alpha");
    params_.beta = AttrOr(c, "beta");
    params_.gamma = AttrOr(c, "gamma");
    params_.lambd = AttrOr(c, "lambd");
    params_.bias = AttrOr(c, "bias");
  }
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    return DispatchAmong<FnDtypes<kFn>>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const Params& p = params_;
      MapElements(ctx, x.data<T>(), y->data<T>(), x.NumElements(),
                  [&p](T v) { return Apply<kFn, T>(v, p); });
      return Status::OK();
    });
  }

 private:
  Params params_;
};

// Clip to [min, max]: bounds from inputs 1 and 2 when given (ONNX opset 11+;
// either may be omitted), else from the attributes (before 11).
class ClipKernel : public OpKernel {
 public:
  explicit ClipKernel(const KernelConstruction& c)
      : min_(c.attr<double>("min")),
        max_(c.attr<double>("max")),
        max_only_(c.attr<bool>("max_only")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    return DispatchNumeric(x.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      T lo = std::numeric_limits<T>::lowest(),
        hi = std::numeric_limits<T>::max();
      if (ctx.num_inputs() == 1) {
        lo = Saturate<T>(min_);
        hi = Saturate<T>(max_);
      }
      for (int i = 1; i < ctx.num_inputs(); ++i) {
        const Tensor& bound = ctx.input(i);
        if (bound.NumElements() == 0) continue;  // An omitted bound.
        const bool is_max = i == 2 || max_only_;
        if (bound.NumElements() != 1 || bound.dtype() != x.dtype()) {
          return InvalidArgumentError(
              std::string(is_max ? "max" : "min") +
              " must be a scalar of the input's dtype, got " +
              DataTypeName(bound.dtype()) + " " + bound.shape().ToString());
        }
        (is_max ? hi : lo) = *bound.data<T>();
      }
      // min then max as NumPy's clip: NaN stays NaN.
      MapElements(ctx, x.data<T>(), y->data<T>(), x.NumElements(),
                  [lo, hi](T v) {
                    const T low = v < lo ? lo : v;
                    return low > hi ? hi : low;
                  });
      return Status::OK();
    });
  }

 private:
  template <class T>
  static T Saturate(double v) {
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) {
      return std::numeric_limits<T>::lowest();
    }
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
    return static_cast<T>(v);
  }

  const double min_, max_;
  // ONNX's Clip(x, "", max): the one bound input is the max.
  const bool max_only_;
};

// PRelu: x where x >= 0, else slope * x (slope broadcast to x).
class PReluKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& slope = ctx.input(1);
    WEFT_ASSIGN_OR_RETURN(Tensor * y, AllocateBroadcastOutput(ctx, x, slope));
    return DispatchAmong<NumericDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      BroadcastBinary<T, T>(ctx, x, slope, y, [](T v, T s) {
        if constexpr (std::is_same_v<T, Float16>) {  // In float32.
          const float f = v;
          return f < 0 ? T(static_cast<float>(s) * f) : v;
        } else {
          return v < T(0) ? static_cast<T>(s * v) : v;
        }
      });
      return Status::OK();
    });
  }
};

// Mod: the remainder with the divisor's sign (Python's %) when fmod = 0, or
// with the dividend's sign (C's fmod) when fmod = 1 (required for floats).
class ModKernel : public OpKernel {
 public:
  explicit ModKernel(const KernelConstruction& c)
      : fmod_(c.attr<int64_t>("fmod") != 0) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (!fmod_ &&
        (a.dtype() == DataType::kFloat32 || a.dtype() == DataType::kFloat64)) {
      return InvalidArgumentError("fmod must be 1 for floating-point inputs");
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y, AllocateBroadcastOutput(ctx, a, b));
    return DispatchNumeric(a.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      if constexpr (std::is_integral_v<T>) {
        const T* pb = b.data<T>();
        for (int64_t i = 0; i < b.NumElements(); ++i) {
          if (pb[i] == 0) return InvalidArgumentError("integer modulo by zero");
        }
        const bool c_style = fmod_;
        BroadcastBinary<T, T>(ctx, a, b, y, [c_style](T x, T d) -> T {
          if constexpr (std::is_signed_v<T>) {
            if (d == T(-1)) return T(0);  // MIN % -1 would trap.
          }
          T r = static_cast<T>(x % d);
          if (!c_style && r != 0 && ((r < 0) != (d < 0)))
            r = static_cast<T>(r + d);
          return r;
        });
      } else {
        BroadcastBinary<T, T>(ctx, a, b, y, [](T x, T d) {
          return static_cast<T>(
              std::fmod(static_cast<double>(x), static_cast<double>(d)));
        });
      }
      return Status::OK();
    });
  }

 private:
  const bool fmod_;
};

using UnsignedDtypes = DtypeSet<uint8_t, uint16_t, uint32_t, uint64_t>;
using IntegerDtypes = DtypeSet<int8_t, int16_t, int32_t, int64_t, uint8_t,
                               uint16_t, uint32_t, uint64_t>;

// BitShift on unsigned integers; shifting by the width or more gives 0.
class BitShiftKernel : public OpKernel {
 public:
  explicit BitShiftKernel(const KernelConstruction& c)
      : left_(c.attr<std::string>("direction") == "LEFT") {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    WEFT_ASSIGN_OR_RETURN(Tensor * y, AllocateBroadcastOutput(ctx, a, b));
    const bool left = left_;
    return DispatchAmong<UnsignedDtypes>(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      BroadcastBinary<T, T>(ctx, a, b, y, [left](T x, T s) -> T {
        if (s >= sizeof(T) * 8) return T(0);
        return static_cast<T>(left ? x << s : x >> s);
      });
      return Status::OK();
    });
  }

 private:
  const bool left_;
};

// BitwiseAnd, BitwiseOr, BitwiseXor (ONNX 18) with broadcasting, and
// BitwiseNot, on the integer types' bits.
enum class Bitwise { kAnd, kOr, kXor, kNot };

template <Bitwise kOp>
class BitwiseKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    if constexpr (kOp == Bitwise::kNot) {
      WEFT_ASSIGN_OR_RETURN(Tensor * y,
                            ctx.AllocateOutputUninitialized(0, a.shape()));
      return DispatchAmong<IntegerDtypes>(a.dtype(), [&](auto zero) {
        using T = decltype(zero);
        const T* in = a.data<T>();
        T* out = y->data<T>();
        for (int64_t i = 0; i < a.NumElements(); ++i) {
          out[i] = static_cast<T>(~in[i]);
        }
        return Status::OK();
      });
    } else {
      const Tensor& b = ctx.input(1);
      WEFT_ASSIGN_OR_RETURN(Tensor * y, AllocateBroadcastOutput(ctx, a, b));
      return DispatchAmong<IntegerDtypes>(a.dtype(), [&](auto zero) {
        using T = decltype(zero);
        BroadcastBinary<T, T>(ctx, a, b, y, [](T x, T z) -> T {
          if constexpr (kOp == Bitwise::kAnd) return static_cast<T>(x & z);
          if constexpr (kOp == Bitwise::kOr) return static_cast<T>(x | z);
          return static_cast<T>(x ^ z);
        });
        return Status::OK();
      });
    }
  }
};

struct FnSpec {
  const char* name;
  KernelFactory factory;
  std::vector<DataType> types;
  std::vector<std::pair<const char*, double>> attrs;
};

// The op computing kFn: its kernel and the dtypes that kernel is built for.
template <Fn kFn>
FnSpec SpecOf(const char* name,
              std::vector<std::pair<const char*, double>> attrs = {}) {
  return {name, KernelFactoryFor<FnKernel<kFn>>(), FnDtypes<kFn>::Vector(),
          std::move(attrs)};
}

class ReluKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    return DispatchNumeric(x.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y->data<T>();
      ctx.ParallelFor(x.NumElements(), 0.5, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) py[i] = std::max(px[i], T(0));
      });
      return Status::OK();
    });
  }
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Acos", "arc cosine, element-wise"},
    {"Acosh", "inverse hyperbolic cosine, element-wise"},
    {"Asin", "arc sine, element-wise"},
    {"Asinh", "inverse hyperbolic sine, element-wise"},
    {"Atan", "arc tangent, element-wise"},
    {"Atanh", "inverse hyperbolic tangent, element-wise"},
    {"BitShift", "shift unsigned integers left or right, element-wise"},
    {"BitwiseAnd", "bitwise and of integers, with broadcasting"},
    {"BitwiseNot", "bitwise complement of integers, element-wise"},
    {"BitwiseOr", "bitwise or of integers, with broadcasting"},
    {"BitwiseXor", "bitwise exclusive or of integers, with broadcasting"},
    {"Ceil", "round up, element-wise"},
    {"Celu", "continuously differentiable exponential linear unit"},
    {"Clip", "clamp to [min, max] (optional inputs)"},
    {"Cos", "cosine, element-wise"},
    {"Cosh", "hyperbolic cosine, element-wise"},
    {"Elu", "exponential linear unit"},
    {"Erf", "error function, element-wise"},
    {"Floor", "round down, element-wise"},
    {"HardSigmoid", "max(0, min(1, alpha x + beta))"},
    {"HardSwish", "x * HardSigmoid(x) with alpha 1/6, beta 1/2"},
    {"LeakyRelu", "x for x >= 0, alpha x below"},
    {"Mish", "x * tanh(softplus(x)), element-wise"},
    {"Mod", "remainder with broadcasting (integer or C fmod)"},
    {"PRelu", "x for x >= 0, slope * x below (slope broadcast)"},
    {"Relu", "max(x, 0), element-wise"},
    {"Round", "round half to even, element-wise"},
    {"Selu", "scaled exponential linear unit"},
    {"Shrink", "soft/hard shrinkage with lambda and bias"},
    {"Sign", "-1, 0 or 1, element-wise"},
    {"Sin", "sine, element-wise"},
    {"Sinh", "hyperbolic sine, element-wise"},
    {"Softplus", "log(1 + e^x), element-wise"},
    {"Softsign", "x / (1 + |x|), element-wise"},
    {"Tan", "tangent, element-wise"},
    {"ThresholdedRelu", "x above alpha, zero elsewhere"},
};

}  // namespace

// One schema block per op, read top to bottom as the family's table:
// split, the family's registration would live in several places.
// NOLINTNEXTLINE(readability-function-size)
void RegisterActivationOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Relu")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kAllNumericTypes)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Relu", KernelFactoryFor<ReluKernel>()));
  const std::vector<FnSpec> specs = {
      SpecOf<Fn::kSin>("Sin"),
      SpecOf<Fn::kCos>("Cos"),
      SpecOf<Fn::kTan>("Tan"),
      SpecOf<Fn::kAsin>("Asin"),
      SpecOf<Fn::kAcos>("Acos"),
      SpecOf<Fn::kAtan>("Atan"),
      SpecOf<Fn::kSinh>("Sinh"),
      SpecOf<Fn::kCosh>("Cosh"),
      SpecOf<Fn::kAsinh>("Asinh"),
      SpecOf<Fn::kAcosh>("Acosh"),
      SpecOf<Fn::kAtanh>("Atanh"),
      SpecOf<Fn::kErf>("Erf"),
      SpecOf<Fn::kFloor>("Floor"),
      SpecOf<Fn::kCeil>("Ceil"),
      SpecOf<Fn::kRound>("Round"),
      SpecOf<Fn::kSign>("Sign"),
      SpecOf<Fn::kSoftplus>("Softplus"),
      SpecOf<Fn::kSoftsign>("Softsign"),
      SpecOf<Fn::kMish>("Mish"),
      SpecOf<Fn::kLeakyRelu>("LeakyRelu", {{"alpha", 0.01}}),
      SpecOf<Fn::kElu>("Elu", {{"alpha", 1.0}}),
      SpecOf<Fn::kSelu>("Selu", {{"alpha", 1.67326319217681884765625},
                                 {"gamma", 1.05070102214813232421875}}),
      SpecOf<Fn::kCelu>("Celu", {{"alpha", 1.0}}),
      SpecOf<Fn::kHardSigmoid>("HardSigmoid", {{"alpha", 0.2}, {"beta", 0.5}}),
      SpecOf<Fn::kHardSwish>("HardSwish"),
      SpecOf<Fn::kThresholdedRelu>("ThresholdedRelu", {{"alpha", 1.0}}),
      SpecOf<Fn::kShrink>("Shrink", {{"bias", 0.0}, {"lambd", 0.5}}),
  };
  for (const FnSpec& spec : specs) {
    OpDefBuilder builder(spec.name);
    builder.Input(ArgDef::Typed("X", "T"))
        .Output(ArgDef::Typed("Y", "T"))
        .Attr("T", AttrType::kType, std::nullopt, spec.types)
        .SetShapeFn(shape_fns::SameAsInput0);
    for (const auto& [attr, value] : spec.attrs) {
      builder.Attr(attr, AttrType::kFloat, value);
    }
    CheckRegistered(registry.RegisterOp(builder.Build()));
    CheckRegistered(registry.RegisterKernel(spec.name, spec.factory));
  }

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Clip")
          .Input(ArgDef::Typed("input", "T"))
          .Input(ArgDef::AnyList("bounds"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kAllNumericTypes)
          .Attr("min", AttrType::kFloat,
                -static_cast<double>(std::numeric_limits<float>::max()))
          .Attr("max", AttrType::kFloat,
                static_cast<double>(std::numeric_limits<float>::max()))
          .Attr("max_only", AttrType::kBool, false)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            if (ctx.num_inputs() > 3) {
              return InvalidArgumentError(
                  "takes input and optional min, max; got " +
                  std::to_string(ctx.num_inputs()) + " inputs");
            }
            return shape_fns::SameAsInput0(ctx);
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Clip", KernelFactoryFor<ClipKernel>()));

  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("PRelu")
                              .Input(ArgDef::Typed("X", "T"))
                              .Input(ArgDef::Typed("slope", "T"))
                              .Output(ArgDef::Typed("Y", "T"))
                              .Attr("T", AttrType::kType, std::nullopt,
                                    NumericDtypesWithHalf::Vector())
                              .SetShapeFn(shape_fns::Broadcast)
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("PRelu", KernelFactoryFor<PReluKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Mod")
          .Input(ArgDef::Typed("A", "T"))
          .Input(ArgDef::Typed("B", "T"))
          .Output(ArgDef::Typed("C", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kAllNumericTypes)
          .Attr("fmod", AttrType::kInt, int64_t{0})
          .SetShapeFn(shape_fns::Broadcast)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Mod", KernelFactoryFor<ModKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("BitShift")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Typed("Y", "T"))
          .Output(ArgDef::Typed("Z", "T"))
          .Attr("T", AttrType::kType, std::nullopt, UnsignedDtypes::Vector())
          .Attr("direction", AttrType::kString)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const std::string& d = ctx.attr<std::string>("direction");
            if (d != "LEFT" && d != "RIGHT") {
              return InvalidArgumentError(
                  "attribute 'direction' must be \"LEFT\" or \"RIGHT\", "
                  "got \"" +
                  d + "\"");
            }
            return shape_fns::Broadcast(ctx);
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("BitShift", KernelFactoryFor<BitShiftKernel>()));

  const std::vector<DataType> integers = IntegerDtypes::Vector();
  const std::pair<const char*, KernelFactory> binary[] = {
      {"BitwiseAnd", KernelFactoryFor<BitwiseKernel<Bitwise::kAnd>>()},
      {"BitwiseOr", KernelFactoryFor<BitwiseKernel<Bitwise::kOr>>()},
      {"BitwiseXor", KernelFactoryFor<BitwiseKernel<Bitwise::kXor>>()}};
  for (const auto& [name, factory] : binary) {
    CheckRegistered(registry.RegisterOp(
        OpDefBuilder(name)
            .Input(ArgDef::Typed("A", "T"))
            .Input(ArgDef::Typed("B", "T"))
            .Output(ArgDef::Typed("C", "T"))
            .Attr("T", AttrType::kType, std::nullopt, integers)
            .SetShapeFn(shape_fns::Broadcast)
            .Build()));
    CheckRegistered(registry.RegisterKernel(name, factory));
  }
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("BitwiseNot")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, integers)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "BitwiseNot", KernelFactoryFor<BitwiseKernel<Bitwise::kNot>>()));
}

}  // namespace weft::internal
