#include "kernels/winograd.h"

#include <algorithm>
#include <cstring>

#include "kernels/int_division.h"
#include "kernels/packed_gemm.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace weft::internal {
namespace {

// kWinogradLanes floats, one tile each, as one value: GCC and clang lower
// the arithmetic to the widest vectors the target has. Built without AVX
// (x86-64-v2), GCC warns that passing such a value changes the ABI; these
// functions are this file's alone and inlined, so no ABI is crossed.
using Lanes = float __attribute__((vector_size(kWinogradLanes * 4)));
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

Lanes LoadLanes(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

void StoreLanes(float* p, const Lanes& v) { std::memcpy(p, &v, sizeof(v)); }

// The transforms of F(m x m, 3 x 3) over one column or row of a tile:
//   Input:  r = B^T d, alpha = m + 2 values in and out;
//   Output: s = A^T p, alpha values in, m out;
//   Weight: u = G g, 3 values in, alpha out (in double).
template <int kTile>
struct WinogradForm;

template <>
struct WinogradForm<4> {
  static constexpr int kAlpha = 6;
  [[gnu::always_inline]] static void Input(const Lanes d[6], Lanes r[6]) {
    r[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
    r[1] = -4.0f * (d[1] + d[2]) + (d[3] + d[4]);
    r[2] = 4.0f * (d[1] - d[2]) + (d[4] - d[3]);
    r[3] = 2.0f * (d[3] - d[1]) + (d[4] - d[2]);
    r[4] = 2.0f * (d[1] - d[3]) + (d[4] - d[2]);
    r[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
  }
  [[gnu::always_inline]] static void Output(const Lanes p[6], Lanes s[4]) {
    const Lanes sum12 = p[1] + p[2], diff12 = p[1] - p[2];
    const Lanes sum34 = p[3] + p[4], diff34 = p[3] - p[4];
    s[0] = p[0] + sum12 + sum34;
    s[1] = diff12 + 2.0f * diff34;
    s[2] = sum12 + 4.0f * sum34;
    s[3] = diff12 + 8.0f * diff34 + p[5];
  }
  static void Weight(const double g[3], double u[6]) {
    u[0] = g[0] / 4.0;
    u[1] = -(g[0] + g[1] + g[2]) / 6.0;
    u[2] = -(g[0] - g[1] + g[2]) / 6.0;
    u[3] = g[0] / 24.0 + g[1] / 12.0 + g[2] / 6.0;
    u[4] = g[0] / 24.0 - g[1] / 12.0 + g[2] / 6.0;
    u[5] = g[2];
  }
};

template <>
struct WinogradForm<2> {
  static constexpr int kAlpha = 4;
  [[gnu::always_inline]] static void Input(const Lanes d[4], Lanes r[4]) {
    r[0] = d[0] - d[2];
    r[1] = d[1] + d[2];
    r[2] = d[2] - d[1];
    r[3] = d[1] - d[3];
  }
  [[gnu::always_inline]] static void Output(const Lanes p[4], Lanes s[2]) {
    s[0] = p[0] + p[1] + p[2];
    s[1] = p[1] - p[2] - p[3];
  }
  static void Weight(const double g[3], double u[4]) {
    u[0] = g[0];
    u[1] = (g[0] + g[1] + g[2]) / 2.0;
    u[2] = (g[0] - g[1] + g[2]) / 2.0;
    u[3] = g[2];
  }
};

// The length of one phase row of WinogradInputBlock's scratch (the padded
// row's columns split by column mod m): the plane's quads' tiles, and the
// two columns an (m + 2)-wide tile reads past its m.
int64_t PhaseRowFloats(const WinogradPlane& plane) {
  return kWinogradQuad * plane.quads_w + 2;
}

// Zeros after the phase rows, read by the lanes of quads past a block.
constexpr int64_t kZeroFloats = kWinogradLanes;

// phases[q * len + k] = line[kTile * k + q] for q < kTile, k < len: a
// padded input row split by column mod kTile. With AVX2, 8 k at a time as
// a kTile x 8 transpose (a scalar loop took 40% of the 4 x 4 input
// transform's time).
template <int kTile>
void SplitLineByPhase(const float* line, int64_t len, float* phases) {
  int64_t k = 0;
#if defined(__AVX2__)
  if constexpr (kTile == 4) {
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (; k + kWinogradLanes <= len; k += kWinogradLanes) {
      const float* from = line + 4 * k;
      const __m256 a0 = _mm256_loadu_ps(from), a1 = _mm256_loadu_ps(from + 8);
      const __m256 a2 = _mm256_loadu_ps(from + 16);
      const __m256 a3 = _mm256_loadu_ps(from + 24);
      // Per 128-bit half: columns 0, 8, 1, 9 (and 4, 12, 5, 13), ...
      const __m256 t0 = _mm256_unpacklo_ps(a0, a1);
      const __m256 t1 = _mm256_unpackhi_ps(a0, a1);
      const __m256 t2 = _mm256_unpacklo_ps(a2, a3);
      const __m256 t3 = _mm256_unpackhi_ps(a2, a3);
      // ... then one phase a vector, its halves interleaved: 0, 8, 16, 24 |
      // 4, 12, 20, 28 for phase 0.
      const __m256 u[4] = {_mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                           _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2))};
      for (int q = 0; q < 4; ++q) {
        _mm256_storeu_ps(phases + q * len + k,
                         _mm256_permutevar8x32_ps(u[q], order));
      }
    }
  } else {
    for (; k + kWinogradLanes <= len; k += kWinogradLanes) {
      const float* from = line + 2 * k;
      const __m256 a0 = _mm256_loadu_ps(from), a1 = _mm256_loadu_ps(from + 8);
      // Even columns 0, 2, 8, 10 | 4, 6, 12, 14, then in order.
      const __m256 even = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
      const __m256 odd = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
      _mm256_storeu_ps(phases + k, _mm256_castpd_ps(_mm256_permute4x64_pd(
                                       _mm256_castps_pd(even), 0xd8)));
      _mm256_storeu_ps(phases + len + k, _mm256_castpd_ps(_mm256_permute4x64_pd(
                                             _mm256_castps_pd(odd), 0xd8)));
    }
  }
#endif
  for (; k < len; ++k) {
    for (int q = 0; q < kTile; ++q) phases[q * len + k] = line[kTile * k + q];
  }
}

// Two quads' values, four floats each, as one vector. With AVX, one load
// and one insert: through a copy on the stack, the 32-byte load waited on
// the two 16-byte stores it spans (no store forwarding).
Lanes LoadQuads(const float* low, const float* high) {
#if defined(__AVX__)
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(low)),
                              _mm_loadu_ps(high), 1);
#else
  float lanes[kWinogradLanes];
  std::memcpy(lanes, low, kWinogradQuad * sizeof(float));
  std::memcpy(lanes + kWinogradQuad, high, kWinogradQuad * sizeof(float));
  return LoadLanes(lanes);
#endif
}

