#include "kernels/conv_phase_panels.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/int_division.h"
#include "weft/check.h"

namespace weft::internal {
namespace {

// One panel row in the lanes of a vector (GCC's vector extension: one
// register on AVX-512, two on AVX2), and a mask over those lanes.
using PanelRow =
    float __attribute__((vector_size(kMaxPhasePanelWidth * sizeof(float))));
using LaneMask =
    int32_t __attribute__((vector_size(kMaxPhasePanelWidth * sizeof(int32_t))));

PanelRow LoadRow(const float* from) {
  PanelRow row;
  std::memcpy(&row, from, sizeof(row));
  return row;
}

// The lanes of a panel whose pixels lie in one output row, and so read
// consecutive floats of a phase plane: lane i (set in `lanes`) reads
// tap offset + source + i.
struct PanelPiece {
  int64_t source;
  LaneMask lanes;
};

// Splits the panel of `live` pixels from `first_pixel` on into pieces, one
// per output row it touches (at most kMaxPhasePanelWidth).
int64_t PiecesOf(const Conv2DGeometry& g, const PhasePlanes& p,
                 int64_t first_pixel, int64_t live, PanelPiece* pieces) {
  int64_t count = 0, next = -1;
  int64_t oy = first_pixel / g.out_w, ox = first_pixel % g.out_w;
  for (int64_t lane = 0; lane < live; ++lane) {
    const int64_t at = oy * p.cols + ox;
    if (at != next) {
      pieces[count++] = {at - lane, LaneMask{}};
    }
    pieces[count - 1].lanes[lane] = -1;
    next = at + 1;
    if (++ox == g.out_w) {
      ox = 0;
      ++oy;
    }
  }
  return count;
}

// GatherPhasePanels for a panel width known at compile time: the store is a
// fixed-size copy the compiler turns into one or two vector moves.
template <int64_t kWidth>
void GatherFixedWidth(const Conv2DGeometry& g, const PhasePlanes& p,
                      const PhaseSource& source, int64_t depth, int64_t p0,
                      int64_t pixels, int64_t kc, int64_t first_block,
                      int64_t end_block, float* panels) {
  static_assert(kWidth > 0 && kWidth <= kMaxPhasePanelWidth);
  const int64_t panel_count = CeilDiv(pixels, kWidth);
  const int64_t padded = panel_count * kWidth;
  const float* copy = source.copy;
  PanelPiece pieces[kMaxPhasePanelWidth];
  for (int64_t block = first_block; block < end_block; ++block) {
    const int64_t d0 = block * kc, block_rows = std::min(kc, depth - d0);
    // This block's rows from the copy; the rest are filled.
    const int64_t rows = std::clamp(source.rows - d0, int64_t{0}, block_rows);
    const int64_t* tap = source.offsets + d0;
    float* dst = panels + d0 * padded;
    for (int64_t q = 0; q < panel_count; ++q) {
      const int64_t live = std::min(kWidth, pixels - q * kWidth);
      const int64_t count = PiecesOf(g, p, p0 + q * kWidth, live, pieces);
      auto fill_rest = [&] {
        if (rows == block_rows) return;
        float filled[kWidth] = {};
        std::fill(filled, filled + live, source.fill);
        for (int64_t d = rows; d < block_rows; ++d, dst += kWidth) {
          std::memcpy(dst, filled, sizeof(filled));
        }
      };
      if (count == 1 && live == kWidth) {  // Inside one output row.
        const float* from = copy + pieces[0].source;
        for (int64_t d = 0; d < rows; ++d, dst += kWidth) {
          const PanelRow row = LoadRow(from + tap[d]);
          std::memcpy(dst, &row, kWidth * sizeof(float));
        }
        fill_rest();
        continue;
      }
      if (source.bounded) {  // Each lane on its own: no read past a piece.
        for (int64_t d = 0; d < rows; ++d, dst += kWidth) {
          float row[kWidth] = {};
          for (int64_t i = 0; i < count; ++i) {
            for (int64_t lane = 0; lane < live; ++lane) {
              if (pieces[i].lanes[lane] != 0) {
                row[lane] = copy[pieces[i].source + tap[d] + lane];
              }
            }
          }
          std::memcpy(dst, row, sizeof(row));
        }
        fill_rest();
        continue;
      }
      for (int64_t d = 0; d < rows; ++d, dst += kWidth) {
        PanelRow row{};  // Lanes past the last pixel stay zero.
        for (int64_t i = 0; i < count; ++i) {
          row =
              pieces[i].lanes ? LoadRow(copy + pieces[i].source + tap[d]) : row;
        }
        std::memcpy(dst, &row, kWidth * sizeof(float));
      }
      fill_rest();
    }
  }
}

// Whether some tap reads phase `phase` of a window with this kernel size and
// dilation along one axis (a 1 x 1 window with stride 2 reads phase 0 only).
bool PhaseIsRead(int64_t phase, int64_t stride, int64_t kernel,
                 int64_t dilation) {
  for (int64_t k = 0; k < kernel; ++k) {
    if (k * dilation % stride == phase) return true;
  }
  return false;
}

}  // namespace

PhasePlanes PhasePlanes::Of(const Conv2DGeometry& g) {
  PhasePlanes p;
  p.stride_h = g.stride_h;
  p.stride_w = g.stride_w;
  p.rows = CeilDiv(g.SpanRows(), g.stride_h);
  p.cols = CeilDiv(g.SpanCols(), g.stride_w);
  return p;
}

void CopyIntoPhasePlanes(const Conv2DGeometry& g, const PhasePlanes& p,
                         const float* x, float* dst) {
  // Phase column cc of column phase rx reads input column cc * stride_w +
  // rx - pad_left, inside the input for cc in [first[rx], last[rx]).
  std::vector<int64_t> first(p.stride_w), last(p.stride_w);
  std::vector<char> read(p.stride_w);
  for (int64_t rx = 0; rx < p.stride_w; ++rx) {
    first[rx] =
        std::clamp(CeilDiv(g.pad_left - rx, p.stride_w), int64_t{0}, p.cols);
    last[rx] = std::clamp(CeilDiv(g.in_w + g.pad_left - rx, p.stride_w),
                          first[rx], p.cols);
    read[rx] = PhaseIsRead(rx, p.stride_w, g.kernel_w, g.dilation_w);
  }
  // A stride-2 row whose two phases are read is split in one vector pass.
  const bool split_pairs = p.stride_w == 2 && read[0] && read[1];
  for (int64_t ry = 0; ry < p.stride_h; ++ry) {
    if (!PhaseIsRead(ry, p.stride_h, g.kernel_h, g.dilation_h)) continue;
    for (int64_t rr = 0; rr < p.rows; ++rr) {
      auto row_of = [&](int64_t rx) {
        return dst + (ry * p.stride_w + rx) * p.PlaneFloats() + rr * p.cols;
      };
      const int64_t iy = rr * p.stride_h + ry - g.pad_top;
      const bool inside = iy >= 0 && iy < g.in_h;
      if (inside && split_pairs) {
        SplitRowByPhase(x + iy * g.in_w, g.in_w, g.pad_left, p.cols, row_of(0),
                        row_of(1));
      }
      for (int64_t rx = 0; rx < p.stride_w; ++rx) {
        if (!read[rx]) continue;
        float* row = row_of(rx);
        if (!inside) {
          std::fill(row, row + p.cols, 0.0f);
          continue;
        }
        std::fill(row, row + first[rx], 0.0f);
        std::fill(row + last[rx], row + p.cols, 0.0f);
        if (split_pairs) continue;
        const float* src = x + iy * g.in_w + rx - g.pad_left;
        if (p.stride_w == 1) {
          std::copy(src + first[rx], src + last[rx], row + first[rx]);
        } else {
          for (int64_t cc = first[rx]; cc < last[rx]; ++cc) {
            row[cc] = src[cc * p.stride_w];
          }
        }
      }
    }
  }
}

void PhaseTapOffsets(const Conv2DGeometry& g, const PhasePlanes& p,
                     int64_t channels, int64_t* offsets) {
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
      const int64_t dy = ky * g.dilation_h;
      for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
        const int64_t dx = kx * g.dilation_w;
        const int64_t phase = dy % p.stride_h * p.stride_w + dx % p.stride_w;
        *offsets++ = c * p.ChannelFloats() + phase * p.PlaneFloats() +
                     dy / p.stride_h * p.cols + dx / p.stride_w;
      }
    }
  }
}

void GatherPhasePanels(const Conv2DGeometry& g, const PhasePlanes& p,
                       const PhaseSource& source, int64_t depth, int64_t p0,
                       int64_t pixels, int64_t width, int64_t kc,
                       int64_t first_block, int64_t end_block, float* panels) {
  WithPanelWidth(width, [&](auto fixed_width) {
    constexpr int64_t kWidth = decltype(fixed_width)::value;
    if constexpr (kWidth == 0) {
      WEFT_CHECK(false, "GatherPhasePanels takes panels of 6, 8, 12 or 16");
    } else {
      GatherFixedWidth<kWidth>(g, p, source, depth, p0, pixels, kc, first_block,
                               end_block, panels);
    }
  });
}

}  // namespace weft::internal
