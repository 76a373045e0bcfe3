// QLinearAdd (ONNX Runtime's com.microsoft op, which its QDQ transformer
// writes for DequantizeLinear -> Add -> QuantizeLinear): two uint8 or int8
// tensors with per-tensor scales and zero points, broadcast as NumPy does,
// added and requantized in one pass.
//
// Each element is computed with the float operations of the three nodes it
// replaces, in their order: ((a - a_zero) * a_scale) + ((b - b_zero) *
// b_scale), divided by c_scale, rounded half to even, plus c_zero,
// saturated. This file is compiled with -ffp-contract=off (CMakeLists.txt)
// so that no multiply-add is fused where the separate nodes round twice: the
// qdq-fusion pass then keeps the graph's results bit for bit.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include "framework/op_registry_impl.h"
#include "ops/broadcast.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

const std::vector<DataType> kQuantized = {DataType::kUInt8, DataType::kInt8};

// One per-tensor (scale, zero point) pair, checked.
struct QuantParams {
  float scale = 1;
  float zero = 0;
};

StatusOr<QuantParams> ReadParams(const KernelContext& ctx, int scale_index,
                                 DataType dtype, const char* what) {
  const Tensor& scale = ctx.input(scale_index);
  const Tensor& zero = ctx.input(scale_index + 1);
  if (scale.NumElements() != 1 || zero.NumElements() != 1) {
    return InvalidArgumentError(
        std::string(what) + "'s scale and zero point must be scalars, got " +
        scale.shape().ToString() + " and " + zero.shape().ToString());
  }
  if (zero.dtype() != dtype) {
    return InvalidArgumentError(std::string(what) + "'s zero point has dtype " +
                                DataTypeName(zero.dtype()) + ", expected " +
                                DataTypeName(dtype));
  }
  QuantParams p;
  p.scale = *scale.data<float>();
  p.zero = dtype == DataType::kUInt8 ? static_cast<float>(*zero.data<uint8_t>())
                                     : static_cast<float>(*zero.data<int8_t>());
  if (!(p.scale != 0) || !std::isfinite(p.scale)) {
    return InvalidArgumentError(std::string(what) + "'s scale is " +
                                std::to_string(p.scale) +
                                ": it must be finite and non-zero");
  }
  return p;
}

template <class Q>
Q SaturateRounded(float v) {
  constexpr float lo = std::numeric_limits<Q>::min();
  constexpr float hi = std::numeric_limits<Q>::max();
  // A NaN (infinities of both signs summed, from scales near the float
  // maximum) gives 0, as the vector path below does: converted to an
  // integer it would be undefined.
  if (std::isnan(v)) return 0;
  // Through int32: the compiler vectorises that conversion, not a direct
  // float to 8-bit one.
  return static_cast<Q>(static_cast<int32_t>(std::min(std::max(v, lo), hi)));
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// 16 bytes of Q as 16 int32 lanes.
template <class Q>
__m512i WidenBytes(const Q* from) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
  if constexpr (std::is_signed_v<Q>) return _mm512_cvtepi8_epi32(bytes);
  return _mm512_cvtepu8_epi32(bytes);
}

// The first n / 16 * 16 elements of AddRange below, 16 lanes at a time, with
// the same operations in the same order, so the same bits: each lane
// computes ((a - a_zero) * a_scale + (b - b_zero) * b_scale) / c_scale,
// rounds it in the current (nearest-even) mode as nearbyint does, adds
// c_zero, clamps it to Q's range as SaturateRounded does (maxps and minps
// with the bound first keep a NaN), truncates to int32 (a NaN to
// 0x80000000) and keeps the low byte (0, as SaturateRounded gives a NaN).
// Returns how many it did.
// The compiler's own vectorisation of the scalar loop built the clamp from
// compares and masks and ran at 1.6 cycles an element on a Zen 5 core:
// int8 ResNet-18's eight QLinearAdds at batch 8 took 1,178 us there, 663
// this way (741 and 417 at two threads; fastest of six traced Runs).
template <class QA, class QB, class QC>
int64_t AddRangeVector(const QA* a, const QB* b, int64_t n,
                       const QuantParams& pa, const QuantParams& pb,
                       const QuantParams& pc, QC* out) {
  const __m512 za = _mm512_set1_ps(pa.zero), sa = _mm512_set1_ps(pa.scale);
  const __m512 zb = _mm512_set1_ps(pb.zero), sb = _mm512_set1_ps(pb.scale);
  const __m512 sc = _mm512_set1_ps(pc.scale), zc = _mm512_set1_ps(pc.zero);
  const __m512 lo =
      _mm512_set1_ps(static_cast<float>(std::numeric_limits<QC>::min()));
  const __m512 hi =
      _mm512_set1_ps(static_cast<float>(std::numeric_limits<QC>::max()));
  const int64_t whole = n / 16 * 16;
  for (int64_t i = 0; i < whole; i += 16) {
    const __m512 fa = _mm512_mul_ps(
        _mm512_sub_ps(_mm512_cvtepi32_ps(WidenBytes(a + i)), za), sa);
    const __m512 fb = _mm512_mul_ps(
        _mm512_sub_ps(_mm512_cvtepi32_ps(WidenBytes(b + i)), zb), sb);
    const __m512 q = _mm512_div_ps(_mm512_add_ps(fa, fb), sc);
    __m512 v = _mm512_add_ps(
        _mm512_roundscale_ps(q, _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC),
        zc);
    v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
  }
  return whole;
}
#endif

