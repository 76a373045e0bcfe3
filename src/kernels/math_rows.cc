#include "kernels/math_rows.h"

#include <cstdlib>
#include <string>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace weft::internal {
namespace {

constexpr const char* kEnv = "WEFT_MATH_ROWS";

// The row functions below are written once over a vector type V, which
// names the operations they use. Both forms give the scalar functions'
// bits: each operation is the one the scalar code names, lane for lane.
#if defined(__AVX2__) && defined(__FMA__)
constexpr bool kAvx2Built = true;

// Eight lanes of AVX2 with FMA. Compares give a vector of all-ones lanes,
// which vblendvps selects by; the scaling by 2^n is vector_math.h's two
// halves, in integer lanes, as the scalar code does it.
struct Vec8 {
  using Reg = __m256;
  using Mask = __m256;
  static constexpr int kLanes = 8;

  static Reg Set(float v) { return _mm256_set1_ps(v); }
  static Reg Add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg Sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg Mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg Div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  static Reg Fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg Fnmadd(Reg a, Reg b, Reg c) { return _mm256_fnmadd_ps(a, b, c); }
  static Reg Fmsub(Reg a, Reg b, Reg c) { return _mm256_fmsub_ps(a, b, c); }
  static Reg Abs(Reg x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
  // (a < b) ? a : b, so b where either is NaN (vminps).
  static Reg Min(Reg a, Reg b) { return _mm256_min_ps(a, b); }
  static Mask Less(Reg a, Reg b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static Mask Greater(Reg a, Reg b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static Reg Select(Mask m, Reg if_set, Reg if_clear) {
    return _mm256_blendv_ps(if_clear, if_set, m);
  }
  // p * 2^n, n held in `shifted` as ExpCore's rounding left it:
  // p * 2^floor(n/2) * 2^(n - floor(n/2)), the scalar's products in order.
  static Reg ScaleByPowerOfTwo(Reg p, Reg /*n*/, Reg shifted, Reg round) {
    const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(shifted),
                                        _mm256_castps_si256(round));
    const __m256i half = _mm256_srai_epi32(ni, 1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 first = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
    const __m256 second = _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_add_epi32(_mm256_sub_epi32(ni, half), bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, first), second);
  }
  static Reg Load(const float* x) { return _mm256_loadu_ps(x); }
  static void Store(float* y, Reg v) { _mm256_storeu_ps(y, v); }
  // The first `count` (< 8) lanes; the others read as 0 and are not written.
  static __m256i FirstLanes(int64_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Reg LoadFirst(const float* x, int64_t count) {
    return _mm256_maskload_ps(x, FirstLanes(count));
  }
  static void StoreFirst(float* y, int64_t count, Reg v) {
    _mm256_maskstore_ps(y, FirstLanes(count), v);
  }
};
#else
constexpr bool kAvx2Built = false;
#endif

#if defined(__AVX512F__)
constexpr bool kAvx512Built = true;
// The zero-masked forms of vminps and vscalefps with every lane set: GCC
// 12's unmasked ones start from an undefined vector, which -Wall reports as
// used uninitialized.
constexpr __mmask16 kAllLanes = 0xffff;

// Sixteen lanes of AVX-512F. p * 2^n is one vscalefps where the scalar code
// multiplies by 2^floor(n/2) and then by the rest: the first product is
// exact (p * 2^-93 is still normal), so both round p * 2^n once.
struct Vec16 {
  using Reg = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;

  static Reg Set(float v) { return _mm512_set1_ps(v); }
  static Reg Add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg Sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg Mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg Div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  static Reg Fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg Fnmadd(Reg a, Reg b, Reg c) { return _mm512_fnmadd_ps(a, b, c); }
  static Reg Fmsub(Reg a, Reg b, Reg c) { return _mm512_fmsub_ps(a, b, c); }
  static Reg Abs(Reg x) { return _mm512_abs_ps(x); }
  static Reg Min(Reg a, Reg b) { return _mm512_maskz_min_ps(kAllLanes, a, b); }
  static Mask Less(Reg a, Reg b) {
    return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ);
  }
  static Mask Greater(Reg a, Reg b) {
    return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ);
  }
  static Reg Select(Mask m, Reg if_set, Reg if_clear) {
    return _mm512_mask_blend_ps(m, if_clear, if_set);
  }
  static Reg ScaleByPowerOfTwo(Reg p, Reg n, Reg /*shifted*/, Reg /*round*/) {
    return _mm512_maskz_scalef_ps(kAllLanes, p, n);
  }
  static Reg Load(const float* x) { return _mm512_loadu_ps(x); }
  static void Store(float* y, Reg v) { _mm512_storeu_ps(y, v); }
  static __mmask16 FirstLanes(int64_t count) {
    return static_cast<__mmask16>((1u << count) - 1u);
  }
  static Reg LoadFirst(const float* x, int64_t count) {
    return _mm512_maskz_loadu_ps(FirstLanes(count), x);
  }
  static void StoreFirst(float* y, int64_t count, Reg v) {
    _mm512_mask_storeu_ps(y, FirstLanes(count), v);
  }
};
#else
constexpr bool kAvx512Built = false;
#endif

#if defined(__AVX2__) && defined(__FMA__)
// K vectors, each step of a computation applied to all K before the next:
// the steps of one vector form a chain of about 100 cycles of latency (a
// division, then 14 dependent multiply-adds), and K independent chains side
// by side keep the multiply-add units busy where one leaves them waiting
// (Gelu 0.74 -> 0.66 ns an element with K = 4 x 16 lanes, one Zen 4 core).
template <class V, int K>
using Lanes = typename V::Reg[K];

template <int K, class Step>
inline __attribute__((always_inline)) void Each(Step step) {
  for (int k = 0; k < K; ++k) step(k);
}

// detail::ExpCore of vector_math.h, operation for operation. Overwrites x
// with the result; lo is added to the reduced argument when kLo.
template <class V, int K, bool kLo>
inline __attribute__((always_inline)) void ExpCoreLanes(Lanes<V, K>& x,
                                                        const Lanes<V, K>& lo) {
  const typename V::Reg round = V::Set(12582912.0f);
  Lanes<V, K> shifted, n, r, p;
  Each<K>([&](int k) {
    shifted[k] = V::Fmadd(x[k], V::Set(1.44269504088896341f), round);
  });
  Each<K>([&](int k) { n[k] = V::Sub(shifted[k], round); });
  Each<K>([&](int k) { r[k] = V::Fnmadd(n[k], V::Set(0.693359375f), x[k]); });
  Each<K>(
      [&](int k) { r[k] = V::Fnmadd(n[k], V::Set(-2.12194440e-4f), r[k]); });
  if constexpr (kLo) Each<K>([&](int k) { r[k] = V::Add(r[k], lo[k]); });
  Each<K>([&](int k) { p[k] = V::Set(1.9875691500e-4f); });
  for (const float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                        1.6666665459e-1f, 5.0000001201e-1f}) {
    Each<K>([&](int k) { p[k] = V::Fmadd(p[k], r[k], V::Set(c)); });
  }
  Each<K>([&](int k) {
    const typename V::Reg e =
        V::Add(V::Fmadd(r[k], V::Mul(p[k], r[k]), r[k]), V::Set(1.0f));
    x[k] = V::ScaleByPowerOfTwo(e, n[k], shifted[k], round);
  });
}

// vmath::ExpF(x - shift): ExpCore, then 0 below -104 and inf above 89.
template <class V>
struct ExpShiftedLanes {
  typename V::Reg shift;
  template <int K>
  void operator()(Lanes<V, K>& v) const {
    Lanes<V, K> x;
    Each<K>([&](int k) { x[k] = V::Sub(v[k], shift); });
    Each<K>([&](int k) { v[k] = x[k]; });
    ExpCoreLanes<V, K, false>(v, x);
    Each<K>([&](int k) {
      v[k] = V::Select(V::Less(x[k], V::Set(-104.0f)), V::Set(0.0f), v[k]);
      v[k] = V::Select(V::Greater(x[k], V::Set(89.0f)),
                       V::Set(__builtin_inff()), v[k]);
    });
  }
};

// GeluF through vmath::ErfcF, operation for operation.
template <class V>
struct GeluLanes {
  template <int K>
  void operator()(Lanes<V, K>& x) const {
    const typename V::Reg one = V::Set(1.0f);
    Lanes<V, K> arg, t, u, p;
    Each<K>([&](int k) {
      arg[k] = V::Mul(x[k], V::Set(-0.70710678118654752440f));
    });
    // std::min(|arg|, 10.5) is (10.5 < |arg|) ? 10.5 : |arg|, as vminps
    // with 10.5 first: a NaN stays.
    Each<K>([&](int k) { t[k] = V::Min(V::Set(10.5f), V::Abs(arg[k])); });
    Each<K>(
        [&](int k) { u[k] = V::Div(one, V::Fmadd(V::Set(0.5f), t[k], one)); });
    Each<K>([&](int k) { p[k] = V::Set(0.17087277f); });
    for (const float c :
         {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f,
          0.09678418f, 0.37409196f, 1.00002368f, -1.26551223f}) {
      Each<K>([&](int k) { p[k] = V::Fmadd(p[k], u[k], V::Set(c)); });
    }
    // p - t^2 as sum + error (TwoSum), less t^2's rounding error.
    Lanes<V, K> sum, lo;
    Each<K>([&](int k) {
      const typename V::Reg t2_hi = V::Mul(t[k], t[k]);
      const typename V::Reg t2_lo = V::Fmsub(t[k], t[k], t2_hi);
      sum[k] = V::Sub(p[k], t2_hi);
      const typename V::Reg back = V::Sub(sum[k], p[k]);
      const typename V::Reg error =
          V::Add(V::Sub(p[k], V::Sub(sum[k], back)),
                 V::Sub(V::Sub(V::Set(0.0f), t2_hi), back));
      lo[k] = V::Sub(error, t2_lo);
    });
    ExpCoreLanes<V, K, true>(sum, lo);
    Each<K>([&](int k) {
      const typename V::Reg tail = V::Mul(u[k], sum[k]);
      const typename V::Reg erfc = V::Select(V::Less(arg[k], V::Set(0.0f)),
                                             V::Sub(V::Set(2.0f), tail), tail);
      x[k] = V::Mul(V::Mul(V::Set(0.5f), x[k]), erfc);
    });
  }
};

// y = f(x) over n floats: 4 vectors at a time, then one, then the tail
// under a mask. Every element goes through the same operations, so the
// bits do not depend on where in a row an element falls.
template <class V, class F>
inline __attribute__((always_inline)) void MapRow(const float* x, float* y,
                                                  int64_t n, const F& f) {
  constexpr int64_t kL = V::kLanes;
  // Chains side by side (Lanes, above). With AVX2's 16 registers four
  // chains spill, yet of 1 to 8 four ran Gelu fastest in rows of 128 (five
  // and six gained 7% in rows of 1,024 and lost 15% in rows of 128; one Zen
  // 3 core).
  constexpr int kC = 4;
  int64_t i = 0;
  for (; i + kC * kL <= n; i += kC * kL) {
    Lanes<V, kC> v;
    Each<kC>([&](int k) { v[k] = V::Load(x + i + kL * k); });
    f.template operator()<kC>(v);
    Each<kC>([&](int k) { V::Store(y + i + kL * k, v[k]); });
  }
  for (; i + kL <= n; i += kL) {
    Lanes<V, 1> v = {V::Load(x + i)};
    f.template operator()<1>(v);
    V::Store(y + i, v[0]);
  }
  if (i < n) {
    Lanes<V, 1> v = {V::LoadFirst(x + i, n - i)};
    f.template operator()<1>(v);
    V::StoreFirst(y + i, n - i, v[0]);
  }
}

// One loop over the rows, so that a row's vectors overlap the next's.
template <class V>
void GeluRowsOf(const float* x, int64_t ldx, float* y, int64_t ldy,
                int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    MapRow<V>(x + r * ldx, y + r * ldy, cols, GeluLanes<V>{});
  }
}

