#include "kernels/int8_direct_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/saturate_bytes.h"

namespace weft::internal {
namespace {

// Where quad q of tap t of vector v sits in a block of `vectors` vectors.
inline int64_t WeightOffset(int64_t t, int64_t q, int64_t v, int64_t quads,
                            int64_t vectors) {
  return ((t * quads + q) * vectors + v) * kDirectLanes * 4;
}

// Pixel p's four input bytes of quad q at tap offset `off`, as one word.
inline int32_t Quad(const uint8_t* pixel, int64_t off, int64_t q) {
  int32_t quad;
  std::memcpy(&quad, pixel + off + q * 4, 4);
  return quad;
}

void GenericTile(const int8_t* w, int64_t vectors, int64_t taps, int64_t quads,
                 const uint8_t* const* px, int64_t count,
                 const int64_t* tap_offsets, int32_t* acc) {
  const int64_t lanes = vectors * kDirectLanes;
  for (int64_t p = 0; p < count; ++p) {
    int32_t* out = acc + p * kDirectBlock;
    std::fill(out, out + lanes, 0);
    for (int64_t t = 0; t < taps; ++t) {
      const uint8_t* x = px[p] + tap_offsets[t];
      for (int64_t q = 0; q < quads; ++q) {
        const int8_t* wq = w + WeightOffset(t, q, 0, quads, vectors);
        for (int64_t j = 0; j < lanes; ++j) {
          int32_t sum = 0;
          for (int64_t b = 0; b < 4; ++b) {
            // The weights are signed: their values, not their bit patterns.
            // NOLINTNEXTLINE(bugprone-signed-char-misuse)
            sum += static_cast<int32_t>(wq[j * 4 + b]) * x[q * 4 + b];
          }
          out[j] += sum;
        }
      }
    }
  }
}

// GCC 12 warns that the AVX-512 conversion intrinsics read an
// "uninitialized" value: their own _mm512_undefined_* operand, unused.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The lanes of `mask` of sums + offset, requantized into dst: the scalar
// formula's operations lane by lane (the conversion rounds to nearest as a
// cast does, roundscale is nearbyint), NaN lanes zeroed after the clamp
// (max(NaN, low) would be low).
template <class Q>
__attribute__((target("avx512f,avx512vl,avx512bw"), always_inline)) inline void
RequantizeVector(__m512i sums, __m512i offset, __m512 multiplier, __m512 zero,
                 __mmask16 mask, Q* dst) {
  constexpr float lo = std::numeric_limits<Q>::min();
  constexpr float hi = std::numeric_limits<Q>::max();
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(sums, offset)),
                           multiplier);
  v = _mm512_add_ps(
      _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
      zero);
  const __mmask16 number = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  const __m512i q = _mm512_maskz_cvttps_epi32(
      number,
      _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(lo)), _mm512_set1_ps(hi)));
  _mm_mask_storeu_epi8(dst, mask, _mm512_cvtepi32_epi8(q));
}

// The int32 values RequantizeVectorFinite saturates to 8 bits, for a
// finite multiplier: the product is clamped to +-2^24 (beyond which both
// forms saturate), rounded to an int32 as nearbyint rounds, and the zero
// point added in int32 (exact; the float sum is exact too wherever the
// result does not saturate). The clamp is one vrangeps: the smaller
// magnitude of v and 2^24, with v's sign.
__attribute__((target("avx512f,avx512vl,avx512dq"),
               always_inline)) inline __m512i
RequantizedInt32(__m512i sums, __m512i offset, __m512 multiplier,
                 __m512i zero) {
  constexpr float kBound = 16777216.0f;  // 2^24
  constexpr int kMinMagnitudeSignOfFirst = 0x02;
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(sums, offset)),
                           multiplier);
  v = _mm512_range_ps(v, _mm512_set1_ps(kBound), kMinMagnitudeSignOfFirst);
  return _mm512_add_epi32(_mm512_cvt_roundps_epi32(
                              v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                          zero);
}

// RequantizeVector where the multiplier is finite (no lane can be NaN),
// with fewer operations and the same bits: RequantizedInt32, then the
// conversion to 8 bits saturates as the clamp does.
template <class Q>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"),
               always_inline)) inline void
RequantizeVectorFinite(__m512i sums, __m512i offset, __m512 multiplier,
                       __m512i zero, __mmask16 mask, Q* dst) {
  __m512i q = RequantizedInt32(sums, offset, multiplier, zero);
  if constexpr (std::is_same_v<Q, uint8_t>) {
    q = _mm512_max_epi32(q, _mm512_setzero_si512());
    _mm512_mask_cvtusepi32_storeu_epi8(dst, mask, q);
  } else {
    _mm512_mask_cvtsepi32_storeu_epi8(dst, mask, q);
  }
}

inline __mmask16 LaneMask(int64_t lanes) {
  return static_cast<__mmask16>(lanes >= 16 ? 0xFFFF : (1u << lanes) - 1);
}

// A tile's P pixels x V vectors of sums (out.offset already in them)
// requantized to 8 bits where the multiplier is finite: each pixel's V vectors
// (16 V consecutive channels from oc0) saturated together by SaturateFour and
// stored as one masked 64-byte row, the bits of RequantizeVectorFinite vector
// by vector.
template <int V, class Q, int P>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"),
               always_inline)) inline void
