#include "kernels/int8_gemm.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

namespace weft::internal {
namespace {

constexpr const char* kEnv = "WEFT_INT8_KERNEL";

bool CpuHasAvx512Vnni() {
  __builtin_cpu_init();
  // DQ for the tiles' vrangeps, VL for their 128- and 256-bit masked
  // loads and stores; every CPU with AVX-512 VNNI has both.
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vnni");
}

bool CpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

// AVX-VNNI: vpdpbusd with a VEX encoding, on 128- and 256-bit vectors.
// CPUID.(7,1):EAX[4]; read directly, since clang 14's
// __builtin_cpu_supports has no name for it. AVX2's check covers the OS's
// saving of the 256-bit registers.
bool CpuHasAvxVnni() {
  if (!CpuHasAvx2()) return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (eax & (1U << 4)) != 0;
}

// The kernel WEFT_INT8_KERNEL names, where it names one this CPU runs. A
// name the CPU cannot run fails Session::Create through
// CheckInt8KernelEnvironment; until then the CPU's choice stands.
std::optional<Int8Kernel> ForcedKernel() {
  const char* env = std::getenv(kEnv);
  if (env == nullptr) return std::nullopt;
  std::optional<Int8Kernel> forced = ParseInt8Kernel(env);
  if (forced && !CpuRunsInt8Kernel(*forced)) return std::nullopt;
  return forced;
}

Int8Kernel PerCpuKernel() {
  return Int8KernelForUnits({.avx2 = CpuHasAvx2(),
                             .avx_vnni = CpuHasAvxVnni(),
                             .avx512_vnni = CpuHasAvx512Vnni()});
}

Int8Kernel ChooseActiveKernel() {
  return ForcedKernel().value_or(PerCpuKernel());
}

// The instructions `kernel` needs, as an error names them.
std::string_view UnitsOf(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kAvx512Vnni:
      return "AVX-512 VNNI";
    case Int8Kernel::kAvxVnni:
      return "AVX-VNNI";
    case Int8Kernel::kAvx2:
      return "AVX2";
    case Int8Kernel::kGeneric:
      break;
  }
  return "portable C++";
}

// The generic kernel: the same quads, summed in int32 lane by lane.
void GenericPanelProduct(const int8_t* a, const uint8_t* b, int64_t quads,
                         int64_t rows, int64_t cols, int32_t* acc, int64_t ld) {
  int32_t sums[kInt8Rows][kInt8Cols] = {};
  for (int64_t q = 0; q < quads; ++q) {
    const int8_t* aq = a + q * kInt8Rows * 4;
    const uint8_t* bq = b + q * kInt8Cols * 4;
    for (int64_t r = 0; r < kInt8Rows; ++r) {
      // The weights are signed: their values, not their bit patterns.
      int32_t w[4];
      // NOLINTNEXTLINE(bugprone-signed-char-misuse)
      for (int j = 0; j < 4; ++j) w[j] = static_cast<int32_t>(aq[r * 4 + j]);
      for (int64_t p = 0; p < kInt8Cols; ++p) {
        const uint8_t* bp = bq + p * 4;
        sums[r][p] += w[0] * bp[0] + w[1] * bp[1] + w[2] * bp[2] + w[3] * bp[3];
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(sums[r], sums[r] + cols, acc + r * ld);
  }
}

// Four bytes at `p` in every 32-bit lane. A function with its own target:
// a lambda in a target("avx512...") function does not inherit the target,
// and fails to compile for CPUs without AVX-512 (scripts/isa-compile-check).
__attribute__((target("avx512f"), always_inline)) inline __m512i BroadcastQuad(
    const int8_t* p) {
  int32_t quad;
  std::memcpy(&quad, p, 4);
  return _mm512_set1_epi32(quad);
}

// kInt8Rows x kInt8Cols = 8 rows x 2 vectors of 16 pixels: 16 accumulators,
// two column loads and eight weight broadcasts per quad. The accumulators
// are named variables, not an array: from a `__m512i c[8][2]`, g++ 12
// copied every accumulator through another register each quad and kept two
// on the stack (235 G multiply-adds a second on the Zen 5 guest, 52% of
// vpdpbusd's rate there).
__attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni"))) void
VnniPanelProduct(const int8_t* a, const uint8_t* b, int64_t quads, int64_t rows,
                 int64_t cols, int32_t* acc, int64_t ld) {
  static_assert(kInt8Rows == 8 && kInt8Cols == 32);
  __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00,
          c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00, c41 = c00,
          c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  for (int64_t q = 0; q < quads; ++q) {
    const __m512i x0 = _mm512_loadu_si512(b + q * 128);
    const __m512i x1 = _mm512_loadu_si512(b + q * 128 + 64);
    const int8_t* aq = a + q * 32;
    const __m512i w0 = BroadcastQuad(aq + 0);
    c00 = _mm512_dpbusd_epi32(c00, x0, w0);
    c01 = _mm512_dpbusd_epi32(c01, x1, w0);
    const __m512i w1 = BroadcastQuad(aq + 4);
    c10 = _mm512_dpbusd_epi32(c10, x0, w1);
    c11 = _mm512_dpbusd_epi32(c11, x1, w1);
    const __m512i w2 = BroadcastQuad(aq + 8);
    c20 = _mm512_dpbusd_epi32(c20, x0, w2);
    c21 = _mm512_dpbusd_epi32(c21, x1, w2);
    const __m512i w3 = BroadcastQuad(aq + 12);
    c30 = _mm512_dpbusd_epi32(c30, x0, w3);
    c31 = _mm512_dpbusd_epi32(c31, x1, w3);
    const __m512i w4 = BroadcastQuad(aq + 16);
    c40 = _mm512_dpbusd_epi32(c40, x0, w4);
    c41 = _mm512_dpbusd_epi32(c41, x1, w4);
    const __m512i w5 = BroadcastQuad(aq + 20);
    c50 = _mm512_dpbusd_epi32(c50, x0, w5);
    c51 = _mm512_dpbusd_epi32(c51, x1, w5);
    const __m512i w6 = BroadcastQuad(aq + 24);
    c60 = _mm512_dpbusd_epi32(c60, x0, w6);
    c61 = _mm512_dpbusd_epi32(c61, x1, w6);
    const __m512i w7 = BroadcastQuad(aq + 28);
    c70 = _mm512_dpbusd_epi32(c70, x0, w7);
    c71 = _mm512_dpbusd_epi32(c71, x1, w7);
  }
  const __m512i sums[8][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                              {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  const __mmask16 low =
      static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1);
  const __mmask16 high =
      static_cast<__mmask16>(cols <= 16 ? 0 : (1u << (cols - 16)) - 1);
  for (int64_t r = 0; r < rows; ++r) {
    _mm512_mask_storeu_epi32(acc + r * ld, low, sums[r][0]);
    _mm512_mask_storeu_epi32(acc + r * ld + 16, high, sums[r][1]);
  }
}

// The AVX-VNNI kernel: vpdpbusd on 256-bit vectors. Sixteen vector
// registers hold a quarter of the panel at a time, 4 rows x 16 pixels (8
// accumulators, two column loads and a weight broadcast), over the whole
// depth: no sum leaves the registers before it is final, and the column
// panel (a few tens of KB at most) is read from L1 twice. Eight
// accumulators cover vpdpbusd's latency at one a cycle (Gracemont), about
// four fifths of it at two (Golden Cove).
__attribute__((target("avx2,avxvnni"))) void AvxVnniPanelProduct(
    const int8_t* a, const uint8_t* b, int64_t quads, int64_t rows,
    int64_t cols, int32_t* acc, int64_t ld) {
  static_assert(kInt8Rows == 8 && kInt8Cols == 32);
  constexpr int kSubRows = 4, kSubPixels = 16;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int half = 0; half * kSubRows < rows; ++half) {
    for (int group = 0; group * kSubPixels < cols; ++group) {
      __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00,
              c20 = c00, c21 = c00, c30 = c00, c31 = c00;
      const uint8_t* col = b + group * kSubPixels * 4;
      const int8_t* weights = a + half * kSubRows * 4;
      for (int64_t q = 0; q < quads; ++q) {
        const auto* pixels =
            reinterpret_cast<const __m256i*>(col + q * kInt8Cols * 4);
        const __m256i x0 = _mm256_loadu_si256(pixels);
        const __m256i x1 = _mm256_loadu_si256(pixels + 1);
        const int8_t* wq = weights + q * kInt8Rows * 4;
        __m256i w;
        // In assembly, with {vex}: where the build targets AVX-512 as well
        // (-march=native on a CPU with both), g++ 12 copied every
        // accumulator through another register each quad, as from an
        // array, and could pick the EVEX form, which a CPU without AVX-512
        // cannot run; "x" keeps the operands in the sixteen VEX registers.
        asm("vpbroadcastd (%[w4]), %[w]\n\t"
            "%{vex%} vpdpbusd %[w], %[x0], %[c00]\n\t"
            "%{vex%} vpdpbusd %[w], %[x1], %[c01]\n\t"
            "vpbroadcastd 4(%[w4]), %[w]\n\t"
            "%{vex%} vpdpbusd %[w], %[x0], %[c10]\n\t"
            "%{vex%} vpdpbusd %[w], %[x1], %[c11]\n\t"
            "vpbroadcastd 8(%[w4]), %[w]\n\t"
            "%{vex%} vpdpbusd %[w], %[x0], %[c20]\n\t"
            "%{vex%} vpdpbusd %[w], %[x1], %[c21]\n\t"
            "vpbroadcastd 12(%[w4]), %[w]\n\t"
            "%{vex%} vpdpbusd %[w], %[x0], %[c30]\n\t"
            "%{vex%} vpdpbusd %[w], %[x1], %[c31]"
            : [c00] "+x"(c00), [c01] "+x"(c01), [c10] "+x"(c10),
              [c11] "+x"(c11), [c20] "+x"(c20), [c21] "+x"(c21),
              [c30] "+x"(c30), [c31] "+x"(c31), [w] "=&x"(w)
            : [x0] "x"(x0), [x1] "x"(x1), [w4] "r"(wq)
            : "memory");
      }
      const __m256i sums[kSubRows][2] = {
          {c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
      const int64_t first = group * kSubPixels;
      const int64_t n = std::min<int64_t>(kSubPixels, cols - first);
      // Lanes below n: the pixels this product has (the rest of `acc`
      // keeps what it held, as on the other kernels).
      const __m256i low =
          _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(n)), lane);
      const __m256i high = _mm256_cmpgt_epi32(
          _mm256_set1_epi32(static_cast<int32_t>(n - 8)), lane);
      for (int r = 0; r < kSubRows && half * kSubRows + r < rows; ++r) {
        int32_t* dst = acc + (half * kSubRows + r) * ld + first;
        _mm256_maskstore_epi32(dst, low, sums[r][0]);
        _mm256_maskstore_epi32(dst + 8, high, sums[r][1]);
      }
    }
  }
}

// The AVX2 kernel. Without VNNI, x86 has no exact byte product for u8 x
// s8: vpmaddubsw saturates its pair sums to int16 (255 * 127 * 2 does not
// fit), which is why ONNX Runtime's AVX2 u8s8 kernel may saturate. So the
// bytes are widened to int16 and multiplied with vpmaddwd, whose int32 pair
// sums are exact: a quad's sum is two lanes (bytes 0-1, bytes 2-3), added
// together at the end.
//
// The weights are widened once per call, a chunk of quads at a time, into
// [quad][row][4 x int16]; a sub-block of 4 rows x 8 pixels (8 accumulators,
// each 4 pixels x 2 half-quads) then runs over the chunk with one vpmovzxbw
// per 4 pixels and one 64-bit broadcast per row. Between chunks the
// accumulators wait in `partial`.
constexpr int64_t kAvx2ChunkQuads = 128;
constexpr int kAvx2SubRows = 4, kAvx2SubPixels = 8;
constexpr int kAvx2SubBlocks =
    (kInt8Rows / kAvx2SubRows) * (kInt8Cols / kAvx2SubPixels);

__attribute__((target("avx2"))) void Avx2PanelProduct(
    const int8_t* a, const uint8_t* b, int64_t quads, int64_t rows,
    int64_t cols, int32_t* acc, int64_t ld) {
  static_assert(kInt8Rows == 8 && kInt8Cols == 32);
  alignas(32) int16_t wide[kAvx2ChunkQuads * kInt8Rows * 4];
  alignas(32) int32_t partial[kAvx2SubBlocks][kAvx2SubRows][2][8] = {};
  for (int64_t q0 = 0; q0 < quads; q0 += kAvx2ChunkQuads) {
    const int64_t n = std::min(kAvx2ChunkQuads, quads - q0);
    for (int64_t q = 0; q < n; ++q) {
      const __m256i w = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(a + (q0 + q) * kInt8Rows * 4));
      __m256i* out = reinterpret_cast<__m256i*>(wide + q * kInt8Rows * 4);
      _mm256_store_si256(out, _mm256_cvtepi8_epi16(_mm256_castsi256_si128(w)));
      _mm256_store_si256(out + 1,
                         _mm256_cvtepi8_epi16(_mm256_extracti128_si256(w, 1)));
    }
    const uint8_t* chunk = b + q0 * kInt8Cols * 4;
    for (int sub = 0; sub < kAvx2SubBlocks; ++sub) {
      const int half = sub / 4, group = sub % 4;
      // A panel's last pixels or rows past the product's edge: no sub-block
      // of only those (a 7 x 7 plane's second panel holds 17 pixels of 32).
      if (group * kAvx2SubPixels >= cols || half * kAvx2SubRows >= rows) {
        continue;
      }
      auto slot = [&](int r, int v) {
        return reinterpret_cast<__m256i*>(partial[sub][r][v]);
      };
      __m256i c00 = _mm256_load_si256(slot(0, 0));
      __m256i c01 = _mm256_load_si256(slot(0, 1));
      __m256i c10 = _mm256_load_si256(slot(1, 0));
      __m256i c11 = _mm256_load_si256(slot(1, 1));
      __m256i c20 = _mm256_load_si256(slot(2, 0));
      __m256i c21 = _mm256_load_si256(slot(2, 1));
      __m256i c30 = _mm256_load_si256(slot(3, 0));
      __m256i c31 = _mm256_load_si256(slot(3, 1));
      const uint8_t* col = chunk + group * kAvx2SubPixels * 4;
      const int16_t* wr = wide + half * kAvx2SubRows * 4;
      // In assembly: from the same intrinsics GCC 12 hoisted the four
      // broadcasts, ran out of registers, kept an accumulator on the stack
      // and the loop waited on its store (a third of this speed).
      for (int64_t q = 0; q < n; ++q) {
        const uint8_t* bytes = col + q * kInt8Cols * 4;
        const int16_t* rows4 = wr + q * kInt8Rows * 4;
        __m256i x0, x1, w, m;
        asm("vpmovzxbw (%[b]), %[x0]\n\t"
            "vpmovzxbw 16(%[b]), %[x1]\n\t"
            "vpbroadcastq (%[w4]), %[w]\n\t"
            "vpmaddwd %[w], %[x0], %[m]\n\t"
            "vpaddd %[m], %[c00], %[c00]\n\t"
            "vpmaddwd %[w], %[x1], %[m]\n\t"
            "vpaddd %[m], %[c01], %[c01]\n\t"
            "vpbroadcastq 8(%[w4]), %[w]\n\t"
            "vpmaddwd %[w], %[x0], %[m]\n\t"
            "vpaddd %[m], %[c10], %[c10]\n\t"
            "vpmaddwd %[w], %[x1], %[m]\n\t"
            "vpaddd %[m], %[c11], %[c11]\n\t"
            "vpbroadcastq 16(%[w4]), %[w]\n\t"
            "vpmaddwd %[w], %[x0], %[m]\n\t"
            "vpaddd %[m], %[c20], %[c20]\n\t"
            "vpmaddwd %[w], %[x1], %[m]\n\t"
            "vpaddd %[m], %[c21], %[c21]\n\t"
            "vpbroadcastq 24(%[w4]), %[w]\n\t"
            "vpmaddwd %[w], %[x0], %[m]\n\t"
            "vpaddd %[m], %[c30], %[c30]\n\t"
            "vpmaddwd %[w], %[x1], %[m]\n\t"
            "vpaddd %[m], %[c31], %[c31]"
            : [c00] "+x"(c00), [c01] "+x"(c01), [c10] "+x"(c10),
              [c11] "+x"(c11), [c20] "+x"(c20), [c21] "+x"(c21),
              [c30] "+x"(c30), [c31] "+x"(c31), [x0] "=&x"(x0), [x1] "=&x"(x1),
              [w] "=&x"(w), [m] "=&x"(m)
            : [b] "r"(bytes), [w4] "r"(rows4)
            : "memory");
      }
      _mm256_store_si256(slot(0, 0), c00);
      _mm256_store_si256(slot(0, 1), c01);
      _mm256_store_si256(slot(1, 0), c10);
      _mm256_store_si256(slot(1, 1), c11);
      _mm256_store_si256(slot(2, 0), c20);
      _mm256_store_si256(slot(2, 1), c21);
      _mm256_store_si256(slot(3, 0), c30);
      _mm256_store_si256(slot(3, 1), c31);
    }
  }
  // Each accumulator holds pixels (0, 1 | 2, 3) as half-quad pairs: hadd
  // gives (p0, p1, p4, p5 | p2, p3, p6, p7) and the permute puts them in
  // order.
  for (int sub = 0; sub < kAvx2SubBlocks; ++sub) {
    const int half = sub / 4, group = sub % 4;
    for (int r = 0; r < kAvx2SubRows; ++r) {
      const int64_t row = half * kAvx2SubRows + r;
      if (row >= rows) break;
      const __m256i sums = _mm256_permute4x64_epi64(
          _mm256_hadd_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(
                                partial[sub][r][0])),
                            _mm256_load_si256(reinterpret_cast<const __m256i*>(
                                partial[sub][r][1]))),
          0xD8);
      const int64_t first = group * kAvx2SubPixels;
      int32_t* dst = acc + row * ld + first;
      if (cols >= first + kAvx2SubPixels) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), sums);
      } else if (cols > first) {
        alignas(32) int32_t lanes[kAvx2SubPixels];
        _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sums);
        std::copy(lanes, lanes + (cols - first), dst);
      }
    }
  }
}

