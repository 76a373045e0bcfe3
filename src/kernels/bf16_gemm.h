// Matrix products in bfloat16 with float32 sums, for SessionOptions::
// precision = "bf16" (docs/kernels.md, "bf16 mode"): float32 operands are
// rounded to bf16 (8 bits of mantissa), pairs of them are multiplied and
// summed into float32 by AVX-512 BF16's vdpbf16ps.
//
// Layout. A constant op(B) (depth x columns) is packed once into blocks of
// kBf16BlockCols columns; within a block, along the depth in pairs (the two
// values one vdpbf16ps lane multiplies), four vectors of 16 columns:
//   block:  [pair][vector][column of the vector][2 bf16]
// The depth is zero-padded to whole pairs and the last block to whole
// columns, so a product never reads past what was packed. Rows of A are
// converted per product into bf16 rows of whole pairs (Bf16Rows).
//
// Results. Every output element is one chain over the depth, pair by pair,
// in the same instruction order whatever the tile, the row count or the
// thread that computes it: bitwise the same for every thread setting and
// batch size. The conversion and vdpbf16ps both round to nearest even and
// treat denormal inputs as zero, whatever MXCSR says, so the bits do not
// depend on the caller's floating-point mode either.
#ifndef WEFT_SRC_KERNELS_BF16_GEMM_H_
#define WEFT_SRC_KERNELS_BF16_GEMM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "weft/status.h"

namespace weft::internal {

// Whether this CPU multiplies bf16 pairs into float32 sums: AVX-512 BF16
// (Intel Cooper Lake and Sapphire Rapids on, AMD Zen 4 on; every CPU with
// AMX-BF16 also has it), unless WEFT_BF16_UNITS=none hides the CPU's bf16
// units (so that a test can take the refusal on a CPU that has them).
// Read once.
bool CpuHasBf16Products();

// Whether this CPU has AMX-BF16's tile products (Intel Sapphire Rapids on),
// unless WEFT_BF16_UNITS=none hides them; by CPUID alone (oneDNN, which
// runs them, asks the kernel for the tile state itself).
bool CpuHasAmxBf16();

// What precision = "bf16" gets from a CPU, by its features alone.
enum class Bf16Support {
  kNone,       // No AVX-512 BF16: the mode is refused.
  kAvailable,  // bf16 products; faster than fp32 where measured (Zen 4).
  // AVX-512 BF16 on an Intel CPU without AMX-BF16: vdpbf16ps issues at a
  // quarter of the rate of fp32's FMAs there, half their multiplies (43
  // against 87 G multiply-adds a second a core, bench/units_bench.cc, on an
  // Emerald Rapids guest whose hypervisor hides AMX), so the mode runs as
  // asked but slower than fp32, and the session says so.
  kSlowerThanFp32,
};

struct Bf16Cpu {
  bool intel = false;
  bool avx512_bf16 = false;
  bool amx_bf16 = false;
};

// Why kSlowerThanFp32, for `weft info` and the session's warning.
inline constexpr const char* kBf16SlowerThanFp32Reason =
    "without AMX-BF16, an Intel CPU's AVX-512 BF16 multiplies at half the "
    "rate of its fp32 FMAs";

// The rule, for any CPU (tested on both kinds whatever this one is).
Bf16Support Bf16SupportForCpu(const Bf16Cpu& cpu);

// The rule on this CPU; kNone while WEFT_BF16_UNITS=none hides its units.
Bf16Support ThisCpuBf16Support();

// The CPU's bf16 units, for `weft info` and the refusal message:
// "AVX-512 BF16", "AVX-512 BF16, AMX-BF16", "none", or "none
// (WEFT_BF16_UNITS=none)" when hidden.
std::string DescribeCpuBf16Units();

// InvalidArgument naming WEFT_BF16_UNITS when it is set to neither "none"
// nor "cpu": Session::Create fails on it, as on the other WEFT_* variables.
Status CheckBf16UnitsEnvironment();

// x rounded to bf16 as vcvtneps2bf16 rounds it: to nearest, ties to even;
// a denormal becomes a zero of its sign; a NaN stays a (quiet) NaN. The
// upper 16 bits of the float32 result.
uint16_t RoundToBf16(float x);
float Bf16ToFloat(uint16_t x);

// out[i] = RoundToBf16(x[i]) for i < n; the vector instruction where the
// CPU has it, the same bits either way.
void RoundToBf16(const float* x, int64_t n, uint16_t* out);

// Columns per packed block: four vectors of 16.
constexpr int64_t kBf16BlockCols = 64;

inline int64_t Bf16Pairs(int64_t depth) { return (depth + 1) / 2; }

// op(B), depth x cols, rounded to bf16 and packed (see the layout above).
class Bf16PackedWeights {
 public:
  Bf16PackedWeights() = default;
  // op(B)[p][j] = transposed ? b[j * ld + p] : b[p * ld + j].
  Bf16PackedWeights(const float* b, int64_t ld, bool transposed, int64_t depth,
                    int64_t cols);

  int64_t depth() const { return depth_; }
  int64_t cols() const { return cols_; }
  int64_t pairs() const { return Bf16Pairs(depth_); }
  int64_t blocks() const {
    return (cols_ + kBf16BlockCols - 1) / kBf16BlockCols;
  }
  const uint16_t* block(int64_t j) const {
    return data_.data() + j * pairs() * kBf16BlockCols * 2;
  }
  int64_t bytes() const {
    return static_cast<int64_t>(data_.size() * sizeof(uint16_t));
  }

 private:
  int64_t depth_ = 0, cols_ = 0;
  std::vector<uint16_t> data_;
};

// Rows of op(A) in bf16, each of whole pairs (a zero after an odd depth):
// row r starts at data() + r * stride().
class Bf16Rows {
 public:
  // Sizes the buffer for `rows` rows of `depth` (kept between calls: no
  // allocation once it is large enough).
  void Reset(int64_t rows, int64_t depth);
  // Rounds rows [begin, end) of op(A) into the buffer: op(A)[r][p] =
  // transposed ? a[p * ld + r] : a[r * ld + p].
  void Fill(const float* a, int64_t ld, bool transposed, int64_t begin,
            int64_t end);
  const uint16_t* row(int64_t r) const { return data_.data() + r * stride_; }
  int64_t stride() const { return stride_; }

 private:
  int64_t depth_ = 0, stride_ = 0;
  std::vector<uint16_t> data_;
};

// c[r * ldc + j] = sum over p of a.row(r)[p] * op(B)[p][j], in float32, for
// rows [row_begin, row_end) of `a` (written to c's rows from 0) and the
// columns of blocks [block_begin, block_end). REQUIRES:
// CpuHasBf16Products().
void Bf16Product(const Bf16Rows& a, int64_t row_begin, int64_t row_end,
                 const Bf16PackedWeights& b, int64_t block_begin,
                 int64_t block_end, float* c, int64_t ldc);

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_BF16_GEMM_H_
