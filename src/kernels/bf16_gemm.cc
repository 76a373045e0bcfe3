#include "kernels/bf16_gemm.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace weft::internal {
namespace {

constexpr int64_t kVectors = kBf16BlockCols / 16;
// Rows per tile: 6 rows x 4 vectors = 24 accumulators, 4 weight vectors
// and a broadcast, within the 32 registers.
constexpr int64_t kTileRows = 6;

constexpr const char* kUnitsEnv = "WEFT_BF16_UNITS";

// WEFT_BF16_UNITS=none: the CPU's bf16 units hidden from weft.
bool UnitsHidden() {
  const char* env = std::getenv(kUnitsEnv);
  return env != nullptr && std::string_view(env) == "none";
}

using Vector = __m512;

// One tile: kRows rows of A times one block of B, each output element one
// chain over the pairs. `cols` < kBf16BlockCols stores the first `cols`.
template <int kRows>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512bf16"))) void Tile(
    const uint16_t* const* rows, const uint16_t* block, int64_t pairs, float* c,
    int64_t ldc, int64_t cols) {
  Vector acc[kRows][kVectors];
  for (auto& row : acc) {
    for (Vector& v : row) v = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < pairs; ++p) {
    const uint16_t* b = block + p * kBf16BlockCols * 2;
    __m512bh w[kVectors];
    for (int64_t v = 0; v < kVectors; ++v) {
      w[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + v * 32));
    }
    for (int r = 0; r < kRows; ++r) {
      int32_t pair = 0;
      std::memcpy(&pair, rows[r] + 2 * p, sizeof(pair));
      const auto a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair));
      for (int64_t v = 0; v < kVectors; ++v) {
        acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a, w[v]);
      }
    }
  }
  for (int r = 0; r < kRows; ++r) {
    float* out = c + r * ldc;
    for (int64_t v = 0; v < kVectors; ++v) {
      const int64_t left = cols - v * 16;
      if (left >= 16) {
        _mm512_storeu_ps(out + v * 16, acc[r][v]);
      } else if (left > 0) {
        const auto mask = static_cast<__mmask16>((1U << left) - 1);
        _mm512_mask_storeu_ps(out + v * 16, mask, acc[r][v]);
      }
    }
  }
}

using TileFunction = void (*)(const uint16_t* const*, const uint16_t*, int64_t,
                              float*, int64_t, int64_t);

constexpr TileFunction kTiles[kTileRows + 1] = {
    nullptr, Tile<1>, Tile<2>, Tile<3>, Tile<4>, Tile<5>, Tile<6>};

__attribute__((target("avx512f,avx512vl,avx512bw,avx512bf16"))) void
RoundVector(const float* x, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256bh y = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        reinterpret_cast<__m256i>(y));
  }
  if (i < n) {
    const auto mask = static_cast<__mmask16>((1U << (n - i)) - 1);
    const __m256bh y = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x + i));
    _mm256_mask_storeu_epi16(out + i, mask, reinterpret_cast<__m256i>(y));
  }
}

}  // namespace

bool CpuHasAmxBf16() {
  if (UnitsHidden()) return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx & (1U << 22)) != 0;  // CPUID.(7,0):EDX[22], AMX-BF16.
}

bool CpuHasBf16Products() {
  static const bool has = [] {
    if (UnitsHidden()) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bf16");
  }();
  return has;
}

Bf16Support Bf16SupportForCpu(const Bf16Cpu& cpu) {
  if (!cpu.avx512_bf16) return Bf16Support::kNone;
  if (cpu.intel && !cpu.amx_bf16) return Bf16Support::kSlowerThanFp32;
  return Bf16Support::kAvailable;
}

Bf16Support ThisCpuBf16Support() {
  if (!CpuHasBf16Products()) return Bf16Support::kNone;
  __builtin_cpu_init();
  return Bf16SupportForCpu({.intel = __builtin_cpu_is("intel") != 0,
                            .avx512_bf16 = true,
                            .amx_bf16 = CpuHasAmxBf16()});
}