// PackInt8ColumnPanel over any row layout: row(d) is row d's first pixel.
template <class RowAt>
void PackColumnPanel(RowAt row, int64_t depth, int64_t cols, uint8_t flip,
                     uint8_t* panel) {
  const int64_t whole_quads = cols == kInt8Cols ? depth / 4 : 0;
#if defined(__SSE2__)
  // Four rows of 16 pixels become 16 pixels of four bytes: bytes of rows
  // (0, 1) and (2, 3) interleaved, then those pairs interleaved.
  const __m128i flip_bytes = _mm_set1_epi8(static_cast<char>(flip));
  for (int64_t q = 0; q < whole_quads; ++q) {
    const uint8_t* r[4] = {row(q * 4), row(q * 4 + 1), row(q * 4 + 2),
                           row(q * 4 + 3)};
    uint8_t* out = panel + q * kInt8Cols * 4;
    for (int64_t half = 0; half < kInt8Cols; half += 16) {
      auto load = [&](int64_t j) {
        return _mm_xor_si128(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[j] + half)),
            flip_bytes);
      };
      const __m128i r0 = load(0), r1 = load(1), r2 = load(2), r3 = load(3);
      const __m128i t0 = _mm_unpacklo_epi8(r0, r1);
      const __m128i t1 = _mm_unpackhi_epi8(r0, r1);
      const __m128i t2 = _mm_unpacklo_epi8(r2, r3);
      const __m128i t3 = _mm_unpackhi_epi8(r2, r3);
      __m128i* dst = reinterpret_cast<__m128i*>(out + half * 4);
      _mm_storeu_si128(dst, _mm_unpacklo_epi16(t0, t2));
      _mm_storeu_si128(dst + 1, _mm_unpackhi_epi16(t0, t2));
      _mm_storeu_si128(dst + 2, _mm_unpacklo_epi16(t1, t3));
      _mm_storeu_si128(dst + 3, _mm_unpackhi_epi16(t1, t3));
    }
  }
