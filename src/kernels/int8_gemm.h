// Integer matrix products for quantized convolutions and matrix products:
// unsigned 8-bit columns times signed 8-bit weights, summed exactly in
// int32 (the u8s8 form that x86's VNNI instructions compute; ONNX Runtime's
// and oneDNN's int8 kernels use the same split).
//
// Layout. The weights (rows = output channels, depth = input channels x
// taps) are packed once into panels of kInt8Rows rows; the columns (depth x
// pixels) are gathered per product into panels of kInt8Cols pixels. Both go
// along the depth in quads, the four bytes one VNNI lane multiplies and sums
// into one int32:
//   weight panel:  [quad][row of the panel][4 bytes]       kInt8Rows * 4 per
//   quad column panel:  [quad][pixel of the panel][4 bytes]     kInt8Cols * 4
//   per quad
// The depth is zero-padded to whole quads in both, and a weight panel to
// whole rows, so a product never reads past what was packed.
//
// Kernels, chosen once per process from the CPU's features (never from a
// timing), WEFT_INT8_KERNEL forcing any one the CPU runs:
//   kAvx512Vnni  vpdpbusd on 512-bit vectors (AVX-512 VNNI)
//   kAvxVnni     vpdpbusd on 256-bit vectors (AVX-VNNI without AVX-512
//                VNNI: Intel's Alder Lake to Arrow Lake cores, Sierra
//                Forest's Xeons); the panel products only: every other
//                path is kAvx2's
//   kAvx2        vpmaddwd on bytes widened to int16 (AVX2 without VNNI:
//                AMD Zen 2 and 3, Intel before Ice Lake); the panel
//                products only, the rest as kGeneric
//   kGeneric     portable C++ over the same layout, for every other CPU
// Integer sums are exact, so all give the same bits: the choice is speed
// alone, and results never depend on the thread count or on the tiling.
#ifndef WEFT_SRC_KERNELS_INT8_GEMM_H_
#define WEFT_SRC_KERNELS_INT8_GEMM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/status.h"

namespace weft::internal {

enum class Int8Kernel { kGeneric, kAvx2, kAvxVnni, kAvx512Vnni };

// Every kernel, for the tests that run each one this CPU can.
inline constexpr Int8Kernel kAllInt8Kernels[] = {
    Int8Kernel::kGeneric, Int8Kernel::kAvx2, Int8Kernel::kAvxVnni,
    Int8Kernel::kAvx512Vnni};

std::string_view Int8KernelName(Int8Kernel kernel);
std::optional<Int8Kernel> ParseInt8Kernel(std::string_view name);

// The instructions a CPU has for the int8 products.
struct Int8Units {
  bool avx2 = false;
  bool avx_vnni = false;     // 256-bit vpdpbusd, VEX-encoded
  bool avx512_vnni = false;  // with AVX-512 F, BW, VL and DQ
};

// The kernel for a CPU with `units`: the widest VNNI it has, else AVX2,
// else the generic one. A function of the features alone, never of a
// timing.
Int8Kernel Int8KernelForUnits(const Int8Units& units);

// Whether the CPU has AMX-INT8 (CPUID.(7,0):EDX[25]): tile products of
// bytes, which oneDNN's int8 primitives run (ops/dnnl_matmul.h) and weft's
// own kernels do not.
bool CpuHasAmxInt8();

// Whether this CPU can run `kernel` (kGeneric: always).
bool CpuRunsInt8Kernel(Int8Kernel kernel);

// The kernel of this process: WEFT_INT8_KERNEL ("generic", "avx2",
// "avxvnni" or "vnni") when set and the CPU runs it, else AVX-512 VNNI
// where the CPU has it, else AVX-VNNI, else AVX2, else the generic one.
// Read once.
Int8Kernel ActiveInt8Kernel();

// InvalidArgument naming WEFT_INT8_KERNEL when it names no kernel, or one
// this CPU cannot run: Session::Create fails on it, as on the other
// WEFT_* variables.
Status CheckInt8KernelEnvironment();

// How the active kernel was chosen, for `weft info`.
std::string DescribeActiveInt8Kernel();

// Output channels per weight panel and pixels per column panel.
constexpr int64_t kInt8Rows = 8;
constexpr int64_t kInt8Cols = 32;

inline int64_t Int8Quads(int64_t depth) { return (depth + 3) / 4; }

// Signed 8-bit weights, rows x depth, packed into panels, with each row's
// sum (what a column's zero point multiplies).
class PackedInt8Weights {
 public:
  PackedInt8Weights() = default;
  // w[r * depth + d] is row r's weight at depth d.
  PackedInt8Weights(const int8_t* w, int64_t rows, int64_t depth);

