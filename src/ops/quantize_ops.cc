// Quantized inference (ONNX names): QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger and QLinearMatMul, with per-tensor
// scales and zero points, and per-axis ones where ONNX has them
// (QuantizeLinear and DequantizeLinear along `axis`; the matrix products
// per row of A and per column of B).
//
// Arithmetic follows ONNX's reference: a quantized value is
// saturate(round_half_even(x / scale) + zero_point) with the division in
// float32; a product accumulates (a - a_zero) * (b - b_zero) exactly in
// int32. Each output element is computed by one thread from the same
// inputs, so results do not depend on the thread count.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/float8_convert.h"
#include "framework/op_registry_impl.h"
#include "kernels/saturate_bytes.h"
#include "ops/op_util.h"
#include "ops/quantized_matmul_packed.h"
#include "ops/registry.h"
#include "weft/prepared_weights.h"

namespace weft::internal {
namespace {

const std::vector<DataType> kQuantizedTypes = {DataType::kUInt8,
                                               DataType::kInt8};
// What QuantizeLinear writes and DequantizeLinear reads besides int32:
// ONNX 21's 16- and 4-bit types too, and the 8-bit floats (19).
const std::vector<DataType> kQuantizeLinearTypes = {
    DataType::kUInt8,         DataType::kInt8,           DataType::kUInt16,
    DataType::kInt16,         DataType::kUInt4,          DataType::kInt4,
    DataType::kFloat8E4M3FN,  DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
    DataType::kFloat8E5M2FNUZ};

// The range of a quantized type Q.
template <class Q>
struct QuantRange {
  static constexpr float lo = std::numeric_limits<Q>::min();
  static constexpr float hi = std::numeric_limits<Q>::max();
};
template <>
struct QuantRange<Int4> {
  static constexpr float lo = -8, hi = 7;
};
template <>
struct QuantRange<UInt4> {
  static constexpr float lo = 0, hi = 15;
};

// A quantized value as float (a 4-bit one through its integer value).
template <class Q>
float AsFloat(Q q) {
  if constexpr (std::is_enum_v<Q>) {
    return static_cast<float>(ValueOf(q));
  } else {
    return static_cast<float>(q);
  }
}

// round_half_even(v) + zero, saturated to Q's range.
template <class Q>
Q Saturate(float rounded_plus_zero) {
  if (std::isnan(rounded_plus_zero)) return Q(0);
  return static_cast<Q>(static_cast<int32_t>(
      std::clamp(rounded_plus_zero, QuantRange<Q>::lo, QuantRange<Q>::hi)));
}

// Runs fn(Q{}) for one of kQuantizeLinearTypes.
template <class Fn>
void DispatchQuantizeLinearType(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kUInt8:
      return fn(uint8_t{});
    case DataType::kInt8:
      return fn(int8_t{});
    case DataType::kUInt16:
      return fn(uint16_t{});
    case DataType::kInt16:
      return fn(int16_t{});
    case DataType::kUInt4:
      return fn(UInt4{});
    default:
      return fn(Int4{});
  }
}

// Which entry of a per-axis parameter element i of `shape` uses: the
// index along `axis`; always 0 for a per-tensor (one-element) parameter.
class ParameterIndex {
 public:
  // block_size 0: a scalar or 1-D parameter; else (ONNX 21's blocked
  // quantization) one of X's rank whose `axis` holds ceil(dim / block_size)
  // blocks and whose other dims are X's.
  static StatusOr<ParameterIndex> For(const Shape& shape, int64_t axis,
                                      const Tensor& parameter, const char* what,
                                      int64_t block_size = 0) {
    if (block_size < 0) {
      return InvalidArgumentError("block_size must be >= 0, got " +
                                  std::to_string(block_size));
    }
    if (block_size > 0) {
      return Blocked(shape, axis, parameter, what, block_size);
    }
    if (parameter.NumElements() == 1) return ParameterIndex(1, 1, 0, 1);
    if (parameter.shape().rank() != 1) {
      return InvalidArgumentError(std::string(what) +
                                  " must be a scalar or 1-D, got shape " +
                                  parameter.shape().ToString());
    }
    WEFT_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, shape.rank()));
    if (parameter.NumElements() != shape.dim(a)) {
      return InvalidArgumentError(std::string(what) + " has " +
                                  std::to_string(parameter.NumElements()) +
                                  " entries for axis " + std::to_string(a) +
                                  " of size " + std::to_string(shape.dim(a)));
    }
    return ParameterIndex(DimProduct(shape, a + 1, shape.rank()), shape.dim(a),
                          0, shape.dim(a));
  }
  int64_t operator()(int64_t i) const {
    if (block_ == 0) return i / inner_ % size_;
    const int64_t outer = i / (inner_ * size_);
    const int64_t along = i / inner_ % size_;
    return (outer * blocks_ + along / block_) * inner_ + i % inner_;
  }

 private:
  ParameterIndex(int64_t inner, int64_t size, int64_t block, int64_t blocks)
      : inner_(inner), size_(size), block_(block), blocks_(blocks) {}

  static StatusOr<ParameterIndex> Blocked(const Shape& shape, int64_t axis,
                                          const Tensor& parameter,
                                          const char* what,
                                          int64_t block_size) {
    WEFT_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, shape.rank()));
    const int64_t blocks = (shape.dim(a) + block_size - 1) / block_size;
    std::vector<int64_t> want = shape.dims();
    want[static_cast<size_t>(a)] = blocks;
    if (parameter.shape() != Shape(want)) {
      return InvalidArgumentError(
          std::string(what) + " has shape " + parameter.shape().ToString() +
          "; blocks of " + std::to_string(block_size) + " along axis " +
          std::to_string(a) + " need " + Shape(want).ToString());
    }
    return ParameterIndex(DimProduct(shape, a + 1, shape.rank()), shape.dim(a),
                          block_size, blocks);
  }

  // Elements after the axis, the axis's length, the block length (0: not
  // blocked) and the number of blocks along the axis.
  int64_t inner_, size_, block_, blocks_;
};

// Inputs (x, scale[, zero_point]): the zero point, if given, must have the
// dtype the op computes in (checked here, before any element moves).
Status CheckZeroPoint(KernelContext& ctx, int index, DataType want,
                      const Tensor& scale) {
  if (ctx.num_inputs() <= index) return Status::OK();
  const Tensor& zero = ctx.input(index);
  if (zero.dtype() != want) {
    return InvalidArgumentError("the zero point has dtype " +
                                std::string(DataTypeName(zero.dtype())) +
                                ", expected " + DataTypeName(want));
  }
  if (zero.shape() != scale.shape()) {
    return InvalidArgumentError("the zero point has shape " +
                                zero.shape().ToString() + ", the scale has " +
                                scale.shape().ToString());
  }
  return Status::OK();
}

