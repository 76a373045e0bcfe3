// Comparisons, logic and selection (ONNX names): Equal, Less, Greater,
// LessOrEqual, GreaterOrEqual, And, Or, Xor, Not, Where, IsNaN, IsInf.
// Equal compares strings too.
// NumPy broadcasting; every output element comes from its own inputs alone,
// so results do not depend on the thread count.
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "framework/op_registry_impl.h"
#include "ops/broadcast.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

enum class Compare { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual };

template <Compare kOp>
class CompareKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    WEFT_ASSIGN_OR_RETURN(Tensor * out, AllocateBroadcastOutput(ctx, a, b));
    if (a.dtype() == DataType::kString) {  // Equal alone lists strings.
      BroadcastBinary<std::string, bool>(
          ctx, a, b, out,
          [](const std::string& x, const std::string& y) { return x == y; });
      return Status::OK();
    }
    DispatchDtype(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      BroadcastBinary<T, bool>(ctx, a, b, out, [](T x, T y) -> bool {
        if constexpr (kOp == Compare::kEqual) return x == y;
        if constexpr (kOp == Compare::kLess) return x < y;
        if constexpr (kOp == Compare::kGreater) return x > y;
        if constexpr (kOp == Compare::kLessOrEqual) return x <= y;
        return x >= y;
      });
    });
    return Status::OK();
  }
};

template <class Op>
class LogicKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    WEFT_ASSIGN_OR_RETURN(Tensor * out, AllocateBroadcastOutput(ctx, a, b));
    BroadcastBinary<bool, bool>(ctx, a, b, out, Op());
    return Status::OK();
  }
};

struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};

class NotKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    MapElements(ctx, x.data<bool>(), y->data<bool>(), x.NumElements(),
                [](bool v) { return !v; });
    return Status::OK();
  }
};

// IsNaN, and IsInf with detect_negative / detect_positive.
class FloatClassKernel : public OpKernel {
 public:
  FloatClassKernel(const KernelConstruction& c, bool nan)
      : nan_(nan),
        negative_(nan || c.attr<int64_t>("detect_negative") != 0),
        positive_(nan || c.attr<int64_t>("detect_positive") != 0) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    return DispatchAmong<NumericDtypes>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      MapElements(ctx, x.data<T>(), y->data<bool>(), x.NumElements(),
                  [this](T v) -> bool {
                    if constexpr (std::is_floating_point_v<T>) {
                      return nan_ ? std::isnan(v)
                                  : std::isinf(v) &&
                                        (v < 0 ? negative_ : positive_);
                    } else {
                      return false;  // Integers are never NaN or infinite.
                    }
                  });
      return Status::OK();
    });
  }

 private:
  const bool nan_, negative_, positive_;
};

// Per-input strides aligned to the output's dims (0 where broadcast).
std::vector<int64_t> AlignedStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.rank(), 0);
  int64_t stride = 1;
  for (int i = in.rank() - 1; i >= 0; --i) {
    const int o = out.rank() - in.rank() + i;
    strides[o] = in.dim(i) == 1 ? 0 : stride;
    stride *= in.dim(i);
  }
  return strides;
}

// Where(condition, X, Y): X where true, else Y, all three broadcast.
class WhereKernel : public OpKernel {
  // The output row by row along its last axis: each operand's offset is
  // worked out once per row, and the row is a strided select (stride 0
  // where an operand broadcasts along the axis). Word is an unsigned type
  // of the elements' width.
  template <class Word>
  static void Select(KernelContext& ctx, const Shape& shape, const bool* pc,
                     const char* px, const char* py, char* po,
                     const std::vector<int64_t>& sc,
                     const std::vector<int64_t>& sx,
                     const std::vector<int64_t>& sy) {
    const int rank = shape.rank();
    const int64_t inner = rank > 0 ? shape.dim(rank - 1) : 1;
    const int64_t total = shape.NumElements();
    if (total == 0) return;
    const int64_t rows = total / inner;
    const int64_t ic = rank > 0 ? sc[rank - 1] : 0;
    const int64_t ix = rank > 0 ? sx[rank - 1] : 0;
    const int64_t iy = rank > 0 ? sy[rank - 1] : 0;
    const auto* wx = reinterpret_cast<const Word*>(px);
    const auto* wy = reinterpret_cast<const Word*>(py);
    auto* wo = reinterpret_cast<Word*>(po);
    ctx.ParallelFor(
        rows, 2.0 * static_cast<double>(inner), [&](int64_t b, int64_t e) {
          for (int64_t row = b; row < e; ++row) {
            int64_t rest = row, oc = 0, ox = 0, oy = 0;
            for (int d = rank - 2; d >= 0; --d) {
              const int64_t i = rest % shape.dim(d);
              rest /= shape.dim(d);
              oc += i * sc[d];
              ox += i * sx[d];
              oy += i * sy[d];
            }
            Word* out = wo + row * inner;
            for (int64_t j = 0; j < inner; ++j) {
              out[j] = pc[oc + j * ic] ? wx[ox + j * ix] : wy[oy + j * iy];
            }
          }
        });
  }

 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    WEFT_ASSIGN_OR_RETURN(PartialShape cx,
                          BroadcastShapes(c.shape(), x.shape()));
    WEFT_ASSIGN_OR_RETURN(PartialShape all, BroadcastShapes(cx, y.shape()));
    const Shape shape = all.ToShape();
    WEFT_ASSIGN_OR_RETURN(Tensor * out,
                          ctx.AllocateOutputUninitialized(0, shape));
    const std::vector<int64_t> sc = AlignedStrides(c.shape(), shape),
                               sx = AlignedStrides(x.shape(), shape),
                               sy = AlignedStrides(y.shape(), shape);
    const size_t esize = DataTypeSize(x.dtype());
    const bool* pc = c.data<bool>();
    const auto* px = static_cast<const char*>(x.raw_data());
    const auto* py = static_cast<const char*>(y.raw_data());
    auto* po = static_cast<char*>(out->raw_data());
    switch (esize) {  // Elements moved as words of their width.
      case 1:
        Select<uint8_t>(ctx, shape, pc, px, py, po, sc, sx, sy);
        break;
      case 2:
        Select<uint16_t>(ctx, shape, pc, px, py, po, sc, sx, sy);
        break;
      case 4:
        Select<uint32_t>(ctx, shape, pc, px, py, po, sc, sx, sy);
        break;
      case 8:
        Select<uint64_t>(ctx, shape, pc, px, py, po, sc, sx, sy);
        break;
      default:
        return UnimplementedError(std::string("Where of ") +
                                  DataTypeName(x.dtype()) + " elements");
    }
    return Status::OK();
  }
};

