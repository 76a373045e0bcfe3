#include "kernels/packed_gemm.h"

#include <blis.h>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "kernels/blis_config.h"
#include "kernels/int_division.h"
#include "weft/check.h"

namespace weft::internal {
namespace {

using FloatMicroKernelFn = void (*)(dim_t m, dim_t n, dim_t k, float* alpha,
                                    float* a, float* b, float* beta, float* c,
                                    inc_t rs_c, inc_t cs_c, auxinfo_t* data,
                                    cntx_t* cntx);

// The micro-kernel of this process's BLIS configuration (blis_config.h), and
// its context (read-only after bli_init, so shared by every thread).
struct BlisMicroKernel {
  FloatMicroKernelFn fn;
  cntx_t* cntx;
  // The micro-kernel writes column-stored C fast and row-stored C through a
  // slow general-stride path (BLIS's skx kernels; its zen3 and haswell ones
  // prefer rows). weft's C is row-major, so for such a kernel weft computes
  // C^T = op(B)^T op(A)^T: the kernel's first operand is weft's B panel,
  // its second weft's A panel. `shape` is always weft's view (mr rows of
  // op(A), nr columns of op(B)), so the kernel's MR and NR are swapped in
  // it. On a Zen 5 with skx kernels, a 64 x 512 x 512 Gemm with packed
  // weights took 609 us through the general-stride path (docs/kernels.md).
  bool transposed;
  MicroKernelShape shape;
};

const BlisMicroKernel& Blis() {
  static const BlisMicroKernel kernel = [] {
    BlisMicroKernel k;
    k.cntx = ActiveBlisConfig().cntx;
    k.fn = reinterpret_cast<FloatMicroKernelFn>(
        bli_cntx_get_l3_nat_ukr_dt(BLIS_FLOAT, BLIS_GEMM_UKR, k.cntx));
    k.transposed =
        bli_cntx_l3_nat_ukr_prefers_cols_dt(BLIS_FLOAT, BLIS_GEMM_UKR, k.cntx);
    const int64_t kernel_mr =
        bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_MR, k.cntx);
    const int64_t kernel_nr =
        bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_NR, k.cntx);
    k.shape.mr = k.transposed ? kernel_nr : kernel_mr;
    k.shape.nr = k.transposed ? kernel_mr : kernel_nr;
    k.shape.kc = bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_KC, k.cntx);
    k.shape.mc = bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_MC, k.cntx);
    // Whole panels of A per mc block keep the packed layout uniform.
    k.shape.mc = std::max(k.shape.mr, k.shape.mc / k.shape.mr * k.shape.mr);
    return k;
  }();
  return kernel;
}

// The micro-kernels load packed panels with aligned vector loads.
constexpr size_t kPanelAlignment = 64;

// The micro-kernels load the next depth step's panel rows before they know
// the loop has ended, so they read a little past a panel's end (BLIS pads its
// own packing buffers likewise); a pad after the last panel keeps those reads
// inside the allocation (AddressSanitizer and ThreadSanitizer place blocks
// next to unmapped pages).
constexpr int64_t kPanelTailFloats = 256;

float* AllocatePanels(int64_t floats) {
  size_t bytes = static_cast<size_t>(floats + kPanelTailFloats) * 4;
  bytes = (bytes + kPanelAlignment - 1) / kPanelAlignment * kPanelAlignment;
  void* p = std::aligned_alloc(kPanelAlignment, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<float*>(p);
}

// Where element (outer o, depth p) of an operand lives: data[o * so + p * sp].
struct Strided {
  const float* data;
  int64_t so, sp;
};

Strided StridesOf(PackedOperand::Side side, const GemmOperand<float>& x) {
  // op(A)(i, p) = A[i][p], or A[p][i] transposed; op(B)(p, j) = B[p][j],
  // or B[j][p] transposed.
  const bool outer_is_row =
      (side == PackedOperand::Side::kLeft) != x.transposed;
  return outer_is_row ? Strided{x.data, x.ld, 1} : Strided{x.data, 1, x.ld};
}

#if defined(__AVX2__)
// r[j][i] = r[i][j]: eight rows of eight floats to their columns.
inline void TransposeEight(__m256 (&r)[8]) {
  __m256 t[8], s[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  // s[4h + c]: rows 4h..4h+3 at columns c and c + 4.
  for (int h = 0; h < 2; ++h) {
    const __m256 lo01 = t[4 * h], hi01 = t[4 * h + 1];
    const __m256 lo23 = t[4 * h + 2], hi23 = t[4 * h + 3];
    s[4 * h] = _mm256_shuffle_ps(lo01, lo23, _MM_SHUFFLE(1, 0, 1, 0));
    s[4 * h + 1] = _mm256_shuffle_ps(lo01, lo23, _MM_SHUFFLE(3, 2, 3, 2));
    s[4 * h + 2] = _mm256_shuffle_ps(hi01, hi23, _MM_SHUFFLE(1, 0, 1, 0));
    s[4 * h + 3] = _mm256_shuffle_ps(hi01, hi23, _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x20);
    r[c + 4] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x31);
  }
}

// The first n (1..8) floats of v at dst, nothing past them.
inline void StoreFirst(float* dst, int64_t n, __m256 v) {
  if (n == 8) {
    _mm256_storeu_ps(dst, v);
    return;
  }
  if (n >= 4) {
    _mm_storeu_ps(dst, _mm256_castps256_ps128(v));
    if (n == 4) return;
    dst += 4;
    n -= 4;
    v = _mm256_castps128_ps256(_mm256_extractf128_ps(v, 1));
  }
  const __m128 low = _mm256_castps256_ps128(v);
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(dst), low);
    if (n == 3) _mm_store_ss(dst + 2, _mm_movehl_ps(low, low));
    return;
  }
  _mm_store_ss(dst, low);
}

