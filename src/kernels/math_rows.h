// Gelu and Softmax's exponentials over whole float32 rows: the functions of
// vector_math.h, applied to every element of a row, on the vector unit the
// CPU has.
//
// Why a row function: vector_math.h's functions are written for GCC's
// auto-vectoriser, which turns the clamps and halves of ErfcF's exponential
// into masked moves and integer shifts (about 60 instructions for 16 Gelus).
// Where the CPU has AVX-512, or AVX2 with FMA, the same operations are
// written here as intrinsics (one template over the vector type), four
// vectors side by side; on AVX-512 the two-halves scaling by 2^n is one
// vscalefps (both round p * 2^n once, so the bits agree). Gelu 0.87 ->
// 0.65 ns an element in long rows, Softmax's exponentials 0.31 -> 0.25 in
// rows of 128 (one Zen 4 core); on AVX2, Gelu 2.2 -> 1.4 and the
// exponentials 0.86 -> 0.66 (one Zen 3 core on a slow stretch of its host;
// docs/kernels.md).
//
// Contract: every path gives, element for element, the bits of the scalar
// functions below (GeluF, vmath::ExpF), which the tests check on every
// 251st float bit pattern; so which path runs changes no result.
#ifndef WEFT_SRC_KERNELS_MATH_ROWS_H_
#define WEFT_SRC_KERNELS_MATH_ROWS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/vector_math.h"
#include "weft/status.h"

namespace weft::internal {

// Gelu, the erf form, of one float32: 0.5 x erfc(-x / sqrt 2). Written
// without 1 + erf(..), which cancels catastrophically for negative x.
inline float GeluF(float x) {
  const float arg = -x * 0.70710678118654752440f;
  return 0.5f * x * vmath::ErfcF(arg);
}

// The row paths: a loop over the scalar functions (vectorised by the
// compiler as it can), or intrinsics for AVX2 with FMA or for AVX-512.
enum class MathRowsPath { kPortable, kAvx2, kAvx512 };

std::string_view MathRowsPathName(MathRowsPath path);
std::optional<MathRowsPath> ParseMathRowsPath(std::string_view name);
// Whether this build and this CPU run `path` (kAvx512: built with AVX-512F,
// kAvx2: with AVX2 and FMA, which kernels are where the CPU has them,
// CMakeLists.txt).
bool MathRowsPathRuns(MathRowsPath path);
// The path in use: the widest that runs (kAvx512, else kAvx2, else
// kPortable), unless WEFT_MATH_ROWS names another that runs. Read once.
MathRowsPath ActiveMathRowsPath();
// The path in use and why: "avx2 (per CPU: AVX2 and FMA, no AVX-512)",
// "portable (WEFT_MATH_ROWS)"; for weft info.
std::string DescribeActiveMathRowsPath();
// A WEFT_MATH_ROWS that names no path, or one this CPU cannot run, as an
// error for Session::Create.
Status CheckMathRowsEnvironment();

// y[i] = GeluF(x[i]) for i < n; y may be x.
void GeluRow(const float* x, float* y, int64_t n);
// The same over `rows` rows of `cols` elements, row r at x + r * ldx and
// y + r * ldy: one call for a tile, whose rows then overlap on the vector
// unit (blocks of 64 columns: 0.92 ns an element a row at a time, 0.80
// sixteen rows a call). y may be x.
void GeluRows(const float* x, int64_t ldx, float* y, int64_t ldy, int64_t rows,
              int64_t cols);
void GeluRowsOn(MathRowsPath path, const float* x, int64_t ldx, float* y,
                int64_t ldy, int64_t rows, int64_t cols);

// y[i] = vmath::ExpF(x[i] - shift) for i < n (Softmax's exponentials); y
// may be x.
void ExpShiftedRow(const float* x, float shift, float* y, int64_t n);
void ExpShiftedRowOn(MathRowsPath path, const float* x, float shift, float* y,
                     int64_t n);

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_MATH_ROWS_H_
