#include "kernels/math_rows.h"

#include <cstdlib>
#include <string>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace weft::internal {
namespace {

constexpr const char* kEnv = "WEFT_MATH_ROWS";

#if defined(__AVX512F__)
constexpr bool kAvx512Built = true;
// The zero-masked forms of vminps and vscalefps with every lane set: GCC
// 12's unmasked ones start from an undefined vector, which -Wall reports as
// used uninitialized.
constexpr __mmask16 kAllLanes = 0xffff;

// detail::ExpCore of vector_math.h on 16 lanes, operation for operation:
// the multiply-adds are those GCC forms from its source (the shift by
// 1.5 * 2^23, the two ln2 steps, Horner, p r r + r), and p * 2^n is one
// vscalefps where the source multiplies by 2^floor(n/2) and then by the
// rest: the first product is exact (p * 2^-93 is still normal), so both
// round p * 2^n once.
template <bool kLo>
__m512 ExpCore16(__m512 x, __m512 lo) {
  const __m512 round = _mm512_set1_ps(12582912.0f);
  const __m512 shifted =
      _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), round);
  const __m512 n = _mm512_sub_ps(shifted, round);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  if constexpr (kLo) r = _mm512_add_ps(r, lo);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  __m512 e = _mm512_fmadd_ps(r, _mm512_mul_ps(p, r), r);
  e = _mm512_add_ps(e, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(kAllLanes, e, n);
}

// vmath::ExpF: ExpCore, then 0 below -104 and inf above 89.
__m512 Exp16(__m512 x) {
  __m512 e = ExpCore16<false>(x, x);
  const __mmask16 low =
      _mm512_cmp_ps_mask(x, _mm512_set1_ps(-104.0f), _CMP_LT_OQ);
  const __mmask16 high =
      _mm512_cmp_ps_mask(x, _mm512_set1_ps(89.0f), _CMP_GT_OQ);
  e = _mm512_mask_mov_ps(e, low, _mm512_setzero_ps());
  return _mm512_mask_mov_ps(e, high, _mm512_set1_ps(__builtin_inff()));
}

// GeluF through vmath::ErfcF, operation for operation.
__m512 Gelu16(__m512 x) {
  const __m512 arg = _mm512_mul_ps(x, _mm512_set1_ps(-0.70710678118654752440f));
  // std::min(|arg|, 10.5) is (10.5 < |arg|) ? 10.5 : |arg|, as vminps with
  // 10.5 first: a NaN stays.
  const __m512 t =
      _mm512_maskz_min_ps(kAllLanes, _mm512_set1_ps(10.5f), _mm512_abs_ps(arg));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 u =
      _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.5f), t, one));
  __m512 p = _mm512_set1_ps(0.17087277f);
  for (const float c :
       {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f,
        0.09678418f, 0.37409196f, 1.00002368f, -1.26551223f}) {
    p = _mm512_fmadd_ps(p, u, _mm512_set1_ps(c));
  }
  // p - t^2 as sum + error (TwoSum), less t^2's rounding error.
  const __m512 t2_hi = _mm512_mul_ps(t, t);
  const __m512 t2_lo = _mm512_fmsub_ps(t, t, t2_hi);
  const __m512 sum = _mm512_sub_ps(p, t2_hi);
  const __m512 back = _mm512_sub_ps(sum, p);
  const __m512 error = _mm512_add_ps(
      _mm512_sub_ps(p, _mm512_sub_ps(sum, back)),
      _mm512_sub_ps(_mm512_sub_ps(_mm512_setzero_ps(), t2_hi), back));
  const __m512 tail =
      _mm512_mul_ps(u, ExpCore16<true>(sum, _mm512_sub_ps(error, t2_lo)));
  const __mmask16 negative =
      _mm512_cmp_ps_mask(arg, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 erfc =
      _mm512_mask_sub_ps(tail, negative, _mm512_set1_ps(2.0f), tail);
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), erfc);
}

// y = f(x) over n floats, 16 at a time, the tail under a mask: every
// element goes through the same operations.
template <class F>
void MapRow16(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
  }
  if (i < n) {
    const auto mask = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, mask, f(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}
#else
constexpr bool kAvx512Built = false;
#endif

bool CpuHasAvx512f() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

MathRowsPath ChooseActivePath() {
  if (const char* env = std::getenv(kEnv)) {
    const std::optional<MathRowsPath> forced = ParseMathRowsPath(env);
    // A name that does not run fails Session::Create through
    // CheckMathRowsEnvironment; until then the CPU's choice stands.
    if (forced && MathRowsPathRuns(*forced)) return *forced;
  }
  return MathRowsPathRuns(MathRowsPath::kAvx512) ? MathRowsPath::kAvx512
                                                 : MathRowsPath::kPortable;
}

}  // namespace

std::string_view MathRowsPathName(MathRowsPath path) {
  return path == MathRowsPath::kAvx512 ? "avx512" : "portable";
}

std::optional<MathRowsPath> ParseMathRowsPath(std::string_view name) {
  if (name == "avx512") return MathRowsPath::kAvx512;
  if (name == "portable") return MathRowsPath::kPortable;
  return std::nullopt;
}

bool MathRowsPathRuns(MathRowsPath path) {
  return path == MathRowsPath::kPortable || (kAvx512Built && CpuHasAvx512f());
}

MathRowsPath ActiveMathRowsPath() {
  static const MathRowsPath path = ChooseActivePath();
  return path;
}

Status CheckMathRowsEnvironment() {
  const char* env = std::getenv(kEnv);
  if (env == nullptr) return Status::OK();
  const std::optional<MathRowsPath> path = ParseMathRowsPath(env);
  if (!path) {
    return InvalidArgumentError(std::string(kEnv) + "=" + env +
                                " is not a row path (portable or avx512; "
                                "unset it for the per-CPU choice, "
                                "docs/kernels.md)");
  }
  if (!MathRowsPathRuns(*path)) {
    return InvalidArgumentError(std::string(kEnv) + "=" + env +
                                ": this build or CPU has no AVX-512");
  }
  return Status::OK();
}

void GeluRowOn(MathRowsPath path, const float* x, float* y, int64_t n) {
#if defined(__AVX512F__)
  if (path == MathRowsPath::kAvx512) {
    MapRow16(x, y, n, Gelu16);
    return;
  }
#endif
  (void)path;
  for (int64_t i = 0; i < n; ++i) y[i] = GeluF(x[i]);
}

void GeluRow(const float* x, float* y, int64_t n) {
  GeluRowOn(ActiveMathRowsPath(), x, y, n);
}

void ExpShiftedRowOn(MathRowsPath path, const float* x, float shift, float* y,
                     int64_t n) {
#if defined(__AVX512F__)
  if (path == MathRowsPath::kAvx512) {
    const __m512 s = _mm512_set1_ps(shift);
    MapRow16(x, y, n, [s](__m512 v) { return Exp16(_mm512_sub_ps(v, s)); });
    return;
  }
#endif
  (void)path;
  for (int64_t i = 0; i < n; ++i) y[i] = vmath::ExpF(x[i] - shift);
}

void ExpShiftedRow(const float* x, float shift, float* y, int64_t n) {
  ExpShiftedRowOn(ActiveMathRowsPath(), x, shift, y, n);
}

}  // namespace weft::internal
