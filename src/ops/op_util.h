// Helpers shared by the kernel families.
#ifndef WEFT_SRC_OPS_OP_UTIL_H_
#define WEFT_SRC_OPS_OP_UTIL_H_

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "weft/dtype_dispatch.h"
#include "weft/kernel.h"
#include "weft/op_registry.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::internal {

// fn(float{}) or fn(double{}) for a float32 or float64 dtype: for ops
// whose signature allows those two alone.
template <class Fn>
void DispatchFloat32Or64(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kFloat64) {
    fn(double{});
  } else {
    fn(float{});
  }
}

// DispatchDtype for the numeric types; bool is an error.
template <class Fn>
Status DispatchNumeric(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kBool) {
    return InvalidArgumentError("dtype bool is not numeric");
  }
  return DispatchDtype(dtype, [&](auto zero) -> Status {
    if constexpr (std::is_same_v<decltype(zero), bool>) {
      return InternalError("unreachable");
    } else {
      return fn(zero);
    }
  });
}

// The element types an op takes, as C++ types: one list gives both what
// the op registers for its type attribute (Vector()) and the only types
// its kernel is compiled for (DispatchAmong), so the two cannot drift
// apart. A kernel instantiated for dtypes its signature refuses is code
// that never runs and is compiled three times in CI (reduce.cc's ten
// reducers over eleven types where most register three or five).
template <class... Ts>
struct DtypeSet {
  static std::vector<DataType> Vector() { return {DataTypeOf<Ts>()...}; }
};

using FloatDtypes = DtypeSet<float, double>;
using NumericDtypes = DtypeSet<float, double, int32_t, int64_t>;
// FloatDtypes / NumericDtypes and float16, for the ops that compute
// float16 in float32.
using FloatDtypesWithHalf = DtypeSet<float, double, Float16>;
using NumericDtypesWithHalf =
    DtypeSet<float, double, int32_t, int64_t, Float16>;
// NumericDtypes and the narrow and unsigned integers (no float16: the ops
// using this list have no float16 kernel).
using IntegerAndFloatDtypes =
    DtypeSet<float, double, int32_t, int64_t, int8_t, uint8_t, int16_t,
             uint16_t, uint32_t, uint64_t>;
// NumericDtypes and the narrow and unsigned integers and float16: for ops
// whose kernels are plain comparisons, copies or integer arithmetic.
using AllNumericDtypes =
    DtypeSet<float, double, int32_t, int64_t, Float16, int8_t, uint8_t, int16_t,
             uint16_t, uint32_t, uint64_t>;

// The same sets as the dtype lists OpDefBuilder::Attr takes.
inline const std::vector<DataType> kFloatTypes = FloatDtypes::Vector();
inline const std::vector<DataType> kNumericTypes = NumericDtypes::Vector();
inline const std::vector<DataType> kFloatTypesWithHalf =
    FloatDtypesWithHalf::Vector();
inline const std::vector<DataType> kNumericTypesWithHalf =
    NumericDtypesWithHalf::Vector();
inline const std::vector<DataType> kIntegerAndFloatTypes =
    IntegerAndFloatDtypes::Vector();
inline const std::vector<DataType> kAllNumericTypes =
    AllNumericDtypes::Vector();
// Every dtype whose bytes are its values (numbers, bool, bfloat16, the 4-bit
// integers, the float8 types): what an op that only moves or views elements
// takes.
inline const std::vector<DataType> kMovableTypes = [] {
  std::vector<DataType> types(std::begin(kAllDataTypes),
                              std::end(kAllDataTypes));
  types.insert(types.end(), std::begin(kFixedSizeListedTypes),
               std::end(kFixedSizeListedTypes));
  return types;
}();

// DispatchAmong's work, with the set's types deduced; call DispatchAmong.
template <class... Ts, class Fn>
Status DispatchAmongTypes(DtypeSet<Ts...> /*set*/, DataType dtype, Fn& fn) {
  Status status = Status::OK();
  const bool found =
      ((dtype == DataTypeOf<Ts>() && (status = fn(Ts{}), true)) || ...);
  if (!found) {
    return InvalidArgumentError(std::string("dtype ") + DataTypeName(dtype) +
                                " is not one this kernel takes");
  }
  return status;
}