StoreRequantizedTile(const __m512i (&c)[P][V], int64_t count, int64_t oc0,
                     const RequantizedOutput& out) {
  static_assert(V >= 1 && V <= 4);
  const int64_t channels = std::min<int64_t>(16 * V, out.m - oc0);
  const __mmask64 mask =
      channels >= 64 ? ~__mmask64{0} : (__mmask64{1} << channels) - 1;
  const __m512i zero = _mm512_set1_epi32(static_cast<int32_t>(out.zero));
  __m512 multiplier[V];
  for (int v = 0; v < V; ++v) {
    const int64_t first = oc0 + v * kDirectLanes;
    const __mmask16 lanes = first < out.m ? LaneMask(out.m - first) : 0;
    multiplier[v] = _mm512_maskz_loadu_ps(lanes, out.multiplier + first);
  }
  Q* y = static_cast<Q*>(out.y) + oc0;
  for (int p = 0; p < P && p < count; ++p) {
    __m512i q[4] = {};
    for (int v = 0; v < V; ++v) {
      q[v] = RequantizedInt32(c[p][v], _mm512_setzero_si512(), multiplier[v],
                              zero);
    }
    _mm512_mask_storeu_epi8(y + p * out.m, mask,
                            SaturateFour<Q>(q[0], q[1], q[2], q[3]));
  }
}

// P pixels x V vectors of 16 channels: P V accumulators, V weight loads
// and P broadcasts per quad. Pixels past `count` repeat the first
// (computed, never stored). The sums go to acc (Q void), or plus
// out.offset as int32 rows (Q int32_t), as float (Q float), or
// requantized (Q uint8_t or int8_t) to out, channels [oc0, oc0 + 16 V)
// below out.m.
template <int V, class Q, int P = kDirectPixels>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni"))) void
VnniTile(const int8_t* w, int64_t taps, int64_t quads,
         const uint8_t* const* pixels, int64_t count,
         const int64_t* tap_offsets, int32_t* acc, int64_t oc0,
         const RequantizedOutput* out) {
  const uint8_t* px[P];
  for (int p = 0; p < P; ++p) px[p] = pixels[p < count ? p : 0];
  // The sums start from out's per-channel offsets where there is an out
  // (int32 addition wraps alike in either order): one add fewer per
  // output vector in the epilogue.
  __m512i c[P][V];
  for (int v = 0; v < V; ++v) {
    __m512i start = _mm512_setzero_si512();
    if constexpr (!std::is_void_v<Q>) {
      const int64_t first = oc0 + v * kDirectLanes;
      const __mmask16 lanes = first < out->m ? LaneMask(out->m - first) : 0;
      start = _mm512_maskz_loadu_epi32(lanes, out->offset + first);
    }
    for (int p = 0; p < P; ++p) c[p][v] = start;
  }
  for (int64_t t = 0; t < taps; ++t) {
    const int64_t off = tap_offsets[t];
    const int8_t* wt = w + WeightOffset(t, 0, 0, quads, V);
    for (int64_t q = 0; q < quads; ++q) {
      __m512i wv[V];
      for (int v = 0; v < V; ++v) {
        wv[v] = _mm512_loadu_si512(wt + (q * V + v) * kDirectLanes * 4);
      }
      for (int p = 0; p < P; ++p) {
        const __m512i x = _mm512_set1_epi32(Quad(px[p], off, q));
        for (int v = 0; v < V; ++v) {
          c[p][v] = _mm512_dpbusd_epi32(c[p][v], x, wv[v]);
        }
      }
    }
  }
  if constexpr (std::is_void_v<Q>) {
    for (int p = 0; p < P && p < count; ++p) {
      for (int v = 0; v < V; ++v) {
        _mm512_storeu_si512(acc + p * kDirectBlock + v * kDirectLanes, c[p][v]);
      }
    }
  } else {
    if constexpr (sizeof(Q) == 1) {
      if (out->finite) {
        StoreRequantizedTile<V, Q, P>(c, count, oc0, *out);
        return;
      }
    }
    // Per vector of channels: the lanes below out->m and their offsets, then
    // each pixel's outputs as Q says (int32 sums, float, or 8 bits).
    const __m512 zero = _mm512_set1_ps(out->zero);
    for (int v = 0; v < V; ++v) {
      const int64_t first = oc0 + v * kDirectLanes;
      if (first >= out->m) break;
      const __mmask16 mask = LaneMask(out->m - first);
      if constexpr (std::is_same_v<Q, int32_t>) {
        int32_t* y = static_cast<int32_t*>(out->y) + first;
        for (int p = 0; p < P && p < count; ++p) {
          _mm512_mask_storeu_epi32(y + p * out->ldy, mask, c[p][v]);
        }
        continue;
      }
      const __m512 multiplier =
          _mm512_maskz_loadu_ps(mask, out->multiplier + first);
      if constexpr (std::is_same_v<Q, float>) {
        float* y = static_cast<float*>(out->y) + first;
        const __m512 bias = out->bias == nullptr ? _mm512_setzero_ps()
                                                 : _mm512_maskz_loadu_ps(
                                                       mask, out->bias + first);
        for (int p = 0; p < P && p < count; ++p) {
          __m512 value = _mm512_mul_ps(_mm512_cvtepi32_ps(c[p][v]), multiplier);
          // Adding +0 where there is no bias would turn a -0 product into
          // +0: skipped.
          if (out->bias != nullptr) value = _mm512_add_ps(value, bias);
          _mm512_mask_storeu_ps(y + p * out->ldy, mask, value);
        }
      } else {
        Q* y = static_cast<Q*>(out->y) + first;
        for (int p = 0; p < P && p < count; ++p) {
          RequantizeVector(c[p][v], _mm512_setzero_si512(), multiplier, zero,
                           mask, y + p * out->m);
        }
      }
    }
  }
}