// out[i] = Saturate<Q>(round_half_even(in[i] / scale) + zero) for i < n:
// what QuantizeLinear computes per tensor (NaN to 0). Where the build has
// AVX-512, 64 elements at a time, each operation the scalar one (the
// division, roundscale as nearbyint, the addition, the clamp, the NaN
// lanes zeroed), the clamped int32 values narrowed by SaturateFour into
// one 64-byte store: GCC's own
// vectorisation of the scalar loop spilled its masks to the stack. The
// rest, and other builds, run the scalar loop.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push  // the conversions' own undefined operands
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <class Q>
void QuantizeRange(const float* in, int64_t n, float scale, float zero,
                   Q* out) {
  constexpr float lo = QuantRange<Q>::lo;
  constexpr float hi = QuantRange<Q>::hi;
  int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  if constexpr (std::is_integral_v<Q> && sizeof(Q) == 1) {
    const __m512 divisor = _mm512_set1_ps(scale);
    const __m512 offset = _mm512_set1_ps(zero);
    const __m512 low = _mm512_set1_ps(lo), high = _mm512_set1_ps(hi);
    const auto clamped = [&](const float* at) {
      __m512 v = _mm512_div_ps(_mm512_loadu_ps(at), divisor);
      v = _mm512_add_ps(_mm512_roundscale_ps(
                            v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                        offset);
      const __mmask16 number = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
      return _mm512_maskz_cvttps_epi32(
          number, _mm512_min_ps(_mm512_max_ps(v, low), high));
    };
    for (; i + 64 <= n; i += 64) {
      _mm512_storeu_si512(
          out + i, SaturateFour<Q>(clamped(in + i), clamped(in + i + 16),
                                   clamped(in + i + 32), clamped(in + i + 48)));
    }
  }
#endif
  for (; i < n; ++i) {
    const float v = std::nearbyint(in[i] / scale) + zero;
    const float clamped = v != v ? 0.f : std::min(std::max(v, lo), hi);
    out[i] = static_cast<Q>(static_cast<int32_t>(clamped));
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

class QuantizeLinearKernel : public OpKernel {
 public:
  explicit QuantizeLinearKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")),
        block_size_(c.attr<int64_t>("block_size")),
        output_dtype_(c.attr<DataType>("output_dtype")),
        saturate_(c.attr<int64_t>("saturate") != 0) {}

  Status Compute(KernelContext& ctx) const override {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3) {
      return InvalidArgumentError(
          "takes x, y_scale and an optional zero point");
    }
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    if (x.dtype() != DataType::kFloat32 ||
        scale.dtype() != DataType::kFloat32) {
      return InvalidArgumentError("x and y_scale must be float32");
    }
    WEFT_RETURN_IF_ERROR(CheckZeroPoint(ctx, 2, output_dtype_, scale));
    WEFT_ASSIGN_OR_RETURN(
        ParameterIndex channel,
        ParameterIndex::For(x.shape(), axis_, scale, "y_scale", block_size_));
    const float* s = scale.data<float>();
    for (int64_t i = 0; i < scale.NumElements(); ++i) {
      if (!(s[i] != 0) || !std::isfinite(s[i])) {
        return InvalidArgumentError("y_scale[" + std::to_string(i) + "] is " +
                                    std::to_string(s[i]) +
                                    ": a scale must be finite and non-zero");
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    if (IsFloat8Type(output_dtype_)) {
      QuantizeToFloat8(ctx, x, s, channel, y);
      return Status::OK();
    }
    auto run = [&](auto zero_type) {
      using Q = decltype(zero_type);
      const Q* zero = ctx.num_inputs() > 2 ? ctx.input(2).data<Q>() : nullptr;
      const float* in = x.data<float>();
      Q* out = y->data<Q>();
      if (scale.NumElements() == 1) {
        const float z = zero != nullptr ? AsFloat(zero[0]) : 0.f;
        ctx.ParallelFor(x.NumElements(), 2.0, [&](int64_t b, int64_t e) {
          QuantizeRange(in + b, e - b, s[0], z, out + b);
        });
        return;
      }
      ctx.ParallelFor(x.NumElements(), 2.0, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t c = channel(i);
          const float z = zero != nullptr ? AsFloat(zero[c]) : 0.f;
          out[i] = Saturate<Q>(std::nearbyint(in[i] / s[c]) + z);
        }
      });
    };
    DispatchQuantizeLinearType(output_dtype_, run);
    return Status::OK();
  }

 private:
  // ONNX's rule for a float8 output: x / scale + zero point, in float32,
  // rounded to the float8 (no rounding to an integer first), saturated or
  // not as `saturate` says.
  void QuantizeToFloat8(KernelContext& ctx, const Tensor& x, const float* s,
                        const ParameterIndex& channel, Tensor* y) const {
    const auto* zero =
        ctx.num_inputs() > 2
            ? static_cast<const uint8_t*>(ctx.input(2).raw_data())
            : nullptr;
    const float* in = x.data<float>();
    auto* out = static_cast<uint8_t*>(y->raw_data());
    ctx.ParallelFor(x.NumElements(), 4.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t c = channel(i);
        const float z =
            zero != nullptr ? Float8Value(output_dtype_, zero[c]) : 0.f;
        out[i] = Float8Bits(output_dtype_, in[i] / s[c] + z, saturate_);
      }
    });
  }

  const int64_t axis_, block_size_;
  const DataType output_dtype_;
  const bool saturate_;
};

// y = (x - zero point) * scale for a float8 x, in float32.
void DequantizeFloat8(KernelContext& ctx, const Tensor& x, const float* s,
                      const ParameterIndex& channel, float* out) {
  const DataType dtype = x.dtype();
  const auto* zero = ctx.num_inputs() > 2
                         ? static_cast<const uint8_t*>(ctx.input(2).raw_data())
                         : nullptr;
  const auto* in = static_cast<const uint8_t*>(x.raw_data());
  ctx.ParallelFor(x.NumElements(), 2.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t c = channel(i);
      const float z = zero != nullptr ? Float8Value(dtype, zero[c]) : 0.f;
      out[i] = (Float8Value(dtype, in[i]) - z) * s[c];
    }
  });
}

class DequantizeLinearKernel : public OpKernel {
 public:
  explicit DequantizeLinearKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")),
        block_size_(c.attr<int64_t>("block_size")) {}

