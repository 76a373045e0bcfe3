#include "kernels/conv_kernels.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/conv_phase_panels.h"
#include "kernels/int_division.h"
#include "kernels/packed_gemm.h"

namespace weft::internal {
namespace {

// kDepthwiseLanes floats (GCC's vector extension: one register on AVX-512,
// two on AVX2): one per plane of a block in DepthwiseLanes2D, 16 columns of
// one plane in Depthwise3x3Rows.
using LaneVector =
    float __attribute__((vector_size(kDepthwiseLanes * sizeof(float))));
constexpr int64_t kLaneBytes = sizeof(LaneVector);

// Output columns ox whose tap at x offset `shift` (= kw * dilation_w -
// pad_left) lands inside the input: [first, last).
struct ColumnRange {
  int64_t first, last;
};

ColumnRange InsideColumns(const Conv2DGeometry& g, int64_t shift) {
  // ix = ox * stride_w + shift must lie in [0, in_w).
  const int64_t s = g.stride_w;
  const int64_t first = shift >= 0 ? 0 : (-shift + s - 1) / s;
  const int64_t last =
      g.in_w - shift <= 0 ? 0 : (g.in_w - shift + s - 1) / s;  // ceil
  return {std::min(first, g.out_w), std::clamp(last, int64_t{0}, g.out_w)};
}

// kRows output rows of a depthwise plane, into y (rows of out_w), computed
// over `width` columns (out_w rounded up to kLanes): each group of kLanes
// columns of the kRows rows sums its taps in registers, bias first, taps in
// row-major order. The kRows x kLanes sums are independent chains of additions,
// so the vector units overlap them; one row of 8 columns at a time was a single
// chain, each tap waiting for the last (1.1 ns per output of a 112 x 112
// plane on a Zen 4, against 0.7 now).
// `src` is the first input row, laid out as DepthwisePlaneInLanes describes:
// rows of `row_len`, where output column ox under tap kw reads
// src[tap_offsets[kw] + ox], so every load is contiguous whatever the stride.
template <class T, int64_t kLanes, int64_t kRows>
void DepthwiseRows(const Conv2DGeometry& g, const T* src, int64_t row_len,
                   const int64_t* tap_offsets, const T* w, T bias,
                   int64_t width, T* y) {
  static_assert(kRows == 1 || kRows == 4);
  const int64_t row_step = g.stride_h * row_len;
  for (int64_t ox = 0; ox < width; ox += kLanes) {
    // One array per row, not one 2-D array: GCC keeps each in a vector
    // register, where a 2-D array of the same size stayed on the stack.
    T s0[kLanes], s1[kLanes], s2[kLanes], s3[kLanes];
    for (int64_t j = 0; j < kLanes; ++j) s0[j] = s1[j] = s2[j] = s3[j] = bias;
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const T* line = src + kh * g.dilation_h * row_len + ox;
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const T weight = w[kh * g.kernel_w + kw];
        const T* tap = line + tap_offsets[kw];
        for (int64_t j = 0; j < kLanes; ++j) {
          s0[j] += weight * tap[j];
          if constexpr (kRows == 4) {
            s1[j] += weight * tap[row_step + j];
            s2[j] += weight * tap[2 * row_step + j];
            s3[j] += weight * tap[3 * row_step + j];
          }
        }
      }
    }
    // Straight into y for a whole group; the row's last, partial group
    // through a buffer, so that every access to the sums has a fixed length
    // (with a variable-length one, GCC split them into scalars).
    const bool whole = ox + kLanes <= g.out_w;
    T tail[4][kLanes];
    auto store = [&](T* row0, int64_t ld) {
      for (int64_t j = 0; j < kLanes; ++j) {
        row0[j] = s0[j];
        if constexpr (kRows == 4) {
          row0[ld + j] = s1[j];
          row0[2 * ld + j] = s2[j];
          row0[3 * ld + j] = s3[j];
        }
      }
    };
    if (whole) {
      store(y + ox, g.out_w);
    } else {
      store(tail[0], kLanes);
      for (int64_t r = 0; r < kRows; ++r) {
        std::copy(tail[r], tail[r] + (g.out_w - ox), y + r * g.out_w + ox);
      }
    }
  }
}

// How one panel's `width` pixels read their inputs under one tap: from
// `start` on, `step` apart (pixels of one output row, all inside the
// input), or, when step is 0, each from its own offset (a panel crossing an
// output row or touching the padding, where an offset of -1 reads zero).
struct PanelRun {
  int64_t start, step;
};

// Writes one panel of a depth block: `rows` depth rows from channel c, tap
// `tap` on, `width` floats each. kWidth: the panel width when known at
// compile time (fixed-length copies the compiler vectorises), or 0.
template <int64_t kWidth>
float* GatherPanel(const Conv2DGeometry& g, const float* x, int64_t c,
                   int64_t tap, int64_t rows, int64_t width, bool interior,
                   const PanelRun* runs, const int64_t* offsets, float* dst) {
  const int64_t w = kWidth != 0 ? kWidth : width;
  const int64_t taps = g.Taps();
  const float* plane = x + c * g.InSize();
  int64_t d = 0;
  if (interior) {    // Every tap reads consecutive inputs: no tests per row.
    if (tap != 0) {  // The rest of the first channel.
      for (; d < rows && tap < taps; ++d, ++tap, dst += w) {
        std::memcpy(dst, plane + runs[tap].start, w * sizeof(float));
      }
      if (tap == taps) {
        tap = 0;
        plane += g.InSize();
      }
    }
    for (; d + taps <= rows; d += taps, plane += g.InSize()) {
      for (int64_t t = 0; t < taps; ++t, dst += w) {
        std::memcpy(dst, plane + runs[t].start, w * sizeof(float));
      }
    }
  }
  for (; d < rows; ++d, dst += w) {
    const PanelRun run = runs[tap];
    if (run.step == 1) {  // A fixed-size memcpy: a few vector moves.
      std::memcpy(dst, plane + run.start, w * sizeof(float));
    } else if (run.step > 1) {
      const float* src = plane + run.start;
      for (int64_t i = 0; i < w; ++i) dst[i] = src[i * run.step];
    } else {
      const int64_t* from = offsets + tap * w;
      for (int64_t i = 0; i < w; ++i) {
        dst[i] = from[i] >= 0 ? plane[from[i]] : 0.0f;
      }
    }
    if (++tap == taps) {
      tap = 0;
      plane += g.InSize();
    }
  }
  return dst;
}