// Steps [0, kc8) of PackPanelFromRuns, kc8 a multiple of 8: eight runs are
// read as the rows of an 8 x 8 block and each of its columns (one depth
// step) stored as eight of the panel's entries. The scalar loop moved each
// float on its own (4-6% of a Run of the encoder and of the two-tower MLP,
// AMD EPYC Zen 3).
void PackRunsByEights(const float* src, int64_t stride, int64_t live,
                      int64_t kc8, int64_t width, float* dst) {
  for (int64_t p = 0; p < kc8; p += 8) {
    for (int64_t g = 0; g < width; g += 8) {
      __m256 r[8];
      for (int64_t i = 0; i < 8; ++i) {
        r[i] = g + i < live ? _mm256_loadu_ps(src + (g + i) * stride + p)
                            : _mm256_setzero_ps();
      }
      TransposeEight(r);
      const int64_t n = std::min<int64_t>(8, width - g);
      for (int64_t j = 0; j < 8; ++j) {
        StoreFirst(dst + (p + j) * width + g, n, r[j]);
      }
    }
  }
}
#endif

// Packs outer indices [o0, o0 + count) x depth [p0, p0 + kc) into panels of
// `width`, the last one zero-padded.
void PackPanels(const Strided& x, int64_t o0, int64_t count, int64_t p0,
                int64_t kc, int64_t width, float* dst) {
  for (int64_t o = 0; o < count; o += width, dst += width * kc) {
    const int64_t live = std::min(width, count - o);
    const float* src = x.data + (o0 + o) * x.so + p0 * x.sp;
    if (x.so == 1) {  // A panel's row of `width` is contiguous in memory.
      for (int64_t p = 0; p < kc; ++p) {
        std::memcpy(dst + p * width, src + p * x.sp, live * sizeof(float));
        std::fill(dst + p * width + live, dst + (p + 1) * width, 0.0f);
      }
      continue;
    }
    // Each outer index's depth run is contiguous (sp is 1 where so is not:
    // StridesOf).
    PackPanelFromRuns(src, x.so, live, kc, width, dst);
  }
}

}  // namespace

void PackPanelFromRuns(const float* src, int64_t stride, int64_t live,
                       int64_t kc, int64_t width, float* dst) {
  int64_t first = 0;  // The first depth step the scalar loop packs.
#if defined(__AVX2__)
  first = kc / 8 * 8;
  PackRunsByEights(src, stride, live, first, width, dst);
#endif
  for (int64_t i = 0; i < live; ++i) {
    const float* run = src + i * stride;
    for (int64_t p = first; p < kc; ++p) dst[p * width + i] = run[p];
  }
  for (int64_t p = first; p < kc; ++p) {
    std::fill(dst + p * width + live, dst + (p + 1) * width, 0.0f);
  }
}

const MicroKernelShape& FloatMicroKernel() { return Blis().shape; }

float* PanelBuffer::Get(int64_t floats) {
  if (floats > floats_) {
    data_.reset(AllocatePanels(floats));
    floats_ = floats;
  }
  return data_.get();
}

const float* PanelView::Panels(int64_t p0, int64_t o0) const {
  const int64_t kc = std::min(FloatMicroKernel().kc, depth - p0);
  return data + p0 * padded_outer + o0 * kc;
}

void PackOuterRange(PackedOperand::Side side, const GemmOperand<float>& x,
                    int64_t rows, int64_t cols, int64_t begin, int64_t end,
                    float* dst) {
  const MicroKernelShape& shape = FloatMicroKernel();
  const bool left = side == PackedOperand::Side::kLeft;
  const int64_t outer = left ? rows : cols;
  const int64_t depth = left ? cols : rows;
  const int64_t width = left ? shape.mr : shape.nr;
  WEFT_CHECK(begin % width == 0, "packing starts on a panel boundary");
  end = std::min(end, outer);
  if (begin >= end) return;
  const int64_t padded_outer = RoundUp(outer, width);
  const Strided strided = StridesOf(side, x);
  for (int64_t p0 = 0; p0 < depth; p0 += shape.kc) {
    const int64_t kc = std::min(shape.kc, depth - p0);
    PackPanels(strided, begin, end - begin, p0, kc, width,
               dst + p0 * padded_outer + begin * kc);
  }
}