// fn(T{}) for the C++ type T of `dtype` among Set's types, and the Status
// fn returns. Any other dtype is an InvalidArgumentError naming it: the
// op's signature refuses such inputs before a kernel runs, so this is a
// guard, not a path.
template <class Set, class Fn>
Status DispatchAmong(DataType dtype, Fn&& fn) {
  return DispatchAmongTypes(Set{}, dtype, fn);
}

// For float32 kernels that take float16 by computing in float32: a float32
// copy of `t` (exact), and a float32 result rounded once into a float16
// output of the same shape.
inline StatusOr<Tensor> WidenToFloat32(const Tensor& t) {
  WEFT_ASSIGN_OR_RETURN(
      Tensor wide, Tensor::CreateUninitialized(DataType::kFloat32, t.shape()));
  const Float16* in = t.data<Float16>();
  float* out = wide.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) out[i] = in[i];
  return wide;
}
inline void NarrowToFloat16(const Tensor& wide, Tensor* out) {
  const float* in = wide.data<float>();
  Float16* o = out->data<Float16>();
  for (int64_t i = 0; i < wide.NumElements(); ++i) o[i] = Float16(in[i]);
}

// |v|^p, one term of a p-norm (LpPool, GlobalLpPool, LpNormalization): p
// = 1 and 2 exactly as an absolute value and a square are, others through
// pow.
inline double LpPower(double v, int64_t p) {
  if (p == 1) return std::fabs(v);
  if (p == 2) return v * v;
  return std::pow(std::fabs(v), static_cast<double>(p));
}

// The p-norm of values whose LpPower terms summed to `sum`.
inline double LpRoot(double sum, int64_t p) {
  if (p == 1) return sum;
  if (p == 2) return std::sqrt(sum);
  return std::pow(sum, 1.0 / static_cast<double>(p));
}

// Product of dims [begin, end) of a valid shape (no overflow).
inline int64_t DimProduct(const Shape& s, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) p *= s.dim(i);
  return p;
}

// An axis in [-rank, rank) as a non-negative index; errors name the axis.
inline StatusOr<int> NormalizeAxis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    return InvalidArgumentError("axis " + std::to_string(axis) +
                                " is out of range for rank " +
                                std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// The elements of an int32 or int64 tensor of any rank (indices) as int64;
// `what` names the input in errors.
inline StatusOr<std::vector<int64_t>> IntegerValues(const Tensor& t,
                                                    const std::string& what) {
  if (t.dtype() == DataType::kInt64) {
    return std::vector<int64_t>(t.data<int64_t>(),
                                t.data<int64_t>() + t.NumElements());
  }
  if (t.dtype() == DataType::kInt32) {
    return std::vector<int64_t>(t.data<int32_t>(),
                                t.data<int32_t>() + t.NumElements());
  }
  return InvalidArgumentError(what + " must be int32 or int64, got " +
                              DataTypeName(t.dtype()));
}

// A 0-D or 1-D int32/int64 tensor (axes, starts, sizes passed as an input)
// as int64 values; `what` names the input in errors.
inline StatusOr<std::vector<int64_t>> IntsFromTensor(const Tensor& t,
                                                     const std::string& what) {
  if (t.shape().rank() > 1) {
    return InvalidArgumentError(what + " must be 1-D, got shape " +
                                t.shape().ToString());
  }
  return IntegerValues(t, what);
}

// Elements per block of the element-wise maps: a multiple of every vector
// width, large enough that a block is worth handing to another thread.
// v as To, as Cast converts it. Float to integer conversions saturate and map
// NaN to 0 (C++ leaves out-of-range conversions undefined; weft never does
// them).
template <class To, class From>
To ConvertValue(From v) {
  if constexpr (std::is_same_v<From, Float16>) {  // Through float, exactly.
    return ConvertValue<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Float16>) {
    if constexpr (std::is_same_v<From, bool>) return To(v ? 1.0f : 0.0f);
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> &&
                       std::is_floating_point_v<From>) {
    if (v != v) return 0;
    if (v <= static_cast<From>(std::numeric_limits<To>::lowest())) {
      return std::numeric_limits<To>::lowest();
    }
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) {
      return std::numeric_limits<To>::max();
    }
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// a + b, a - b, a * b that wrap around for signed integers (NumPy's and
// ONNX Runtime's answer) where C++ leaves an overflowing signed result
// undefined: computed in an unsigned type at least as wide as int (so that
// int8 and int16 products do not overflow int either); plain arithmetic for
// floating types. The same instructions, so loops still vectorise.
template <class T>
using WrappingUnsigned = std::conditional_t<(sizeof(T) < sizeof(unsigned)),
                                            unsigned, std::make_unsigned_t<T>>;

template <class T>
T WrappingAdd(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = WrappingUnsigned<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return static_cast<T>(a + b);
  }
}

template <class T>
T WrappingSub(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = WrappingUnsigned<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return static_cast<T>(a - b);
  }
}