// N pixels' sums of one vector of channels (mask), requantized into y
// (pixel i at y + i * c).
template <int N, class Q>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"),
               always_inline)) inline void
RequantizePixels(const __m512i (&sum)[N], __m512i offset, __m512 multiplier,
                 __m512 zero, __mmask16 mask, bool finite, int64_t c, Q* y) {
  const __m512i zero_int = _mm512_cvtps_epi32(zero);
  if constexpr (N == 4) {
    if (finite) {  // Four pixels saturated together, a 128-bit lane each.
      const __m512i bytes = SaturateFour<Q>(
          RequantizedInt32(sum[0], offset, multiplier, zero_int),
          RequantizedInt32(sum[1], offset, multiplier, zero_int),
          RequantizedInt32(sum[2], offset, multiplier, zero_int),
          RequantizedInt32(sum[3], offset, multiplier, zero_int));
      _mm_mask_storeu_epi8(y, mask, _mm512_castsi512_si128(bytes));
      _mm_mask_storeu_epi8(y + c, mask, _mm512_extracti32x4_epi32(bytes, 1));
      _mm_mask_storeu_epi8(y + 2 * c, mask,
                           _mm512_extracti32x4_epi32(bytes, 2));
      _mm_mask_storeu_epi8(y + 3 * c, mask,
                           _mm512_extracti32x4_epi32(bytes, 3));
      return;
    }
  }
  for (int p = 0; p < N; ++p) {
    if (finite) {
      RequantizeVectorFinite(sum[p], offset, multiplier, zero_int, mask,
                             y + p * c);
    } else {
      RequantizeVector(sum[p], offset, multiplier, zero, mask, y + p * c);
    }
  }
}

// Depthwise windows, as DepthwiseRowAvx512 reads them: Sums<N>(i, ch, c,
// mask, sum) sets sum[p] to the exact int32 sums of pixel i + p over its
// taps, for the vector of channels from ch (lanes in mask) of C = c. Each
// product is one vpdpwssd: a lane holds the input byte zero-extended and
// the weight sign-extended, so the low 16-bit halves multiply (x * w, exact
// in int32) and the high halves give x's 0 times whatever; the lane's sum
// wraps as vpmulld + vpaddd would, at half their instructions. Each weight
// vector is loaded once for the N pixels.

// Taps anywhere: pixel i's tap t at x + i * pixel_step + tap_offsets[t],
// channel c's weight at w[t * C + c].
struct TapWindow {
  const uint8_t* x;
  int64_t pixel_step;
  const int64_t* tap_offsets;
  int64_t taps;
  const int32_t* w;

  template <int N>
  __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni"),
                 always_inline)) inline void
  Sums(int64_t i, int64_t ch, int64_t c, __mmask16 mask,
       __m512i (&sum)[N]) const {
    for (int p = 0; p < N; ++p) sum[p] = _mm512_setzero_si512();
    const uint8_t* first = x + i * pixel_step + ch;
    for (int64_t t = 0; t < taps; ++t) {
      const __m512i wv = _mm512_maskz_loadu_epi32(mask, w + t * c + ch);
      const uint8_t* xt = first + tap_offsets[t];
      for (int p = 0; p < N; ++p) {
        const __m512i xv = _mm512_cvtepu8_epi32(
            _mm_maskz_loadu_epi8(mask, xt + p * pixel_step));
        sum[p] = _mm512_dpwssd_epi32(sum[p], xv, wv);
      }
    }
  }
};

// A DepthwiseGrid of KW columns at stride S: each kernel row's (N - 1) * S
// + KW input columns are loaded once and shared by the N pixels whose
// windows overlap there (a stride-1 3 x 3 window loads 18 vectors for 4
// pixels, not 36). The taps in TapWindow's order.
template <int S, int KW>
struct GridWindow {
  const uint8_t* x;
  int64_t row_step;
  int64_t kh;
  const int32_t* w;

  template <int N>
  __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni"),
                 always_inline)) inline void
  Sums(int64_t i, int64_t ch, int64_t c, __mmask16 mask,
       __m512i (&sum)[N]) const {
    constexpr int kColumns = (N - 1) * S + KW;
    for (int p = 0; p < N; ++p) sum[p] = _mm512_setzero_si512();
    const uint8_t* first = x + i * S * c + ch;
    for (int64_t ky = 0; ky < kh; ++ky) {
      const uint8_t* row = first + ky * row_step;
      __m512i column[kColumns];
      for (int j = 0; j < kColumns; ++j) {
        column[j] =
            _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mask, row + j * c));
      }
      for (int kx = 0; kx < KW; ++kx) {
        const __m512i wv =
            _mm512_maskz_loadu_epi32(mask, w + (ky * KW + kx) * c + ch);
        for (int p = 0; p < N; ++p) {
          sum[p] = _mm512_dpwssd_epi32(sum[p], column[p * S + kx], wv);
        }
      }
    }
  }
};