template <class V>
void ExpShiftedRowOf(const float* x, float shift, float* y, int64_t n) {
  MapRow<V>(x, y, n, ExpShiftedLanes<V>{V::Set(shift)});
}
#endif

bool CpuHasAvx512f() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") != 0;
}

bool CpuHasAvx2AndFma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0 &&
         __builtin_cpu_supports("fma") != 0;
}

MathRowsPath ChooseActivePath() {
  if (const char* env = std::getenv(kEnv)) {
    const std::optional<MathRowsPath> forced = ParseMathRowsPath(env);
    // A name that does not run fails Session::Create through
    // CheckMathRowsEnvironment; until then the CPU's choice stands.
    if (forced && MathRowsPathRuns(*forced)) return *forced;
  }
  for (const MathRowsPath path : {MathRowsPath::kAvx512, MathRowsPath::kAvx2}) {
    if (MathRowsPathRuns(path)) return path;
  }
  return MathRowsPath::kPortable;
}

}  // namespace

std::string_view MathRowsPathName(MathRowsPath path) {
  switch (path) {
    case MathRowsPath::kAvx512:
      return "avx512";
    case MathRowsPath::kAvx2:
      return "avx2";
    case MathRowsPath::kPortable:
      break;
  }
  return "portable";
}

std::optional<MathRowsPath> ParseMathRowsPath(std::string_view name) {
  for (const MathRowsPath path :
       {MathRowsPath::kPortable, MathRowsPath::kAvx2, MathRowsPath::kAvx512}) {
    if (name == MathRowsPathName(path)) return path;
  }
  return std::nullopt;
}

