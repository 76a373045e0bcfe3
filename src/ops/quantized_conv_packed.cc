#include "ops/quantized_conv_packed.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

#include "kernels/int_division.h"

namespace weft::internal {
namespace {

// Column panels a job gathers at most, and the bytes they may take: the
// panels of one pixel tile stay in the core's L2 cache while every weight
// panel of the job passes over them.
constexpr int64_t kMaxTilePanels = 4;
constexpr int64_t kTileBytes = 256 * 1024;
// Below this many (image, group, pixel tile) jobs, output channels are
// split into blocks as well, so that small late layers still spread.
constexpr int64_t kMinJobs = 8;

// The input of one (image, group) as the product's right side: row d =
// (channel, tap) holds, for every output pixel, the input byte that tap
// reads (the raw zero point where it reads padding). Rows are `ld` apart.
struct ColumnRows {
  const uint8_t* data = nullptr;
  int64_t ld = 0;
};

// A window that reads each input pixel once, in order: the input's planes
// are the rows as they are.
bool ReadsInputAsIs(const Window& win) {
  for (int d = 0; d < win.rank; ++d) {
    if (win.kernel[d] != 1 || win.stride[d] != 1 || win.pad_begin[d] != 0 ||
        win.in[d] != win.out[d]) {
      return false;
    }
  }
  return true;
}

// dst[i] = src[2 i] for i < n, reading no byte past src[2 (n - 1)]. The
// stride-2 windows' gathers (ResNet's stem and downsampling layers) spent
// most of their time here byte by byte.
void CopyEvenBytes(const uint8_t* src, int64_t n, uint8_t* dst) {
  int64_t i = 0;
#if defined(__SSSE3__)
  const __m128i evens =
      _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
  // Sixteen outputs read 32 bytes: stop while the last one is needed.
  for (; i + 16 <= n - 1; i += 16) {
    const __m128i lo = _mm_shuffle_epi8(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)), evens);
    const __m128i hi = _mm_shuffle_epi8(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i + 16)),
        evens);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_unpacklo_epi64(lo, hi));
  }
#endif
  for (; i < n; ++i) dst[i] = src[2 * i];
}

// Rows [d0, d1) of the columns of `channels` input planes (x: the first).
void FillColumnRows(const Window& win, const uint8_t* x, uint8_t zero,
                    int64_t d0, int64_t d1, uint8_t* out, int64_t ld) {
  const int64_t taps = win.KernelSize(), in_size = win.InSize();
  if (win.rank != 2) {
    const int64_t pixels = win.OutSize();
    for (int64_t d = d0; d < d1; ++d) {
      const uint8_t* plane = x + (d / taps) * in_size;
      uint8_t* row = out + d * ld;
      for (int64_t o = 0; o < pixels; ++o) {
        ForEachTap(win, o, [&](int64_t offset, int64_t k) {
          if (k == d % taps) row[o] = offset < 0 ? zero : plane[offset];
        });
      }
    }
    return;
  }
  const int64_t ih = win.in[0], iw = win.in[1];
  const int64_t oh = win.out[0], ow = win.out[1];
  const int64_t kw = win.kernel[1];
  const int64_t sy = win.stride[0], sx = win.stride[1];
  for (int64_t d = d0; d < d1; ++d) {
    const uint8_t* plane = x + (d / taps) * in_size;
    const int64_t k = d % taps, ky = k / kw, kx = k % kw;
    // Input column ox * sx + off; inside for ox in [lo, hi].
    const int64_t off = kx * win.dilation[1] - win.pad_begin[1];
    const int64_t lo = std::min(ow, off >= 0 ? 0 : CeilDiv(-off, sx));
    const int64_t hi =
        iw - 1 - off < 0 ? -1 : std::min(ow - 1, (iw - 1 - off) / sx);
    for (int64_t oy = 0; oy < oh; ++oy) {
      uint8_t* row = out + d * ld + oy * ow;
      const int64_t iy = oy * sy - win.pad_begin[0] + ky * win.dilation[0];
      if (iy < 0 || iy >= ih || hi < lo) {
        std::memset(row, zero, static_cast<size_t>(ow));
        continue;
      }
      const uint8_t* src = plane + iy * iw;
      std::memset(row, zero, static_cast<size_t>(lo));
      if (sx == 1) {
        std::memcpy(row + lo, src + lo + off, static_cast<size_t>(hi - lo + 1));
      } else if (sx == 2) {
        CopyEvenBytes(src + lo * 2 + off, hi - lo + 1, row + lo);
      } else {
        for (int64_t ox = lo; ox <= hi; ++ox) row[ox] = src[ox * sx + off];
      }
      std::memset(row + hi + 1, zero, static_cast<size_t>(ow - hi - 1));
    }
  }
}

