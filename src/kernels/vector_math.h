// Float32 exp, log, tanh and erfc, and fixed-order lane reductions, written
// for the compiler's auto-vectoriser.
//
// Why not libm: glibc's expf/logf/tanhf/erfcf are scalar calls, and GCC only
// substitutes glibc's vector variants (libmvec) under -ffast-math, which would
// also let it reorder our sums. These functions are straight-line arithmetic,
// bit casts and selects (no branches, no calls, no float->int conversions), so
// a loop over them compiles to zmm/ymm code; docs/kernels.md shows the check.
// ExpCore and ErfcF name their multiply-adds (std::fma: one instruction where
// the CPU has FMA, libm's correctly rounded fmaf elsewhere), so that their
// bits do not depend on what a compiler contracts: math_rows.cc repeats them
// as intrinsics, and its tests compare against these from another TU.
//
// Contract: round-to-nearest (the default); results are a pure function of
// the input, so a kernel that maps every element through the same loop gets
// the same bits whatever the thread count. Accuracy (measured against a
// float64 reference in elementwise_test.cc, documented in docs/kernels.md):
// ExpF and LogF within 2 ulp, TanhF and ErfcF within a few ulp.
#ifndef WEFT_SRC_KERNELS_VECTOR_MATH_H_
#define WEFT_SRC_KERNELS_VECTOR_MATH_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace weft::internal::vmath {

// 2^n for an integer-valued n in [-126, 127], as a float bit pattern built
// from the integer held in the low bits of `rounded` (see ExpF).
inline float Pow2FromBits(uint32_t n_biased) {
  return std::bit_cast<float>(n_biased << 23);
}

namespace detail {

// exp(x + lo), lo added to the reduced argument when kLo (see ExpOfSum),
// for x (and x + lo) in [-170, 170]: there n stays in [-246, 246], so the
// two-halves scaling below is right; beyond, the bits are meaningless.
template <bool kLo>
inline float ExpCore(float x, float lo) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // ln2 split: hi has 9 bits.
  constexpr float kLn2Lo = -2.12194440e-4f;
  // 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits.
  constexpr float kRound = 12582912.0f;
  const float shifted = std::fma(x, kLog2e, kRound);
  const float n = shifted - kRound;
  float r = std::fma(-n, kLn2Hi, x);
  r = std::fma(-n, kLn2Lo, r);
  if constexpr (kLo) r += lo;
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p * r, r, r) + 1.0f;
  // n as a two's-complement integer in the low bits.
  const uint32_t ni =
      std::bit_cast<uint32_t>(shifted) - std::bit_cast<uint32_t>(kRound);
  const uint32_t half = static_cast<uint32_t>(static_cast<int32_t>(ni) >> 1);
  return p * Pow2FromBits(half + 127u) * Pow2FromBits(ni - half + 127u);
}

}  // namespace detail

// exp(x): x = n ln2 + r with |r| <= ln2/2, exp(r) by a degree-6 minimax
// polynomial (the Cephes expf coefficients), then scaled by 2^n in two
// halves so that results down to the smallest subnormal and up to overflow
// (inf) come out right without a branch. Below -104 exp(x) rounds to 0,
// above 89 to inf: those arguments are selected after, not clamped before,
// since GCC threads the constant arms of a clamp through the arithmetic
// after it and vectorises that as a dozen masked selects (Softmax's
// exponentials 21.9 -> 16.9 us over 512 rows of 128, one Zen 4 core; the
// same bits on every float). A NaN fails both comparisons and stays NaN.
inline float ExpF(float x) {
  const float e = detail::ExpCore<false>(x, 0.0f);
  const float low = x < -104.0f ? 0.0f : e;
  return x > 89.0f ? std::numeric_limits<float>::infinity() : low;
}