#else
  for (int64_t q = 0; q < whole_quads; ++q) {
    for (int64_t p = 0; p < kInt8Cols; ++p) {
      for (int64_t j = 0; j < 4; ++j) {
        panel[q * kInt8Cols * 4 + p * 4 + j] = row(q * 4 + j)[p] ^ flip;
      }
    }
  }
#endif
  // The rest: a partial panel, or the last quad of a depth that is not
  // whole quads.
  const int64_t quads = Int8Quads(depth);
  for (int64_t q = whole_quads; q < quads; ++q) {
    uint8_t* out = panel + q * kInt8Cols * 4;
    for (int64_t p = 0; p < kInt8Cols; ++p) {
      for (int64_t j = 0; j < 4; ++j) {
        const int64_t d = q * 4 + j;
        out[p * 4 + j] = p < cols && d < depth ? row(d)[p] ^ flip : 0;
      }
    }
  }
}

// The scalar requantization: the reference every vector form equals. The
// sum and the bias add in unsigned arithmetic: they wrap, as the vector
// forms' 32-bit adds do, where a signed add would be undefined (a bias
// near the int32 limits is valid input).
template <class Q>
void RequantizeScalar(const int32_t* acc, int64_t n, int32_t bias,
                      float multiplier, float zero, Q* dst) {
  constexpr float lo = std::numeric_limits<Q>::min();
  constexpr float hi = std::numeric_limits<Q>::max();
  for (int64_t p = 0; p < n; ++p) {
    const auto sum = static_cast<int32_t>(static_cast<uint32_t>(acc[p]) +
                                          static_cast<uint32_t>(bias));
    const float v = std::nearbyint(static_cast<float>(sum) * multiplier) + zero;
    dst[p] =
        static_cast<Q>(static_cast<int32_t>(std::min(std::max(v, lo), hi)));
  }
}

