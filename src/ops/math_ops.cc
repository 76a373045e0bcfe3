// Element-wise math: Add, Sub, Mul, Div, Pow (NumPy broadcasting).
// Pow takes an exponent of another dtype than its base (ONNX Pow-15).
// The variadic Max and Min are in elementwise.cc.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>

#include "framework/op_registry_impl.h"
#include "ops/broadcast.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

template <class T>
Status CheckDivisor(const Tensor& b) {
  if constexpr (std::is_integral_v<T>) {
    const T* p = b.data<T>();
    for (int64_t i = 0; i < b.NumElements(); ++i) {
      if (p[i] == 0) return InvalidArgumentError("integer division by zero");
    }
  }
  return Status::OK();
}

// Division that is defined for every non-zero divisor: the one overflowing
// integer case, MIN / -1, wraps as in NumPy instead of trapping.
template <class T>
T SafeDivide(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    if (b == T(-1)) return static_cast<T>(U(0) - static_cast<U>(a));
  }
  return static_cast<T>(a / b);
}

template <BinaryOp kOp>
class BinaryKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    WEFT_ASSIGN_OR_RETURN(Tensor * out, AllocateBroadcastOutput(ctx, a, b));
    return DispatchNumeric(a.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      // Integers wrap on overflow (WrappingAdd and the others).
      if constexpr (kOp == BinaryOp::kAdd) {
        BroadcastBinary<T, T>(ctx, a, b, out,
                              [](T x, T y) { return WrappingAdd<T>(x, y); });
      } else if constexpr (kOp == BinaryOp::kSub) {
        BroadcastBinary<T, T>(ctx, a, b, out,
                              [](T x, T y) { return WrappingSub<T>(x, y); });
      } else if constexpr (kOp == BinaryOp::kMul) {
        BroadcastBinary<T, T>(ctx, a, b, out,
                              [](T x, T y) { return WrappingMul<T>(x, y); });
      } else {
        WEFT_RETURN_IF_ERROR(CheckDivisor<T>(b));
        // A lambda, not &SafeDivide<T>: a function pointer is called per
        // element, never inlined (Div ran 5x slower than Add).
        BroadcastBinary<T, T>(ctx, a, b, out,
                              [](T x, T y) { return SafeDivide<T>(x, y); });
      }
      return Status::OK();
    });
  }
};

// x to the power y for an integer base: exact (wrapping, as NumPy's integer
// power) for a non-negative integral exponent; otherwise through double,
// truncated towards zero and saturated to T's range (NaN gives 0), since
// casting an out-of-range double to an integer is undefined.
template <class T, class E>
T IntegerPower(T x, E y) {
  if constexpr (std::is_integral_v<E>) {
    if (y >= E(0)) {
      using U = std::make_unsigned_t<T>;
      U base = static_cast<U>(x), result = 1;
      for (auto e = static_cast<std::make_unsigned_t<E>>(y); e != 0; e >>= 1) {
        if (e & 1) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
      }
      return static_cast<T>(result);
    }
  }
  const double p =
      std::trunc(std::pow(static_cast<double>(x), static_cast<double>(y)));
  if (std::isnan(p)) return T(0);
  if (p <= static_cast<double>(std::numeric_limits<T>::min())) {
    return std::numeric_limits<T>::min();
  }
  if (p >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  return static_cast<T>(p);
}

using PowBaseDtypes = NumericDtypes;
// ONNX Pow-15's exponent types but float16 and bfloat16.
using PowExponentDtypes =
    DtypeSet<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t,
             uint16_t, uint32_t, uint64_t>;

// C = A ** B with broadcasting; B may have another dtype than A (then it is
// converted to A's type for a float base, as ONNX's reference does).
class PowKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    WEFT_ASSIGN_OR_RETURN(Tensor * out, AllocateBroadcastOutput(ctx, a, b));
    return DispatchAmong<PowBaseDtypes>(a.dtype(), [&](auto base_zero) {
      using T = decltype(base_zero);
      return DispatchAmong<PowExponentDtypes>(b.dtype(), [&](auto exp_zero) {
        using E = decltype(exp_zero);
        if constexpr (std::is_floating_point_v<T>) {
          BroadcastMixed<T, E, T>(ctx, a, b, out, [](T x, E y) {
            return static_cast<T>(std::pow(x, static_cast<T>(y)));
          });
        } else {
          BroadcastMixed<T, E, T>(ctx, a, b, out, [](T x, E y) {
            return IntegerPower<T, E>(x, y);
          });
        }
        return Status::OK();
      });
    });
  }
};

void RegisterBinary(OpRegistry& registry, const char* name,
                    KernelFactory factory,
                    const std::vector<DataType>& types = kNumericTypes) {
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder(name)
                              .Input(ArgDef::Typed("A", "T"))
                              .Input(ArgDef::Typed("B", "T"))
                              .Output(ArgDef::Typed("C", "T"))
                              .Attr("T", AttrType::kType, std::nullopt, types)
                              .SetShapeFn(shape_fns::Broadcast)
                              .Build()));
  CheckRegistered(registry.RegisterKernel(name, std::move(factory)));
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Add", "a + b with NumPy broadcasting"},
    {"Div", "a / b with broadcasting (integer division by zero fails)"},
    {"Mul", "a * b with broadcasting"},
    {"Pow", "a to the power b with broadcasting"},
    {"Sub", "a - b with broadcasting"},
};

}  // namespace

void RegisterMathOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  RegisterBinary(registry, "Add",
                 KernelFactoryFor<BinaryKernel<BinaryOp::kAdd>>(),
                 kAllNumericTypes);
  RegisterBinary(registry, "Sub",
                 KernelFactoryFor<BinaryKernel<BinaryOp::kSub>>(),
                 kAllNumericTypes);
  RegisterBinary(registry, "Mul",
                 KernelFactoryFor<BinaryKernel<BinaryOp::kMul>>(),
                 kAllNumericTypes);
  RegisterBinary(registry, "Div",
                 KernelFactoryFor<BinaryKernel<BinaryOp::kDiv>>(),
                 kAllNumericTypes);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Pow")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Typed("Y", "T1"))
          .Output(ArgDef::Typed("Z", "T"))
          .Attr("T", AttrType::kType, std::nullopt, PowBaseDtypes::Vector())
          .Attr("T1", AttrType::kType, std::nullopt,
                PowExponentDtypes::Vector())
          .SetShapeFn(shape_fns::Broadcast)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Pow", KernelFactoryFor<PowKernel>()));
}

}  // namespace weft::internal