// Each pixel's sum over the depth of a packed column panel (what a weight
// zero point multiplies).
void ColumnSums(const uint8_t* panel, int64_t depth, int32_t* sums) {
  for (int64_t p = 0; p < kInt8Cols; ++p) {
    int32_t sum = 0;
    for (int64_t d = 0; d < depth; ++d) {
      sum += panel[(d / 4) * kInt8Cols * 4 + p * 4 + d % 4];
    }
    sums[p] = sum;
  }
}

// One channel's depthwise plane: acc = sum over taps of tap x input, with
// x already minus its zero point (padding adds nothing).
void DepthwisePlane(const Window& win, const int32_t* x, const int32_t* taps,
                    int32_t* acc) {
  const int64_t pixels = win.OutSize();
  std::fill(acc, acc + pixels, 0);
  if (win.rank != 2) {
    for (int64_t o = 0; o < pixels; ++o) {
      int32_t sum = 0;
      ForEachTap(win, o, [&](int64_t offset, int64_t k) {
        if (offset >= 0) sum += taps[k] * x[offset];
      });
      acc[o] = sum;
    }
    return;
  }
  const int64_t ih = win.in[0], iw = win.in[1];
  const int64_t oh = win.out[0], ow = win.out[1];
  const int64_t kh = win.kernel[0], kw = win.kernel[1];
  const int64_t sy = win.stride[0], sx = win.stride[1];
  for (int64_t oy = 0; oy < oh; ++oy) {
    int32_t* row = acc + oy * ow;
    for (int64_t ky = 0; ky < kh; ++ky) {
      const int64_t iy = oy * sy - win.pad_begin[0] + ky * win.dilation[0];
      if (iy < 0 || iy >= ih) continue;
      const int32_t* xr = x + iy * iw;
      for (int64_t kx = 0; kx < kw; ++kx) {
        const int32_t wv = taps[ky * kw + kx];
        if (wv == 0) continue;
        // Input column ox * sx + off; valid for ox in [lo, hi].
        const int64_t off = kx * win.dilation[1] - win.pad_begin[1];
        const int64_t lo = off >= 0 ? 0 : CeilDiv(-off, sx);
        const int64_t hi =
            iw - 1 - off < 0 ? -1 : std::min(ow - 1, (iw - 1 - off) / sx);
        if (sx == 1) {
          for (int64_t ox = lo; ox <= hi; ++ox) row[ox] += wv * xr[ox + off];
        } else {
          for (int64_t ox = lo; ox <= hi; ++ox) {
            row[ox] += wv * xr[ox * sx + off];
          }
        }
      }
    }
  }
}

template <class QX>
void ConvolveDepthwise(KernelContext& ctx, const QuantizedConv& q, const QX* x,
                       int32_t x_zero, const Int8ConvWeights& w,
                       const int8_t* w_zero, bool w_zero_per_m,
                       const ConvSumsFn& emit) {
  const Window& win = q.win;
  const int64_t in_size = win.InSize(), pixels = win.OutSize();
  const int64_t taps = win.KernelSize();
  ctx.ParallelFor(q.n * q.m, static_cast<double>(pixels * taps),
                  [&](int64_t begin, int64_t end) {
                    std::vector<int32_t> plane(static_cast<size_t>(in_size));
                    std::vector<int32_t> acc(static_cast<size_t>(pixels));
                    std::vector<int32_t> tap(static_cast<size_t>(taps));
                    for (int64_t job = begin; job < end; ++job) {
                      const int64_t image = job / q.m, ch = job % q.m;
                      const QX* xs = x + job * in_size;
                      for (int64_t i = 0; i < in_size; ++i) {
                        plane[i] = static_cast<int32_t>(xs[i]) - x_zero;
                      }
                      const int32_t wz =
                          w_zero == nullptr ? 0 : w_zero[w_zero_per_m ? ch : 0];
                      for (int64_t k = 0; k < taps; ++k) {
                        tap[k] = w.depthwise_taps[ch * taps + k] - wz;
                      }
                      DepthwisePlane(win, plane.data(), tap.data(), acc.data());
                      emit(image, ch, 0, pixels, acc.data());
                    }
                  });
}

}  // namespace