// GCC 12 warns that the AVX-512 conversion intrinsics read an
// "uninitialized" value: their own _mm512_undefined_* operand, unused
// (a known false positive of those headers).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <class Q>
void Requantize(const int32_t* acc, int64_t n, int32_t bias, float multiplier,
                float zero, Q* dst) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
  constexpr float lo = std::numeric_limits<Q>::min();
  constexpr float hi = std::numeric_limits<Q>::max();
  const __m512i b = _mm512_set1_epi32(bias);
  const __m512 m = _mm512_set1_ps(multiplier), z = _mm512_set1_ps(zero);
  const __m512 low = _mm512_set1_ps(lo), high = _mm512_set1_ps(hi);
  for (int64_t p = 0; p < n; p += 16) {
    const __mmask16 mask =
        static_cast<__mmask16>(n - p >= 16 ? 0xFFFF : (1u << (n - p)) - 1);
    const __m512i a = _mm512_maskz_loadu_epi32(mask, acc + p);
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(a, b)), m);
    v = _mm512_add_ps(
        _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
        z);
    const __m512i q =
        _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(v, low), high));
    _mm_mask_storeu_epi8(dst + p, mask, _mm512_cvtepi32_epi8(q));
  }
#elif defined(__AVX2__)
  // Eight lanes, the tail too, the same operations on every lane, so the
  // same bits as the scalar loop. (A scalar tail took most of the time
  // where rows are 7 or 14 outputs, as in MobileNetV2.)
  constexpr float lo = std::numeric_limits<Q>::min();
  constexpr float hi = std::numeric_limits<Q>::max();
  const __m256i b = _mm256_set1_epi32(bias);
  const __m256 m = _mm256_set1_ps(multiplier), z = _mm256_set1_ps(zero);
  const __m256 low = _mm256_set1_ps(lo), high = _mm256_set1_ps(hi);
  auto eight = [&](__m256i a, Q* out) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(a, b)), m);
    v = _mm256_add_ps(
        _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
    const __m256i q =
        _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(v, low), high));
    // In range already: the packs only narrow.
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q),
                                          _mm256_extracti128_si256(q, 1));
    const __m128i bytes = std::is_signed_v<Q> ? _mm_packs_epi16(words, words)
                                              : _mm_packus_epi16(words, words);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), bytes);
  };
  int64_t p = 0;
  for (; p + 8 <= n; p += 8) {
    eight(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + p)),
          dst + p);
  }
  if (p < n) {
    // A masked load (lanes past n read as 0, and nothing past n is read):
    // through a copy on the stack the vector load waited on the copy's
    // scalar stores.
    const __m256i lanes =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(n - p)),
                           _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    Q out[8];
    eight(_mm256_maskload_epi32(acc + p, lanes), out);
    std::copy(out, out + (n - p), dst + p);
  }