template <int64_t kWidth>
void GatherPanels(const Conv2DGeometry& g, const float* x, int64_t channels,
                  int64_t padded, int64_t width, int64_t kc,
                  int64_t first_block, int64_t end_block,
                  const std::vector<PanelRun>& runs,
                  const std::vector<char>& interior,
                  const std::vector<int64_t>& offsets, float* panels) {
  const int64_t taps = g.Taps(), depth = channels * taps;
  const int64_t panel_count = padded / width;
  for (int64_t block = first_block; block < end_block; ++block) {
    const int64_t d0 = block * kc, rows = std::min(kc, depth - d0);
    float* dst = panels + d0 * padded;
    for (int64_t q = 0; q < panel_count; ++q) {
      dst = GatherPanel<kWidth>(g, x, d0 / taps, d0 % taps, rows, width,
                                interior[q] != 0, runs.data() + q * taps,
                                offsets.data() + q * taps * width, dst);
    }
  }
}

}  // namespace

bool ConvProductsRunTransposed(int64_t mg, int64_t depth, int64_t out_pixels) {
  const MicroKernelShape& shape = FloatMicroKernel();
  // Whether nr-wide panels pad `count` by more than an eighth over mr-wide.
  auto pads_more_by_nr = [&](int64_t count) {
    return RoundUp(count, shape.nr) * 8 > RoundUp(count, shape.mr) * 9;
  };
  if (!(out_pixels > 0 && pads_more_by_nr(out_pixels))) return false;
  return depth >= shape.kc && !pads_more_by_nr(mg);
}

bool ConvPacksConstantWeights(int64_t mg, int64_t depth, bool unit_window,
                              int64_t out_pixels) {
  const MicroKernelShape& shape = FloatMicroKernel();
  if (unit_window && mg < kPackedConvMinChannels * shape.mr) return false;
  return ConvProductsRunTransposed(mg, depth, out_pixels) ||
         shape.nr <= kMaxPhasePanelWidth;
}

void Im2ColPanels(const Conv2DGeometry& g, const float* x, int64_t channels,
                  int64_t p0, int64_t pixels, int64_t width, int64_t kc,
                  int64_t first_block, int64_t end_block, float* panels) {
  const int64_t taps = g.Taps();
  const int64_t padded = (pixels + width - 1) / width * width;
  const int64_t panel_count = padded / width;
  // Per panel and tap (the same for every channel): each pixel's offset in a
  // channel plane, -1 in the padding or past the last pixel, and the run
  // they form.
  std::vector<int64_t> offsets(panel_count * taps * width, -1);
  std::vector<PanelRun> runs(panel_count * taps, PanelRun{0, 0});
  // Panels whose every tap reads consecutive inputs.
  std::vector<char> interior(panel_count, 1);
  // Each pixel's window corner in the input (may lie in the padding).
  std::vector<int64_t> corner_y(pixels), corner_x(pixels);
  for (int64_t i = 0, oy = p0 / g.out_w, ox = p0 % g.out_w; i < pixels; ++i) {
    corner_y[i] = oy * g.stride_h - g.pad_top;
    corner_x[i] = ox * g.stride_w - g.pad_left;
    if (++ox == g.out_w) {
      ox = 0;
      ++oy;
    }
  }
  for (int64_t q = 0; q < panel_count; ++q) {
    for (int64_t tap = 0; tap < taps; ++tap) {
      const int64_t dy = tap / g.kernel_w * g.dilation_h;
      const int64_t dx = tap % g.kernel_w * g.dilation_w;
      int64_t* panel = offsets.data() + (q * taps + tap) * width;
      for (int64_t i = 0; i < width && q * width + i < pixels; ++i) {
        const int64_t iy = corner_y[q * width + i] + dy;
        const int64_t ix = corner_x[q * width + i] + dx;
        if (iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w) {
          panel[i] = iy * g.in_w + ix;
        }
      }
      // One output row, all inside: offsets stride_w apart.
      bool even = panel[0] >= 0;
      for (int64_t i = 1; i < width && even; ++i) {
        even = panel[i] >= 0 && panel[i] == panel[0] + i * g.stride_w;
      }
      if (even) runs[q * taps + tap] = {panel[0], g.stride_w};
      interior[q] &= even && g.stride_w == 1;
    }
  }
  WithPanelWidth(width, [&](auto fixed_width) {
    GatherPanels<decltype(fixed_width)::value>(g, x, channels, padded, width,
                                               kc, first_block, end_block, runs,
                                               interior, offsets, panels);
  });
}

bool MaxPoolNeedsBorder(const Conv2DGeometry& g) {
  return g.pad_top > 0 || g.pad_left > 0 || g.SpanRows() > g.in_h ||
         g.SpanCols() > g.in_w;
}

bool MaxPoolRunsInLanes(const Conv2DGeometry& g) {
  return MaxPoolNeedsBorder(g) && g.out_w < kMaxPoolFlatBelow;
}

bool MaxPoolPlaneIsFlat(const Conv2DGeometry& g) {
  return g.out_w < kMaxPoolFlatBelow;
}