Int8ConvWeights Int8ConvWeights::Prepare(const int8_t* w, int64_t m,
                                         int64_t c_per_group, int64_t taps,
                                         int64_t group) {
  Int8ConvWeights prepared;
  prepared.m = m;
  const int64_t rows_per_group = c_per_group * taps;
  prepared.rows_per_group = rows_per_group;
  prepared.group = group;
  if (c_per_group == 1 && group == m) {
    prepared.depthwise_taps.assign(w, w + m * rows_per_group);
    return prepared;
  }
  const int64_t m_per_group = m / group;
  for (int64_t g = 0; g < group; ++g) {
    prepared.groups.emplace_back(w + g * m_per_group * rows_per_group,
                                 m_per_group, rows_per_group);
  }
  return prepared;
}

int64_t Int8ConvWeights::bytes() const {
  int64_t bytes = static_cast<int64_t>(depthwise_taps.size() * 4);
  for (const PackedInt8Weights& g : groups) bytes += g.bytes();
  return bytes;
}

void ConvolveInt8(KernelContext& ctx, const QuantizedConv& q, const void* x,
                  bool x_signed, int32_t x_zero, const Int8ConvWeights& w,
                  const int8_t* w_zero, bool w_zero_per_m,
                  const ConvSumsFn& emit) {
  // Fits(q) holds: the weights were prepared for this window's sizes, so
  // they are depthwise exactly when q is.
  if (q.depthwise()) {
    if (x_signed) {
      ConvolveDepthwise(ctx, q, static_cast<const int8_t*>(x), x_zero, w,
                        w_zero, w_zero_per_m, emit);
    } else {
      ConvolveDepthwise(ctx, q, static_cast<const uint8_t*>(x), x_zero, w,
                        w_zero, w_zero_per_m, emit);
    }
    return;
  }
  const Window& win = q.win;
  const int64_t pixels = win.OutSize(), in_size = win.InSize();
  const int64_t depth = q.rows_per_group;
  const int64_t quads = Int8Quads(depth);
  const int64_t c_per_group = q.c / q.group, m_per_group = q.m / q.group;
  const int64_t panel_bytes = Int8ColumnPanelBytes(depth);
  const int64_t pixel_panels = CeilDiv(pixels, kInt8Cols);
  const int64_t tile_panels = std::clamp<int64_t>(
      kTileBytes / panel_bytes, 1, std::min(kMaxTilePanels, pixel_panels));
  const int64_t pixel_tiles = CeilDiv(pixel_panels, tile_panels);
  const int64_t channel_panels = CeilDiv(m_per_group, kInt8Rows);
  int64_t blocks = 1;
  while (pixel_tiles * blocks < kMinJobs && blocks < channel_panels) ++blocks;
  const int64_t panels_per_block = CeilDiv(channel_panels, blocks);
  blocks = CeilDiv(channel_panels, panels_per_block);

  // x taken as unsigned: an int8 x plus 128 (its top bit flipped), the
  // padding its raw zero point, flipped with it.
  const uint8_t flip = x_signed ? 0x80 : 0;
  const uint8_t raw_zero = static_cast<uint8_t>(x_zero);
  const int32_t zero = x_signed ? x_zero + 128 : x_zero;
  bool any_w_zero = false;
  if (w_zero != nullptr) {
    for (int64_t i = 0; i < (w_zero_per_m ? q.m : 1); ++i) {
      any_w_zero = any_w_zero || w_zero[i] != 0;
    }
  }
  const bool as_is = ReadsInputAsIs(win);
  std::vector<uint8_t> gathered(
      static_cast<size_t>(as_is ? 0 : depth * pixels));
  const Int8Kernel kernel = ActiveInt8Kernel();
  const double cost = static_cast<double>(tile_panels * kInt8Cols * depth *
                                          panels_per_block * kInt8Rows) /
                      16.0;
  for (int64_t image = 0; image < q.n; ++image) {
    for (int64_t g = 0; g < q.group; ++g) {
      const uint8_t* x_group = static_cast<const uint8_t*>(x) +
                               (image * q.c + g * c_per_group) * in_size;
      ColumnRows rows{x_group, in_size};
      if (!as_is) {
        ctx.ParallelFor(depth, static_cast<double>(pixels),
                        [&](int64_t d0, int64_t d1) {
                          FillColumnRows(win, x_group, raw_zero, d0, d1,
                                         gathered.data(), pixels);
                        });
        rows = {gathered.data(), pixels};
      }
      const PackedInt8Weights& wg = w.groups[static_cast<size_t>(g)];
      ctx.ParallelFor(
          pixel_tiles * blocks, cost, [&](int64_t begin, int64_t end) {
            std::vector<uint8_t> cols(
                static_cast<size_t>(tile_panels * panel_bytes));
            std::vector<int32_t> col_sums(
                static_cast<size_t>(any_w_zero ? tile_panels * kInt8Cols : 0));
            int32_t acc[kInt8Rows * kInt8Cols];
            for (int64_t job = begin; job < end; ++job) {
              const int64_t block = job % blocks, tile = job / blocks;
              const int64_t first_pixel = tile * tile_panels * kInt8Cols;
              const int64_t panels_here = std::min(
                  tile_panels, CeilDiv(pixels - first_pixel, kInt8Cols));
              for (int64_t pp = 0; pp < panels_here; ++pp) {
                const int64_t p0 = first_pixel + pp * kInt8Cols;
                uint8_t* panel = cols.data() + pp * panel_bytes;
                PackInt8ColumnPanel(rows.data + p0, rows.ld, depth,
                                    std::min(kInt8Cols, pixels - p0), flip,
                                    panel);
                if (any_w_zero) {
                  ColumnSums(panel, depth, col_sums.data() + pp * kInt8Cols);
                }
              }
              const int64_t cp_end =
                  std::min(channel_panels, (block + 1) * panels_per_block);
              for (int64_t cp = block * panels_per_block; cp < cp_end; ++cp) {
                const int64_t rows_here =
                    std::min(kInt8Rows, m_per_group - cp * kInt8Rows);
                for (int64_t pp = 0; pp < panels_here; ++pp) {
                  const int64_t p0 = first_pixel + pp * kInt8Cols;
                  const int64_t count = std::min(kInt8Cols, pixels - p0);
                  Int8PanelProduct(kernel, wg.panel(cp),
                                   cols.data() + pp * panel_bytes, quads,
                                   rows_here, count, acc, kInt8Cols);
                  for (int64_t r = 0; r < rows_here; ++r) {
                    const int64_t row = cp * kInt8Rows + r;
                    const int64_t oc = g * m_per_group + row;
                    const int32_t wz =
                        w_zero == nullptr ? 0 : w_zero[w_zero_per_m ? oc : 0];
                    const int32_t shift =
                        -zero * wg.row_sums()[static_cast<size_t>(row)] +
                        static_cast<int32_t>(depth) * zero * wz;
                    int32_t* sums = acc + r * kInt8Cols;
                    for (int64_t p = 0; p < count; ++p) sums[p] += shift;
                    if (wz != 0) {
                      const int32_t* cs = col_sums.data() + pp * kInt8Cols;
                      for (int64_t p = 0; p < count; ++p) {
                        sums[p] -= wz * cs[p];
                      }
                    }
                    emit(image, oc, p0, count, sums);
                  }
                }
              }
            }
          });
    }
  }
}

}  // namespace weft::internal
