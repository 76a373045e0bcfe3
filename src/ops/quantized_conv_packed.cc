#include "ops/quantized_conv_packed.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/int_division.h"

namespace weft::internal {
namespace {

// Column panels one job multiplies at most, and the bytes they may take
// (the tile a job's weight panels pass over).
constexpr int64_t kMaxTilePanels = 4;
constexpr int64_t kTileBytes = 256 * 1024;
// Below this many pixel tiles in an (image, group), output channels are
// split into blocks as well, so that small late layers still spread.
constexpr int64_t kMinJobs = 8;

// Where a product's columns come from. Row d = (channel, tap) of the
// columns holds, for each output position, the input byte that tap reads
// (the raw zero point where it reads padding):
//   kInput   a window that reads each input pixel once, in order (1 x 1,
//            stride 1): the input planes are the rows;
//   kPadded  stride 1 over rows of at least kPaddedMinWidth: the input is
//            copied once into planes padded with the zero point, and each
//            row is a view of them, offset by its tap. Positions run over
//            the padded width (oy * padded_w + ox), the columns past the
//            output's width computed and dropped: no gathered copy per tap;
//   kGathered any other window: every row gathered (FillColumnRows).
enum class ColumnForm { kInput, kPadded, kGathered };

// Output rows narrower than this keep the gathered form: the padded form's
// dropped columns would cost more than the gathering (a 7 x 7 plane padded
// to 9 x 9 computes 81 positions for 49 pixels).
constexpr int64_t kPaddedMinWidth = 14;

struct ColumnPlan {
  ColumnForm form = ColumnForm::kGathered;
  int64_t positions = 0;               // the product's columns
  int64_t staged = 0;                  // bytes staged per input channel
  int64_t slack = 0;                   // bytes read past the last channel's
  int64_t padded_h = 0, padded_w = 0;  // kPadded
  int64_t out_w = 0;
};

ColumnPlan PlanColumns(const Window& win) {
  ColumnPlan plan;
  plan.positions = win.OutSize();
  bool as_is = true;
  for (int d = 0; d < win.rank; ++d) {
    as_is = as_is && win.kernel[d] == 1 && win.stride[d] == 1 &&
            win.pad_begin[d] == 0 && win.in[d] == win.out[d];
  }
  if (as_is) {
    plan.form = ColumnForm::kInput;
    return plan;
  }
  if (win.rank == 2 && win.stride[0] == 1 && win.stride[1] == 1 &&
      win.out[1] >= kPaddedMinWidth) {
    plan.form = ColumnForm::kPadded;
    plan.padded_h = win.in[0] + win.pad_begin[0] + win.pad_end[0];
    plan.padded_w = win.in[1] + win.pad_begin[1] + win.pad_end[1];
    plan.out_w = win.out[1];
    plan.positions = win.out[0] * plan.padded_w;
    plan.staged = plan.padded_h * plan.padded_w;
    // The last tap's view runs past the last plane by its column offset.
    plan.slack = (win.kernel[1] - 1) * win.dilation[1];
    return plan;
  }
  plan.staged = win.OutSize() * win.KernelSize();
  return plan;
}

// Hands each output pixel run of positions [p0, p0 + count) to
// emit(first pixel, pixels, sums): all of them in the input and gathered
// forms; in the padded form, the runs inside the output's width.
template <class Emit>
void EmitPositions(const ColumnPlan& plan, int64_t p0, int64_t count,
                   const int32_t* sums, Emit emit) {
  if (plan.form != ColumnForm::kPadded) {
    emit(p0, count, sums);
    return;
  }
  const int64_t pitch = plan.padded_w;
  for (int64_t p = p0; p < p0 + count;) {
    const int64_t oy = p / pitch, ox = p % pitch;
    const int64_t row_end = std::min(p0 + count, (oy + 1) * pitch);
    if (ox < plan.out_w) {
      const int64_t n = std::min(row_end, oy * pitch + plan.out_w) - p;
      emit(oy * plan.out_w + ox, n, sums + (p - p0));
    }
    p = row_end;
  }
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

// Stages the columns of one (image, group) and points row_of[d] at each
// row's first position.
void StageColumns(KernelContext& ctx, const Window& win, const ColumnPlan& plan,
                  const uint8_t* x, int64_t channels, uint8_t zero,
                  uint8_t* staged, const uint8_t** row_of) {
  const int64_t taps = win.KernelSize(), in_size = win.InSize();
  const int64_t depth = channels * taps;
  switch (plan.form) {
    case ColumnForm::kInput:
      for (int64_t d = 0; d < depth; ++d) row_of[d] = x + d * in_size;
      return;
    case ColumnForm::kGathered:
      ctx.ParallelFor(depth, static_cast<double>(plan.positions),
                      [&](int64_t d0, int64_t d1) {
                        FillColumnRows(win, x, zero, d0, d1, staged,
                                       plan.positions);
                      });
      for (int64_t d = 0; d < depth; ++d) {
        row_of[d] = staged + d * plan.positions;
      }
      return;
    case ColumnForm::kPadded: {
      const int64_t ph = plan.padded_h, pw = plan.padded_w;
      const int64_t plane = ph * pw;
      const int64_t top = win.pad_begin[0], left = win.pad_begin[1];
      const int64_t ih = win.in[0], iw = win.in[1];
      ctx.ParallelFor(
          channels, static_cast<double>(plane), [&](int64_t c0, int64_t c1) {
            // The zero point where the padding is, each byte written once:
            // the rows above and below, then each row's edges and input.
            const int64_t right = pw - left - iw;
            for (int64_t c = c0; c < c1; ++c) {
              uint8_t* dst = staged + c * plane;
              std::memset(dst, zero, static_cast<size_t>(top * pw));
              for (int64_t r = 0; r < ih; ++r) {
                uint8_t* row = dst + (r + top) * pw;
                for (int64_t i = 0; i < left; ++i) row[i] = zero;
                std::memcpy(row + left, x + c * in_size + r * iw,
                            static_cast<size_t>(iw));
                for (int64_t i = 0; i < right; ++i) row[left + iw + i] = zero;
              }
              std::memset(dst + (top + ih) * pw, zero,
                          static_cast<size_t>((ph - top - ih) * pw));
            }
          });
      const int64_t kw = win.kernel[1];
      for (int64_t d = 0; d < depth; ++d) {
        const int64_t c = d / taps, k = d % taps;
        row_of[d] = staged + c * plane + (k / kw) * win.dilation[0] * pw +
                    (k % kw) * win.dilation[1];
      }
      return;
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

// A depthwise input plane, padded with the zero point so that every tap of
// every output reads inside it (sum (x - zx) w = sum x w - zx sum w, the
// second term one constant per channel), and split by phase for strides of
// 2: rows by their parity when the vertical stride is 2, columns by theirs
// when the horizontal one is. Output (oy, ox) then sits at position
// oy * cols + ox of a phase, and tap (ky, kx) reads its phase at a fixed
// offset from there: one contiguous multiply-add over the whole plane per
// tap, which the compiler vectorises. Row by row, MobileNetV2's rows of 7
// and 14 were too short for a vector loop, and stride-2 reads were strided.
// The columns past the output's width are computed and dropped.
struct PhasePlanes {
  int64_t sy = 1, sx = 1;      // strides (phases per dimension)
  int64_t rows = 0, cols = 0;  // of one phase
  int64_t slack = 0;           // read past the last phase by the last tap

  static bool Takes(const Window& win) {
    return win.rank == 2 && (win.stride[0] == 1 || win.stride[0] == 2) &&
           (win.stride[1] == 1 || win.stride[1] == 2);
  }
  static PhasePlanes For(const Window& win) {
    PhasePlanes p;
    p.sy = win.stride[0];
    p.sx = win.stride[1];
    p.rows = CeilDiv(win.in[0] + win.pad_begin[0] + win.pad_end[0], p.sy);
    p.cols = CeilDiv(win.in[1] + win.pad_begin[1] + win.pad_end[1], p.sx);
    p.slack = (win.kernel[1] - 1) * win.dilation[1] / p.sx + p.cols;
    return p;
  }
  int64_t phase_size() const { return rows * cols; }
  int64_t size() const { return sy * sx * phase_size() + slack; }
  // Where tap (ky, kx) of output position 0 reads.
  int64_t TapOffset(const Window& win, int64_t ky, int64_t kx) const {
    const int64_t r = ky * win.dilation[0], c = kx * win.dilation[1];
    return ((r % sy) * sx + c % sx) * phase_size() + (r / sy) * cols + c / sx;
  }
};

// Copies one input plane (uint8 after `flip`) into its phase planes;
// `line` holds one padded row.
template <class QX>
void LoadPhasePlanes(const Window& win, const PhasePlanes& p, const QX* x,
                     uint8_t flip, uint8_t zero, uint8_t* line, uint8_t* out) {
  std::memset(out, zero, static_cast<size_t>(p.size()));
  const int64_t ih = win.in[0], iw = win.in[1];
  const int64_t top = win.pad_begin[0], left = win.pad_begin[1];
  const int64_t padded_w = win.in[1] + win.pad_begin[1] + win.pad_end[1];
  for (int64_t r = 0; r < ih; ++r) {
    const auto* src = reinterpret_cast<const uint8_t*>(x + r * iw);
    const int64_t pr = r + top;
    uint8_t* row =
        out + (pr % p.sy) * p.sx * p.phase_size() + (pr / p.sy) * p.cols;
    uint8_t* dst = p.sx == 1 ? row : line;
    if (p.sx == 2) std::memset(line, zero, static_cast<size_t>(padded_w));
    for (int64_t c = 0; c < iw; ++c) dst[left + c] = src[c] ^ flip;
    if (p.sx == 2) {
      // The padded row's even columns, then its odd ones.
      CopyEvenBytes(line, (padded_w + 1) / 2, row);
      CopyEvenBytes(line + 1, padded_w / 2, row + p.phase_size());
    }
  }
}

// Positions a block of DepthwisePlane's vector loop. Its callers give it
// planes with this many readable bytes past their end and accumulators
// rounded up to a whole block, so that it has no scalar tail.
constexpr int64_t kDepthwiseBlock = 16;

// One channel's depthwise sums over its phase planes, before the zero
// point's correction, at positions oy * p.cols + ox. Each position's sum
// stays in a register through all the taps, so the accumulators are written
// once rather than read and written once a tap (a pass a tap over the whole
// plane had made this loop 14% of MobileNetV2 int8 at one thread on a CPU
// without VNNI). Each tap's weight times a byte is exact in int32, and the
// sums are exact, so the order of the taps does not change them.
// `from` and `weight` are scratch, kept by the caller across channels.
void DepthwisePlane(const Window& win, const PhasePlanes& p, const uint8_t* x,
                    const int32_t* taps, std::vector<const uint8_t*>& from,
                    std::vector<int32_t>& weight, int32_t* acc) {
  const int64_t positions = win.out[0] * p.cols;
  const int64_t kh = win.kernel[0], kw = win.kernel[1];
  // The taps with a non-zero weight: where each reads, and its weight.
  from.clear();
  weight.clear();
  for (int64_t ky = 0; ky < kh; ++ky) {
    for (int64_t kx = 0; kx < kw; ++kx) {
      const int32_t w = taps[ky * kw + kx];
      if (w == 0) continue;
      from.push_back(x + p.TapOffset(win, ky, kx));
      weight.push_back(w);
    }
  }
  const auto live = static_cast<int64_t>(from.size());
  int64_t i = 0;
#if defined(__AVX2__)
  // Sixteen positions a block, in two registers; the last block runs past
  // `positions` into the padding (GCC 12 widened bytes to the int32 lanes
  // of its vector extension one byte at a time, so the block is written
  // with AVX2's widening load).
  static_assert(kDepthwiseBlock == 16);
  for (; i < positions; i += kDepthwiseBlock) {
    __m256i low = _mm256_setzero_si256(), high = _mm256_setzero_si256();
    for (int64_t t = 0; t < live; ++t) {
      const __m256i w = _mm256_set1_epi32(weight[t]);
      const uint8_t* in = from[t] + i;
      const __m256i in_low = _mm256_cvtepu8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in)));
      const __m256i in_high = _mm256_cvtepu8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + 8)));
      low = _mm256_add_epi32(low, _mm256_mullo_epi32(in_low, w));
      high = _mm256_add_epi32(high, _mm256_mullo_epi32(in_high, w));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + i), low);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + i + 8), high);
  }