template <int kTile>
void InputBlock(const WinogradPlane& plane, int64_t block, const float* x,
                int64_t c0, int64_t c1, int64_t channels, float* v,
                float* scratch) {
  using Form = WinogradForm<kTile>;
  constexpr int kAlpha = Form::kAlpha;
  const Conv2DGeometry& g = plane.geometry;
  const int64_t rows = plane.RowsOf(block);
  const int64_t quads = plane.QuadsOf(block);
  const int64_t pairs = plane.ColumnsOf(block) / kWinogradLanes;
  const int64_t len = PhaseRowFloats(plane);
  const int64_t row_floats = kTile * len;  // one padded row, all phases
  const int64_t padded_rows = kTile * rows + 2;
  float* const zeros = scratch + (kTile * plane.block_rows + 2) * row_floats;
  std::fill(zeros, zeros + kZeroFloats, 0.0f);
  float* const line = zeros + kZeroFloats;  // one padded input row
  // The input row under the block's first padded row.
  const int64_t first_row = kTile * block * plane.block_rows - g.pad_top;
  // Input columns that land in the scratch's phase rows.
  const int64_t end_column =
      std::max<int64_t>(0, std::min(g.in_w, row_floats - g.pad_left));
  const int64_t left = std::min(g.pad_left, row_floats);
  const int64_t point_floats = plane.PointFloats(channels);
  const int64_t panel = plane.panel, kc = plane.depth_block;
  for (int64_t c = c0; c < c1; ++c) {
    const float* channel = x + c * g.InSize();
    // The block's input rows, padded and split by column mod m: phase q of
    // padded row r holds padded columns q, q + m, q + 2 m, ..., so that
    // each of a tile's columns is a run of a quad's four tiles' values.
    for (int64_t r = 0; r < padded_rows; ++r) {
      float* phases = scratch + r * row_floats;
      const int64_t iy = first_row + r;
      if (iy < 0 || iy >= g.in_h) {
        std::fill(phases, phases + row_floats, 0.0f);
        continue;
      }
      std::fill(line, line + left, 0.0f);
      std::copy(channel + iy * g.in_w, channel + iy * g.in_w + end_column,
                line + left);
      std::fill(line + left + end_column, line + row_floats, 0.0f);
      SplitLineByPhase<kTile>(line, len, phases);
    }
    // Channel c's row of the packed panels (packed_gemm.h's layout).
    const int64_t p0 = c / kc * kc;
    const int64_t block_depth = std::min(kc, channels - p0);
    float* const packed = v + p0 * plane.MaxColumns() + (c - p0) * panel;
    for (int64_t pair = 0; pair < pairs; ++pair) {
      // Each quad's first value and its stride between the tile's rows
      // (m phase rows); a quad past the block reads zeros.
      const float* source[2];
      int64_t step[2];
      for (int h = 0; h < 2; ++h) {
        const int64_t q = 2 * pair + h;
        const bool live = q < quads;
        source[h] = live ? scratch + kTile * (q / plane.quads_w) * row_floats +
                               kWinogradQuad * (q % plane.quads_w)
                         : zeros;
        step[h] = live ? len : 0;
      }
      Lanes columns[kAlpha][kAlpha];  // B^T down each of the tile's columns
      for (int j = 0; j < kAlpha; ++j) {
        Lanes d[kAlpha];
        for (int i = 0; i < kAlpha; ++i) {
          const int64_t phase_row = i * kTile + j % kTile;
          d[i] = LoadQuads(source[0] + phase_row * step[0] + j / kTile,
                           source[1] + phase_row * step[1] + j / kTile);
        }
        Form::Input(d, columns[j]);
      }
      const int64_t o = kWinogradLanes * pair;
      float* out = packed + o / panel * panel * block_depth + o % panel;
      for (int i = 0; i < kAlpha; ++i) {
        Lanes row[kAlpha];
        for (int j = 0; j < kAlpha; ++j) row[j] = columns[j][i];
        Lanes transformed[kAlpha];
        Form::Input(row, transformed);
        for (int j = 0; j < kAlpha; ++j) {
          StoreLanes(out + (i * kAlpha + j) * point_floats, transformed[j]);
        }
      }
    }
  }
}

