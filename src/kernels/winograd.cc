#include "kernels/winograd.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/int_division.h"
#include "kernels/packed_gemm.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace weft::internal {
namespace {

// kWinogradLanes floats, one tile each, as one value: GCC and clang lower
// the arithmetic to the widest vectors the target has.
using Lanes = float __attribute__((vector_size(kWinogradLanes * 4)));

Lanes LoadLanes(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

void StoreLanes(float* p, Lanes v) { std::memcpy(p, &v, sizeof(v)); }

// r = B^T d over six values (a column or a row of the 6 x 6 input tile).
[[gnu::always_inline]] inline void InputTransform(const Lanes d[6],
                                                  Lanes r[6]) {
  r[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  r[1] = -4.0f * (d[1] + d[2]) + (d[3] + d[4]);
  r[2] = 4.0f * (d[1] - d[2]) + (d[4] - d[3]);
  r[3] = 2.0f * (d[3] - d[1]) + (d[4] - d[2]);
  r[4] = 2.0f * (d[1] - d[3]) + (d[4] - d[2]);
  r[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

// s = A^T m over six values (a column or a row of the 6 x 6 product tile).
[[gnu::always_inline]] inline void OutputTransform(const Lanes m[6],
                                                   Lanes s[4]) {
  const Lanes sum12 = m[1] + m[2], diff12 = m[1] - m[2];
  const Lanes sum34 = m[3] + m[4], diff34 = m[3] - m[4];
  s[0] = m[0] + sum12 + sum34;
  s[1] = diff12 + 2.0f * diff34;
  s[2] = sum12 + 4.0f * sum34;
  s[3] = diff12 + 8.0f * diff34 + m[5];
}

// u = G g over three values (a column or a row of the 3 x 3 window).
void WeightTransform(const double g[3], double u[6]) {
  u[0] = g[0] / 4.0;
  u[1] = -(g[0] + g[1] + g[2]) / 6.0;
  u[2] = -(g[0] - g[1] + g[2]) / 6.0;
  u[3] = g[0] / 24.0 + g[1] / 12.0 + g[2] / 6.0;
  u[4] = g[0] / 24.0 - g[1] / 12.0 + g[2] / 6.0;
  u[5] = g[2];
}

// The length of one phase row of WinogradInputBlock's scratch: the plane's
// quads' tiles, and the two columns a 6-wide tile reads past its 4.
int64_t PhaseRowFloats(const WinogradPlane& plane) {
  return kWinogradQuad * plane.quads_w + 2;
}

// Zeros after the phase rows, read by the lanes of quads past a block.
constexpr int64_t kZeroFloats = kWinogradLanes;

// phases[q * len + k] = line[4 k + q] for q < 4, k < len: a padded input
// row split by column mod 4. With AVX2, 32 floats at a time as a 4 x 8
// transpose (a scalar loop took 40% of the input transform's time).
void SplitLineByPhase(const float* line, int64_t len, float* phases) {
  int64_t k = 0;
#if defined(__AVX2__)
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (; k + kWinogradLanes <= len; k += kWinogradLanes) {
    const float* from = line + 4 * k;
    const __m256 a0 = _mm256_loadu_ps(from), a1 = _mm256_loadu_ps(from + 8);
    const __m256 a2 = _mm256_loadu_ps(from + 16),
                 a3 = _mm256_loadu_ps(from + 24);
    // Per 128-bit half: columns 0, 8, 1, 9 (and 4, 12, 5, 13), ...
    const __m256 t0 = _mm256_unpacklo_ps(a0, a1),
                 t1 = _mm256_unpackhi_ps(a0, a1);
    const __m256 t2 = _mm256_unpacklo_ps(a2, a3),
                 t3 = _mm256_unpackhi_ps(a2, a3);
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
#endif
  for (; k < len; ++k) {
    for (int q = 0; q < 4; ++q) phases[q * len + k] = line[4 * k + q];
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

}  // namespace

bool WinogradFits(const Conv2DGeometry& g) {
  return g.kernel_h == 3 && g.kernel_w == 3 && g.stride_h == 1 &&
         g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 &&
         g.pad_top >= 0 && g.pad_left >= 0 && g.out_h >= kWinogradMinPlane &&
         g.out_w >= kWinogradMinPlane &&
         FloatMicroKernel().nr % kWinogradLanes == 0;
}

WinogradPlane WinogradPlane::Of(const Conv2DGeometry& g) {
  WinogradPlane p;
  p.geometry = g;
  p.tiles_h = CeilDiv(g.out_h, kWinogradTile);
  p.tiles_w = CeilDiv(g.out_w, kWinogradTile);
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
  return block * block_rows * kWinogradTile * geometry.out_w;
}

int64_t WinogradPlane::PixelsOf(int64_t block) const {
  const int64_t end_row = std::min(
      geometry.out_h, (block * block_rows + RowsOf(block)) * kWinogradTile);
  return end_row * geometry.out_w - FirstPixel(block);
}

int64_t WinogradPlane::ScratchFloats() const {
  // The phase rows, the zeros, and one padded input row (4 per phase row).
  return (kWinogradTile * block_rows + 2 + 1) * 4 * PhaseRowFloats(*this) +
         kZeroFloats;
}

void WinogradWeights(const float* w, int64_t out_channels, int64_t in_channels,
                     float* u) {
  for (int64_t o = 0; o < out_channels; ++o) {
    for (int64_t i = 0; i < in_channels; ++i) {
      const float* window = w + (o * in_channels + i) * 9;
      double columns[3][6];  // G applied down each of the window's columns
      for (int k = 0; k < 3; ++k) {
        const double column[3] = {window[k], window[3 + k], window[6 + k]};
        WeightTransform(column, columns[k]);
      }
      for (int a = 0; a < 6; ++a) {
        const double row[3] = {columns[0][a], columns[1][a], columns[2][a]};
        double transformed[6];
        WeightTransform(row, transformed);
        for (int b = 0; b < 6; ++b) {
          u[((a * 6 + b) * out_channels + o) * in_channels + i] =
              static_cast<float>(transformed[b]);
        }
      }
    }
  }
}

void WinogradInputBlock(const WinogradPlane& plane, int64_t block,
                        const float* x, int64_t c0, int64_t c1,
                        int64_t channels, float* v, float* scratch) {
  const Conv2DGeometry& g = plane.geometry;
  const int64_t rows = plane.RowsOf(block);
  const int64_t quads = plane.QuadsOf(block);
  const int64_t pairs = plane.ColumnsOf(block) / kWinogradLanes;
  const int64_t len = PhaseRowFloats(plane);
  const int64_t padded_rows = kWinogradTile * rows + 2;
  float* const zeros =
      scratch + (kWinogradTile * plane.block_rows + 2) * 4 * len;
  std::fill(zeros, zeros + kZeroFloats, 0.0f);
  float* const line = zeros + kZeroFloats;  // one padded input row
  // The input row under the block's first padded row.
  const int64_t first_row =
      kWinogradTile * block * plane.block_rows - g.pad_top;
  // Input columns that land in the scratch's phase rows.
  const int64_t end_column =
      std::max<int64_t>(0, std::min(g.in_w, 4 * len - g.pad_left));
  const int64_t point_floats = plane.PointFloats(channels);
  const int64_t panel = plane.panel, kc = plane.depth_block;
  for (int64_t c = c0; c < c1; ++c) {
    const float* channel = x + c * g.InSize();
    // The block's input rows, padded and split by column mod 4: phase q of
    // padded row r holds padded columns q, q + 4, q + 8, ..., so that each
    // of a tile's six columns is a run of a quad's four tiles' values.
    for (int64_t r = 0; r < padded_rows; ++r) {
      float* phases = scratch + r * 4 * len;
      const int64_t iy = first_row + r;
      if (iy < 0 || iy >= g.in_h) {
        std::fill(phases, phases + 4 * len, 0.0f);
        continue;
      }
      const int64_t left = std::min(g.pad_left, 4 * len);
      std::fill(line, line + left, 0.0f);
      std::copy(channel + iy * g.in_w, channel + iy * g.in_w + end_column,
                line + left);
      std::fill(line + left + end_column, line + 4 * len, 0.0f);
      SplitLineByPhase(line, len, phases);
    }
    // Channel c's row of the packed panels (packed_gemm.h's layout).
    const int64_t p0 = c / kc * kc;
    const int64_t block_depth = std::min(kc, channels - p0);
    float* const packed = v + p0 * plane.MaxColumns() + (c - p0) * panel;
    for (int64_t pair = 0; pair < pairs; ++pair) {
      // Each quad's first value and its stride between the tile's rows
      // (four phase rows); a quad past the block reads zeros.
      const float* source[2];
      int64_t row_floats[2];
      for (int h = 0; h < 2; ++h) {
        const int64_t q = 2 * pair + h;
        const bool live = q < quads;
        source[h] = live ? scratch +
                               kWinogradTile * (q / plane.quads_w) * 4 * len +
                               kWinogradQuad * (q % plane.quads_w)
                         : zeros;
        row_floats[h] = live ? len : 0;
      }
      Lanes columns[6][6];  // B^T applied down each of the tile's columns
      for (int j = 0; j < 6; ++j) {
        Lanes d[6];
        for (int i = 0; i < 6; ++i) {
          const int64_t phase_row = i * 4 + (j & 3);
          d[i] = LoadQuads(source[0] + phase_row * row_floats[0] + (j >> 2),
                           source[1] + phase_row * row_floats[1] + (j >> 2));
        }
        InputTransform(d, columns[j]);
      }
      const int64_t o = kWinogradLanes * pair;
      float* out = packed + o / panel * panel * block_depth + o % panel;
      for (int i = 0; i < 6; ++i) {
        const Lanes row[6] = {columns[0][i], columns[1][i], columns[2][i],
                              columns[3][i], columns[4][i], columns[5][i]};
        Lanes transformed[6];
        InputTransform(row, transformed);
        for (int j = 0; j < 6; ++j) {
          StoreLanes(out + (i * 6 + j) * point_floats, transformed[j]);
        }
      }
    }
  }
}

void WinogradOutputBlock(const WinogradPlane& plane, int64_t block,
                         const float* m, int64_t channels, int64_t ld,
                         const float* bias, float* y) {
  const Conv2DGeometry& g = plane.geometry;
  const int64_t quads = plane.QuadsOf(block);
  const int64_t first_row = kWinogradTile * block * plane.block_rows;
  constexpr int64_t kQuadPixels = kWinogradTile * kWinogradQuad;
  const int64_t point_floats = PointStride(channels * ld);
  for (int64_t c = 0; c < channels; ++c) {
    float* plane_y = y + c * g.OutSize();
    const float b = bias != nullptr ? bias[c] : 0.0f;
    for (int64_t q0 = 0; q0 < quads; q0 += 2) {
      const float* in = m + c * ld + kWinogradQuad * q0;
      Lanes columns[6][4];  // A^T applied down each of the tile's columns
      for (int j = 0; j < 6; ++j) {
        Lanes column[6];
        for (int i = 0; i < 6; ++i) {
          column[i] = LoadLanes(in + (i * 6 + j) * point_floats);
        }
        OutputTransform(column, columns[j]);
      }
      for (int i = 0; i < 4; ++i) {
        const Lanes row[6] = {columns[0][i], columns[1][i], columns[2][i],
                              columns[3][i], columns[4][i], columns[5][i]};
        Lanes out[4];
        OutputTransform(row, out);
        for (int64_t h = 0; h < 2 && q0 + h < quads; ++h) {
          const int64_t q = q0 + h;
          const int64_t oy =
              first_row + kWinogradTile * (q / plane.quads_w) + i;
          if (oy >= g.out_h) continue;
          const int64_t x0 = kQuadPixels * (q % plane.quads_w);
          // Lane 4 h + l is the tile at x0 + 4 l: interleave its columns.
          float pixels[kQuadPixels];
#if defined(__AVX__)
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
#else
          for (int64_t l = 0; l < kWinogradQuad; ++l) {
            for (int jj = 0; jj < 4; ++jj) {
              pixels[l * 4 + jj] = out[jj][kWinogradQuad * h + l] + b;
            }
          }
#endif
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

}  // namespace weft::internal