PackedOperand PackedOperand::Pack(Side side, const GemmOperand<float>& x,
                                  int64_t rows, int64_t cols) {
  const MicroKernelShape& shape = FloatMicroKernel();
  const int64_t outer = side == Side::kLeft ? rows : cols;
  const int64_t depth = side == Side::kLeft ? cols : rows;
  const int64_t width = side == Side::kLeft ? shape.mr : shape.nr;
  PackedOperand out;
  out.side_ = side;
  out.outer_ = outer;
  float* data = out.storage_.Get(PanelView::Floats(outer, depth, width));
  out.view_ = {data, RoundUp(outer, width), depth, width};
  PackOuterRange(side, x, rows, cols, 0, outer, data);
  return out;
}

void PackedGemmTile(int64_t m, int64_t n, int64_t k, const GemmInput& a,
                    const GemmInput& b, OutputMatrix c, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  const BlisMicroKernel& blis = Blis();
  const MicroKernelShape& shape = blis.shape;
  WEFT_CHECK(!a.is_packed() ||
                 (a.packed.width == shape.mr && a.offset % shape.mr == 0),
             "a packed left operand has mr-row panels, used from a boundary");
  WEFT_CHECK(!b.is_packed() ||
                 (b.packed.width == shape.nr && b.offset % shape.nr == 0),
             "a packed right operand has nr-column panels, used from a "
             "boundary");
  if (k <= 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          c.data[i * c.row_stride + j * c.col_stride] = 0.0f;
        }
      }
    }
    return;
  }
  thread_local PanelBuffer a_buffer, b_buffer;
  const Strided a_plain = StridesOf(PackedOperand::Side::kLeft, a.plain);
  const Strided b_plain = StridesOf(PackedOperand::Side::kRight, b.plain);
  float one = 1.0f, zero = 0.0f;
  auxinfo_t aux;
  std::memset(&aux, 0, sizeof(aux));
  for (int64_t p0 = 0; p0 < k; p0 += shape.kc) {
    const int64_t kc = std::min(shape.kc, k - p0);
    float* beta = p0 == 0 && !accumulate ? &zero : &one;
    const float* b_panels;
    if (b.is_packed()) {
      b_panels = b.packed.Panels(p0, b.offset);
    } else {
      float* buffer = b_buffer.Get(RoundUp(n, shape.nr) * kc);
      PackPanels(b_plain, 0, n, p0, kc, shape.nr, buffer);
      b_panels = buffer;
    }
    for (int64_t i0 = 0; i0 < m; i0 += shape.mc) {
      const int64_t mc = std::min(shape.mc, m - i0);
      const float* a_panels;
      if (a.is_packed()) {
        a_panels = a.packed.Panels(p0, a.offset + i0);
      } else {
        float* buffer = a_buffer.Get(RoundUp(mc, shape.mr) * kc);
        PackPanels(a_plain, i0, mc, p0, kc, shape.mr, buffer);
        a_panels = buffer;
      }
      // One micro-tile: rows [i, i + mr) of this block by columns
      // [j, j + nr). A kernel that prefers column-stored C computes its
      // transpose, with weft's B panel as its first operand.
      auto multiply = [&](int64_t i, int64_t j) {
        float* a_panel = const_cast<float*>(a_panels + i * kc);
        float* b_panel = const_cast<float*>(b_panels + j * kc);
        float* c_tile = c.data + (i0 + i) * c.row_stride + j * c.col_stride;
        const int64_t rows = std::min(shape.mr, mc - i);
        const int64_t cols = std::min(shape.nr, n - j);
        if (blis.transposed) {
          blis.fn(cols, rows, kc, &one, b_panel, a_panel, beta, c_tile,
                  c.col_stride, c.row_stride, &aux, blis.cntx);
        } else {
          blis.fn(rows, cols, kc, &one, a_panel, b_panel, beta, c_tile,
                  c.row_stride, c.col_stride, &aux, blis.cntx);
        }
      };
      // The kernel's first operand changes in the inner loop, as in BLIS's
      // own macro-kernel, while its second stays in L1.
      if (blis.transposed) {
        for (int64_t i = 0; i < mc; i += shape.mr) {
          for (int64_t j = 0; j < n; j += shape.nr) multiply(i, j);
        }
      } else {
        for (int64_t j = 0; j < n; j += shape.nr) {
          for (int64_t i = 0; i < mc; i += shape.mr) multiply(i, j);
        }
      }
    }
  }
}

}  // namespace weft::internal