// One output row of a quad: out[jj] holds column jj of the quad's tiles
// (lane 4 h + l is tile l of quad h), plus b, interleaved into
// pixels[l * kTile + jj].
template <int kTile>
void InterleaveQuad(const Lanes out[kTile], int64_t h, float b, float* pixels) {
#if defined(__AVX__)
  if constexpr (kTile == 4) {
    __m128 r[4];
    for (int jj = 0; jj < 4; ++jj) {
      const __m256 both = out[jj];
      r[jj] = h == 0 ? _mm256_castps256_ps128(both)
                     : _mm256_extractf128_ps(both, 1);
    }
    _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]);
    for (int64_t l = 0; l < kWinogradQuad; ++l) {
      _mm_storeu_ps(pixels + 4 * l, _mm_add_ps(r[l], _mm_set1_ps(b)));
    }
    return;
  }
#endif
  for (int64_t l = 0; l < kWinogradQuad; ++l) {
    for (int jj = 0; jj < kTile; ++jj) {
      pixels[l * kTile + jj] = out[jj][kWinogradQuad * h + l] + b;
    }
  }
}

template <int kTile>
void OutputBlock(const WinogradPlane& plane, int64_t block, const float* m,
                 int64_t channels, int64_t ld, const float* bias, float* y) {
  using Form = WinogradForm<kTile>;
  constexpr int kAlpha = Form::kAlpha;
  const Conv2DGeometry& g = plane.geometry;
  const int64_t quads = plane.QuadsOf(block);
  const int64_t first_row = kTile * block * plane.block_rows;
  constexpr int64_t kQuadPixels = kTile * kWinogradQuad;
  const int64_t point_floats = PointStride(channels * ld);
  for (int64_t c = 0; c < channels; ++c) {
    float* plane_y = y + c * g.OutSize();
    const float b = bias != nullptr ? bias[c] : 0.0f;
    for (int64_t q0 = 0; q0 < quads; q0 += 2) {
      const float* in = m + c * ld + kWinogradQuad * q0;
      Lanes columns[kAlpha][kTile];  // A^T down each of the tile's columns
      for (int j = 0; j < kAlpha; ++j) {
        Lanes column[kAlpha];
        for (int i = 0; i < kAlpha; ++i) {
          column[i] = LoadLanes(in + (i * kAlpha + j) * point_floats);
        }
        Form::Output(column, columns[j]);
      }
      for (int i = 0; i < kTile; ++i) {
        Lanes row[kAlpha];
        for (int j = 0; j < kAlpha; ++j) row[j] = columns[j][i];
        Lanes out[kTile];
        Form::Output(row, out);
        for (int64_t h = 0; h < 2 && q0 + h < quads; ++h) {
          const int64_t q = q0 + h;
          const int64_t oy = first_row + kTile * (q / plane.quads_w) + i;
          if (oy >= g.out_h) continue;
          const int64_t x0 = kQuadPixels * (q % plane.quads_w);
          float pixels[kQuadPixels];
          InterleaveQuad<kTile>(out, h, b, pixels);
          float* target = plane_y + oy * g.out_w + x0;
          if (x0 + kQuadPixels <= g.out_w) {  // a copy inlined
            std::memcpy(target, pixels, sizeof(pixels));
          } else {
            std::memcpy(target, pixels,
                        static_cast<size_t>(g.out_w - x0) * sizeof(float));
          }
        }
      }
    }
  }
}

