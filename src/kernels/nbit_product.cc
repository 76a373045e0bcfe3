#include "kernels/nbit_product.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace weft::internal {

namespace {

// One block of one column's codes (`from`, ONNX Runtime's packing) into
// its panel (`to`: the column's byte of k-step 0, steps of 2 * kBits
// bytes, the column's codes at bit `shift`). A template on the width, so
// that the byte and bit of each code are shifts, not divisions.
template <int kBits>
void PackBlock(const uint8_t* from, int64_t block, int shift, uint8_t* to) {
  constexpr int kPerByte = 8 / kBits;
  constexpr unsigned kMask = (1u << kBits) - 1;
  constexpr int64_t kStep = 2 * kBits;
  for (int64_t byte = 0; byte < block / kPerByte; ++byte) {
    const unsigned codes = from[byte];
    for (int i = 0; i < kPerByte; ++i) {
      uint8_t& out = to[(byte * kPerByte + i) * kStep];
      out = static_cast<uint8_t>(out |
                                 (((codes >> (i * kBits)) & kMask) << shift));
    }
  }
}

}  // namespace

NBitPanels::NBitPanels(const NBitWeight& w)
    : k_(w.k), n_(w.n), bits_(w.bits), block_(w.block) {
  const int64_t blocks = this->blocks();
  const auto entries = static_cast<size_t>(panels() * blocks);
  codes_.assign(entries * static_cast<size_t>(block_ * step_bytes()), 0);
  scales_.assign(entries * kNBitPanelColumns, 0.0f);
  zeros_.assign(entries * kNBitPanelColumns, 0.0f);
  for (int64_t j = 0; j < n_; ++j) {
    const int64_t panel = j / kNBitPanelColumns;
    const int64_t c = j % kNBitPanelColumns;
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t at =
          static_cast<size_t>(panel * blocks + b) * kNBitPanelColumns +
          static_cast<size_t>(c);
      scales_[at] = w.scales[j * blocks + b];
      zeros_[at] = w.zeros[j * blocks + b];
      const uint8_t* from = w.codes + (j * blocks + b) * w.bytes_per_block();
      uint8_t* to = codes_.data() +
                    (panel * blocks + b) * block_ * step_bytes() +
                    c * bits_ / 8;
      const int shift = static_cast<int>((c * bits_) % 8);
      switch (bits_) {
        case 8:
          PackBlock<8>(from, block_, shift, to);
          break;
        case 4:
          PackBlock<4>(from, block_, shift, to);
          break;
        default:
          PackBlock<2>(from, block_, shift, to);
          break;
      }
    }
  }
}

namespace {

// The columns of panel p, one at a time, in the order of the header.
void PortablePanel(const NBitPanels& w, int64_t p, const float* a, int64_t lda,
                   int64_t rows, float* y, int64_t ldy) {
  const int64_t columns =
      std::min(kNBitPanelColumns, w.n() - p * kNBitPanelColumns);
  const unsigned mask = (1u << w.bits()) - 1;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a + r * lda;
    for (int64_t c = 0; c < columns; ++c) {
      const int64_t byte = c * w.bits() / 8;
      const int shift = static_cast<int>((c * w.bits()) % 8);
      float total = 0;
      for (int64_t b = 0; b < w.blocks(); ++b) {
        const uint8_t* codes = w.codes(p, b);
        const float zero = w.zeros(p, b)[c];
        const int64_t first = b * w.block();
        const int64_t end = std::min(w.k(), first + w.block());
        float sum = 0;
        for (int64_t k = first; k < end; ++k) {
          const unsigned code =
              (codes[(k - first) * w.step_bytes() + byte] >> shift) & mask;
          sum += x[k] * (static_cast<float>(code) - zero);
        }
        total += sum * w.scales(p, b)[c];
      }
      y[r * ldy + p * kNBitPanelColumns + c] = total;
    }
  }
}