template <class T>
void Im2Col2D(const Conv2DGeometry& g, const T* x, int64_t channels, int64_t p0,
              int64_t pixels, T* cols, int64_t ld_cols) {
  const int64_t end = p0 + pixels;
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = x + c * g.InSize();
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        T* row = cols + (c * g.Taps() + kh * g.kernel_w + kw) * ld_cols;
        const int64_t shift = kw * g.dilation_w - g.pad_left;
        const ColumnRange inside = InsideColumns(g, shift);
        // Walk the tile one output row (or part of one) at a time.
        for (int64_t p = p0; p < end;) {
          const int64_t oy = p / g.out_w, ox0 = p % g.out_w;
          const int64_t ox1 = std::min(g.out_w, ox0 + (end - p));
          T* dst = row + (p - p0);  // dst[ox - ox0] for ox in [ox0, ox1)
          const int64_t iy = oy * g.stride_h + kh * g.dilation_h - g.pad_top;
          if (iy < 0 || iy >= g.in_h) {
            std::fill(dst, dst + (ox1 - ox0), T(0));
          } else {
            // src[ox * stride_w + shift] is inside the row for ox in [a, b).
            const T* src = plane + iy * g.in_w;
            const int64_t a = std::clamp(inside.first, ox0, ox1);
            const int64_t b = std::clamp(inside.last, a, ox1);
            std::fill(dst, dst + (a - ox0), T(0));
            if (g.stride_w == 1) {
              std::copy(src + a + shift, src + b + shift, dst + (a - ox0));
            } else {
              for (int64_t ox = a; ox < b; ++ox) {
                dst[ox - ox0] = src[ox * g.stride_w + shift];
              }
            }
            std::fill(dst + (b - ox0), dst + (ox1 - ox0), T(0));
          }
          p += ox1 - ox0;
        }
      }
    }
  }
}

// DepthwiseRows<float, 16, 4> for a 3 x 3 window with dilation_h 1 and row
// stride kStrideH: the same sums in the same order (bias, then taps in
// row-major order), but each input row's three shifted vectors are loaded
// once and added into every output row whose window covers that row (with
// stride 1, 6 input rows feed 4 output rows: 18 loads where DepthwiseRows
// makes 36), and the nine weights stay in registers. The loads were the
// limit there: one per multiply-add, most of them across two cache lines.
//
// Each sum is then bounded to [lower, upper] as ClipKernel bounds it, in
// registers, so that ReLU6 does not read the plane again.
template <int64_t kStrideH>
void Depthwise3x3Rows(const float* src, int64_t row_len,
                      const int64_t* tap_offsets, const float* w, float bias,
                      float lower, float upper, int64_t out_w, int64_t width,
                      float* y) {
  const LaneVector low = LaneVector{} + lower, high = LaneVector{} + upper;
  constexpr int64_t kRows = 4;
  constexpr int64_t kInputRows = (kRows - 1) * kStrideH + 3;
  LaneVector weight[9];
  for (int t = 0; t < 9; ++t) weight[t] = LaneVector{} + w[t];
  for (int64_t group = 0; group < width; group += kDepthwiseLanes) {
    // A row's last, partial group is computed as the row's last 16 columns
    // instead, when the row has as many: the columns it shares with the
    // group before get the same sums again, and every store is whole (a
    // copy of the part took a tenth of a 28-wide plane's time).
    const int64_t ox =
        group + kDepthwiseLanes > out_w && out_w >= kDepthwiseLanes
            ? out_w - kDepthwiseLanes
            : group;
    LaneVector sum[kRows];
    for (int64_t r = 0; r < kRows; ++r) sum[r] = LaneVector{} + bias;
#pragma GCC unroll 16
    for (int64_t i = 0; i < kInputRows; ++i) {
      const float* line = src + i * row_len + ox;
#pragma GCC unroll 3
      for (int64_t kw = 0; kw < 3; ++kw) {
        LaneVector v;
        std::memcpy(&v, line + tap_offsets[kw], kLaneBytes);
#pragma GCC unroll 4
        for (int64_t r = 0; r < kRows; ++r) {
          const int64_t kh = i - r * kStrideH;
          if (kh >= 0 && kh < 3) sum[r] += weight[kh * 3 + kw] * v;
        }
      }
    }
    for (int64_t r = 0; r < kRows; ++r) {
      // As ClipKernel: "x < lower ? lower : x", then the same for upper.
      const LaneVector raised = sum[r] < low ? low : sum[r];
      sum[r] = raised > high ? high : raised;
    }
    if (ox + kDepthwiseLanes <= out_w) {
      for (int64_t r = 0; r < kRows; ++r) {
        std::memcpy(y + r * out_w + ox, &sum[r], kLaneBytes);
      }
    } else {  // The row's last, partial group.
      for (int64_t r = 0; r < kRows; ++r) {
        float tail[kDepthwiseLanes];
        std::memcpy(tail, &sum[r], kLaneBytes);
        std::copy(tail, tail + (out_w - ox), y + r * out_w + ox);
      }
    }
  }
}