template <class T>
T WrappingMul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // Unsigned types narrower than int promote to (signed) int too.
    using U = WrappingUnsigned<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return static_cast<T>(a * b);
  }
}

// a < b, with NaN after every number and NaNs equivalent to each other: a
// strict weak order over floating values (plain < is none once a NaN is
// in, and the sorts are undefined without one). Other types: plain <.
template <class T>
bool LessNaNLast(const T& a, const T& b) {
  if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
    if (b != b) return a == a;
    if (a != a) return false;
  }
  return a < b;
}

inline constexpr int64_t kElementBlock = 16384;

// y[i] = fn(x[i]) for i < n over fixed blocks (ParallelForFixedBlocks):
// every element is computed by the same code path (vector body or scalar
// tail of the same block) whatever the thread count, so results are bitwise
// reproducible even where the compiler vectorises.
template <class In, class Out, class Fn>
void MapElements(KernelContext& ctx, const In* x, Out* y, int64_t n, Fn fn) {
  ctx.ParallelForFixedBlocks(n, kElementBlock, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = fn(x[i]);
  });
}

// The lines of a tensor along `axis`: `count` lines of `len` elements;
// element j of line l is at Base(l) + j * inner. With `through_last`, the
// line runs over every dim from `axis` on (ONNX's pre-13 "coerce to 2-D").
struct AxisLines {
  int64_t len = 0, inner = 1, count = 0;
  int64_t Base(int64_t l) const {
    return (l / inner) * len * inner + l % inner;
  }
};
inline AxisLines LinesAlong(const Shape& shape, int axis,
                            bool through_last = false) {
  AxisLines lines;
  lines.len = shape.dim(axis);
  for (int i = axis + 1; i < shape.rank(); ++i) lines.inner *= shape.dim(i);
  if (through_last) {
    lines.len *= lines.inner;
    lines.inner = 1;
  }
  const int64_t total = shape.NumElements();
  lines.count = lines.len == 0 ? 0 : total / lines.len;
  return lines;
}

// Shape function of ops that make a tensor of their `shape` attribute
// (RandomUniform, RandomNormal, Fill): it must be fully known and valid.
inline Status ShapeFromShapeAttr(InferenceContext& ctx) {
  const PartialShape& shape = ctx.attr<PartialShape>("shape");
  if (!shape.IsFullyDefined()) {
    return InvalidArgumentError(
        "attribute 'shape' must be fully defined with dimensions >= 0, got " +
        shape.ToString());
  }
  if (!shape.ToShape().IsValid()) {  // Dimensions >= 0: their product.
    return InvalidArgumentError("attribute 'shape' " + shape.ToString() +
                                " has more elements than fit in 64 bits");
  }
  ctx.set_output(0, shape);
  return Status::OK();
}

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_OP_UTIL_H_
