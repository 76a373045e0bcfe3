// Element-wise math: Add, Sub, Mul, Div, Pow (NumPy broadcasting), Relu.
// The variadic Max and Min are in elementwise.cc.
#include <algorithm>
#include <cmath>
#include <functional>
#include <type_traits>

#include "framework/op_registry_impl.h"
#include "ops/broadcast.h"
#include "ops/op_util.h"

namespace weft::internal {
namespace {

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kPow };

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
      if constexpr (kOp == BinaryOp::kAdd) {
        BroadcastBinary<T, T>(ctx, a, b, out, std::plus<T>());
      } else if constexpr (kOp == BinaryOp::kSub) {
        BroadcastBinary<T, T>(ctx, a, b, out, std::minus<T>());
      } else if constexpr (kOp == BinaryOp::kMul) {
        BroadcastBinary<T, T>(ctx, a, b, out, std::multiplies<T>());
      } else if constexpr (kOp == BinaryOp::kDiv) {
        WEFT_RETURN_IF_ERROR(CheckDivisor<T>(b));
        BroadcastBinary<T, T>(ctx, a, b, out, SafeDivide<T>);
      } else {
        BroadcastBinary<T, T>(ctx, a, b, out, [](T x, T y) {
          return static_cast<T>(std::pow(x, y));
        });
      }
      return Status::OK();
    });
  }
};

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

void RegisterMathOps(OpRegistry& registry) {
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
  RegisterBinary(registry, "Pow",
                 KernelFactoryFor<BinaryKernel<BinaryOp::kPow>>(),
                 {DataType::kFloat32, DataType::kFloat64});
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Relu")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kAllNumericTypes)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Relu", KernelFactoryFor<ReluKernel>()));
}

}  // namespace weft::internal