// One input row into the two column phases of a stride-2 buffer row (see
// DepthwisePlaneInLanes): input column c is padded column c + pad_left, so
// the even columns land in one phase and the odd ones in the other, each
// from its own first entry. One pass splits 32 inputs with two shuffles,
// where a loop per phase read the row twice and finished each phase with
// 8-, 4- and 1-wide tails (the copy took more time than the sums on
// MobileNetV2's stride-2 layers). Entries at or past phase_len are not
// written: the outputs never read them.
void SplitRowByPhase(const float* row, int64_t in_w, int64_t pad_left,
                     int64_t phase_len, float* phase0, float* phase1) {
  // Input column 2k goes to entry k + even_shift of its phase, 2k + 1 to
  // entry k + odd_shift of the other.
  float* even_phase = pad_left % 2 == 0 ? phase0 : phase1;
  float* odd_phase = pad_left % 2 == 0 ? phase1 : phase0;
  const int64_t even_shift = pad_left / 2, odd_shift = (pad_left + 1) / 2;
  const int64_t evens =
      std::clamp<int64_t>(phase_len - even_shift, 0, (in_w + 1) / 2);
  const int64_t odds = std::clamp<int64_t>(phase_len - odd_shift, 0, in_w / 2);
  // Whole vectors while both phases take 16 more and the 32 loads stay in
  // the row; the last vector ends where the shorter phase does, rewriting
  // entries the one before wrote with the same values.
  const int64_t both = std::min({evens, odds, in_w / 2});
  int64_t k = 0;
  if (both >= kDepthwiseLanes) {
    for (int64_t k0 = 0; k0 < both; k0 += kDepthwiseLanes) {
      k0 = std::min(k0, both - kDepthwiseLanes);
      LaneVector a, b;
      std::memcpy(&a, row + 2 * k0, kLaneBytes);
      std::memcpy(&b, row + 2 * k0 + kDepthwiseLanes, kLaneBytes);
      const LaneVector even = __builtin_shufflevector(
          a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
      const LaneVector odd = __builtin_shufflevector(
          a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
      std::memcpy(even_phase + even_shift + k0, &even, kLaneBytes);
      std::memcpy(odd_phase + odd_shift + k0, &odd, kLaneBytes);
    }
    k = both;
  }
  for (int64_t e = k; e < evens; ++e) even_phase[e + even_shift] = row[2 * e];
  for (int64_t o = k; o < odds; ++o) odd_phase[o + odd_shift] = row[2 * o + 1];
}

template <class T, int64_t kLanes, int64_t kRows>
void DepthwisePlaneInLanes(const Conv2DGeometry& g, const T* x, const T* w,
                           T bias, T lower, T upper, T* y,
                           PlaneScratch<T>& scratch) {
  // Output rows are computed in whole groups of kLanes columns, so that the
  // compiler's vector loops run whatever the plane's width (MobileNet's late
  // planes are 7 or 14 wide, narrower than one 512-bit vector loop's minimum
  // trip count, and ran scalar). So the plane is first copied into a
  // zero-bordered buffer holding every row and column those loops read,
  // rounded up to whole groups of kLanes outputs: no bounds tests inside.
  // Taps on the zero border add +0, which leaves every finite sum unchanged.
  //
  // With a column stride s > 1 each buffer row holds the padded row's columns
  // split by phase: s segments of `phase_len`, segment p holding columns p,
  // p + s, p + 2s, ... Output column ox under tap kw reads padded column
  // ox * s + kw * dilation, which is entry ox + kw * dilation / s of segment
  // (kw * dilation) % s: contiguous loads. Strided loads were permutes and
  // scalar inserts with spills (8 GFLOP/s for MobileNet's 3 x 3 stride-2
  // layers on a Zen 4, where the stride-1 ones reached 20).
  const int64_t s = g.stride_w;
  const int64_t width = (g.out_w + kLanes - 1) / kLanes * kLanes;
  const int64_t rows = g.SpanRows();
  const int64_t phase_len = width + (g.kernel_w - 1) * g.dilation_w / s;
  const int64_t row_len = s * phase_len;
  constexpr int64_t kInlineTaps = 16;
  int64_t inline_offsets[kInlineTaps];
  std::vector<int64_t> heap_offsets;
  int64_t* tap_offsets = inline_offsets;
  if (g.kernel_w > kInlineTaps) {
    heap_offsets.resize(g.kernel_w);
    tap_offsets = heap_offsets.data();
  }
  for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
    const int64_t column = kw * g.dilation_w;
    tap_offsets[kw] = column % s * phase_len + column / s;
  }
  // The plane's rows where they fall; the zeros around them are already
  // there when the buffer last held a plane of this layout.
  if (scratch.zeroed_lanes != kLanes || !(scratch.zeroed_for == g)) {
    scratch.buffer.assign(rows * row_len, T(0));
    scratch.zeroed_for = g;
    scratch.zeroed_lanes = kLanes;
  }
  // float32 rows at stride 2 are split into both phases in one pass; the
  // others are copied a phase at a time.
  bool copied = false;
  if constexpr (std::is_same_v<T, float>) {
    if (s == 2) {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t iy = r - g.pad_top;
        if (iy < 0 || iy >= g.in_h) continue;
        float* row = scratch.buffer.data() + r * row_len;
        SplitRowByPhase(x + iy * g.in_w, g.in_w, g.pad_left, phase_len, row,
                        row + phase_len);
      }
      copied = true;
    }
  }
  for (int64_t p = 0; p < s && !copied; ++p) {
    // Entry i of segment p (of every row) is padded column i * s + p, input
    // column i * s + p - pad_left, inside the row for i in [lo, hi).
    const int64_t shift = p - g.pad_left;
    const int64_t lo = std::clamp<int64_t>(CeilDiv(-shift, s), 0, phase_len);
    const int64_t hi =
        std::clamp<int64_t>(CeilDiv(g.in_w - shift, s), lo, phase_len);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t iy = r - g.pad_top;
      if (iy < 0 || iy >= g.in_h) continue;
      T* segment = scratch.buffer.data() + r * row_len + p * phase_len;
      const T* from = x + iy * g.in_w + shift;
      if (s == 1) {
        std::copy(from + lo, from + hi, segment + lo);
      } else if (s == 2) {
        // A constant step: GCC loads two vectors and permutes, where the
        // variable step below is a scalar load per element.
        for (int64_t i = lo; i < hi; ++i) segment[i] = from[2 * i];
      } else {
        for (int64_t i = lo; i < hi; ++i) segment[i] = from[i * s];
      }
    }
  }
  const T* padded = scratch.buffer.data();
  int64_t oy = 0;
  if constexpr (std::is_same_v<T, float> && kLanes == kDepthwiseLanes &&
                kRows == 4) {
    if (g.kernel_h == 3 && g.kernel_w == 3 && g.dilation_h == 1 &&
        (g.stride_h == 1 || g.stride_h == 2)) {
      for (; oy + kRows <= g.out_h; oy += kRows) {
        const float* src = padded + oy * g.stride_h * row_len;
        float* out = y + oy * g.out_w;
        if (g.stride_h == 1) {
          Depthwise3x3Rows<1>(src, row_len, tap_offsets, w, bias, lower, upper,
                              g.out_w, width, out);
        } else {
          Depthwise3x3Rows<2>(src, row_len, tap_offsets, w, bias, lower, upper,
                              g.out_w, width, out);
        }
      }
    }
  }
  const int64_t bounded_rows = oy;
  for (; oy + kRows <= g.out_h; oy += kRows) {
    DepthwiseRows<T, kLanes, kRows>(g, padded + oy * g.stride_h * row_len,
                                    row_len, tap_offsets, w, bias, width,
                                    y + oy * g.out_w);
  }
  for (; oy < g.out_h; ++oy) {
    DepthwiseRows<T, kLanes, 1>(g, padded + oy * g.stride_h * row_len, row_len,
                                tap_offsets, w, bias, width, y + oy * g.out_w);
  }
  // The rows Depthwise3x3Rows did not bound. As ClipKernel: NaN stays NaN.
  constexpr T kInf = std::numeric_limits<T>::infinity();
  if (lower == -kInf && upper == kInf) return;
  for (T* v = y + bounded_rows * g.out_w; v < y + g.OutSize(); ++v) {
    const T raised = *v < lower ? lower : *v;
    *v = raised > upper ? upper : raised;
  }
}