  Status Compute(KernelContext& ctx) const override {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3) {
      return InvalidArgumentError(
          "takes x, x_scale and an optional zero point");
    }
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    if (scale.dtype() != DataType::kFloat32) {
      return InvalidArgumentError("x_scale must be float32");
    }
    if (x.dtype() != DataType::kInt32 &&
        std::find(kQuantizeLinearTypes.begin(), kQuantizeLinearTypes.end(),
                  x.dtype()) == kQuantizeLinearTypes.end()) {
      return InvalidArgumentError(
          std::string("x is ") + DataTypeName(x.dtype()) +
          ": DequantizeLinear reads uint8, int8, uint16, int16, uint4, int4, "
          "int32 or a float8 type");
    }
    WEFT_RETURN_IF_ERROR(CheckZeroPoint(ctx, 2, x.dtype(), scale));
    WEFT_ASSIGN_OR_RETURN(
        ParameterIndex channel,
        ParameterIndex::For(x.shape(), axis_, scale, "x_scale", block_size_));
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    const float* s = scale.data<float>();
    float* out = y->data<float>();
    const auto run = [&](auto zero_type) {
      using Q = decltype(zero_type);
      const Q* zero = ctx.num_inputs() > 2 ? ctx.input(2).data<Q>() : nullptr;
      const Q* in = x.data<Q>();
      if (scale.NumElements() == 1) {
        // One scale and zero point: a loop the compiler vectorises, the
        // same expression per element.
        const float z = zero != nullptr ? AsFloat(*zero) : 0.f;
        const float s0 = *s;
        ctx.ParallelFor(x.NumElements(), 0.25, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) out[i] = (AsFloat(in[i]) - z) * s0;
        });
        return;
      }
      ctx.ParallelFor(x.NumElements(), 1.0, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t c = channel(i);
          const float z = zero != nullptr ? AsFloat(zero[c]) : 0.f;
          out[i] = (AsFloat(in[i]) - z) * s[c];
        }
      });
    };
    if (x.dtype() == DataType::kInt32) {
      run(int32_t{});
    } else if (IsFloat8Type(x.dtype())) {
      DequantizeFloat8(ctx, x, s, channel, out);
    } else {
      DispatchQuantizeLinearType(x.dtype(), run);
    }
    return Status::OK();
  }

 private:
  const int64_t axis_, block_size_;
};

// DynamicQuantizeLinear: uint8 with the scale and zero point that map
// [min(0, min x), max(0, max x)] onto [0, 255].
class DynamicQuantizeLinearKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const float* in = x.data<float>();
    const int64_t n = x.NumElements();
    // The range in blocks on the intra-op pool, each block one vectorisable
    // pass over independent lanes (a reduction into one float the compiler
    // would not reorder); min and max are exact whatever the order, so the
    // result never depends on the thread count. A NaN never compares below
    // or above, and is found by its own test; where it is is looked up only
    // then.
    constexpr int kLanes = 64;
    constexpr int64_t kBlock = 16384;
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<float> block_lo(static_cast<size_t>(blocks), 0.f);
    std::vector<float> block_hi(static_cast<size_t>(blocks), 0.f);
    std::vector<char> block_nan(static_cast<size_t>(blocks), 0);
    ctx.ParallelFor(blocks, static_cast<double>(kBlock) * 0.05,
                    [&](int64_t b0, int64_t b1) {
                      for (int64_t b = b0; b < b1; ++b) {
                        const float* p = in + b * kBlock;
                        const int64_t len = std::min(kBlock, n - b * kBlock);
                        float lows[kLanes] = {}, highs[kLanes] = {};
                        int nans[kLanes] = {};
                        int64_t i = 0;
                        for (; i + kLanes <= len; i += kLanes) {
                          for (int j = 0; j < kLanes; ++j) {
                            const float v = p[i + j];
                            lows[j] = v < lows[j] ? v : lows[j];
                            highs[j] = v > highs[j] ? v : highs[j];
                            nans[j] |= static_cast<int>(v != v);
                          }
                        }
                        float lo = 0, hi = 0;
                        bool nan = false;
                        for (int j = 0; j < kLanes; ++j) {
                          lo = std::min(lo, lows[j]);
                          hi = std::max(hi, highs[j]);
                          nan = nan || nans[j] != 0;
                        }
                        for (; i < len; ++i) {
                          const float v = p[i];
                          lo = v < lo ? v : lo;
                          hi = v > hi ? v : hi;
                          nan = nan || v != v;
                        }
                        block_lo[static_cast<size_t>(b)] = lo;
                        block_hi[static_cast<size_t>(b)] = hi;
                        block_nan[static_cast<size_t>(b)] = nan ? 1 : 0;
                      }
                    });
    float lo = 0, hi = 0;
    bool nan = false;
    for (int64_t b = 0; b < blocks; ++b) {
      lo = std::min(lo, block_lo[static_cast<size_t>(b)]);
      hi = std::max(hi, block_hi[static_cast<size_t>(b)]);
      nan = nan || block_nan[static_cast<size_t>(b)] != 0;
    }
    if (nan) {
      const int64_t at =
          std::find_if(in, in + n, [](float v) { return std::isnan(v); }) - in;
      return InvalidArgumentError("x holds NaN at element " +
                                  std::to_string(at));
    }
    const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    const uint8_t zero = Saturate<uint8_t>(std::nearbyint(0.0f - lo / scale));
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    WEFT_ASSIGN_OR_RETURN(Tensor * y_scale,
                          ctx.AllocateOutputUninitialized(1, Shape{}));
    WEFT_ASSIGN_OR_RETURN(Tensor * y_zero,
                          ctx.AllocateOutputUninitialized(2, Shape{}));
    *y_scale->data<float>() = scale;
    *y_zero->data<uint8_t>() = zero;
    uint8_t* out = y->data<uint8_t>();
    ctx.ParallelFor(n, 2.0, [&](int64_t b, int64_t e) {
      QuantizeRange<uint8_t>(in + b, e - b, scale, static_cast<float>(zero),
                             out + b);
    });
    return Status::OK();
  }
};

// The shapes of a batched product A [..., M, K] x B [..., K, N], NumPy's
// matmul rule as ONNX states it: a 1-D A is a row [1, K] and a 1-D B a
// column [K, 1], whose dimension the output leaves out; the batch dims
// broadcast.
struct ProductShape {
  int64_t batches = 1, m = 0, k = 0, n = 0;
  // B has more than one matrix (else one, shared by every batch entry).
  bool b_batched = false;
  Shape out;
  // The output's batch dims, and per dim the step of A's and B's matrix
  // index (0 where that side broadcasts).
  std::vector<int64_t> batch_dims, a_steps, b_steps;

  // Which of A's (B's) matrices batch entry `batch` reads.
  int64_t AMatrix(int64_t batch) const { return Matrix(a_steps, batch); }
  int64_t BMatrix(int64_t batch) const { return Matrix(b_steps, batch); }

 private:
  int64_t Matrix(const std::vector<int64_t>& steps, int64_t batch) const {
    int64_t index = 0;
    for (int i = static_cast<int>(batch_dims.size()) - 1; i >= 0; --i) {
      index += batch % batch_dims[i] * steps[i];
      batch /= batch_dims[i];
    }
    return index;
  }
};