#else
  RequantizeScalar(acc, n, bias, multiplier, zero, dst);
#endif
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace

void RequantizeToUint8(const int32_t* acc, int64_t n, int32_t bias,
                       float multiplier, float zero, uint8_t* dst) {
  Requantize(acc, n, bias, multiplier, zero, dst);
}

void RequantizeToInt8(const int32_t* acc, int64_t n, int32_t bias,
                      float multiplier, float zero, int8_t* dst) {
  Requantize(acc, n, bias, multiplier, zero, dst);
}

std::string_view Int8KernelName(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kAvx512Vnni:
      return "vnni";
    case Int8Kernel::kAvxVnni:
      return "avxvnni";
    case Int8Kernel::kAvx2:
      return "avx2";
    case Int8Kernel::kGeneric:
      break;
  }
  return "generic";
}

std::optional<Int8Kernel> ParseInt8Kernel(std::string_view name) {
  if (name == "vnni") return Int8Kernel::kAvx512Vnni;
  if (name == "avxvnni") return Int8Kernel::kAvxVnni;
  if (name == "avx2") return Int8Kernel::kAvx2;
  if (name == "generic") return Int8Kernel::kGeneric;
  return std::nullopt;
}

Int8Kernel Int8KernelForUnits(const Int8Units& units) {
  if (units.avx512_vnni) return Int8Kernel::kAvx512Vnni;
  if (units.avx_vnni) return Int8Kernel::kAvxVnni;
  return units.avx2 ? Int8Kernel::kAvx2 : Int8Kernel::kGeneric;
}