std::string DescribeCpuBf16Units() {
  std::string units;
  if (CpuHasBf16Products()) units = "AVX-512 BF16";
  if (CpuHasAmxBf16()) units += units.empty() ? "AMX-BF16" : ", AMX-BF16";
  if (UnitsHidden()) return "none (WEFT_BF16_UNITS=none)";
  return units.empty() ? "none" : units;
}

Status CheckBf16UnitsEnvironment() {
  const char* env = std::getenv(kUnitsEnv);
  if (env == nullptr || std::string_view(env) == "none" ||
      std::string_view(env) == "cpu") {
    return Status::OK();
  }
  return InvalidArgumentError(std::string(kUnitsEnv) + "=" + env +
                              " is neither none (hide this CPU's bf16 units: "
                              "precision bf16 is refused) nor cpu (the "
                              "CPU's own, as when unset; docs/kernels.md)");
}

uint16_t RoundToBf16(float x) {
  const auto bits = std::bit_cast<uint32_t>(x);
  const uint32_t exponent = bits & 0x7F800000U;
  if (exponent == 0) return static_cast<uint16_t>((bits >> 16) & 0x8000U);
  if (exponent == 0x7F800000U && (bits & 0x007FFFFFU) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040U);  // Quiet NaN.
  }
  // Ties to even: add 0x7FFF plus the bit that would be the last kept one.
  const uint32_t rounded = bits + 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<uint16_t>(rounded >> 16);
}

float Bf16ToFloat(uint16_t x) {
  return std::bit_cast<float>(static_cast<uint32_t>(x) << 16);
}

void RoundToBf16(const float* x, int64_t n, uint16_t* out) {
  if (CpuHasBf16Products()) {
    RoundVector(x, n, out);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = RoundToBf16(x[i]);
}

Bf16PackedWeights::Bf16PackedWeights(const float* b, int64_t ld,
                                     bool transposed, int64_t depth,
                                     int64_t cols)
    : depth_(depth), cols_(cols) {
  data_.assign(static_cast<size_t>(blocks() * pairs() * kBf16BlockCols * 2), 0);
  for (int64_t j = 0; j < cols; ++j) {
    uint16_t* column = data_.data() +
                       (j / kBf16BlockCols) * pairs() * kBf16BlockCols * 2 +
                       (j % kBf16BlockCols) * 2;
    for (int64_t p = 0; p < depth; ++p) {
      const float value = transposed ? b[j * ld + p] : b[p * ld + j];
      column[(p / 2) * kBf16BlockCols * 2 + p % 2] = RoundToBf16(value);
    }
  }
}

void Bf16Rows::Reset(int64_t rows, int64_t depth) {
  depth_ = depth;
  stride_ = 2 * Bf16Pairs(depth);
  const auto size = static_cast<size_t>(rows * stride_);
  if (data_.size() < size) data_.resize(size);
}

void Bf16Rows::Fill(const float* a, int64_t ld, bool transposed, int64_t begin,
                    int64_t end) {
  thread_local std::vector<float> gathered;
  for (int64_t r = begin; r < end; ++r) {
    uint16_t* out = data_.data() + r * stride_;
    const float* source = a + r * ld;
    if (transposed) {
      gathered.resize(static_cast<size_t>(depth_));
      for (int64_t p = 0; p < depth_; ++p) gathered[p] = a[p * ld + r];
      source = gathered.data();
    }
    RoundToBf16(source, depth_, out);
    if (depth_ % 2 == 1) out[depth_] = 0;
  }
}

void Bf16Product(const Bf16Rows& a, int64_t row_begin, int64_t row_end,
                 const Bf16PackedWeights& b, int64_t block_begin,
                 int64_t block_end, float* c, int64_t ldc) {
  const uint16_t* rows[kTileRows];
  for (int64_t j = block_begin; j < block_end; ++j) {
    const int64_t c0 = j * kBf16BlockCols;
    const int64_t cols = std::min(kBf16BlockCols, b.cols() - c0);
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kTileRows) {
      const int64_t count = std::min(kTileRows, row_end - r0);
      for (int64_t r = 0; r < count; ++r) rows[r] = a.row(r0 + r);
      kTiles[count](rows, b.block(j), b.pairs(),
                    c + (r0 - row_begin) * ldc + c0, ldc, cols);
    }
  }
}

}  // namespace weft::internal
