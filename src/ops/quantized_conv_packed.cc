#include "ops/quantized_conv_packed.h"

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

// Everything one gathering of column panels needs.
struct ColumnSource {
  const uint8_t* x = nullptr;  // this image's first channel of the group
  int64_t in_size = 0;         // pixels of one input plane
  int64_t channels = 0;        // input channels of the group
  uint8_t flip = 0;            // 0x80 turns an int8 x into x + 128
  uint8_t zero = 0;            // the (unsigned) zero point: padded taps
};

// Gathers output pixels [p0, p0 + count) of the window into one column
// panel (kernels/int8_gemm.h's layout), and, when `sums` is given, each
// pixel's sum over the depth.
void GatherColumnPanel(const Window& win, const ColumnSource& src, int64_t p0,
                       int64_t count, int64_t depth, uint8_t* panel,
                       int32_t* sums) {
  const int64_t taps = win.KernelSize();
  if (count < kInt8Cols || depth % 4 != 0) {
    std::memset(panel, 0, static_cast<size_t>(Int8ColumnPanelBytes(depth)));
  }
  for (int64_t i = 0; i < count; ++i) {
    uint8_t* pixel = panel + i * 4;
    ForEachTap(win, p0 + i, [&](int64_t offset, int64_t k) {
      for (int64_t ch = 0; ch < src.channels; ++ch) {
        const int64_t d = ch * taps + k;
        pixel[(d / 4) * kInt8Cols * 4 + d % 4] =
            offset < 0 ? src.zero
                       : static_cast<uint8_t>(src.x[ch * src.in_size + offset] ^
                                              src.flip);
      }
    });
    if (sums != nullptr) {
      int32_t sum = 0;
      for (int64_t d = 0; d < depth; ++d) {
        sum += pixel[(d / 4) * kInt8Cols * 4 + d % 4];
      }
      sums[i] = sum;
    }
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
  while (q.n * q.group * pixel_tiles * blocks < kMinJobs &&
         blocks < channel_panels) {
    ++blocks;
  }
  const int64_t panels_per_block = CeilDiv(channel_panels, blocks);
  blocks = CeilDiv(channel_panels, panels_per_block);

  // x taken as unsigned: an int8 x plus 128 (its top bit flipped).
  const uint8_t flip = x_signed ? 0x80 : 0;
  const int32_t zero = x_signed ? x_zero + 128 : x_zero;
  bool any_w_zero = false;
  if (w_zero != nullptr) {
    for (int64_t i = 0; i < (w_zero_per_m ? q.m : 1); ++i) {
      any_w_zero = any_w_zero || w_zero[i] != 0;
    }
  }
  const Int8Kernel kernel = ActiveInt8Kernel();
  const int64_t jobs = q.n * q.group * pixel_tiles * blocks;
  const double cost = static_cast<double>(tile_panels * kInt8Cols * depth *
                                          panels_per_block * kInt8Rows) /
                      16.0;
  ctx.ParallelFor(jobs, cost, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> cols(static_cast<size_t>(tile_panels * panel_bytes));
    std::vector<int32_t> col_sums(
        static_cast<size_t>(any_w_zero ? tile_panels * kInt8Cols : 0));
    int32_t acc[kInt8Rows * kInt8Cols];
    for (int64_t job = begin; job < end; ++job) {
      int64_t rest = job;
      const int64_t block = rest % blocks;
      rest /= blocks;
      const int64_t tile = rest % pixel_tiles;
      rest /= pixel_tiles;
      const int64_t g = rest % q.group;
      const int64_t image = rest / q.group;
      ColumnSource src;
      src.x = static_cast<const uint8_t*>(x) +
              (image * q.c + g * c_per_group) * in_size;
      src.in_size = in_size;
      src.channels = c_per_group;
      src.flip = flip;
      src.zero = static_cast<uint8_t>(zero);
      const int64_t first_pixel = tile * tile_panels * kInt8Cols;
      const int64_t panels_here =
          std::min(tile_panels, CeilDiv(pixels - first_pixel, kInt8Cols));
      for (int64_t pp = 0; pp < panels_here; ++pp) {
        const int64_t p0 = first_pixel + pp * kInt8Cols;
        GatherColumnPanel(
            win, src, p0, std::min(kInt8Cols, pixels - p0), depth,
            cols.data() + pp * panel_bytes,
            any_w_zero ? col_sums.data() + pp * kInt8Cols : nullptr);
      }
      const PackedInt8Weights& wg = w.groups[static_cast<size_t>(g)];
      const int64_t cp_end =
          std::min(channel_panels, (block + 1) * panels_per_block);
      for (int64_t cp = block * panels_per_block; cp < cp_end; ++cp) {
        const int64_t rows = std::min(kInt8Rows, m_per_group - cp * kInt8Rows);
        for (int64_t pp = 0; pp < panels_here; ++pp) {
          const int64_t p0 = first_pixel + pp * kInt8Cols;
          const int64_t count = std::min(kInt8Cols, pixels - p0);
          Int8PanelProduct(kernel, wg.panel(cp), cols.data() + pp * panel_bytes,
                           quads, rows, count, acc, kInt8Cols);
          for (int64_t r = 0; r < rows; ++r) {
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
              for (int64_t p = 0; p < count; ++p) sums[p] -= wz * cs[p];
            }
            emit(image, oc, p0, count, sums);
          }
        }
      }
    }
  });
}

}  // namespace weft::internal