// `count` depthwise pixels of `window`, 16 channels a vector, four pixels
// at a time, requantized into out (pixel i at out.y + i * C).
template <class Q, class Window>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni"))) void
DepthwiseRowAvx512(const Window& window, int64_t count,
                   const RequantizedOutput& out, int64_t first_channel = 0) {
  constexpr int kPixels = 4;
  const int64_t c = out.m;
  const __m512 zero = _mm512_set1_ps(out.zero);
  Q* y = static_cast<Q*>(out.y);
  for (int64_t ch = first_channel; ch < c; ch += kDirectLanes) {
    const __mmask16 mask = LaneMask(c - ch);
    const __m512i offset = _mm512_maskz_loadu_epi32(mask, out.offset + ch);
    const __m512 multiplier = _mm512_maskz_loadu_ps(mask, out.multiplier + ch);
    int64_t i = 0;
    for (; i + kPixels <= count; i += kPixels) {
      __m512i sum[kPixels];
      window.template Sums<kPixels>(i, ch, c, mask, sum);
      RequantizePixels<kPixels>(sum, offset, multiplier, zero, mask, out.finite,
                                c, y + i * c + ch);
    }
    for (; i < count; ++i) {
      __m512i sum[1];
      window.template Sums<1>(i, ch, c, mask, sum);
      RequantizePixels<1>(sum, offset, multiplier, zero, mask, out.finite, c,
                          y + i * c + ch);
    }
  }
}

// Calls run(std::integral_constant<int, S>, std::integral_constant<int,
// KW>) for the window widths and strides the grid kernels are compiled for
// (3 and 5 columns, stride 1 or 2: MobileNet's and EfficientNet's); false
// for others.
template <class Run>
bool WithGridShape(const DepthwiseGrid& grid, Run run) {
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  using Three = std::integral_constant<int, 3>;
  using Five = std::integral_constant<int, 5>;
  const bool stride1 = grid.stride == 1, stride2 = grid.stride == 2;
  if (grid.kw == 3 && stride1) {
    run(One{}, Three{});
  } else if (grid.kw == 3 && stride2) {
    run(Two{}, Three{});
  } else if (grid.kw == 5 && stride1) {
    run(One{}, Five{});
  } else if (grid.kw == 5 && stride2) {
    run(Two{}, Five{});
  } else {
    return false;
  }
  return true;
}

// DepthwiseRowAvx512 over a DepthwiseGrid of a shape WithGridShape takes.
template <class Q>
bool DepthwiseGridRowAny(const uint8_t* x, const DepthwiseGrid& grid,
                         int64_t count, const int32_t* w,
                         const RequantizedOutput& out) {
  return WithGridShape(grid, [&](auto s, auto kw) {
    DepthwiseRowAvx512<Q>(
        GridWindow<decltype(s)::value, decltype(kw)::value>{x, grid.row_step,
                                                            grid.kh, w},
        count, out);
  });
}
// The byte form of a depthwise window (PackDepthwiseQuads): one vpdpbusd
// multiplies four window rows of 16 channels at a time. Input rows come in
// as 64 channels each; two rounds of in-lane unpacks (bytes, then 16-bit
// pairs) turn four rows into four vectors whose 32-bit lanes hold one
// channel's four rows, in the channel order PackDepthwiseQuads gives the
// weights (vector q, lane 4 L + d: channel 16 L + 4 q + d). The packs that
// saturate the outputs to 8 bits work within 128-bit lanes too, and put
// that order back: the bytes are stored as they are.

constexpr int64_t kQuadChannels = 64;  // channels per block
constexpr int64_t kQuadRows = 4;       // window rows per vpdpbusd

// Four vectors of 16 per-channel values (channels 16 k + lane in vector
// k) put in the byte form's channel order: a 4 x 4 transpose of 128-bit
// blocks.
__attribute__((target("avx512f,avx512vl"), always_inline)) inline void
QuadOrder(__m512i (&v)[4]) {
  const __m512i t0 = _mm512_shuffle_i32x4(v[0], v[1], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i t1 = _mm512_shuffle_i32x4(v[0], v[1], _MM_SHUFFLE(3, 2, 3, 2));
  const __m512i t2 = _mm512_shuffle_i32x4(v[2], v[3], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i t3 = _mm512_shuffle_i32x4(v[2], v[3], _MM_SHUFFLE(3, 2, 3, 2));
  v[0] = _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(2, 0, 2, 0));
  v[1] = _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(3, 1, 3, 1));
  v[2] = _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(2, 0, 2, 0));
  v[3] = _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(3, 1, 3, 1));
}

// Rows [0, rows) of a group at `at` (row r at at + r * row_step; the rest
// 0), 64 channels (mask), as four vectors of one channel's four rows.
__attribute__((target("avx512f,avx512vl,avx512bw"), always_inline)) inline void
InterleavedRows(const uint8_t* at, int64_t row_step, int64_t rows,
                __mmask64 mask, __m512i (&v)[4]) {
  __m512i r[kQuadRows];
  for (int k = 0; k < kQuadRows; ++k) {
    r[k] = k < rows ? _mm512_maskz_loadu_epi8(mask, at + k * row_step)
                    : _mm512_setzero_si512();
  }
  const __m512i lo01 = _mm512_unpacklo_epi8(r[0], r[1]);
  const __m512i hi01 = _mm512_unpackhi_epi8(r[0], r[1]);
  const __m512i lo23 = _mm512_unpacklo_epi8(r[2], r[3]);
  const __m512i hi23 = _mm512_unpackhi_epi8(r[2], r[3]);
  v[0] = _mm512_unpacklo_epi16(lo01, lo23);
  v[1] = _mm512_unpackhi_epi16(lo01, lo23);
  v[2] = _mm512_unpacklo_epi16(hi01, hi23);
  v[3] = _mm512_unpackhi_epi16(hi01, hi23);
}