StatusOr<ProductShape> ShapeOfProduct(const Shape& given_a,
                                      const Shape& given_b) {
  if (given_a.rank() < 1 || given_b.rank() < 1) {
    return InvalidArgumentError("A and B must be at least 1-D, got " +
                                given_a.ToString() + " and " +
                                given_b.ToString());
  }
  const bool a_vector = given_a.rank() == 1, b_vector = given_b.rank() == 1;
  const Shape a = a_vector ? Shape{1, given_a.dim(0)} : given_a;
  const Shape b = b_vector ? Shape{given_b.dim(0), 1} : given_b;
  ProductShape p;
  p.m = a.dim(a.rank() - 2);
  p.k = a.dim(a.rank() - 1);
  p.n = b.dim(b.rank() - 1);
  if (b.dim(b.rank() - 2) != p.k) {
    return InvalidArgumentError("A " + given_a.ToString() + " and B " +
                                given_b.ToString() + " do not multiply");
  }
  std::vector<int64_t> a_dims = a.dims(), b_dims = b.dims();
  a_dims.resize(a_dims.size() - 2);
  b_dims.resize(b_dims.size() - 2);
  auto batch = BroadcastShapes(PartialShape(a_dims), PartialShape(b_dims));
  if (!batch.ok()) {
    return InvalidArgumentError("batch dims of A " + given_a.ToString() +
                                " and B " + given_b.ToString() +
                                " do not broadcast");
  }
  p.batch_dims = batch->dims();
  const int rank = static_cast<int>(p.batch_dims.size());
  // Row-major steps over a side's own batch dims, right-aligned with the
  // output's; a dim of 1 (or one the side lacks) steps 0.
  auto steps_of = [&](const std::vector<int64_t>& dims) {
    std::vector<int64_t> steps(static_cast<size_t>(rank), 0);
    int64_t step = 1;
    for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
      const int o = rank - static_cast<int>(dims.size()) + i;
      steps[static_cast<size_t>(o)] =
          dims[static_cast<size_t>(i)] == 1 ? 0 : step;
      step *= dims[static_cast<size_t>(i)];
    }
    return steps;
  };
  p.a_steps = steps_of(a_dims);
  p.b_steps = steps_of(b_dims);
  p.batches = Shape(p.batch_dims).NumElements();
  p.b_batched = Shape(b_dims).NumElements() != 1;
  std::vector<int64_t> dims = p.batch_dims;
  if (!a_vector) dims.push_back(p.m);
  if (!b_vector) dims.push_back(p.n);
  p.out = Shape(dims);
  return p;
}

// Zero points and scales of a product: per tensor (one element) or per row
// of A (M entries) / per column of B (N entries).
StatusOr<int64_t> PerRowOrTensor(const Tensor& t, int64_t count,
                                 const char* what) {
  if (t.NumElements() == 1) return 1;
  if (t.shape().rank() == 1 && t.NumElements() == count) return count;
  return InvalidArgumentError(
      std::string(what) + " has shape " + t.shape().ToString() +
      "; expected one entry or " + std::to_string(count));
}

// acc[b, m, n] = sum_k (A - a_zero) (B - b_zero), exact in int32.
template <class QA, class QB, class Emit>
void IntegerProduct(KernelContext& ctx, const ProductShape& p, const QA* a,
                    const QB* b, const QA* a_zero, int64_t a_zeros,
                    const QB* b_zero, int64_t b_zeros, Emit emit) {
  const double cost = static_cast<double>(p.k * p.n);
  // B's zero point per column, spread out once rather than chosen per term.
  std::vector<int32_t> b_zero_of(static_cast<size_t>(p.n), 0);
  if (b_zero != nullptr) {
    for (int64_t j = 0; j < p.n; ++j) {
      // An int8 zero point is signed: its value, not its bit pattern.
      // NOLINTNEXTLINE(bugprone-signed-char-misuse)
      b_zero_of[j] = static_cast<int32_t>(b_zero[b_zeros == 1 ? 0 : j]);
    }
  }
  ctx.ParallelFor(p.batches * p.m, cost, [&](int64_t begin, int64_t end) {
    std::vector<int32_t> row(static_cast<size_t>(p.n));
    for (int64_t r = begin; r < end; ++r) {
      const int64_t batch = r / p.m, i = r % p.m;
      const QA* a_row = a + (p.AMatrix(batch) * p.m + i) * p.k;
      const QB* b_mat = b + p.BMatrix(batch) * p.k * p.n;
      const int32_t az = a_zero ? a_zero[a_zeros == 1 ? 0 : i] : 0;
      std::fill(row.begin(), row.end(), 0);
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const int32_t av = static_cast<int32_t>(a_row[kk]) - az;
        const QB* b_row = b_mat + kk * p.n;
        for (int64_t j = 0; j < p.n; ++j) {
          row[j] += av * (static_cast<int32_t>(b_row[j]) - b_zero_of[j]);
        }
      }
      emit(r, i, row);
    }
  });
}

// Runs fn(QA{}, QB{}) for A's and B's quantized dtypes.
template <class Fn>
Status DispatchQuantizedPair(DataType a, DataType b, Fn&& fn) {
  auto second = [&](auto qa) -> Status {
    if (b == DataType::kUInt8) return fn(qa, uint8_t{});
    if (b == DataType::kInt8) return fn(qa, int8_t{});
    return InvalidArgumentError("B must be uint8 or int8");
  };
  if (a == DataType::kUInt8) return second(uint8_t{});
  if (a == DataType::kInt8) return second(int8_t{});
  return InvalidArgumentError("A must be uint8 or int8");
}

// B's packing: for the direct tiles, or (where those cannot take B) for the
// micro-kernel's panels.
struct QuantizedProductWeights {
  std::optional<DirectProductWeights> direct;
  std::optional<Int8ProductWeights> packed;

  int64_t bytes() const {
    return packed ? packed->packed.bytes() : (direct ? direct->bytes() : 0);
  }
};

// What MatMulInteger and QLinearMatMul share: a constant int8 2-D B packed
// once, for the direct tiles where the int8 kernel is VNNI, A is uint8, B's
// zero point a constant 0 and K whole quads (A's rows read in place), else
// for the int8 micro-kernel's panels.
class QuantizedProductKernel : public OpKernel {
 public:
  QuantizedProductKernel(const KernelConstruction& c, int b_index,
                         int b_zero_index) {
    const Tensor* b = c.constant_input(b_index);
    if (b == nullptr || b->dtype() != DataType::kInt8 ||
        b->shape().rank() != 2 || b->NumElements() == 0) {
      return;
    }
    const std::vector<DataType>& dtypes = c.input_dtypes();
    has_b_zero_ = static_cast<int>(dtypes.size()) > b_zero_index;
    if (const Tensor* b_zero = c.constant_input(b_zero_index)) {
      constant_b_zero_ = *b_zero;
    }
    const bool no_b_zero =
        !has_b_zero_ ||
        (constant_b_zero_ && constant_b_zero_->dtype() == DataType::kInt8 &&
         std::all_of(
             constant_b_zero_->data<int8_t>(),
             constant_b_zero_->data<int8_t>() + constant_b_zero_->NumElements(),
             [](int8_t z) { return z == 0; }));
    try_direct_ = ActiveInt8Kernel() == Int8Kernel::kAvx512Vnni && no_b_zero &&
                  !dtypes.empty() && dtypes[0] == DataType::kUInt8;
    constant_b_.Set(
        c.prepared_weights(), *b,
        "QuantizedProduct/direct=" + std::to_string(try_direct_) +
            "/kernel=" + std::to_string(static_cast<int>(ActiveInt8Kernel())));
  }

