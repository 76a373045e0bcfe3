// The fast sums of a quantized matrix product (MatMulInteger,
// QLinearMatMul, the QDQ MatMul groups qdq-fusion turns into QLinearMatMul,
// the MatMulInteger after DynamicQuantizeLinear that ONNX Runtime's
// quantize_dynamic writes): A (uint8 or int8, any rows) times a constant
// int8 B [K, N] packed once, on the int8 micro-kernel (kernels/int8_gemm.h).
//
// The kernel's "columns" are A's rows and its weight rows B's columns:
//   acc[i][n] = sum_k (a[i][k] - a_zero)(b[k][n] - b_zero[n])
//             = sum a b - a_zero sum_k b[., n] - b_zero[n] sum_k a[i, .]
//               + K a_zero b_zero[n]
// exact in int32, so equal bit for bit to the reference loop whatever the
// kernel, the tiling or the thread count.
#ifndef WEFT_SRC_OPS_QUANTIZED_MATMUL_PACKED_H_
#define WEFT_SRC_OPS_QUANTIZED_MATMUL_PACKED_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "kernels/int8_direct_conv.h"
#include "kernels/int8_gemm.h"
#include "ops/dnnl_matmul.h"
#include "ops/fused_activation.h"
#include "weft/kernel.h"

namespace weft::internal {

// B [K, N] (row-major int8) packed with its columns as the kernel's rows.
struct Int8ProductWeights {
  PackedInt8Weights packed;
  int64_t k = 0, n = 0;

  static Int8ProductWeights Prepare(const int8_t* b, int64_t k, int64_t n);
};

// emit(first row, rows, first column, columns, sums): the sums of a tile,
// column c's for rows [first row, first row + rows) at sums[c * kInt8Cols],
// each (row, column) in one tile, from any intra-op thread.
using ProductSumsFn =
    std::function<void(int64_t, int64_t, int64_t, int64_t, const int32_t*)>;

// The sums of A (rows x K, row-major; uint8, or int8 when a_signed) with a
// per-tensor zero point, times B with zero points b_zero (one entry, or N
// when b_zero_per_n; nullptr: 0).
void MultiplyInt8(KernelContext& ctx, const void* a, bool a_signed,
                  int64_t rows, int32_t a_zero, const Int8ProductWeights& b,
                  const int8_t* b_zero, bool b_zero_per_n,
                  const ProductSumsFn& emit);

// B [K, N] as the direct tiles take it (kernels/int8_direct_conv.h): N
// output channels over K input channels, one tap, where K is whole quads
// (A's rows are then read in place, four bytes a broadcast). For uint8 A
// and B of zero point 0, on the VNNI kernel: what quantize_dynamic's
// transformers and QDQ MatMuls hand MatMulInteger and QLinearMatMul.
//
// Where `with_dnnl` (DnnlInt8ProductsAvailable(): the CPU has AMX-INT8),
// B is also reordered for oneDNN's int8 matmul primitive, and A's whole
// tiles of kDnnlTileRows rows run there, the rest of its rows on the
// direct tiles: integer sums are exact, so every row keeps its bits.
struct DirectProductWeights {
  DirectConvWeights w;
  int64_t k = 0, n = 0;
  std::shared_ptr<const DnnlWeightProduct> dnnl;  // null: direct tiles only

  // nullopt where K is not whole quads.
  static std::optional<DirectProductWeights> Prepare(
      const int8_t* b, int64_t k, int64_t n,
      bool with_dnnl = DnnlInt8ProductsAvailable());

  int64_t bytes() const;
};

// y[i][j] = sum_k (a[i][k] - a_zero) b[k][j] for A's `rows` rows (uint8,
// row-major, K each), as int32 (y_int32) or requantized into `out`
// (out.multiplier per column, out.zero; out.offset, when given, an int32
// bias per column added to the sums, the zero point's offsets added to it
// here).
void MultiplyUint8Direct(KernelContext& ctx, const uint8_t* a, int64_t rows,
                         int32_t a_zero, const DirectProductWeights& b,
                         int32_t* y_int32);
void MultiplyUint8DirectRequantized(KernelContext& ctx, const uint8_t* a,
                                    int64_t rows, int32_t a_zero,
                                    const DirectProductWeights& b,
                                    RequantizedOutput out);
// The same sums as float, times scale[j] plus bias[j] (no bias: null):
// MatMulInteger, Cast, Mul and Add in one pass (out.multiplier is the
// scale, out.bias the bias; out.offset, m and ldy are filled here), then,
// on each tile while it is in cache, the element of `residual` (rows x N
// floats, or null) added, then `activation`.
void MultiplyUint8DirectScaled(KernelContext& ctx, const uint8_t* a,
                               int64_t rows, int32_t a_zero,
                               const DirectProductWeights& b,
                               RequantizedOutput out,
                               const ActivationSpec& activation,
                               const float* residual);

// `activation` on y's rows x n floats, over the intra-op pool. Here, not in
// quantize_ops.cc, which is built without fused multiply-adds: an
// activation must round as the node it replaces (elementwise.cc) rounds.
void ActivateRows(KernelContext& ctx, const ActivationSpec& activation,
                  float* y, int64_t rows, int64_t n);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_QUANTIZED_MATMUL_PACKED_H_