bool MathRowsPathRuns(MathRowsPath path) {
  switch (path) {
    case MathRowsPath::kAvx512:
      return kAvx512Built && CpuHasAvx512f();
    case MathRowsPath::kAvx2:
      return kAvx2Built && CpuHasAvx2AndFma();
    case MathRowsPath::kPortable:
      break;
  }
  return true;
}

MathRowsPath ActiveMathRowsPath() {
  static const MathRowsPath path = ChooseActivePath();
  return path;
}

std::string DescribeActiveMathRowsPath() {
  std::string name(MathRowsPathName(ActiveMathRowsPath()));
  const char* env = std::getenv(kEnv);
  if (env != nullptr && ParseMathRowsPath(env) &&
      MathRowsPathRuns(*ParseMathRowsPath(env))) {
    return name + " (" + kEnv + ")";
  }
  switch (ActiveMathRowsPath()) {
    case MathRowsPath::kAvx512:
      return name + " (per CPU: AVX-512F)";
    case MathRowsPath::kAvx2:
      return name + " (per CPU: AVX2 and FMA, no AVX-512)";
    case MathRowsPath::kPortable:
      break;
  }
  return name + " (per CPU: no AVX2 with FMA)";
}

Status CheckMathRowsEnvironment() {
  const char* env = std::getenv(kEnv);
  if (env == nullptr) return Status::OK();
  const std::optional<MathRowsPath> path = ParseMathRowsPath(env);
  if (!path) {
    return InvalidArgumentError(std::string(kEnv) + "=" + env +
                                " is not a row path (portable, avx2 or "
                                "avx512; unset it for the per-CPU choice, "
                                "docs/kernels.md)");
  }
  if (!MathRowsPathRuns(*path)) {
    return InvalidArgumentError(
        std::string(kEnv) + "=" + env + ": this build or CPU has no " +
        (*path == MathRowsPath::kAvx512 ? "AVX-512" : "AVX2 with FMA"));
  }
  return Status::OK();
}