// The per-block values of a requantized output in the byte form's order.
struct QuadRequantization {
  __m512i offset[4];
  __m512 multiplier[4];
  __m512i zero;
};

// N pixels (pixel p's window at x + p * S * c) of one block of 64
// channels (mask), each window column's interleaved rows computed once
// for the pixels that share it, requantized into y (pixel p at y + p * c).
// The sums start from the offsets (int32 addition wraps alike in either
// order), as VnniTile's do.
template <class Q, int S, int KW, int N>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni"),
               always_inline)) inline void
DepthwiseQuadPixels(const uint8_t* x, int64_t c, int64_t row_step, int64_t kh,
                    const int8_t* w, __mmask64 mask,
                    const QuadRequantization& rq, Q* y) {
  constexpr int kColumns = (N - 1) * S + KW;
  __m512i sum[N][4];
  for (int p = 0; p < N; ++p) {
    for (int q = 0; q < 4; ++q) sum[p][q] = rq.offset[q];
  }
  for (int64_t g = 0; g * kQuadRows < kh; ++g) {
    const uint8_t* rows = x + g * kQuadRows * row_step;
    const int64_t in_group = std::min(kQuadRows, kh - g * kQuadRows);
    const int8_t* wg = w + g * KW * 4 * kQuadChannels;
    for (int j = 0; j < kColumns; ++j) {
      __m512i v[4];
      InterleavedRows(rows + j * c, row_step, in_group, mask, v);
      for (int p = 0; p < N; ++p) {
        const int kx = j - p * S;
        if (kx < 0 || kx >= KW) continue;
        for (int q = 0; q < 4; ++q) {
          sum[p][q] = _mm512_dpbusd_epi32(
              sum[p][q], v[q],
              _mm512_loadu_si512(wg + (kx * 4 + q) * kQuadChannels));
        }
      }
    }
  }
  for (int p = 0; p < N; ++p) {
    __m512i q32[4];
    for (int q = 0; q < 4; ++q) {
      q32[q] = RequantizedInt32(sum[p][q], _mm512_setzero_si512(),
                                rq.multiplier[q], rq.zero);
    }
    _mm512_mask_storeu_epi8(y + p * c, mask,
                            PackFourInLanes<Q>(q32[0], q32[1], q32[2], q32[3]));
  }
}

// `count` pixels of a DepthwiseGrid of KW columns at stride S in the byte
// form, a block of 64 channels at a time, four pixels at a time. A last
// block of fewer than 48 channels, where most of the byte form's lanes
// would be idle, takes GridWindow's vectors of 16 (w).
template <class Q, int S, int KW>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni"))) void
DepthwiseQuadRow(const uint8_t* x, const DepthwiseGrid& grid, int64_t count,
                 const int32_t* w, const int8_t* quads,
                 const RequantizedOutput& out) {
  constexpr int kPixels = 4;
  constexpr int64_t kNarrowestBlock = 48;
  const int64_t c = out.m;
  const int64_t last_block = c % kQuadChannels;
  const int64_t quad_end = last_block >= kNarrowestBlock ? c : c - last_block;
  const int64_t block_bytes =
      (grid.kh + kQuadRows - 1) / kQuadRows * KW * 4 * kQuadChannels;
  Q* y = static_cast<Q*>(out.y);
  QuadRequantization rq;
  rq.zero = _mm512_set1_epi32(static_cast<int32_t>(out.zero));  // integral
  for (int64_t ch = 0; ch < quad_end; ch += kQuadChannels) {
    const int64_t channels = std::min(kQuadChannels, c - ch);
    const __mmask64 mask =
        channels >= 64 ? ~__mmask64{0} : (__mmask64{1} << channels) - 1;
    __m512i multiplier_bits[4];
    for (int k = 0; k < 4; ++k) {
      const __mmask16 lanes =
          k * 16 < channels ? LaneMask(channels - k * 16) : __mmask16{0};
      rq.offset[k] = _mm512_maskz_loadu_epi32(lanes, out.offset + ch + k * 16);
      multiplier_bits[k] =
          _mm512_maskz_loadu_epi32(lanes, out.multiplier + ch + k * 16);
    }
    QuadOrder(rq.offset);
    QuadOrder(multiplier_bits);
    for (int k = 0; k < 4; ++k) {
      rq.multiplier[k] = _mm512_castsi512_ps(multiplier_bits[k]);
    }
    const int8_t* block_w = quads + ch / kQuadChannels * block_bytes;
    int64_t i = 0;
    for (; i + kPixels <= count; i += kPixels) {
      DepthwiseQuadPixels<Q, S, KW, kPixels>(x + i * S * c + ch, c,
                                             grid.row_step, grid.kh, block_w,
                                             mask, rq, y + i * c + ch);
    }
    for (; i < count; ++i) {
      DepthwiseQuadPixels<Q, S, KW, 1>(x + i * S * c + ch, c, grid.row_step,
                                       grid.kh, block_w, mask, rq,
                                       y + i * c + ch);
    }
  }
  if (quad_end < c) {
    DepthwiseRowAvx512<Q>(GridWindow<S, KW>{x, grid.row_step, grid.kh, w},
                          count, out, quad_end);
  }
}