  int64_t rows() const { return rows_; }
  int64_t depth() const { return depth_; }
  int64_t quads() const { return Int8Quads(depth_); }
  int64_t panels() const { return (rows_ + kInt8Rows - 1) / kInt8Rows; }
  // Panel p holds rows [p * kInt8Rows, ...).
  const int8_t* panel(int64_t p) const {
    return data_.data() + p * quads() * kInt8Rows * 4;
  }
  const std::vector<int32_t>& row_sums() const { return row_sums_; }
  int64_t bytes() const {
    return static_cast<int64_t>(data_.size() + row_sums_.size() * 4);
  }

 private:
  int64_t rows_ = 0, depth_ = 0;
  std::vector<int8_t> data_;
  std::vector<int32_t> row_sums_;
};

// Bytes of one column panel over `depth`.
inline int64_t Int8ColumnPanelBytes(int64_t depth) {
  return Int8Quads(depth) * kInt8Cols * 4;
}

// Packs one column panel from `depth` rows of pixels: row d's pixels are
// rows[d * ld + p] for p < cols (at most kInt8Cols; the panel's other
// pixels and the depth past `depth` are zero). Each byte is XORed with
// `flip` (0x80 turns int8 values into uint8 ones plus 128). Reads no byte
// of a row past `cols`.
void PackInt8ColumnPanel(const uint8_t* rows, int64_t ld, int64_t depth,
                         int64_t cols, uint8_t flip, uint8_t* panel);
// The same with row d's pixels at rows[d][offset + p]: rows anywhere.
void PackInt8ColumnPanel(const uint8_t* const* rows, int64_t offset,
                         int64_t depth, int64_t cols, uint8_t flip,
                         uint8_t* panel);

// Packs one column panel from `cols` (at most kInt8Cols) rows of a
// row-major matrix, each row `depth` bytes at a + c * lda: the product's
// columns are then the matrix's rows (a matrix product's A, whose rows are
// the tokens). XORs each byte with `flip`; the rest of the panel is zero.
void PackInt8RowPanel(const uint8_t* a, int64_t lda, int64_t depth,
                      int64_t cols, uint8_t flip, uint8_t* panel);

// dst[p] = saturate(round_half_even(float(acc[p] + bias) * multiplier) +
// zero) for p < n, as QLinearConv and QLinearMatMul requantize (the caller
// handles a non-finite multiplier; acc[p] + bias wraps at 32 bits); on 16 lanes
// with masked tails where the build has AVX-512, bit for bit the scalar loop's
// results either way.
void RequantizeToUint8(const int32_t* acc, int64_t n, int32_t bias,
                       float multiplier, float zero, uint8_t* dst);
void RequantizeToInt8(const int32_t* acc, int64_t n, int32_t bias,
                      float multiplier, float zero, int8_t* dst);

// acc[r * ld + p] = sum over the depth of weight row r times column p, for
// the panel's rows r < rows (at most kInt8Rows) and pixels p < cols (at
// most kInt8Cols). The panels are `quads` deep.
void Int8PanelProduct(Int8Kernel kernel, const int8_t* weight_panel,
                      const uint8_t* column_panel, int64_t quads, int64_t rows,
                      int64_t cols, int32_t* acc, int64_t ld);

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_INT8_GEMM_H_