template <class T>
void DepthwisePlane2D(const Conv2DGeometry& g, const T* x, const T* w, T bias,
                      T lower, T upper, T* y, PlaneScratch<T>& scratch) {
  if (g.out_h <= 0 || g.out_w <= 0) return;  // An empty plane.
  // Groups of 16 columns, or 8 for planes at most 8 wide (float32 ones that
  // small take DepthwiseLanes2D), which 16 would pad to more than twice
  // their width.
  if (g.out_w <= 8) {
    DepthwisePlaneInLanes<T, 8, 1>(g, x, w, bias, lower, upper, y, scratch);
  } else {
    DepthwisePlaneInLanes<T, 16, 4>(g, x, w, bias, lower, upper, y, scratch);
  }
}

namespace {

static_assert(kDepthwiseLanes == 16, "Transpose16 is for 16 lanes");

LaneVector InterleaveLow(LaneVector a, LaneVector b) {
  return __builtin_shufflevector(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21,
                                 6, 22, 7, 23);
}
LaneVector InterleaveHigh(LaneVector a, LaneVector b) {
  return __builtin_shufflevector(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13,
                                 29, 14, 30, 15, 31);
}

// Transposes the 16 x 16 matrix whose rows are v[0..15], in registers: four
// rounds of pairing row i with row i + 8 (a perfect shuffle each), 64
// two-vector shuffles where element-wise copies took 256 loads and stores.
void Transpose16(LaneVector* v) {
  for (int round = 0; round < 4; ++round) {
    LaneVector next[16];
    for (int i = 0; i < 8; ++i) {
      next[2 * i] = InterleaveLow(v[i], v[i + 8]);
      next[2 * i + 1] = InterleaveHigh(v[i], v[i + 8]);
    }
    for (int i = 0; i < 16; ++i) v[i] = next[i];
  }
}

// Loads `count` <= 16 floats from src into a vector, zeros after them; and
// stores the first `count` lanes. A whole vector is one unaligned access.
// Parts only occur for planes of fewer than 16 pixels (DepthwiseLanes2D
// takes a plane's last 16 pixels instead of a partial group), so their
// slower copies do not matter.
LaneVector LoadPart(const float* src, int64_t count) {
  if (count == kDepthwiseLanes) {  // Straight into a register.
    LaneVector whole;
    std::memcpy(&whole, src, kLaneBytes);
    return whole;
  }
  LaneVector part = {};
  for (int64_t i = 0; i < count; ++i) part[i] = src[i];
  return part;
}
void StorePart(LaneVector v, int64_t count, float* dst) {
  if (count == kDepthwiseLanes) {
    std::memcpy(dst, &v, kLaneBytes);
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = v[i];
  }
}

// kPixels outputs in lanes, output i reading its window from in + base[i]:
// acc = bias, then each tap in row-major order. kPixels independent sums
// keep the vector unit busy while each waits for its last addition (one
// pixel at a time was a chain of 9 dependent additions per output).
template <int64_t kPixels>
void DepthwiseLanePixels(const Conv2DGeometry& g, const LaneVector* in,
                         const int64_t* base, int64_t cols, const LaneVector* w,
                         LaneVector bias, LaneVector* out) {
  LaneVector acc[kPixels];
  for (int64_t i = 0; i < kPixels; ++i) acc[i] = bias;
  for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
    for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
      const LaneVector weight = w[kh * g.kernel_w + kw];
      const LaneVector* tap = in + kh * g.dilation_h * cols + kw * g.dilation_w;
      for (int64_t i = 0; i < kPixels; ++i) acc[i] += weight * tap[base[i]];
    }
  }
  for (int64_t i = 0; i < kPixels; ++i) out[i] = acc[i];
}

}  // namespace

bool DepthwiseRunsInLanes(const Conv2DGeometry& g) {
  return g.OutSize() <= 14 * 14;
}

void ArrangeLaneWeights(const float* w, int64_t channels, int64_t taps,
                        int64_t first, float* out) {
  const int64_t lanes = std::min(kDepthwiseLanes, channels - first);
  std::fill(out, out + taps * kDepthwiseLanes, 0.0f);
  for (int64_t lane = 0; lane < lanes; ++lane) {
    for (int64_t t = 0; t < taps; ++t) {
      out[t * kDepthwiseLanes + lane] = w[(first + lane) * taps + t];
    }
  }
}