  int64_t prepared_bytes() const override {
    const QuantizedProductWeights* prepared = constant_b_.IfMade();
    return prepared != nullptr ? prepared->bytes() : 0;
  }

 protected:
  // The direct tiles' B when this product can run on them: B and its zero
  // point are the constants it was packed from, A is uint8 with one zero
  // point.
  const DirectProductWeights* Direct(const ProductShape& p, int64_t a_zeros,
                                     DataType a, const Tensor& b,
                                     const Tensor* b_zero) const {
    if (!constant_b_.Is(b) || !IsTheConstantZero(b_zero)) return nullptr;
    const QuantizedProductWeights* prepared = Prepared();
    if (prepared == nullptr || !prepared->direct || p.b_batched ||
        a_zeros != 1 || a != DataType::kUInt8 || prepared->direct->k != p.k ||
        prepared->direct->n != p.n) {
      return nullptr;
    }
    return &*prepared->direct;
  }

  // The packed B when this product can run on it: B is the constant it was
  // packed from (2-D, so no batch of B), A's zero point per tensor.
  const Int8ProductWeights* Packed(const ProductShape& p, int64_t a_zeros,
                                   const Tensor& b) const {
    if (!constant_b_.Is(b)) return nullptr;
    const QuantizedProductWeights* prepared = Prepared();
    if (prepared == nullptr || !prepared->packed || p.b_batched ||
        a_zeros != 1 || prepared->packed->k != p.k ||
        prepared->packed->n != p.n) {
      return nullptr;
    }
    return &*prepared->packed;
  }

 private:
  // Whether B's zero point is the one the direct tiles were chosen for.
  bool IsTheConstantZero(const Tensor* b_zero) const {
    if (!has_b_zero_) return b_zero == nullptr;
    return b_zero != nullptr && constant_b_zero_ &&
           b_zero->raw_data() == constant_b_zero_->raw_data();
  }

  // The constant B packed at the first Run that reads it and shared with
  // the session's other compiles (PreparedOnFirstRun): a session whose
  // feeds leave a shape open builds this graph at creation and another per
  // feed shape at its first Run, and only one packing should be made.
  const QuantizedProductWeights* Prepared() const {
    return constant_b_.Get([this](const Tensor& b) {
      auto made = std::make_shared<QuantizedProductWeights>();
      const int64_t k = b.shape().dim(0), n = b.shape().dim(1);
      if (try_direct_) {
        made->direct = DirectProductWeights::Prepare(b.data<int8_t>(), k, n);
      }
      if (!made->direct) {
        made->packed = Int8ProductWeights::Prepare(b.data<int8_t>(), k, n);
      }
      return std::shared_ptr<const QuantizedProductWeights>(std::move(made));
    });
  }

  PreparedOnFirstRun<QuantizedProductWeights> constant_b_;
  std::optional<Tensor> constant_b_zero_;
  bool has_b_zero_ = false;
  bool try_direct_ = false;
};

// The zero point of A as int32 (0 when absent).
int32_t ScalarZero(const Tensor* zero) {
  if (zero == nullptr) return 0;
  return zero->dtype() == DataType::kUInt8 ? int32_t{*zero->data<uint8_t>()}
                                           : int32_t{*zero->data<int8_t>()};
}

// MatMulInteger's inputs, checked: A, B and the zero points (null when
// absent) with how many each holds.
struct IntegerProductInputs {
  const Tensor* a = nullptr;
  const Tensor* b = nullptr;
  const Tensor* a_zero = nullptr;
  const Tensor* b_zero = nullptr;
  int64_t a_zeros = 1, b_zeros = 1;
  ProductShape p;
};

StatusOr<IntegerProductInputs> ReadIntegerProductInputs(KernelContext& ctx) {
  IntegerProductInputs in;
  in.a = &ctx.input(0);
  in.b = &ctx.input(1);
  WEFT_ASSIGN_OR_RETURN(in.p, ShapeOfProduct(in.a->shape(), in.b->shape()));
  in.a_zero = ctx.num_inputs() > 2 ? &ctx.input(2) : nullptr;
  in.b_zero = ctx.num_inputs() > 3 ? &ctx.input(3) : nullptr;
  if (in.a_zero != nullptr) {
    if (in.a_zero->dtype() != in.a->dtype()) {
      return InvalidArgumentError("a_zero_point must have A's dtype");
    }
    WEFT_ASSIGN_OR_RETURN(in.a_zeros,
                          PerRowOrTensor(*in.a_zero, in.p.m, "a_zero_point"));
  }
  if (in.b_zero != nullptr) {
    if (in.b_zero->dtype() != in.b->dtype()) {
      return InvalidArgumentError("b_zero_point must have B's dtype");
    }
    WEFT_ASSIGN_OR_RETURN(in.b_zeros,
                          PerRowOrTensor(*in.b_zero, in.p.n, "b_zero_point"));
  }
  return in;
}

// What MatMulInteger and FusedMatMulInteger share: the int32 sums.
class IntegerProductKernel : public QuantizedProductKernel {
 public:
  using QuantizedProductKernel::QuantizedProductKernel;

 protected:
  // out[i * N + j]: the exact sums, on the direct tiles, the packed panels
  // or the reference loop.
  void Sums(KernelContext& ctx, const IntegerProductInputs& in,
            int32_t* out) const {
    const Tensor& a = *in.a;
    const ProductShape& p = in.p;
    if (const DirectProductWeights* direct =
            Direct(p, in.a_zeros, a.dtype(), *in.b, in.b_zero)) {
      MultiplyUint8Direct(ctx, a.data<uint8_t>(), a.NumElements() / p.k,
                          ScalarZero(in.a_zero), *direct, out);
      return;
    }
    if (const Int8ProductWeights* packed = Packed(p, in.a_zeros, *in.b)) {
      MultiplyInt8(ctx, a.raw_data(), a.dtype() == DataType::kInt8,
                   a.NumElements() / p.k, ScalarZero(in.a_zero), *packed,
                   in.b_zero ? in.b_zero->data<int8_t>() : nullptr,
                   in.b_zeros > 1,
                   [&](int64_t first, int64_t rows, int64_t j0, int64_t cols,
                       const int32_t* sums) {
                     for (int64_t i = 0; i < rows; ++i) {
                       int32_t* row = out + (first + i) * p.n + j0;
                       for (int64_t c = 0; c < cols; ++c) {
                         row[c] = sums[c * kInt8Cols + i];
                       }
                     }
                   });
      return;
    }
    // ReadIntegerProductInputs' dtypes are uint8 or int8 here (the
    // dispatch's error cannot arise for them).
    (void)DispatchQuantizedPair(
        a.dtype(), in.b->dtype(), [&](auto qa, auto qb) {
          using QA = decltype(qa);
          using QB = decltype(qb);
          IntegerProduct<QA, QB>(
              ctx, p, a.data<QA>(), in.b->data<QB>(),
              in.a_zero ? in.a_zero->data<QA>() : nullptr, in.a_zeros,
              in.b_zero ? in.b_zero->data<QB>() : nullptr, in.b_zeros,
              [&](int64_t r, int64_t, const std::vector<int32_t>& row) {
                std::copy(row.begin(), row.end(), out + r * p.n);
              });
          return Status::OK();
        });
  }
};