template <int kTile>
void Weights(const float* w, int64_t out_channels, int64_t in_channels,
             float* u) {
  using Form = WinogradForm<kTile>;
  constexpr int kAlpha = Form::kAlpha;
  for (int64_t o = 0; o < out_channels; ++o) {
    for (int64_t i = 0; i < in_channels; ++i) {
      const float* window = w + (o * in_channels + i) * 9;
      double columns[3][kAlpha];  // G applied down each window column
      for (int k = 0; k < 3; ++k) {
        const double column[3] = {window[k], window[3 + k], window[6 + k]};
        Form::Weight(column, columns[k]);
      }
      for (int a = 0; a < kAlpha; ++a) {
        const double row[3] = {columns[0][a], columns[1][a], columns[2][a]};
        double transformed[kAlpha];
        Form::Weight(row, transformed);
        for (int b = 0; b < kAlpha; ++b) {
          u[((a * kAlpha + b) * out_channels + o) * in_channels + i] =
              static_cast<float>(transformed[b]);
        }
      }
    }
  }
}

}  // namespace

int64_t WinogradTileFor(const Conv2DGeometry& g) {
  if (g.kernel_h != 3 || g.kernel_w != 3 || g.stride_h != 1 ||
      g.stride_w != 1 || g.dilation_h != 1 || g.dilation_w != 1 ||
      g.pad_top < 0 || g.pad_left < 0 ||
      FloatMicroKernel().nr % kWinogradLanes != 0) {
    return 0;
  }
  const int64_t plane = std::min(g.out_h, g.out_w);
  if (plane >= kWinogradMinPlane) return 4;
  if (plane >= kWinogradMinSmallPlane) return 2;
  return 0;
}