bool CpuHasAmxInt8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx & (1U << 25)) != 0;
}

bool CpuRunsInt8Kernel(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kAvx512Vnni:
      return CpuHasAvx512Vnni();
    case Int8Kernel::kAvxVnni:
      return CpuHasAvxVnni();
    case Int8Kernel::kAvx2:
      return CpuHasAvx2();
    case Int8Kernel::kGeneric:
      break;
  }
  return true;
}

Int8Kernel ActiveInt8Kernel() {
  static const Int8Kernel kernel = ChooseActiveKernel();
  return kernel;
}

Status CheckInt8KernelEnvironment() {
  const char* env = std::getenv(kEnv);
  if (env == nullptr) return Status::OK();
  std::optional<Int8Kernel> kernel = ParseInt8Kernel(env);
  if (!kernel) {
    return InvalidArgumentError(std::string(kEnv) + "=" + env +
                                " is not an int8 kernel (generic, avx2, "
                                "avxvnni or vnni; "
                                "unset it for the per-CPU choice, "
                                "docs/kernels.md)");
  }
  if (!CpuRunsInt8Kernel(*kernel)) {
    return InvalidArgumentError(std::string(kEnv) + "=" + env +
                                ": this CPU has no " +
                                std::string(UnitsOf(*kernel)));
  }
  return Status::OK();
}