namespace {

// The planes' pixels into `padded` (rows x cols vectors, one per padded
// pixel, lane c holding plane c; lanes past `lanes` zero), the border
// filled with `border`: 16 pixels at a time in row-major order (across row
// ends, so that rows narrower than 16 fill whole vectors), transposed in
// registers and stored at each pixel's place.
void PlanesIntoLanes(const Conv2DGeometry& g, const float* const* planes,
                     int64_t lanes, LaneVector border, int64_t rows,
                     int64_t cols, LaneVector* padded) {
  const int64_t iy0 = std::max<int64_t>(0, -g.pad_top);
  const int64_t iy1 = std::min(g.in_h, rows - g.pad_top);
  const int64_t ix0 = std::max<int64_t>(0, -g.pad_left);
  const int64_t ix1 = std::min(g.in_w, cols - g.pad_left);
  const int64_t in_size = g.InSize();
  for (int64_t r = 0; r < rows; ++r) {  // The border.
    LaneVector* row = padded + r * cols;
    const int64_t iy = r - g.pad_top;
    if (iy < iy0 || iy >= iy1) {
      std::fill(row, row + cols, border);
    } else {
      std::fill(row, row + ix0 + g.pad_left, border);
      std::fill(row + ix1 + g.pad_left, row + cols, border);
    }
  }
  int64_t iy = 0, ix = 0;  // Of pixel q0 + i below.
  for (int64_t q0 = 0; q0 < in_size; q0 += kDepthwiseLanes) {
    if (q0 + kDepthwiseLanes > in_size && in_size >= kDepthwiseLanes) {
      // The last 16 pixels instead of a partial group: whole-vector loads
      // (a part was narrow stores read back as a vector, a stall each), and
      // the pixels seen twice are stored twice, the same values.
      q0 = in_size - kDepthwiseLanes;
      iy = q0 / g.in_w, ix = q0 % g.in_w;
    }
    const int64_t count = std::min(kDepthwiseLanes, in_size - q0);
    // Not `= {}`: that zeroed the array in memory (a memset call) every time.
    LaneVector v[kDepthwiseLanes];
    for (int64_t c = 0; c < kDepthwiseLanes; ++c) {
      v[c] = c < lanes ? LoadPart(planes[c] + q0, count) : LaneVector{};
    }
    Transpose16(v);
    for (int64_t i = 0; i < count; ++i) {  // No division per pixel.
      if (iy >= iy0 && iy < iy1 && ix >= ix0 && ix < ix1) {
        padded[(iy + g.pad_top) * cols + ix + g.pad_left] = v[i];
      }
      if (++ix == g.in_w) ix = 0, ++iy;
    }
  }
}

// And back: `size` vectors (one per output pixel) into the first `lanes`
// planes of outs, 16 pixels at a time, bounded on the way as Clip bounds
// (-infinity and +infinity: unbounded).
void LanesIntoPlanes(const LaneVector* out, int64_t size, float lower,
                     float upper, int64_t lanes, float* const* outs) {
  const LaneVector low = LaneVector{} + lower, high = LaneVector{} + upper;
  for (int64_t p0 = 0; p0 < size; p0 += kDepthwiseLanes) {
    if (p0 + kDepthwiseLanes > size && size >= kDepthwiseLanes) {
      p0 = size - kDepthwiseLanes;  // As above: whole vectors.
    }
    const int64_t count = std::min(kDepthwiseLanes, size - p0);
    LaneVector v[kDepthwiseLanes];  // Pixels past `count` repeat the last.
    for (int64_t i = 0; i < kDepthwiseLanes; ++i) {
      // As ClipKernel: "x < lower ? lower : x", then the same for upper.
      const LaneVector x = out[std::min(p0 + i, size - 1)];
      const LaneVector raised = x < low ? low : x;
      v[i] = raised > high ? high : raised;
    }
    Transpose16(v);
    for (int64_t c = 0; c < lanes; ++c) StorePart(v[c], count, outs[c] + p0);
  }
}

// A buffer of `vectors` LaneVectors on a vector boundary, in scratch. Not
// zeroed.
LaneVector* LaneBuffer(std::vector<float>& scratch, int64_t vectors) {
  // One vector more than needed, to start on a vector boundary.
  scratch.resize((vectors + 1) * kDepthwiseLanes);
  const uintptr_t raw = reinterpret_cast<uintptr_t>(scratch.data());
  return reinterpret_cast<LaneVector*>((raw + kLaneBytes - 1) / kLaneBytes *
                                       kLaneBytes);
}

}  // namespace

void DepthwiseLanes2D(const Conv2DGeometry& g, const float* const* planes,
                      const float* w, const float* bias, float lower,
                      float upper, int64_t lanes, float* const* outs,
                      std::vector<float>& scratch) {
  if (g.out_h <= 0 || g.out_w <= 0) return;
  // The padded input rows and columns the outputs read, then the outputs,
  // each pixel one vector of lanes; then the weights and the bias. Lanes
  // past `lanes` stay zero and are never stored.
  const int64_t rows = g.SpanRows();
  const int64_t cols = g.SpanCols();
  LaneVector* padded =
      LaneBuffer(scratch, rows * cols + g.OutSize() + g.Taps() + 1);
  LaneVector* out = padded + rows * cols;
  LaneVector* weights = out + g.OutSize();
  LaneVector* bias_vector = weights + g.Taps();
  PlanesIntoLanes(g, planes, lanes, LaneVector{}, rows, cols, padded);
  std::memcpy(weights, w, g.Taps() * kLaneBytes);
  std::memcpy(bias_vector, bias, kLaneBytes);
  // Groups of kPixels outputs in row-major order, across row ends (a 7-wide
  // row alone would leave most of a group empty); the last group repeats
  // the last output's window and keeps only its own.
  constexpr int64_t kPixels = 8;
  const int64_t size = g.OutSize();
  int64_t oy = 0, ox = 0;  // Of output p0 + i below.
  for (int64_t p0 = 0; p0 < size; p0 += kPixels) {
    int64_t base[kPixels];
    for (int64_t i = 0; i < kPixels; ++i) {
      base[i] = oy * g.stride_h * cols + ox * g.stride_w;
      if (p0 + i + 1 < size && ++ox == g.out_w) ox = 0, ++oy;
    }
    if (p0 + kPixels <= size) {
      DepthwiseLanePixels<kPixels>(g, padded, base, cols, weights, *bias_vector,
                                   out + p0);
    } else {
      LaneVector last[kPixels];
      DepthwiseLanePixels<kPixels>(g, padded, base, cols, weights, *bias_vector,
                                   last);
      std::copy(last, last + (size - p0), out + p0);
    }
  }
  LanesIntoPlanes(out, size, lower, upper, lanes, outs);
}

