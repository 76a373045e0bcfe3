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

// K vectors of 16 lanes, each step of a computation applied to all K before
// the next: the steps of one vector form a chain of about 100 cycles of
// latency (a division, then 14 dependent multiply-adds), and K independent
// chains side by side keep the multiply-add units busy where one leaves
// them waiting (Gelu 0.74 -> 0.66 ns an element with K = 4, one Zen 4 core).
template <int K>
using Lanes = __m512[K];

template <int K, class Step>
inline __attribute__((always_inline)) void Each(Step step) {
  for (int k = 0; k < K; ++k) step(k);
}

// detail::ExpCore of vector_math.h, operation for operation: the
// multiply-adds it names, and p * 2^n as one vscalefps where the source
// multiplies by 2^floor(n/2) and then by the rest: the first product is
// exact (p * 2^-93 is still normal), so both round p * 2^n once. Overwrites
// x with the result; lo is added to the reduced argument when kLo.
template <int K, bool kLo>
inline __attribute__((always_inline)) void ExpCoreLanes(Lanes<K>& x,
                                                        const Lanes<K>& lo) {
  const __m512 round = _mm512_set1_ps(12582912.0f);
  Lanes<K> n, r, p;
  Each<K>([&](int k) {
    n[k] = _mm512_sub_ps(
        _mm512_fmadd_ps(x[k], _mm512_set1_ps(1.44269504088896341f), round),
        round);
  });
  Each<K>([&](int k) {
    r[k] = _mm512_fnmadd_ps(n[k], _mm512_set1_ps(0.693359375f), x[k]);
  });
  Each<K>([&](int k) {
    r[k] = _mm512_fnmadd_ps(n[k], _mm512_set1_ps(-2.12194440e-4f), r[k]);
  });
  if constexpr (kLo) Each<K>([&](int k) { r[k] = _mm512_add_ps(r[k], lo[k]); });
  Each<K>([&](int k) { p[k] = _mm512_set1_ps(1.9875691500e-4f); });
  for (const float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                        1.6666665459e-1f, 5.0000001201e-1f}) {
    Each<K>(
        [&](int k) { p[k] = _mm512_fmadd_ps(p[k], r[k], _mm512_set1_ps(c)); });
  }
  Each<K>([&](int k) {
    const __m512 e =
        _mm512_add_ps(_mm512_fmadd_ps(r[k], _mm512_mul_ps(p[k], r[k]), r[k]),
                      _mm512_set1_ps(1.0f));
    x[k] = _mm512_maskz_scalef_ps(kAllLanes, e, n[k]);
  });
}

// vmath::ExpF(x - shift): ExpCore, then 0 below -104 and inf above 89.
struct ExpShiftedLanes {
  __m512 shift;
  template <int K>
  void operator()(Lanes<K>& v) const {
    Lanes<K> x;
    Each<K>([&](int k) { x[k] = _mm512_sub_ps(v[k], shift); });
    Each<K>([&](int k) { v[k] = x[k]; });
    ExpCoreLanes<K, false>(v, x);
    Each<K>([&](int k) {
      const __mmask16 low =
          _mm512_cmp_ps_mask(x[k], _mm512_set1_ps(-104.0f), _CMP_LT_OQ);
      const __mmask16 high =
          _mm512_cmp_ps_mask(x[k], _mm512_set1_ps(89.0f), _CMP_GT_OQ);
      v[k] = _mm512_mask_mov_ps(v[k], low, _mm512_setzero_ps());
      v[k] = _mm512_mask_mov_ps(v[k], high, _mm512_set1_ps(__builtin_inff()));
    });
  }
};

// GeluF through vmath::ErfcF, operation for operation.
struct GeluLanes {
  template <int K>
  void operator()(Lanes<K>& x) const {
    const __m512 one = _mm512_set1_ps(1.0f);
    Lanes<K> arg, t, u, p;
    Each<K>([&](int k) {
      arg[k] = _mm512_mul_ps(x[k], _mm512_set1_ps(-0.70710678118654752440f));
    });
    // std::min(|arg|, 10.5) is (10.5 < |arg|) ? 10.5 : |arg|, as vminps
    // with 10.5 first: a NaN stays.
    Each<K>([&](int k) {
      t[k] = _mm512_maskz_min_ps(kAllLanes, _mm512_set1_ps(10.5f),
                                 _mm512_abs_ps(arg[k]));
    });
    Each<K>([&](int k) {
      u[k] =
          _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.5f), t[k], one));
    });
    Each<K>([&](int k) { p[k] = _mm512_set1_ps(0.17087277f); });
    for (const float c :
         {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f,
          0.09678418f, 0.37409196f, 1.00002368f, -1.26551223f}) {
      Each<K>([&](int k) {
        p[k] = _mm512_fmadd_ps(p[k], u[k], _mm512_set1_ps(c));
      });
    }
    // p - t^2 as sum + error (TwoSum), less t^2's rounding error.
    Lanes<K> sum, lo;
    Each<K>([&](int k) {
      const __m512 t2_hi = _mm512_mul_ps(t[k], t[k]);
      const __m512 t2_lo = _mm512_fmsub_ps(t[k], t[k], t2_hi);
      sum[k] = _mm512_sub_ps(p[k], t2_hi);
      const __m512 back = _mm512_sub_ps(sum[k], p[k]);
      const __m512 error = _mm512_add_ps(
          _mm512_sub_ps(p[k], _mm512_sub_ps(sum[k], back)),
          _mm512_sub_ps(_mm512_sub_ps(_mm512_setzero_ps(), t2_hi), back));
      lo[k] = _mm512_sub_ps(error, t2_lo);
    });
    ExpCoreLanes<K, true>(sum, lo);
    Each<K>([&](int k) {
      const __m512 tail = _mm512_mul_ps(u[k], sum[k]);
      const __mmask16 negative =
          _mm512_cmp_ps_mask(arg[k], _mm512_setzero_ps(), _CMP_LT_OQ);
      const __m512 erfc =
          _mm512_mask_sub_ps(tail, negative, _mm512_set1_ps(2.0f), tail);
      x[k] = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x[k]), erfc);
    });
  }
};

// y = f(x) over n floats: 4 vectors at a time, then one, then the tail
// under a mask. Every element goes through the same operations, so the
// bits do not depend on where in a row an element falls.
template <class F>
inline __attribute__((always_inline)) void MapRow(const float* x, float* y,
                                                  int64_t n, const F& f) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    Lanes<4> v;
    Each<4>([&](int k) { v[k] = _mm512_loadu_ps(x + i + 16 * k); });
    f.template operator()<4>(v);
    Each<4>([&](int k) { _mm512_storeu_ps(y + i + 16 * k, v[k]); });
  }
  for (; i < n; i += 16) {
    const auto mask =
        n - i >= 16 ? kAllLanes : static_cast<__mmask16>((1u << (n - i)) - 1u);
    Lanes<1> v = {_mm512_maskz_loadu_ps(mask, x + i)};
    f.template operator()<1>(v);
    _mm512_mask_storeu_ps(y + i, mask, v[0]);
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

void GeluRowsOn(MathRowsPath path, const float* x, int64_t ldx, float* y,
                int64_t ldy, int64_t rows, int64_t cols) {
#if defined(__AVX512F__)
  if (path == MathRowsPath::kAvx512) {
    // One loop over the rows, so that a row's vectors overlap the next's.
    for (int64_t r = 0; r < rows; ++r) {
      MapRow(x + r * ldx, y + r * ldy, cols, GeluLanes{});
    }
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
    MapRow(x, y, n, ExpShiftedLanes{_mm512_set1_ps(shift)});
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