std::string DescribeActiveInt8Kernel() {
  std::string name(Int8KernelName(ActiveInt8Kernel()));
  if (ForcedKernel()) return name + " (" + kEnv + ")";
  switch (PerCpuKernel()) {
    case Int8Kernel::kAvx512Vnni:
      return name + " (per CPU: AVX-512 VNNI)";
    case Int8Kernel::kAvxVnni:
      return name + " (per CPU: AVX-VNNI, no AVX-512 VNNI)";
    case Int8Kernel::kAvx2:
      return name + " (per CPU: AVX2, no AVX-512 VNNI)";
    case Int8Kernel::kGeneric:
      break;
  }
  return name + " (per CPU: no AVX2)";
}

PackedInt8Weights::PackedInt8Weights(const int8_t* w, int64_t rows,
                                     int64_t depth)
    : rows_(rows), depth_(depth) {
  const int64_t q = quads();
  data_.assign(static_cast<size_t>(panels() * q * kInt8Rows * 4), 0);
  row_sums_.assign(static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int8_t* panel = data_.data() + (r / kInt8Rows) * q * kInt8Rows * 4;
    const int64_t lane = r % kInt8Rows;
    for (int64_t d = 0; d < depth; ++d) {
      const int8_t v = w[r * depth + d];
      panel[(d / 4) * kInt8Rows * 4 + lane * 4 + d % 4] = v;
      row_sums_[static_cast<size_t>(r)] += v;
    }
  }
}