// A and B must be uint8 or int8 (DispatchQuantizedPair's message).
Status CheckIntegerDtypes(const IntegerProductInputs& in) {
  return DispatchQuantizedPair(in.a->dtype(), in.b->dtype(),
                               [](auto, auto) { return Status::OK(); });
}

// MatMulInteger (A, B[, a_zero_point[, b_zero_point]]) -> int32.
class MatMulIntegerKernel : public IntegerProductKernel {
 public:
  explicit MatMulIntegerKernel(const KernelConstruction& c)
      : IntegerProductKernel(c, 1, 3) {}

  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(IntegerProductInputs in,
                          ReadIntegerProductInputs(ctx));
    WEFT_RETURN_IF_ERROR(CheckIntegerDtypes(in));
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, in.p.out));
    Sums(ctx, in, y->data<int32_t>());
    return Status::OK();
  }
};

// FusedMatMulInteger (A, B, a_zero_point, b_zero_point, scale[, bias]) ->
// float32: Add(bias, Mul(Cast(MatMulInteger(A, B, a_zero_point,
// b_zero_point)), scale)) in one pass, as the matmul-integer-fusion pass
// makes it from quantize_dynamic's graphs, each operation rounded as those
// nodes round it (this file is built without fused multiply-adds). scale
// holds one value or one per column (N), bias one per column; a residual
// (input 6, after a bias, from conv-residual-fusion: a transformer's skip
// connection) of the output's shape is added after the bias.
class FusedMatMulIntegerKernel : public IntegerProductKernel {
 public:
  explicit FusedMatMulIntegerKernel(const KernelConstruction& c)
      : IntegerProductKernel(c, 1, 3),
        activation_(ActivationFromAttrs(c.attrs())) {}

  Status Compute(KernelContext& ctx) const override {
    if (ctx.num_inputs() < 5 || ctx.num_inputs() > 7) {
      return InvalidArgumentError(
          "takes A, B, a_zero_point, b_zero_point, scale and an optional "
          "bias and residual");
    }
    WEFT_RETURN_IF_ERROR(activation_.status());
    WEFT_ASSIGN_OR_RETURN(IntegerProductInputs in,
                          ReadIntegerProductInputs(ctx));
    WEFT_RETURN_IF_ERROR(CheckIntegerDtypes(in));
    const int64_t n = in.p.n;
    const Tensor& scale = ctx.input(4);
    if (scale.dtype() != DataType::kFloat32 ||
        (scale.NumElements() != 1 &&
         !(scale.shape().rank() == 1 && scale.NumElements() == n))) {
      return InvalidArgumentError("scale must be float32 of one value or [" +
                                  std::to_string(n) + "], got " +
                                  DataTypeName(scale.dtype()) + " " +
                                  scale.shape().ToString());
    }
    const float* bias = nullptr;
    if (ctx.num_inputs() > 5) {
      const Tensor& b = ctx.input(5);
      if (b.dtype() != DataType::kFloat32 || b.shape().rank() != 1 ||
          b.NumElements() != n) {
        return InvalidArgumentError(
            "bias must be float32 [" + std::to_string(n) + "], got " +
            DataTypeName(b.dtype()) + " " + b.shape().ToString());
      }
      bias = b.data<float>();
    }
    std::vector<float> scales(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      scales[static_cast<size_t>(j)] =
          scale.data<float>()[scale.NumElements() == 1 ? 0 : j];
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, in.p.out));
    const float* residual = nullptr;
    if (ctx.num_inputs() > 6) {
      const Tensor& z = ctx.input(6);
      if (z.dtype() != DataType::kFloat32 || !(z.shape() == y->shape())) {
        return InvalidArgumentError(
            "residual must be float32 " + y->shape().ToString() + ", got " +
            DataTypeName(z.dtype()) + " " + z.shape().ToString());
      }
      residual = z.data<float>();
    }
    float* out = y->data<float>();
    if (const DirectProductWeights* direct =
            Direct(in.p, in.a_zeros, in.a->dtype(), *in.b, in.b_zero)) {
      RequantizedOutput scaled;
      scaled.multiplier = scales.data();
      scaled.bias = bias;
      scaled.y = out;
      MultiplyUint8DirectScaled(
          ctx, in.a->data<uint8_t>(), in.a->NumElements() / in.p.k,
          ScalarZero(in.a_zero), *direct, scaled, *activation_, residual);
      return Status::OK();
    }
    std::vector<int32_t> sums(static_cast<size_t>(y->NumElements()));
    Sums(ctx, in, sums.data());
    const int64_t rows = y->NumElements() / std::max<int64_t>(n, 1);
    ctx.ParallelFor(rows, static_cast<double>(n), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          const float product =
              static_cast<float>(sums[static_cast<size_t>(r * n + j)]) *
              scales[static_cast<size_t>(j)];
          const float biased = bias == nullptr ? product : bias[j] + product;
          out[r * n + j] =
              residual == nullptr ? biased : biased + residual[r * n + j];
        }
      }
    });
    ActivateRows(ctx, *activation_, out, rows, n);
    return Status::OK();
  }

 private:
  // FusedGemm's activation attributes: the activation-fusion pass puts a
  // Gelu (or another) after the Add here.
  const StatusOr<ActivationSpec> activation_;
};

// Column j's int32 bias (0 without one).
int32_t ColumnBias(const int32_t* bias, int64_t j) {
  return bias == nullptr ? 0 : bias[j];
}

// QLinearMatMul's y_scale, checked with y_zero_point: scalars, the scale
// finite and non-zero.
StatusOr<float> OutputScale(const Tensor& y_scale, const Tensor& y_zero) {
  if (y_scale.NumElements() != 1 || y_zero.NumElements() != 1) {
    return InvalidArgumentError("y_scale and y_zero_point must be scalars");
  }
  const float ys = *y_scale.data<float>();
  if (!(ys != 0) || !std::isfinite(ys)) {
    return InvalidArgumentError("y_scale must be finite and non-zero");
  }
  return ys;
}

// a_scale * b_scale[j] / y_scale for each of the n columns (b_scale one
// value when b_params is 1); *finite says whether every one is finite.
std::vector<float> ColumnMultipliers(float a_scale, const float* b_scale,
                                     int64_t b_params, int64_t n, float y_scale,
                                     bool* finite) {
  std::vector<float> multipliers;
  for (int64_t j = 0; j < n; ++j) {
    multipliers.push_back(a_scale * b_scale[b_params == 1 ? 0 : j] / y_scale);
    *finite = *finite && std::isfinite(multipliers.back());
  }
  return multipliers;
}