// Equal compares strings too (ONNX opset 11 onwards).
const std::vector<DataType> kComparable = [] {
  std::vector<DataType> types(std::begin(kAllDataTypes),
                              std::end(kAllDataTypes));
  types.push_back(DataType::kString);
  return types;
}();

void RegisterBinaryToBool(OpRegistry& registry, const char* name,
                          const std::vector<DataType>& types,
                          KernelFactory factory) {
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder(name)
                              .Input(ArgDef::Typed("A", "T"))
                              .Input(ArgDef::Typed("B", "T"))
                              .Output(ArgDef::Fixed("C", DataType::kBool))
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
    {"And", "logical and with broadcasting"},
    {"Equal", "a == b with broadcasting (numbers, bools or strings)"},
    {"Greater", "a > b with broadcasting"},
    {"GreaterOrEqual", "a >= b with broadcasting"},
    {"IsInf", "true where infinite (positive, negative or both)"},
    {"IsNaN", "true where NaN"},
    {"Less", "a < b with broadcasting"},
    {"LessOrEqual", "a <= b with broadcasting"},
    {"Not", "logical not, element-wise"},
    {"Or", "logical or with broadcasting"},
    {"Where", "condition ? x : y with broadcasting"},
    {"Xor", "logical exclusive or with broadcasting"},
};

}  // namespace

void RegisterLogicOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  RegisterBinaryToBool(registry, "Equal", kComparable,
                       KernelFactoryFor<CompareKernel<Compare::kEqual>>());
  RegisterBinaryToBool(registry, "Less", kAllNumericTypes,
                       KernelFactoryFor<CompareKernel<Compare::kLess>>());
  RegisterBinaryToBool(registry, "Greater", kAllNumericTypes,
                       KernelFactoryFor<CompareKernel<Compare::kGreater>>());
  RegisterBinaryToBool(
      registry, "LessOrEqual", kAllNumericTypes,
      KernelFactoryFor<CompareKernel<Compare::kLessOrEqual>>());
  RegisterBinaryToBool(
      registry, "GreaterOrEqual", kAllNumericTypes,
      KernelFactoryFor<CompareKernel<Compare::kGreaterOrEqual>>());
  const std::vector<DataType> bool_only = {DataType::kBool};
  RegisterBinaryToBool(registry, "And", bool_only,
                       KernelFactoryFor<LogicKernel<std::logical_and<bool>>>());
  RegisterBinaryToBool(registry, "Or", bool_only,
                       KernelFactoryFor<LogicKernel<std::logical_or<bool>>>());
  RegisterBinaryToBool(registry, "Xor", bool_only,
                       KernelFactoryFor<LogicKernel<XorOp>>());

  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("Not")
                              .Input(ArgDef::Fixed("X", DataType::kBool))
                              .Output(ArgDef::Fixed("Y", DataType::kBool))
                              .SetShapeFn(shape_fns::SameAsInput0)
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("Not", KernelFactoryFor<NotKernel>()));

  for (const char* name : {"IsNaN", "IsInf"}) {
    const bool nan = name[2] == 'N';
    OpDefBuilder builder(name);
    builder.Input(ArgDef::Typed("X", "T"))
        .Output(ArgDef::Fixed("Y", DataType::kBool))
        .Attr("T", AttrType::kType, std::nullopt, NumericDtypes::Vector())
        .SetShapeFn(shape_fns::SameAsInput0);
    if (!nan) {
      builder.Attr("detect_negative", AttrType::kInt, int64_t{1})
          .Attr("detect_positive", AttrType::kInt, int64_t{1});
    }
    CheckRegistered(registry.RegisterOp(builder.Build()));
    CheckRegistered(registry.RegisterKernel(
        name,
        [nan](const KernelConstruction& c)
            -> StatusOr<std::unique_ptr<OpKernel>> {
          return std::unique_ptr<OpKernel>(
              std::make_unique<FloatClassKernel>(c, nan));
        }));
  }

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Where")
          .Input(ArgDef::Fixed("condition", DataType::kBool))
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Typed("Y", "T"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            WEFT_ASSIGN_OR_RETURN(
                PartialShape cx,
                BroadcastShapes(ctx.input_shape(0), ctx.input_shape(1)));
            WEFT_ASSIGN_OR_RETURN(PartialShape all,
                                  BroadcastShapes(cx, ctx.input_shape(2)));
            ctx.set_output(0, std::move(all));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Where", KernelFactoryFor<WhereKernel>()));
}

}  // namespace weft::internal