WinogradPlane WinogradPlane::Of(const Conv2DGeometry& g) {
  WinogradPlane p;
  p.geometry = g;
  p.tile = WinogradTileFor(g);
  p.points = WinogradPoints(p.tile);
  p.tiles_h = CeilDiv(g.out_h, p.tile);
  p.tiles_w = CeilDiv(g.out_w, p.tile);
  p.quads_w = CeilDiv(p.tiles_w, kWinogradQuad);
  p.panel = FloatMicroKernel().nr;
  p.depth_block = FloatMicroKernel().kc;
  const int64_t row_columns = kWinogradQuad * p.quads_w;
  int64_t best_waste = -1;
  for (int64_t rows = 1; rows <= p.tiles_h; ++rows) {
    if (rows > 1 &&
        RoundUp(rows * row_columns, p.panel) > kWinogradMaxColumns) {
      break;
    }
    const int64_t whole = p.tiles_h / rows, rest = p.tiles_h % rows;
    const int64_t waste =
        whole * (RoundUp(rows * row_columns, p.panel) - rows * row_columns) +
        (rest > 0 ? RoundUp(rest * row_columns, p.panel) - rest * row_columns
                  : 0);
    if (best_waste < 0 || waste <= best_waste) {
      best_waste = waste;
      p.block_rows = rows;
    }
  }
  p.blocks = CeilDiv(p.tiles_h, p.block_rows);
  return p;
}

int64_t WinogradPlane::RowsOf(int64_t block) const {
  return std::min(block_rows, tiles_h - block * block_rows);
}

int64_t WinogradPlane::ColumnsOf(int64_t block) const {
  return RoundUp(kWinogradQuad * QuadsOf(block), panel);
}

int64_t WinogradPlane::FirstPixel(int64_t block) const {
  return block * block_rows * tile * geometry.out_w;
}

int64_t WinogradPlane::PixelsOf(int64_t block) const {
  const int64_t end_row =
      std::min(geometry.out_h, (block * block_rows + RowsOf(block)) * tile);
  return end_row * geometry.out_w - FirstPixel(block);
}

int64_t WinogradPlane::ScratchFloats() const {
  // The phase rows, the zeros, and one padded input row.
  return (tile * block_rows + 2 + 1) * tile * PhaseRowFloats(*this) +
         kZeroFloats;
}

void WinogradWeights(int64_t tile, const float* w, int64_t out_channels,
                     int64_t in_channels, float* u) {
  if (tile == 4) {
    Weights<4>(w, out_channels, in_channels, u);
  } else {
    Weights<2>(w, out_channels, in_channels, u);
  }
}

void WinogradInputBlock(const WinogradPlane& plane, int64_t block,
                        const float* x, int64_t c0, int64_t c1,
                        int64_t channels, float* v, float* scratch) {
  if (plane.tile == 4) {
    InputBlock<4>(plane, block, x, c0, c1, channels, v, scratch);
  } else {
    InputBlock<2>(plane, block, x, c0, c1, channels, v, scratch);
  }
}

void WinogradOutputBlock(const WinogradPlane& plane, int64_t block,
                         const float* m, int64_t channels, int64_t ld,
                         const float* bias, float* y) {
  if (plane.tile == 4) {
    OutputBlock<4>(plane, block, m, channels, ld, bias, y);
  } else {
    OutputBlock<2>(plane, block, m, channels, ld, bias, y);
  }
}

}  // namespace weft::internal