void MaxPoolLanes2D(const Conv2DGeometry& g, const float* const* planes,
                    int64_t lanes, float* const* outs,
                    std::vector<float>& scratch) {
  if (g.out_h <= 0 || g.out_w <= 0) return;
  constexpr float kFloor = MaxPoolFloor<float>();
  const int64_t rows = g.SpanRows();
  const int64_t cols = g.SpanCols();
  LaneVector* padded = LaneBuffer(scratch, rows * cols + g.OutSize());
  LaneVector* out = padded + rows * cols;
  PlanesIntoLanes(g, planes, lanes, LaneVector{} + kFloor, rows, cols, padded);
  // Each output as MaxPoolPlane2D takes it: each window column's maximum
  // down its rows, then the maximum of those along the row, in order, with
  // "v > best ? v : best" per lane (NaN skipped; the border's floor never
  // wins over an input; a tie of +0 and -0 keeps the same one). Four outputs
  // at a time: independent chains of maxima.
  constexpr int64_t kPixels = 4;
  const int64_t size = g.OutSize();
  int64_t oy = 0, ox = 0;  // Of output p0 + i below.
  for (int64_t p0 = 0; p0 < size; p0 += kPixels) {
    const int64_t count = std::min(kPixels, size - p0);
    const LaneVector* window[kPixels];
    for (int64_t i = 0; i < kPixels; ++i) {
      window[i] = padded + oy * g.stride_h * cols + ox * g.stride_w;
      if (p0 + i + 1 < size && ++ox == g.out_w) ox = 0, ++oy;
    }
    LaneVector best[kPixels];
    for (int64_t i = 0; i < kPixels; ++i) best[i] = LaneVector{} + kFloor;
    for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
      LaneVector column[kPixels];
      for (int64_t i = 0; i < kPixels; ++i) column[i] = LaneVector{} + kFloor;
      for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
        const int64_t tap = kh * g.dilation_h * cols + kw * g.dilation_w;
        for (int64_t i = 0; i < kPixels; ++i) {
          const LaneVector v = window[i][tap];
          column[i] = v > column[i] ? v : column[i];
        }
      }
      for (int64_t i = 0; i < kPixels; ++i) {
        best[i] = column[i] > best[i] ? column[i] : best[i];
      }
    }
    std::copy(best, best + count, out + p0);
  }
  const float inf = std::numeric_limits<float>::infinity();
  LanesIntoPlanes(out, size, -inf, inf, lanes, outs);
}

// out[i] = the largest of MaxPoolFloor and from[t][i] for t < count, i < n, the
// sources taken in order as "v > best ? v : best" takes them (NaN skipped).
// One pass for all sources: a pass per source read and wrote `out` each
// time.
template <class T, int64_t kCount>
void MaxOfRowsFixed(const T* const* from, int64_t n, T* out) {
  for (int64_t i = 0; i < n; ++i) {
    T best = MaxPoolFloor<T>();
    for (int64_t t = 0; t < kCount; ++t) {
      const T v = from[t][i];
      best = v > best ? v : best;
    }
    out[i] = best;
  }
}

template <class T>
void MaxOfRows(const T* const* from, int64_t count, int64_t n, T* out) {
  switch (count) {
    case 1:
      return MaxOfRowsFixed<T, 1>(from, n, out);
    case 2:
      return MaxOfRowsFixed<T, 2>(from, n, out);
    case 3:
      return MaxOfRowsFixed<T, 3>(from, n, out);
    default:
      std::fill(out, out + n, MaxPoolFloor<T>());
      for (int64_t t = 0; t < count; ++t) {
        for (int64_t i = 0; i < n; ++i) {
          out[i] = from[t][i] > out[i] ? from[t][i] : out[i];
        }
      }
  }
}

// MaxOfRows over `taps` sources `step` apart from src (at most kMaxPoolTaps).
template <class T>
void MaxOfShifted(const T* src, int64_t taps, int64_t step, int64_t n, T* out) {
  const T* from[kMaxPoolTaps];
  for (int64_t t = 0; t < taps; ++t) from[t] = src + t * step;
  MaxOfRows(from, taps, n, out);
}

// MaxPoolPlane2D over planes whose rows are short: the same separable maxima
// (window rows first, in order, then the reduced row's taps, in order), but
// each pass is one loop over the whole plane rather than a few loops per
// output row, which cost more in loop overhead than in maxima (SqueezeNet's
// 3 x 3 / 2 pool over 256 planes of 27 x 27: 159 us; ONNX Runtime 19).
// Rows are walked flat, across row ends, `pitch` apart; values computed past
// a row's last window are never picked. A plane whose windows reach past
// its top or left, or past its right or bottom end (MaxPoolNeedsBorder), is
// first copied inside a border of MaxPoolFloor that holds every window.
template <class T>
void MaxPoolFlatPlane2D(const Conv2DGeometry& g, const T* x, T* y,
                        std::vector<T>& scratch) {
  constexpr T kFloor = MaxPoolFloor<T>();
  // The padded rows and columns some window reads.
  const int64_t rows = g.SpanRows();
  const int64_t cols = g.SpanCols();
  const bool border = MaxPoolNeedsBorder(g);
  const int64_t pitch = border ? cols : g.in_w;
  // The window tops' rows, flat, and their entries that start a window.
  const int64_t tops = ((g.out_h - 1) * g.stride_h + 1) * pitch;
  const int64_t lefts = tops - (g.kernel_w - 1) * g.dilation_w;
  scratch.resize((border ? rows * cols : 0) + tops + lefts);
  T* reduced = scratch.data();  // max over each window's rows
  T* windows = reduced + tops;  // and over its columns
  const T* plane = x;
  if (border) {
    T* padded = windows + lefts;
    const int64_t first = std::min(g.pad_left, cols);
    const int64_t last = std::clamp(g.in_w + g.pad_left, first, cols);
    for (int64_t r = 0; r < rows; ++r) {
      T* row = padded + r * cols;
      const int64_t iy = r - g.pad_top;
      if (iy < 0 || iy >= g.in_h) {
        std::fill(row, row + cols, kFloor);
        continue;
      }
      std::fill(row, row + first, kFloor);
      std::copy(x + iy * g.in_w + first - g.pad_left,
                x + iy * g.in_w + last - g.pad_left, row + first);
      std::fill(row + last, row + cols, kFloor);
    }
    plane = padded;
  }
  MaxOfShifted<T>(plane, g.kernel_h, g.dilation_h * pitch, tops, reduced);
  MaxOfShifted<T>(reduced, g.kernel_w, g.dilation_w, lefts, windows);
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    const T* top = windows + oy * g.stride_h * pitch;
    for (int64_t ox = 0; ox < g.out_w; ++ox) {
      y[oy * g.out_w + ox] = top[ox * g.stride_w];
    }
  }
}