void PackInt8ColumnPanel(const uint8_t* rows, int64_t ld, int64_t depth,
                         int64_t cols, uint8_t flip, uint8_t* panel) {
  PackColumnPanel([rows, ld](int64_t d) { return rows + d * ld; }, depth, cols,
                  flip, panel);
}

void PackInt8ColumnPanel(const uint8_t* const* rows, int64_t offset,
                         int64_t depth, int64_t cols, uint8_t flip,
                         uint8_t* panel) {
  PackColumnPanel([rows, offset](int64_t d) { return rows[d] + offset; }, depth,
                  cols, flip, panel);
}

void PackInt8RowPanel(const uint8_t* a, int64_t lda, int64_t depth,
                      int64_t cols, uint8_t flip, uint8_t* panel) {
  const int64_t quads = Int8Quads(depth);
  int64_t c = 0;
  const int64_t whole_blocks = depth / 16;  // four quads of four rows
#if defined(__SSE2__)
  const __m128i flip_bytes = _mm_set1_epi8(static_cast<char>(flip));
  // Four rows' next four quads, a 4 x 4 transposition of 32-bit words.
  for (; c + 4 <= cols; c += 4) {
    for (int64_t block = 0; block < whole_blocks; ++block) {
      __m128i r[4];
      for (int i = 0; i < 4; ++i) {
        r[i] = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(
                                 a + (c + i) * lda + block * 16)),
                             flip_bytes);
      }
      const __m128i t0 = _mm_unpacklo_epi32(r[0], r[1]);
      const __m128i t1 = _mm_unpacklo_epi32(r[2], r[3]);
      const __m128i t2 = _mm_unpackhi_epi32(r[0], r[1]);
      const __m128i t3 = _mm_unpackhi_epi32(r[2], r[3]);
      uint8_t* out = panel + block * 4 * kInt8Cols * 4 + c * 4;
      auto store = [&](int64_t quad, __m128i v) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + quad * kInt8Cols * 4),
                         v);
      };
      store(0, _mm_unpacklo_epi64(t0, t1));
      store(1, _mm_unpackhi_epi64(t0, t1));
      store(2, _mm_unpacklo_epi64(t2, t3));
      store(3, _mm_unpackhi_epi64(t2, t3));
    }
    // The depth past the whole blocks, byte by byte.
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t d = whole_blocks * 16; d < quads * 4; ++d) {
        panel[(d / 4) * kInt8Cols * 4 + (c + i) * 4 + d % 4] =
            d < depth ? a[(c + i) * lda + d] ^ flip : 0;
      }
    }
  }
#endif
  for (; c < cols; ++c) {
    for (int64_t d = 0; d < quads * 4; ++d) {
      panel[(d / 4) * kInt8Cols * 4 + c * 4 + d % 4] =
          d < depth ? a[c * lda + d] ^ flip : 0;
    }
  }
  for (; c < kInt8Cols; ++c) {
    for (int64_t q = 0; q < quads; ++q) {
      std::memset(panel + q * kInt8Cols * 4 + c * 4, 0, 4);
    }
  }
}

void Int8PanelProduct(Int8Kernel kernel, const int8_t* weight_panel,
                      const uint8_t* column_panel, int64_t quads, int64_t rows,
                      int64_t cols, int32_t* acc, int64_t ld) {
  if (kernel == Int8Kernel::kAvx512Vnni) {
    VnniPanelProduct(weight_panel, column_panel, quads, rows, cols, acc, ld);
  } else if (kernel == Int8Kernel::kAvxVnni) {
    AvxVnniPanelProduct(weight_panel, column_panel, quads, rows, cols, acc, ld);
  } else if (kernel == Int8Kernel::kAvx2) {
    Avx2PanelProduct(weight_panel, column_panel, quads, rows, cols, acc, ld);
  } else {
    GenericPanelProduct(weight_panel, column_panel, quads, rows, cols, acc, ld);
  }
}

}  // namespace weft::internal