void GeluRowsOn(MathRowsPath path, const float* x, int64_t ldx, float* y,
                int64_t ldy, int64_t rows, int64_t cols) {
#if defined(__AVX512F__)
  if (path == MathRowsPath::kAvx512) {
    GeluRowsOf<Vec16>(x, ldx, y, ldy, rows, cols);
    return;
  }
#endif
#if defined(__AVX2__) && defined(__FMA__)
  if (path == MathRowsPath::kAvx2) {
    GeluRowsOf<Vec8>(x, ldx, y, ldy, rows, cols);
    return;
  }
#endif
  (void)path;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * ldx;
    float* out = y + r * ldy;
    for (int64_t i = 0; i < cols; ++i) out[i] = GeluF(in[i]);
  }
}

void GeluRows(const float* x, int64_t ldx, float* y, int64_t ldy, int64_t rows,
              int64_t cols) {
  GeluRowsOn(ActiveMathRowsPath(), x, ldx, y, ldy, rows, cols);
}

void GeluRow(const float* x, float* y, int64_t n) {
  GeluRows(x, n, y, n, 1, n);
}

void ExpShiftedRowOn(MathRowsPath path, const float* x, float shift, float* y,
                     int64_t n) {
#if defined(__AVX512F__)
  if (path == MathRowsPath::kAvx512) {
    ExpShiftedRowOf<Vec16>(x, shift, y, n);
    return;
  }
#endif
#if defined(__AVX2__) && defined(__FMA__)
  if (path == MathRowsPath::kAvx2) {
    ExpShiftedRowOf<Vec8>(x, shift, y, n);
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