// out[i] = add(a[i], b[i]) for i < n. A function of its own, its operands
// locals: in a loop over a closure's captures, each byte stored could alias
// the closure, and the compiler would not vectorise.
template <class QA, class QB, class QC, class Add>
void AddRange(const QA* a, const QB* b, int64_t n, Add add, QC* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = add(a[i], b[i]);
}

class QLinearAddKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(3);
    const DataType c_dtype = ctx.input(7).dtype();
    WEFT_ASSIGN_OR_RETURN(QuantParams pa, ReadParams(ctx, 1, a.dtype(), "A"));
    WEFT_ASSIGN_OR_RETURN(QuantParams pb, ReadParams(ctx, 4, b.dtype(), "B"));
    WEFT_ASSIGN_OR_RETURN(QuantParams pc, ReadParams(ctx, 6, c_dtype, "C"));
    WEFT_ASSIGN_OR_RETURN(Tensor * c, AllocateBroadcastOutput(ctx, a, b));
    auto run = [&](auto qa, auto qb, auto qc) {
      using QA = decltype(qa);
      using QB = decltype(qb);
      using QC = decltype(qc);
      // By value: the output's bytes may alias anything, so parameters
      // read through a reference would be read again for every element.
      auto add = [pa, pb, pc](QA x, QB y) {
        const float fa = (static_cast<float>(x) - pa.zero) * pa.scale;
        const float fb = (static_cast<float>(y) - pb.zero) * pb.scale;
        return SaturateRounded<QC>(std::nearbyint((fa + fb) / pc.scale) +
                                   pc.zero);
      };
      if (a.shape() == b.shape()) {
        // One shape (every residual Add): a plain loop, which the compiler
        // vectorises.
        const QA* x = a.data<QA>();
        const QB* y = b.data<QB>();
        QC* out = c->data<QC>();
        ctx.ParallelFor(a.NumElements(), 2.0, [&](int64_t begin, int64_t end) {
          int64_t done = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
          done = AddRangeVector(x + begin, y + begin, end - begin, pa, pb, pc,
                                out + begin);
#endif
          AddRange(x + begin + done, y + begin + done, end - begin - done, add,
                   out + begin + done);
        });
        return;
      }
      BroadcastMixed<QA, QB, QC>(ctx, a, b, c, add);
    };
    auto with_c = [&](auto qa, auto qb) {
      if (c_dtype == DataType::kUInt8) {
        run(qa, qb, uint8_t{});
      } else {
        run(qa, qb, int8_t{});
      }
    };
    auto with_b = [&](auto qa) {
      if (b.dtype() == DataType::kUInt8) {
        with_c(qa, uint8_t{});
      } else {
        with_c(qa, int8_t{});
      }
    };
    if (a.dtype() == DataType::kUInt8) {
      with_b(uint8_t{});
    } else {
      with_b(int8_t{});
    }
    return Status::OK();
  }
};

constexpr OpSummary kSummaries[] = {
    {"QLinearAdd",
     "quantized Add: dequantize both, add, requantize to C's scale and zero "
     "point, in one pass"},
};

}  // namespace

void RegisterQuantizedAddOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("QLinearAdd")
          .Input(ArgDef::Typed("A", "TA"))
          .Input(ArgDef::Fixed("A_scale", DataType::kFloat32))
          .Input(ArgDef::Typed("A_zero_point", "TA"))
          .Input(ArgDef::Typed("B", "TB"))
          .Input(ArgDef::Fixed("B_scale", DataType::kFloat32))
          .Input(ArgDef::Typed("B_zero_point", "TB"))
          .Input(ArgDef::Fixed("C_scale", DataType::kFloat32))
          .Input(ArgDef::Typed("C_zero_point", "TC"))
          .Output(ArgDef::Typed("C", "TC"))
          .Attr("TA", AttrType::kType, std::nullopt, kQuantized)
          .Attr("TB", AttrType::kType, std::nullopt, kQuantized)
          .Attr("TC", AttrType::kType, std::nullopt, kQuantized)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            WEFT_ASSIGN_OR_RETURN(
                PartialShape shape,
                BroadcastShapes(ctx.input_shape(0), ctx.input_shape(3)));
            ctx.set_output(0, std::move(shape));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "QLinearAdd", KernelFactoryFor<QLinearAddKernel>()));
}

}  // namespace weft::internal