// DepthwiseQuadRow for a shape WithGridShape takes.
template <class Q>
bool DepthwiseQuadRowAny(const uint8_t* x, const DepthwiseGrid& grid,
                         int64_t count, const int32_t* w, const int8_t* quads,
                         const RequantizedOutput& out) {
  return WithGridShape(grid, [&](auto s, auto kw) {
    DepthwiseQuadRow<Q, decltype(s)::value, decltype(kw)::value>(x, grid, count,
                                                                 w, quads, out);
  });
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

template <class Q>
void DepthwiseRowGeneric(const uint8_t* x, int64_t pixel_step, int64_t count,
                         const int64_t* tap_offsets, int64_t taps,
                         const int32_t* w, const RequantizedOutput& out) {
  const int64_t c = out.m;
  std::vector<int32_t> acc(static_cast<size_t>(c));
  for (int64_t i = 0; i < count; ++i) {
    std::fill(acc.begin(), acc.end(), 0);
    for (int64_t t = 0; t < taps; ++t) {
      const uint8_t* xt = x + i * pixel_step + tap_offsets[t];
      for (int64_t ch = 0; ch < c; ++ch) {
        acc[ch] += w[t * c + ch] * static_cast<int32_t>(xt[ch]);
      }
    }
    RequantizeChannels(acc.data(), c, out.offset, out.multiplier, out.zero,
                       static_cast<Q*>(out.y) + i * c);
  }
}

// The scalar requantization, NaN to 0: what every lane equals.
template <class Q>
void RequantizeChannelsScalar(const int32_t* acc, int64_t n,
                              const int32_t* offset, const float* multiplier,
                              float zero, Q* dst) {
  constexpr float lo = std::numeric_limits<Q>::min();
  constexpr float hi = std::numeric_limits<Q>::max();
  for (int64_t j = 0; j < n; ++j) {
    const auto sum = static_cast<int32_t>(static_cast<uint32_t>(acc[j]) +
                                          static_cast<uint32_t>(offset[j]));
    const float v =
        std::nearbyint(static_cast<float>(sum) * multiplier[j]) + zero;
    dst[j] = std::isnan(v) ? Q(0) : static_cast<Q>(std::clamp(v, lo, hi));
  }
}

template <class Q>
void RequantizeChannelsAny(const int32_t* acc, int64_t n, const int32_t* offset,
                           const float* multiplier, float zero, Q* dst) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const __m512 z = _mm512_set1_ps(zero);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 mask = LaneMask(n - j);
    RequantizeVector(_mm512_maskz_loadu_epi32(mask, acc + j),
                     _mm512_maskz_loadu_epi32(mask, offset + j),
                     _mm512_maskz_loadu_ps(mask, multiplier + j), z, mask,
                     dst + j);
  }
#else
  RequantizeChannelsScalar(acc, n, offset, multiplier, zero, dst);
#endif
}

}  // namespace

DirectConvWeights::DirectConvWeights(const int8_t* w, int64_t m, int64_t c,
                                     int64_t taps)
    : m_(m), c_(c), taps_(taps) {
  const int64_t q = quads();
  data_.assign(static_cast<size_t>(blocks() * taps * q * kDirectBlock * 4), 0);
  row_sums_.assign(static_cast<size_t>(m), 0);
  for (int64_t oc = 0; oc < m; ++oc) {
    const int64_t b = oc / kDirectBlock, j = oc % kDirectBlock;
    const int64_t v = j / kDirectLanes, lane = j % kDirectLanes;
    int8_t* block = data_.data() + b * taps * q * kDirectBlock * 4;
    for (int64_t i = 0; i < c; ++i) {
      for (int64_t t = 0; t < taps; ++t) {
        const int8_t value = w[(oc * c + i) * taps + t];
        block[WeightOffset(t, i / 4, v, q, vectors(b)) + lane * 4 + i % 4] =
            value;
        row_sums_[static_cast<size_t>(oc)] += value;
      }
    }
  }
}

bool DirectConvFoldsColumns(int64_t c, int64_t kw) {
  return kw > 1 && Int8Quads(c * kw) < kw * Int8Quads(c);
}

std::vector<int8_t> FoldWindowColumns(const int8_t* w, int64_t m, int64_t c,
                                      int64_t kh, int64_t kw) {
  std::vector<int8_t> folded(static_cast<size_t>(m * c * kh * kw));
  for (int64_t oc = 0; oc < m; ++oc) {
    for (int64_t i = 0; i < c; ++i) {
      for (int64_t ky = 0; ky < kh; ++ky) {
        for (int64_t kx = 0; kx < kw; ++kx) {
          folded[static_cast<size_t>(((oc * kw + kx) * c + i) * kh + ky)] =
              w[((oc * c + i) * kh + ky) * kw + kx];
        }
      }
    }
  }
  return folded;
}

int64_t DirectConvWeights::vectors(int64_t b) const {
  const int64_t channels = std::min(kDirectBlock, m_ - b * kDirectBlock);
  return (channels + kDirectLanes - 1) / kDirectLanes;
}