// GCC 12 warns that the AVX-512 conversion intrinsics read an
// "uninitialized" value: their own _mm512_undefined_* operand, unused
// (to the end of the file, where the templates are instantiated).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// One k of a panel: its 2 * kBits bytes as the 16 columns' codes, one a
// byte, in column order.
template <int kBits>
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m128i
SixteenCodes(const uint8_t* bytes) {
  if constexpr (kBits == 8) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  } else if constexpr (kBits == 4) {
    const __m128i packed =
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes));
    const __m128i low = _mm_set1_epi8(0x0F);
    // Byte i holds columns 2i (low half) and 2i + 1: interleaved back.
    return _mm_unpacklo_epi8(_mm_and_si128(packed, low),
                             _mm_and_si128(_mm_srli_epi16(packed, 4), low));
  } else {
    int32_t word;
    std::memcpy(&word, bytes, sizeof(word));
    const __m128i packed = _mm_cvtsi32_si128(word);
    const __m128i low = _mm_set1_epi8(0x03);
    // Byte i holds columns 4i .. 4i + 3, two bits each from the bottom.
    const __m128i c0 = _mm_and_si128(packed, low);
    const __m128i c1 = _mm_and_si128(_mm_srli_epi16(packed, 2), low);
    const __m128i c2 = _mm_and_si128(_mm_srli_epi16(packed, 4), low);
    const __m128i c3 = _mm_and_si128(_mm_srli_epi16(packed, 6), low);
    return _mm_unpacklo_epi16(_mm_unpacklo_epi8(c0, c1),
                              _mm_unpacklo_epi8(c2, c3));
  }
}

// Panel p + v's 16 weights at k = first + i: the codes dequantized, code -
// zero, in float32.
template <int kBits>
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512
DequantizedStep(const uint8_t* codes, int64_t i, __m512 zero) {
  return _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                           SixteenCodes<kBits>(codes + i * 2 * kBits))),
                       zero);
}

// V panels from p dequantized into `out`, [k][v][16] for k < K: the same
// values DequantizedStep gives, for tiles of many row groups to read
// rather than each dequantize them again.
template <int V, int kBits>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void DequantizePanels(
    const NBitPanels& w, int64_t p, float* out) {
  for (int64_t b = 0; b < w.blocks(); ++b) {
    const int64_t first = b * w.block();
    const int64_t steps = std::min(w.k(), first + w.block()) - first;
    for (int v = 0; v < V; ++v) {
      const uint8_t* codes = w.codes(p + v, b);
      const __m512 zero = _mm512_loadu_ps(w.zeros(p + v, b));
      for (int64_t i = 0; i < steps; ++i) {
        _mm512_storeu_ps(out + ((first + i) * V + v) * kNBitPanelColumns,
                         DequantizedStep<kBits>(codes, i, zero));
      }
    }
  }
}

// R rows times V panels from panel p: per k, each panel's 16 weights in
// one vector, multiplied into every row's sums; the weights dequantized
// here, or read from `dequantized` (DequantizePanels' layout) where given.
template <int R, int V, int kBits>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void VectorTile(
    const NBitPanels& w, int64_t p, const float* a, int64_t lda, float* y,
    int64_t ldy, const float* dequantized) {
  // The totals live in memory, touched once a block: the registers hold
  // the R x V sums, the weights and the zero points.
  alignas(64) float total[R][V][kNBitPanelColumns] = {};
  for (int64_t b = 0; b < w.blocks(); ++b) {
    const int64_t first = b * w.block();
    const int64_t steps = std::min(w.k(), first + w.block()) - first;
    const uint8_t* codes[V];
    __m512 zero[V];
    __m512 sums[R][V];
    for (int v = 0; v < V; ++v) {
      codes[v] = w.codes(p + v, b);
      zero[v] = _mm512_loadu_ps(w.zeros(p + v, b));
      for (int r = 0; r < R; ++r) sums[r][v] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < steps; ++i) {
      __m512 weight[V];
      for (int v = 0; v < V; ++v) {
        weight[v] = dequantized != nullptr
                        ? _mm512_loadu_ps(dequantized + ((first + i) * V + v) *
                                                            kNBitPanelColumns)
                        : DequantizedStep<kBits>(codes[v], i, zero[v]);
      }
      for (int r = 0; r < R; ++r) {
        const __m512 x = _mm512_set1_ps(a[r * lda + first + i]);
        for (int v = 0; v < V; ++v) {
          sums[r][v] = _mm512_fmadd_ps(x, weight[v], sums[r][v]);
        }
      }
    }
    for (int v = 0; v < V; ++v) {
      const __m512 scale = _mm512_loadu_ps(w.scales(p + v, b));
      for (int r = 0; r < R; ++r) {
        _mm512_store_ps(
            total[r][v],
            _mm512_fmadd_ps(sums[r][v], scale, _mm512_load_ps(total[r][v])));
      }
    }
  }
  for (int v = 0; v < V; ++v) {
    const int64_t column = (p + v) * kNBitPanelColumns;
    const int64_t columns = std::min(kNBitPanelColumns, w.n() - column);
    const auto lanes = static_cast<__mmask16>((1u << columns) - 1);
    for (int r = 0; r < R; ++r) {
      _mm512_mask_storeu_ps(y + r * ldy + column, lanes,
                            _mm512_load_ps(total[r][v]));
    }
  }
}