#endif
  for (; i < positions; ++i) {
    int32_t sum = 0;
    for (int64_t t = 0; t < live; ++t) {
      sum += weight[t] * static_cast<int32_t>(from[t][i]);
    }
    acc[i] = sum;
  }
}

// Windows of other ranks: every output's taps through ForEachTap, from the
// input minus its zero point.
template <class QX>
void DepthwiseAnyRank(const Window& win, const QX* x, int32_t x_zero,
                      const int32_t* taps, int32_t* acc) {
  for (int64_t o = 0; o < win.OutSize(); ++o) {
    int32_t sum = 0;
    ForEachTap(win, o, [&](int64_t offset, int64_t k) {
      if (offset >= 0)
        sum += taps[k] * (static_cast<int32_t>(x[offset]) - x_zero);
    });
    acc[o] = sum;
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
  const bool phased = PhasePlanes::Takes(win);
  const PhasePlanes planes = phased ? PhasePlanes::For(win) : PhasePlanes{};
  const int64_t positions = phased ? win.out[0] * planes.cols : pixels;
  // x taken as unsigned: an int8 x plus 128, its zero point too.
  constexpr bool kSigned = std::is_same_v<QX, int8_t>;
  const uint8_t flip = kSigned ? 0x80 : 0;
  const int32_t zero = kSigned ? x_zero + 128 : x_zero;
  ctx.ParallelFor(
      q.n * q.m, static_cast<double>(pixels * taps),
      [&](int64_t begin, int64_t end) {
        std::vector<uint8_t> plane(
            static_cast<size_t>(phased ? planes.size() + kDepthwiseBlock : 0));
        std::vector<uint8_t> line(static_cast<size_t>(
            phased ? win.in[1] + win.pad_begin[1] + win.pad_end[1] : 0));
        std::vector<int32_t> acc(static_cast<size_t>(
            CeilDiv(positions, kDepthwiseBlock) * kDepthwiseBlock));
        std::vector<int32_t> tap(static_cast<size_t>(taps));
        std::vector<const uint8_t*> tap_from;
        std::vector<int32_t> tap_weight;
        for (int64_t job = begin; job < end; ++job) {
          const int64_t image = job / q.m, ch = job % q.m;
          const int32_t wz =
              w_zero == nullptr ? 0 : w_zero[w_zero_per_m ? ch : 0];
          int32_t tap_sum = 0;
          for (int64_t k = 0; k < taps; ++k) {
            tap[k] = w.depthwise_taps[ch * taps + k] - wz;
            tap_sum += tap[k];
          }
          if (!phased) {
            DepthwiseAnyRank(win, x + job * in_size, x_zero, tap.data(),
                             acc.data());
            emit(image, ch, 0, pixels, acc.data());
            continue;
          }
          LoadPhasePlanes(win, planes, x + job * in_size, flip,
                          static_cast<uint8_t>(zero), line.data(),
                          plane.data());
          DepthwisePlane(win, planes, plane.data(), tap.data(), tap_from,
                         tap_weight, acc.data());
          const int32_t shift = -zero * tap_sum;
          for (int64_t i = 0; i < positions; ++i) acc[i] += shift;
          const int64_t ow = win.out[1];
          for (int64_t oy = 0; oy < win.out[0]; ++oy) {
            emit(image, ch, oy * ow, ow, acc.data() + oy * planes.cols);
          }
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

namespace {

// The tiling and the zero points of one convolution's products, the same
// for every (image, group).
struct ProductPlan {
  ColumnPlan columns;
  int64_t depth = 0, quads = 0, panel_bytes = 0, m_per_group = 0;
  int64_t tile_panels = 0, pixel_tiles = 0;
  int64_t channel_panels = 0, blocks = 0, panels_per_block = 0;
  uint8_t flip = 0;  // 0x80 for an int8 x (taken as x + 128)
  int32_t zero = 0;  // x's zero point, as unsigned
  const int8_t* w_zero = nullptr;
  bool w_zero_per_m = false, any_w_zero = false;
  Int8Kernel kernel = Int8Kernel::kGeneric;

  int64_t jobs() const { return pixel_tiles * blocks; }
};

ProductPlan PlanProducts(const QuantizedConv& q, bool x_signed, int32_t x_zero,
                         const int8_t* w_zero, bool w_zero_per_m) {
  ProductPlan p;
  p.columns = PlanColumns(q.win);
  p.depth = q.rows_per_group;
  p.quads = Int8Quads(p.depth);
  p.panel_bytes = Int8ColumnPanelBytes(p.depth);
  p.m_per_group = q.m / q.group;
  const int64_t pixel_panels = CeilDiv(p.columns.positions, kInt8Cols);
  p.tile_panels = std::clamp<int64_t>(kTileBytes / p.panel_bytes, 1,
                                      std::min(kMaxTilePanels, pixel_panels));
  p.pixel_tiles = CeilDiv(pixel_panels, p.tile_panels);
  p.channel_panels = CeilDiv(p.m_per_group, kInt8Rows);
  int64_t blocks = 1;
  while (p.pixel_tiles * blocks < kMinJobs && blocks < p.channel_panels) {
    ++blocks;
  }
  p.panels_per_block = CeilDiv(p.channel_panels, blocks);
  p.blocks = CeilDiv(p.channel_panels, p.panels_per_block);
  p.flip = x_signed ? 0x80 : 0;
  p.zero = x_signed ? x_zero + 128 : x_zero;
  p.w_zero = w_zero;
  p.w_zero_per_m = w_zero_per_m;
  for (int64_t i = 0; w_zero != nullptr && i < (w_zero_per_m ? q.m : 1); ++i) {
    p.any_w_zero = p.any_w_zero || w_zero[i] != 0;
  }
  p.kernel = ActiveInt8Kernel();
  return p;
}

// Packs every column panel of one (image, group), once, in parallel, with
// each pixel's depth sum where some weight zero point needs it: the jobs
// that multiply them (a block of output channels each, where an image has
// few pixel tiles) share them instead of packing each its own copy.
void PackPanels(KernelContext& ctx, const ProductPlan& p,
                const uint8_t* const* row_of, uint8_t* panels,
                int32_t* col_sums) {
  const int64_t positions = p.columns.positions;
  ctx.ParallelFor(CeilDiv(positions, kInt8Cols),
                  static_cast<double>(p.panel_bytes) / 8,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t pp = begin; pp < end; ++pp) {
                      const int64_t p0 = pp * kInt8Cols;
                      uint8_t* panel = panels + pp * p.panel_bytes;
                      PackInt8ColumnPanel(row_of, p0, p.depth,
                                          std::min(kInt8Cols, positions - p0),
                                          p.flip, panel);
                      if (p.any_w_zero) {
                        ColumnSums(panel, p.depth, col_sums + p0);
                      }
                    }
                  });
}

// Job `job` of group g of one image: its pixel tile's packed column panels
// times its block of weight panels, the zero points corrected, the sums
// emitted.
void RunProductJob(const ProductPlan& p, const PackedInt8Weights& wg,
                   const uint8_t* panels, const int32_t* col_sums,
                   int64_t image, int64_t g, int64_t job,
                   const ConvSumsFn& emit) {
  int32_t acc[kInt8Rows * kInt8Cols];
  const int64_t block = job % p.blocks, tile = job / p.blocks;
  const int64_t positions = p.columns.positions;
  const int64_t first_panel = tile * p.tile_panels;
  const int64_t panels_here =
      std::min(p.tile_panels, CeilDiv(positions, kInt8Cols) - first_panel);
  const int64_t cp_end =
      std::min(p.channel_panels, (block + 1) * p.panels_per_block);
  // Column panel outside, weight panels inside: the column panel (128
  // bytes a quad) stays in L1 while the weight panels (32 bytes a quad)
  // stream past it. The other order waited on L2 for every column load.
  for (int64_t pp = first_panel; pp < first_panel + panels_here; ++pp) {
    const int64_t p0 = pp * kInt8Cols;
    const int64_t count = std::min(kInt8Cols, positions - p0);
    for (int64_t cp = block * p.panels_per_block; cp < cp_end; ++cp) {
      const int64_t rows_here =
          std::min(kInt8Rows, p.m_per_group - cp * kInt8Rows);
      Int8PanelProduct(p.kernel, wg.panel(cp), panels + pp * p.panel_bytes,
                       p.quads, rows_here, count, acc, kInt8Cols);
      for (int64_t r = 0; r < rows_here; ++r) {
        const int64_t row = cp * kInt8Rows + r;
        const int64_t oc = g * p.m_per_group + row;
        const int32_t wz =
            p.w_zero == nullptr ? 0 : p.w_zero[p.w_zero_per_m ? oc : 0];
        const int32_t shift =
            -p.zero * wg.row_sums()[static_cast<size_t>(row)] +
            static_cast<int32_t>(p.depth) * p.zero * wz;
        int32_t* sums = acc + r * kInt8Cols;
        for (int64_t i = 0; i < count; ++i) sums[i] += shift;
        if (wz != 0) {
          for (int64_t i = 0; i < count; ++i) sums[i] -= wz * col_sums[p0 + i];
        }
        EmitPositions(p.columns, p0, count, sums,
                      [&](int64_t pixel, int64_t n, const int32_t* run) {
                        emit(image, oc, pixel, n, run);
                      });
      }
    }
  }
}

}  // namespace

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
  const ProductPlan plan =
      PlanProducts(q, x_signed, x_zero, w_zero, w_zero_per_m);
  const int64_t in_size = q.win.InSize(), c_per_group = q.c / q.group;
  // Zeroed once: the slack is read for dropped columns only.
  std::vector<uint8_t> staged(static_cast<size_t>(
      plan.columns.staged * c_per_group + plan.columns.slack));
  std::vector<const uint8_t*> row_of(static_cast<size_t>(plan.depth));
  const int64_t pixel_panels = CeilDiv(plan.columns.positions, kInt8Cols);
  std::vector<uint8_t> panels(
      static_cast<size_t>(pixel_panels * plan.panel_bytes));
  std::vector<int32_t> col_sums(
      static_cast<size_t>(plan.any_w_zero ? pixel_panels * kInt8Cols : 0));
  const double cost =
      static_cast<double>(plan.tile_panels * kInt8Cols * plan.depth *
                          plan.panels_per_block * kInt8Rows) /
      16.0;
  for (int64_t image = 0; image < q.n; ++image) {
    for (int64_t g = 0; g < q.group; ++g) {
      // The padding takes x's raw zero point, flipped with x.
      StageColumns(ctx, q.win, plan.columns,
                   static_cast<const uint8_t*>(x) +
                       (image * q.c + g * c_per_group) * in_size,
                   c_per_group, static_cast<uint8_t>(x_zero), staged.data(),
                   row_of.data());
      PackPanels(ctx, plan, row_of.data(), panels.data(), col_sums.data());
      const PackedInt8Weights& wg = w.groups[static_cast<size_t>(g)];
      ctx.ParallelFor(plan.jobs(), cost, [&](int64_t begin, int64_t end) {
        for (int64_t job = begin; job < end; ++job) {
          RunProductJob(plan, wg, panels.data(), col_sums.data(), image, g, job,
                        emit);
        }
      });
    }
  }
}

}  // namespace weft::internal