namespace {

// The VNNI tile for a block of `vectors` vectors.
template <class Q>
void VnniTileOf(int64_t vectors, const int8_t* w, int64_t taps, int64_t quads,
                const uint8_t* const* pixels, int64_t count,
                const int64_t* tap_offsets, int32_t* acc, int64_t oc0,
                const RequantizedOutput* out) {
  if (count > kDirectPixels) {  // a wide tile: at most two vectors
    if (vectors == 1) {
      VnniTile<1, Q, kDirectWidePixels>(w, taps, quads, pixels, count,
                                        tap_offsets, acc, oc0, out);
    } else {
      VnniTile<2, Q, kDirectWidePixels>(w, taps, quads, pixels, count,
                                        tap_offsets, acc, oc0, out);
    }
    return;
  }
  switch (vectors) {
    case 1:
      VnniTile<1, Q>(w, taps, quads, pixels, count, tap_offsets, acc, oc0, out);
      break;
    case 2:
      VnniTile<2, Q>(w, taps, quads, pixels, count, tap_offsets, acc, oc0, out);
      break;
    case 3:
      VnniTile<3, Q>(w, taps, quads, pixels, count, tap_offsets, acc, oc0, out);
      break;
    default:
      VnniTile<4, Q>(w, taps, quads, pixels, count, tap_offsets, acc, oc0, out);
      break;
  }
}

}  // namespace

void DirectConvTile(Int8Kernel kernel, const DirectConvWeights& w,
                    int64_t block, const uint8_t* const* pixels, int64_t count,
                    const int64_t* tap_offsets, int32_t* acc) {
  const int8_t* wb = w.block(block);
  const int64_t vectors = w.vectors(block);
  if (kernel == Int8Kernel::kAvx512Vnni) {
    VnniTileOf<void>(vectors, wb, w.taps(), w.quads(), pixels, count,
                     tap_offsets, acc, 0, nullptr);
  } else {
    GenericTile(wb, vectors, w.taps(), w.quads(), pixels, count, tap_offsets,
                acc);
  }
}

namespace {

// The outputs of sums computed before, as Q says (int32 sums, float, or 8
// bits): row i's sums for output channels [oc0, oc0 + channels) at acc +
// i * acc_ld, each row an output pixel of `out` (the first at out.y).
template <class Q>
void SumsInto(const int32_t* acc, int64_t acc_ld, int64_t count, int64_t oc0,
              int64_t channels, const RequantizedOutput& out) {
  for (int64_t i = 0; i < count; ++i) {
    const int32_t* sums = acc + i * acc_ld;
    if constexpr (std::is_same_v<Q, int32_t> || std::is_same_v<Q, float>) {
      Q* y = static_cast<Q*>(out.y) + i * out.ldy + oc0;
      for (int64_t j = 0; j < channels; ++j) {
        const auto sum =
            static_cast<int32_t>(static_cast<uint32_t>(sums[j]) +
                                 static_cast<uint32_t>(out.offset[oc0 + j]));
        if constexpr (std::is_same_v<Q, int32_t>) {
          y[j] = sum;
        } else {
          const float product =
              static_cast<float>(sum) * out.multiplier[oc0 + j];
          y[j] = out.bias == nullptr ? product : product + out.bias[oc0 + j];
        }
      }
    } else {
      RequantizeChannels(sums, channels, out.offset + oc0, out.multiplier + oc0,
                         out.zero, static_cast<Q*>(out.y) + i * out.m + oc0);
    }
  }
}

// One tile's outputs as Q says (int32 sums, float, or 8 bits; see
// VnniTile): from the VNNI tile's registers, or on the generic kernel from
// its sums, element by element as the vector forms compute them.
template <class Q>
void TileInto(Int8Kernel kernel, const DirectConvWeights& w, int64_t block,
              const uint8_t* const* pixels, int64_t count,
              const int64_t* tap_offsets, const RequantizedOutput& out) {
  const int64_t oc0 = block * kDirectBlock;
  if (kernel == Int8Kernel::kAvx512Vnni) {
    VnniTileOf<Q>(w.vectors(block), w.block(block), w.taps(), w.quads(), pixels,
                  count, tap_offsets, nullptr, oc0, &out);
    return;
  }
  if (count > kDirectPixels) {  // a wide tile, six pixels at a time
    TileInto<Q>(kernel, w, block, pixels, kDirectPixels, tap_offsets, out);
    RequantizedOutput rest = out;
    constexpr bool kRows =
        std::is_same_v<Q, int32_t> || std::is_same_v<Q, float>;
    rest.y = static_cast<Q*>(out.y) + kDirectPixels * (kRows ? out.ldy : out.m);
    TileInto<Q>(kernel, w, block, pixels + kDirectPixels, count - kDirectPixels,
                tap_offsets, rest);
    return;
  }
  int32_t acc[kDirectPixels * kDirectBlock];
  DirectConvTile(kernel, w, block, pixels, count, tap_offsets, acc);
  SumsInto<Q>(acc, kDirectBlock, count, oc0,
              std::min(kDirectBlock, out.m - oc0), out);
}

}  // namespace

void DirectConvTileRequantized(Int8Kernel kernel, const DirectConvWeights& w,
                               int64_t block, const uint8_t* const* pixels,
                               int64_t count, const int64_t* tap_offsets,
                               const RequantizedOutput& out) {
  if (out.y_signed) {
    TileInto<int8_t>(kernel, w, block, pixels, count, tap_offsets, out);
  } else {
    TileInto<uint8_t>(kernel, w, block, pixels, count, tap_offsets, out);
  }
}