constexpr int kTileRows = 8;    // rows sharing each dequantized vector
constexpr int kTilePanels = 2;  // panels a tile computes

template <int V, int kBits>
void VectorTileOfRows(int64_t rows, const NBitPanels& w, int64_t p,
                      const float* a, int64_t lda, float* y, int64_t ldy,
                      const float* dequantized) {
  switch (rows) {
    case 8:
      return VectorTile<8, V, kBits>(w, p, a, lda, y, ldy, dequantized);
    case 7:
      return VectorTile<7, V, kBits>(w, p, a, lda, y, ldy, dequantized);
    case 6:
      return VectorTile<6, V, kBits>(w, p, a, lda, y, ldy, dequantized);
    case 5:
      return VectorTile<5, V, kBits>(w, p, a, lda, y, ldy, dequantized);
    case 4:
      return VectorTile<4, V, kBits>(w, p, a, lda, y, ldy, dequantized);
    case 3:
      return VectorTile<3, V, kBits>(w, p, a, lda, y, ldy, dequantized);
    case 2:
      return VectorTile<2, V, kBits>(w, p, a, lda, y, ldy, dequantized);
    default:
      return VectorTile<1, V, kBits>(w, p, a, lda, y, ldy, dequantized);
  }
}

// Panel pairs outermost: a pair's codes stay in cache while every group
// of rows passes over them. With more than one group of rows, the pair is
// dequantized once into a buffer the groups read (the same float values,
// so the same sums).
template <int kBits>
void VectorPanels(const NBitPanels& w, const float* a, int64_t lda,
                  int64_t rows, float* y, int64_t ldy, int64_t first,
                  int64_t count) {
  std::vector<float> dequantized;
  if (rows > kTileRows) {
    dequantized.resize(
        static_cast<size_t>(w.k() * kTilePanels * kNBitPanelColumns));
  }
  for (int64_t p = first; p < first + count; p += kTilePanels) {
    const bool pair = first + count - p >= kTilePanels;
    float* buffer = dequantized.empty() ? nullptr : dequantized.data();
    if (buffer != nullptr) {
      if (pair) {
        DequantizePanels<2, kBits>(w, p, buffer);
      } else {
        DequantizePanels<1, kBits>(w, p, buffer);
      }
    }
    for (int64_t r = 0; r < rows; r += kTileRows) {
      const int64_t tile_rows = std::min<int64_t>(kTileRows, rows - r);
      if (pair) {
        VectorTileOfRows<2, kBits>(tile_rows, w, p, a + r * lda, lda,
                                   y + r * ldy, ldy, buffer);
      } else {
        VectorTileOfRows<1, kBits>(tile_rows, w, p, a + r * lda, lda,
                                   y + r * ldy, ldy, buffer);
      }
    }
  }
}

}  // namespace

bool NBitVectorPathRuns() {
  static const bool runs = __builtin_cpu_supports("avx512f") &&
                           __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl");
  return runs;
}

void NBitProduct(const NBitPanels& w, const float* a, int64_t lda, int64_t rows,
                 float* y, int64_t ldy, int64_t first, int64_t count,
                 bool vector_path) {
  if (vector_path && NBitVectorPathRuns()) {
    switch (w.bits()) {
      case 8:
        return VectorPanels<8>(w, a, lda, rows, y, ldy, first, count);
      case 4:
        return VectorPanels<4>(w, a, lda, rows, y, ldy, first, count);
      default:
        return VectorPanels<2>(w, a, lda, rows, y, ldy, first, count);
    }
  }
  for (int64_t p = first; p < first + count; ++p) {
    PortablePanel(w, p, a, lda, rows, y, ldy);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace weft::internal