// QLinearMatMul's optional ninth input, checked: int32, one for each of the
// n columns; null without one.
StatusOr<const int32_t*> ColumnBiasInput(KernelContext& ctx, int64_t n) {
  if (ctx.num_inputs() > 9) {
    return InvalidArgumentError(
        "QLinearMatMul takes 8 inputs, and weft's optional int32 bias");
  }
  if (ctx.num_inputs() < 9) return nullptr;
  const Tensor& bias = ctx.input(8);
  if (bias.dtype() != DataType::kInt32 || bias.shape().rank() != 1 ||
      bias.NumElements() != n) {
    return InvalidArgumentError(
        "QLinearMatMul's bias must be int32 of shape [" + std::to_string(n) +
        "] (one per column), got " + std::string(DataTypeName(bias.dtype())) +
        " " + bias.shape().ToString());
  }
  return bias.data<int32_t>();
}

// QLinearMatMul (a, a_scale, a_zero_point, b, b_scale, b_zero_point,
// y_scale, y_zero_point[, bias]): the int32 product requantized to y's
// dtype with the multiplier a_scale * b_scale / y_scale (per row of a and
// column of b when those are per row / column). `bias`, weft's ninth input
// (the qdq-fusion pass's form of a quantized Gemm, as ONNX Runtime's QGemm
// takes its C): int32, one per column, added to the sums before they are
// requantized.
class QLinearMatMulKernel : public QuantizedProductKernel {
 public:
  explicit QLinearMatMulKernel(const KernelConstruction& c)
      : QuantizedProductKernel(c, 3, 5) {}

  Status Compute(KernelContext& ctx) const override {
    // Dtypes are the op signature's: a and b each uint8 or int8 with a zero
    // point of its dtype, scales float32, y's dtype y_zero_point's.
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(3);
    WEFT_ASSIGN_OR_RETURN(ProductShape p, ShapeOfProduct(a.shape(), b.shape()));
    const Tensor& a_scale = ctx.input(1);
    const Tensor& b_scale = ctx.input(4);
    const Tensor& y_zero = ctx.input(7);
    WEFT_ASSIGN_OR_RETURN(const float ys, OutputScale(ctx.input(6), y_zero));
    WEFT_ASSIGN_OR_RETURN(int64_t a_params,
                          PerRowOrTensor(a_scale, p.m, "a_scale"));
    WEFT_ASSIGN_OR_RETURN(int64_t b_params,
                          PerRowOrTensor(b_scale, p.n, "b_scale"));
    WEFT_ASSIGN_OR_RETURN(int64_t a_zeros,
                          PerRowOrTensor(ctx.input(2), p.m, "a_zero_point"));
    WEFT_ASSIGN_OR_RETURN(int64_t b_zeros,
                          PerRowOrTensor(ctx.input(5), p.n, "b_zero_point"));
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, p.out));
    WEFT_ASSIGN_OR_RETURN(const int32_t* bias, ColumnBiasInput(ctx, p.n));
    const float* as = a_scale.data<float>();
    const float* bs = b_scale.data<float>();
    // One multiplier per column where A's scale is one value: the fast
    // paths' (per-row scales take the reference loop).
    bool finite = true;
    const std::vector<float> multipliers =
        a_params == 1 ? ColumnMultipliers(as[0], bs, b_params, p.n, ys, &finite)
                      : std::vector<float>{};
    const DirectProductWeights* direct =
        a_params == 1 ? Direct(p, a_zeros, a.dtype(), b, &ctx.input(5))
                      : nullptr;
    if (direct != nullptr) {
      // A NaN multiplier gives 0, as Saturate says: so do the tiles.
      RequantizedOutput out;
      out.multiplier = multipliers.data();
      out.y_signed = y_zero.dtype() == DataType::kInt8;
      out.zero = out.y_signed ? static_cast<float>(*y_zero.data<int8_t>())
                              : static_cast<float>(*y_zero.data<uint8_t>());
      out.y = y->raw_data();
      out.finite = finite;
      out.offset = bias;  // The zero point's offsets are added to it.
      MultiplyUint8DirectRequantized(ctx, a.data<uint8_t>(),
                                     a.NumElements() / p.k,
                                     ScalarZero(&ctx.input(2)), *direct, out);
      return Status::OK();
    }
    // A NaN multiplier takes the reference loop (0, as Saturate says).
    const Int8ProductWeights* packed =
        a_params == 1 && finite ? Packed(p, a_zeros, b) : nullptr;
    if (packed != nullptr) {
      const bool y_unsigned = y_zero.dtype() == DataType::kUInt8;
      const float zy = y_unsigned ? static_cast<float>(*y_zero.data<uint8_t>())
                                  : static_cast<float>(*y_zero.data<int8_t>());
      uint8_t* out = static_cast<uint8_t*>(y->raw_data());
      MultiplyInt8(ctx, a.raw_data(), a.dtype() == DataType::kInt8,
                   a.NumElements() / p.k, ScalarZero(&ctx.input(2)), *packed,
                   ctx.input(5).data<int8_t>(), b_zeros > 1,
                   [&](int64_t first, int64_t rows, int64_t j0, int64_t cols,
                       const int32_t* sums) {
                     uint8_t tile[kInt8Rows][kInt8Cols];
                     for (int64_t c = 0; c < cols; ++c) {
                       const int32_t* column = sums + c * kInt8Cols;
                       const int32_t column_bias = ColumnBias(bias, j0 + c);
                       if (y_unsigned) {
                         RequantizeToUint8(column, rows, column_bias,
                                           multipliers[j0 + c], zy, tile[c]);
                       } else {
                         RequantizeToInt8(column, rows, column_bias,
                                          multipliers[j0 + c], zy,
                                          reinterpret_cast<int8_t*>(tile[c]));
                       }
                     }
                     for (int64_t i = 0; i < rows; ++i) {
                       uint8_t* row = out + (first + i) * p.n + j0;
                       for (int64_t c = 0; c < cols; ++c) row[c] = tile[c][i];
                     }
                   });
      return Status::OK();
    }
    return DispatchQuantizedPair(a.dtype(), b.dtype(), [&](auto qa, auto qb) {
      using QA = decltype(qa);
      using QB = decltype(qb);
      auto requantize = [&](auto qy) {
        using QY = decltype(qy);
        QY* out = y->data<QY>();
        const float zy = static_cast<float>(*y_zero.data<QY>());
        IntegerProduct<QA, QB>(
            ctx, p, a.data<QA>(), b.data<QB>(), ctx.input(2).data<QA>(),
            a_zeros, ctx.input(5).data<QB>(), b_zeros,
            [&](int64_t r, int64_t i, const std::vector<int32_t>& row) {
              const float sa = as[a_params == 1 ? 0 : i];
              for (int64_t j = 0; j < p.n; ++j) {
                const float multiplier = sa * bs[b_params == 1 ? 0 : j] / ys;
                // Wrapping, as the int32 sums do.
                const auto sum = static_cast<int32_t>(
                    static_cast<uint32_t>(row[j]) +
                    static_cast<uint32_t>(ColumnBias(bias, j)));
                out[r * p.n + j] = Saturate<QY>(
                    std::nearbyint(static_cast<float>(sum) * multiplier) + zy);
              }
            });
      };
      if (y_zero.dtype() == DataType::kUInt8) {
        requantize(uint8_t{});
      } else {
        requantize(int8_t{});
      }
      return Status::OK();
    });
  }
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"DequantizeLinear",
     "8-, 16-, 4-bit, int32 integers or float8 to float: (x - zero point) * "
     "scale"},
    {"DynamicQuantizeLinear",
     "float to uint8 with the scale and zero point of its range"},
    {"FusedMatMulInteger",
     "MatMulInteger, Cast to float, Mul by a scale and Add of a bias in one "
     "pass, then an optional activation (made by the matmul-integer-fusion "
     "and activation-fusion passes)"},
    {"MatMulInteger",
     "int8/uint8 matrix product minus zero points, exact in int32"},
    {"QLinearMatMul",
     "quantized matrix product, requantized to the output scale"},
    {"QuantizeLinear",
     "float to 8-, 16- or 4-bit integers (round(x / scale) + zero point, "
     "saturated) or float8"},
};

}  // namespace