// exp(hi + lo) for an argument held as an unevaluated sum, |lo| at most
// about ulp(hi), hi in [-170, 170] (ErfcF's is in [-112, 0]): lo joins the
// reduced argument r (|r| <= ln2/2), where it is not lost as it would be
// in float(hi + lo). For a large |hi| that keeps the relative accuracy
// float(hi + lo) would cost (up to 4e-6 at |hi| = 110). No clamps, for the
// reason ExpF has none (ErfcF: Gelu 1.05 -> 0.87 ns an element).
inline float ExpOfSum(float hi, float lo) {
  return detail::ExpCore<true>(hi, lo);
}

// log(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by the Cephes
// logf polynomial in (m - 1). Subnormals are scaled up first; x < 0 and NaN
// give NaN, 0 gives -inf, inf gives inf.
inline float LogF(float x) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  const bool subnormal = x < 1.17549435e-38f;
  const float x_up = x * 8388608.0f;  // * 2^23
  const float scaled = subnormal ? x_up : x;
  const uint32_t bits = std::bit_cast<uint32_t>(scaled);
  // The biased exponent as a float without an int->float conversion (which
  // GCC treats as possibly trapping and will not vectorise under a select):
  // placed in the mantissa of 2^23, then 2^23 subtracted.
  const float biased =
      std::bit_cast<float>(0x4b000000u | ((bits >> 23) & 0xffu)) - 8388608.0f;
  // Exponent relative to m in [0.5, 1), then folded to [sqrt(1/2), sqrt 2).
  float fe = biased - (subnormal ? 149.0f : 126.0f);
  float m = std::bit_cast<float>((bits & 0x807fffffu) | 0x3f000000u);
  const bool low = m < 0.707106781186547524f;
  // Both arms computed up front: with -ftrapping-math GCC will not
  // if-convert a select whose arms are conditional float operations.
  const float fe_low = fe - 1.0f, m_low = m + m - 1.0f, m_high = m - 1.0f;
  fe = low ? fe_low : fe;
  m = low ? m_low : m_high;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y += fe * -2.12194440e-4f;
  y -= 0.5f * z;
  float result = (m + y) + fe * 0.693359375f;
  result = x == kInf ? kInf : result;
  result = x == 0.0f ? -kInf : result;
  result = !(x >= 0.0f) ? kNaN : result;  // x < 0 or NaN; not ||, a branch.
  return result;
}

// tanh(x): an odd polynomial below |x| = 0.625 (Cephes tanhf), else
// 1 - 2 / (exp(2|x|) + 1) with x's sign; both are computed and one selected.
inline float TanhF(float x) {
  const float ax = std::abs(x);
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float large_abs = 1.0f - 2.0f / (ExpF(2.0f * ax) + 1.0f);
  const float large = std::copysign(large_abs, x);
  return ax < 0.625f ? small : large;  // NaN takes `large`: NaN.
}

// erfc(x) with relative error about 1e-7 over the whole line: for t = |x|,
// erfc(t) = u exp(-t^2 + P(u)) with u = 1 / (1 + t/2) (the Chebyshev fit of
// Numerical Recipes' erfcc), and erfc(-t) = 2 - erfc(t). t^2 is kept exact
// as hi + lo (an FMA gives lo), because exp turns absolute error in its
// argument into relative error in its result.
inline float ErfcF(float x) {
  // erfc(10.5) is below the smallest subnormal; the clamp keeps t^2 finite
  // (and the exponential's argument in [-112, 0]). A NaN passes through
  // std::min unchanged (one min instruction).
  const float t = std::min(std::abs(x), 10.5f);
  const float u = 1.0f / std::fma(0.5f, t, 1.0f);
  float p = 0.17087277f;
  p = std::fma(p, u, -0.82215223f);
  p = std::fma(p, u, 1.48851587f);
  p = std::fma(p, u, -1.13520398f);
  p = std::fma(p, u, 0.27886807f);
  p = std::fma(p, u, -0.18628806f);
  p = std::fma(p, u, 0.09678418f);
  p = std::fma(p, u, 0.37409196f);
  p = std::fma(p, u, 1.00002368f);
  p = std::fma(p, u, -1.26551223f);
  const float t2_hi = t * t;
  const float t2_lo = std::fma(t, t, -t2_hi);
  // p - t^2 exactly as sum + error (TwoSum of p and -t2_hi), less t2_lo:
  // one exp of the argument as an unevaluated sum, since rounding it (up to
  // ~110) to float would lose up to 4e-6 of relative accuracy.
  const float sum = p - t2_hi;
  const float back = sum - p;
  const float error = (p - (sum - back)) + (-t2_hi - back);
  const float tail = u * ExpOfSum(sum, error - t2_lo);
  return x < 0.0f ? 2.0f - tail : tail;
}