void DirectConvTileSums(Int8Kernel kernel, const DirectConvWeights& w,
                        int64_t block, const uint8_t* const* pixels,
                        int64_t count, const int64_t* tap_offsets,
                        const RequantizedOutput& out) {
  TileInto<int32_t>(kernel, w, block, pixels, count, tap_offsets, out);
}

void DirectConvTileScaled(Int8Kernel kernel, const DirectConvWeights& w,
                          int64_t block, const uint8_t* const* pixels,
                          int64_t count, const int64_t* tap_offsets,
                          const RequantizedOutput& out) {
  TileInto<float>(kernel, w, block, pixels, count, tap_offsets, out);
}

void DirectSumsInto(DirectOutputForm form, const int32_t* acc, int64_t acc_ld,
                    int64_t count, int64_t oc0, int64_t channels,
                    const RequantizedOutput& out) {
  switch (form) {
    case DirectOutputForm::kSums:
      SumsInto<int32_t>(acc, acc_ld, count, oc0, channels, out);
      return;
    case DirectOutputForm::kScaled:
      SumsInto<float>(acc, acc_ld, count, oc0, channels, out);
      return;
    case DirectOutputForm::kRequantized:
      if (out.y_signed) {
        SumsInto<int8_t>(acc, acc_ld, count, oc0, channels, out);
      } else {
        SumsInto<uint8_t>(acc, acc_ld, count, oc0, channels, out);
      }
      return;
  }
}

void DepthwiseRowRequantized(Int8Kernel kernel, const uint8_t* x,
                             int64_t pixel_step, int64_t count,
                             const int64_t* tap_offsets, int64_t taps,
                             const int32_t* w, const RequantizedOutput& out) {
  if (kernel == Int8Kernel::kAvx512Vnni) {
    const TapWindow window{x, pixel_step, tap_offsets, taps, w};
    if (out.y_signed) {
      DepthwiseRowAvx512<int8_t>(window, count, out);
    } else {
      DepthwiseRowAvx512<uint8_t>(window, count, out);
    }
  } else if (out.y_signed) {
    DepthwiseRowGeneric<int8_t>(x, pixel_step, count, tap_offsets, taps, w,
                                out);
  } else {
    DepthwiseRowGeneric<uint8_t>(x, pixel_step, count, tap_offsets, taps, w,
                                 out);
  }
}

std::vector<int8_t> PackDepthwiseQuads(const int32_t* w, int64_t c, int64_t kh,
                                       int64_t kw) {
  const int64_t blocks = (c + kQuadChannels - 1) / kQuadChannels;
  const int64_t groups = (kh + kQuadRows - 1) / kQuadRows;
  std::vector<int8_t> packed(
      static_cast<size_t>(blocks * groups * kw * 4 * kQuadChannels), 0);
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t kx = 0; kx < kw; ++kx) {
        for (int64_t q = 0; q < 4; ++q) {
          int8_t* vector =
              packed.data() +
              (((b * groups + g) * kw + kx) * 4 + q) * kQuadChannels;
          for (int64_t lane = 0; lane < kDirectLanes; ++lane) {
            const int64_t ch =
                b * kQuadChannels + lane / 4 * 16 + q * 4 + lane % 4;
            for (int64_t r = 0; r < kQuadRows; ++r) {
              const int64_t ky = g * kQuadRows + r;
              if (ch < c && ky < kh) {
                vector[lane * 4 + r] =
                    static_cast<int8_t>(w[(ky * kw + kx) * c + ch]);
              }
            }
          }
        }
      }
    }
  }
  return packed;
}

void DepthwiseGridRowRequantized(Int8Kernel kernel, const uint8_t* x,
                                 const DepthwiseGrid& grid, int64_t count,
                                 const int32_t* w, const int8_t* quads,
                                 const RequantizedOutput& out) {
  if (kernel == Int8Kernel::kAvx512Vnni && quads != nullptr && out.finite &&
      (out.y_signed
           ? DepthwiseQuadRowAny<int8_t>(x, grid, count, w, quads, out)
           : DepthwiseQuadRowAny<uint8_t>(x, grid, count, w, quads, out))) {
    return;
  }
  if (kernel == Int8Kernel::kAvx512Vnni &&
      (out.y_signed ? DepthwiseGridRowAny<int8_t>(x, grid, count, w, out)
                    : DepthwiseGridRowAny<uint8_t>(x, grid, count, w, out))) {
    return;
  }
  const int64_t c = out.m;
  std::vector<int64_t> tap_offsets;
  tap_offsets.reserve(static_cast<size_t>(grid.kh * grid.kw));
  for (int64_t ky = 0; ky < grid.kh; ++ky) {
    for (int64_t kx = 0; kx < grid.kw; ++kx) {
      tap_offsets.push_back(ky * grid.row_step + kx * c);
    }
  }
  DepthwiseRowRequantized(kernel, x, grid.stride * c, count, tap_offsets.data(),
                          grid.kh * grid.kw, w, out);
}

void RequantizeChannels(const int32_t* acc, int64_t n, const int32_t* offset,
                        const float* multiplier, float zero, uint8_t* dst) {
  RequantizeChannelsAny(acc, n, offset, multiplier, zero, dst);
}

void RequantizeChannels(const int32_t* acc, int64_t n, const int32_t* offset,
                        const float* multiplier, float zero, int8_t* dst) {
  RequantizeChannelsAny(acc, n, offset, multiplier, zero, dst);
}

}  // namespace weft::internal