// The output shape of a quantized product of inputs kA and kB, as
// ShapeOfProduct computes it: the broadcast batch dims, then M and N (each
// but a vector's). Known dims are what later passes (layer-norm recognition
// over the last axis) need.
template <int kA, int kB>
Status ProductShapeOf(InferenceContext& ctx) {
  // The kernels read both factors: a node without them is refused here,
  // before a Run could reach for an input it was not given.
  if (ctx.num_inputs() <= kB) {
    return InvalidArgumentError("needs inputs " + std::to_string(kA) + " and " +
                                std::to_string(kB) + " (the factors); got " +
                                std::to_string(ctx.num_inputs()) + " inputs");
  }
  const PartialShape& a = ctx.input_shape(kA);
  const PartialShape& b = ctx.input_shape(kB);
  if (!a.rank_known() || !b.rank_known() || a.rank() < 1 || b.rank() < 1) {
    ctx.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  auto batch_of = [](const PartialShape& s) {
    return PartialShape(std::vector<int64_t>(
        s.dims().begin(), s.dims().end() - std::min(s.rank(), 2)));
  };
  auto batch = BroadcastShapes(batch_of(a), batch_of(b));
  if (!batch.ok()) {
    ctx.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  std::vector<int64_t> dims = batch->dims();
  if (a.rank() >= 2) dims.push_back(a.dim(a.rank() - 2));
  if (b.rank() >= 2) dims.push_back(b.dim(b.rank() - 1));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

void RegisterQuantizeOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("QuantizeLinear")
          .Input(ArgDef::Fixed("x", DataType::kFloat32))
          .Input(ArgDef::Fixed("y_scale", DataType::kFloat32))
          // None or one: the output dtype is the zero point's, uint8
          // without one (ONNX's rule).
          .Input(
              ArgDef::Repeated("y_zero_point", "output_dtype", "zero_points"))
          .Output(ArgDef::Typed("y", "output_dtype"))
          .Attr("axis", AttrType::kInt, int64_t{1})
          // ONNX 21: scales per block of this many along `axis` (0: per
          // tensor or per axis).
          .Attr("block_size", AttrType::kInt, int64_t{0})
          .Attr("output_dtype", AttrType::kType, DataType::kUInt8,
                kQuantizeLinearTypes)
          // ONNX's `saturate` (19): float8 outputs only.
          .Attr("saturate", AttrType::kInt, int64_t{1})
          .Attr("zero_points", AttrType::kInt)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "QuantizeLinear", KernelFactoryFor<QuantizeLinearKernel>()));

  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("DequantizeLinear")
                              .Input(ArgDef::AnyList("inputs"))
                              .Output(ArgDef::Fixed("y", DataType::kFloat32))
                              .Attr("axis", AttrType::kInt, int64_t{1})
                              .Attr("block_size", AttrType::kInt, int64_t{0})
                              // The 4-bit and float8 types; the kernel names
                              // any dtype it does not read.
                              .AcceptsAnyValue("inputs")
                              .SetShapeFn(shape_fns::SameAsInput0)
                              .Build()));
  CheckRegistered(registry.RegisterKernel(
      "DequantizeLinear", KernelFactoryFor<DequantizeLinearKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("DynamicQuantizeLinear")
          .Input(ArgDef::Fixed("x", DataType::kFloat32))
          .Output(ArgDef::Fixed("y", DataType::kUInt8))
          .Output(ArgDef::Fixed("y_scale", DataType::kFloat32))
          .Output(ArgDef::Fixed("y_zero_point", DataType::kUInt8))
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            WEFT_RETURN_IF_ERROR(shape_fns::SameAsInput0(ctx));
            ctx.set_output(1, PartialShape({}));
            ctx.set_output(2, PartialShape({}));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("DynamicQuantizeLinear",
                              KernelFactoryFor<DynamicQuantizeLinearKernel>()));

  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("MatMulInteger")
                              .Input(ArgDef::AnyList("inputs"))
                              .Output(ArgDef::Fixed("Y", DataType::kInt32))
                              .SetShapeFn(ProductShapeOf<0, 1>)
                              .Build()));
  CheckRegistered(registry.RegisterKernel(
      "MatMulInteger", KernelFactoryFor<MatMulIntegerKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("FusedMatMulInteger")
          .Input(ArgDef::AnyList("inputs"))
          .Output(ArgDef::Fixed("Y", DataType::kFloat32))
          .Attr("activation", AttrType::kString, std::string())
          .Attr("activation_params", AttrType::kListFloat,
                std::vector<double>{})
          .SetShapeFn(ProductShapeOf<0, 1>)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "FusedMatMulInteger", KernelFactoryFor<FusedMatMulIntegerKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("QLinearMatMul")
          .Input(ArgDef::Typed("a", "TA"))
          .Input(ArgDef::Fixed("a_scale", DataType::kFloat32))
          .Input(ArgDef::Typed("a_zero_point", "TA"))
          .Input(ArgDef::Typed("b", "TB"))
          .Input(ArgDef::Fixed("b_scale", DataType::kFloat32))
          .Input(ArgDef::Typed("b_zero_point", "TB"))
          .Input(ArgDef::Fixed("y_scale", DataType::kFloat32))
          // y's dtype is its zero point's (ONNX's T3), int8 as well as
          // uint8.
          .Input(ArgDef::Typed("y_zero_point", "TY"))
          .Input(ArgDef::AnyList("bias"))
          .Output(ArgDef::Typed("y", "TY"))
          .Attr("TA", AttrType::kType, std::nullopt, kQuantizedTypes)
          .Attr("TB", AttrType::kType, std::nullopt, kQuantizedTypes)
          .Attr("TY", AttrType::kType, std::nullopt, kQuantizedTypes)
          .SetShapeFn(ProductShapeOf<0, 3>)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "QLinearMatMul", KernelFactoryFor<QLinearMatMulKernel>()));
}

}  // namespace weft::internal