template <class T>
void MaxPoolPlane2D(const Conv2DGeometry& g, const T* x, T* y,
                    std::vector<T>& line) {
  if (MaxPoolPlaneIsFlat(g)) {
    MaxPoolFlatPlane2D(g, x, y, line);
    return;
  }
  // Separable: per output row, the window's input rows are first reduced to
  // one row (a contiguous, vectorised max), then the row's taps are taken
  // along it. Half the time of taking the k_h x k_w taps one by one, and the
  // same maxima: "v > best ? v : best" keeps best when v is NaN, so NaN
  // inputs are skipped either way. The rows, and then the taps where all of
  // them lie inside the row, are each taken in one pass (MaxOfRows).
  // The reduced row, then (stride 2) its even and odd columns.
  line.resize(g.stride_w == 2 ? 2 * g.in_w : g.in_w);
  const T* rows[kMaxPoolTaps];
  const T* taps[kMaxPoolTaps];
  ColumnRange inside[kMaxPoolTaps];
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    int64_t count = 0;
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t iy = oy * g.stride_h + kh * g.dilation_h - g.pad_top;
      if (iy >= 0 && iy < g.in_h) rows[count++] = x + iy * g.in_w;
    }
    MaxOfRows(rows, count, g.in_w, line.data());
    T* out = y + oy * g.out_w;
    const T* src = line.data();  // src[ox * stride_w + shift]
    T* even = line.data() + g.in_w;
    if (g.stride_w == 2) {
      // The reduced row split into its even and odd columns first: input
      // column 2 ox + shift is then entry ox + floor(shift / 2) of one of
      // them, and each tap is a contiguous, vectorised max (the strided
      // reads were most of ResNet-18's 3 x 3 / 2 MaxPool).
      const int64_t half = (g.in_w + 1) / 2;
      T* odd = even + half;
      if constexpr (std::is_same_v<T, float>) {
        SplitRowByPhase(src, g.in_w, 0, half, even, odd);
      } else {
        for (int64_t i = 0; i < g.in_w / 2; ++i) {
          even[i] = src[2 * i];
          odd[i] = src[2 * i + 1];
        }
        if (g.in_w % 2 != 0) even[half - 1] = src[g.in_w - 1];
      }
    }
    // Where tap kw reads, for ox in inside[kw]: taps[kw][ox * step].
    int64_t lo = 0, hi = g.out_w;  // where every tap is inside
    for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
      const int64_t shift = kw * g.dilation_w - g.pad_left;
      inside[kw] = InsideColumns(g, shift);
      if (g.stride_w == 2) {
        const int64_t parity = shift & 1;  // Also for negative shifts.
        taps[kw] = (parity == 0 ? even : even + (g.in_w + 1) / 2) +
                   (shift - parity) / 2;
      } else {
        taps[kw] = src + shift;
      }
      lo = std::max(lo, inside[kw].first);
      hi = std::min(hi, inside[kw].last);
    }
    hi = std::max(lo, hi);
    const int64_t step = g.stride_w == 2 ? 1 : g.stride_w;
    if (step == 1) {
      const T* from[kMaxPoolTaps];
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) from[kw] = taps[kw] + lo;
      MaxOfRows(from, g.kernel_w, hi - lo, out + lo);
    }
    // The columns near the ends (and every column for other strides), tap
    // by tap in order.
    auto per_tap = [&](int64_t first, int64_t last) {
      std::fill(out + first, out + last, MaxPoolFloor<T>());
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const int64_t a = std::max(first, inside[kw].first);
        const int64_t b = std::min(last, inside[kw].last);
        for (int64_t ox = a; ox < b; ++ox) {
          const T v = taps[kw][ox * step];
          out[ox] = v > out[ox] ? v : out[ox];
        }
      }
    };
    if (step == 1) {
      per_tap(0, lo);
      per_tap(hi, g.out_w);
    } else {
      per_tap(0, g.out_w);
    }
  }
}

template void Im2Col2D<float>(const Conv2DGeometry&, const float*, int64_t,
                              int64_t, int64_t, float*, int64_t);
template void Im2Col2D<double>(const Conv2DGeometry&, const double*, int64_t,
                               int64_t, int64_t, double*, int64_t);
template void DepthwisePlane2D<float>(const Conv2DGeometry&, const float*,
                                      const float*, float, float, float, float*,
                                      PlaneScratch<float>&);
template void DepthwisePlane2D<double>(const Conv2DGeometry&, const double*,
                                       const double*, double, double, double,
                                       double*, PlaneScratch<double>&);
template void MaxPoolPlane2D<float>(const Conv2DGeometry&, const float*, float*,
                                    std::vector<float>&);
template void MaxPoolPlane2D<double>(const Conv2DGeometry&, const double*,
                                     double*, std::vector<double>&);
// Quantized tensors (a MaxPool that qdq-fusion moved a Q/DQ pair through):
// the padding is MaxPoolFloor, which no maximum takes over.
template void MaxPoolPlane2D<uint8_t>(const Conv2DGeometry&, const uint8_t*,
                                      uint8_t*, std::vector<uint8_t>&);
template void MaxPoolPlane2D<int8_t>(const Conv2DGeometry&, const int8_t*,
                                     int8_t*, std::vector<int8_t>&);

}  // namespace weft::internal