// exp for a kernel's element type: ExpF for float32, libm for float64.
template <class T>
T Exp(T x) {
  if constexpr (std::is_same_v<T, float>) return ExpF(x);
  return std::exp(x);
}

// max(acc, v), where a NaN on either side wins (as ReduceMax and ONNX's
// Max propagate NaN).
template <class T>
T MaxPropagatingNaN(T acc, T v) {
  // `|`, not `||`: no branch, so that lanes of it vectorise (compare, blend).
  return ((v > acc) | (v != v)) ? v : acc;
}

// Reduces load(0..n-1) with `combine`, keeping kLanes independent partial
// results (lane j takes elements j, j + kLanes, ...) that are combined in
// lane order, then the tail in index order. The order depends on n only,
// and the lanes are independent, so the loop vectorises without the
// reassociation that -ffast-math would allow.
template <class A, int kLanes = 16, class Load, class Combine>
A LaneReduce(int64_t n, A identity, Load load, Combine combine) {
  A lane[kLanes];
  for (int j = 0; j < kLanes; ++j) lane[j] = identity;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] = combine(lane[j], load(i + j));
  }
  A acc = identity;
  for (int j = 0; j < kLanes; ++j) acc = combine(acc, lane[j]);
  for (; i < n; ++i) acc = combine(acc, load(i));
  return acc;
}

// The largest of x[0..n-1] (n >= 1), for callers through which a NaN
// propagates anyway (Softmax: exp(NaN - max) makes the sum, and so every
// output, NaN): whether a NaN in x comes out here is left unspecified. The
// lanes are a GCC/Clang vector, not LaneReduce's array: GCC does not turn
// sixteen selects into one max instruction (it leaves sixteen scalar ones,
// and Softmax spent a third of its time in its row maximum). The maximum
// does not depend on the order it is taken in, so any lane count gives the
// same value.
template <class T>
T LaneMax(const T* x, int64_t n) {
  constexpr int kLanes = 64 / static_cast<int>(sizeof(T));
  typedef T Lanes __attribute__((vector_size(kLanes * sizeof(T))));
  Lanes lane;
  for (int j = 0; j < kLanes; ++j) lane[j] = x[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Lanes v;
    std::memcpy(&v, x + i, sizeof v);
    lane = lane < v ? v : lane;
  }
  T max = x[0];
  for (int j = 0; j < kLanes; ++j) max = max < lane[j] ? lane[j] : max;
  for (; i < n; ++i) max = max < x[i] ? x[i] : max;
  return max;
}

// The maximum of x[0..n-1] (n >= 1); NaN if any element is NaN: LaneMax,
// and a second vectorised pass for whether any element is NaN (a single
// select that also lets NaN win compiles to a branch per element).
template <class T>
T MaxOf(const T* x, int64_t n) {
  const T max = LaneMax(x, n);
  const int any_nan = LaneReduce<int>(
      n, 0, [x](int64_t i) { return static_cast<int>(x[i] != x[i]); },
      [](int a, int b) { return a | b; });
  return any_nan != 0 ? std::numeric_limits<T>::quiet_NaN() : max;
}

}  // namespace weft::internal::vmath

#endif  // WEFT_SRC_KERNELS_VECTOR_MATH_H_
