// Products with a constant float32 weight through oneDNN's matmul
// primitive (docs/kernels.md, "Products with a constant weight through
// oneDNN"): MatMul, Gemm and FusedGemm whose B is a Const, where oneDNN runs
// its AVX-512 kernels.
//
// The output is cut into tiles whose shapes come from the sizes alone (row
// tiles of kDnnlTileRows, column blocks of kDnnlBlockCols), each computed by
// one single-threaded primitive, so every element's sum runs in an order
// that depends on the shapes only: the same bits at every thread setting.
#ifndef WEFT_SRC_OPS_DNNL_MATMUL_H_
#define WEFT_SRC_OPS_DNNL_MATMUL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/bf16_gemm.h"
#include "kernels/gemm_tile.h"
#include "ops/dnnl_support.h"
#include "weft/function_ref.h"
#include "weft/kernel.h"

namespace weft::internal {

inline constexpr int64_t kDnnlTileRows = 64;
inline constexpr int64_t kDnnlBlockCols = 256;

// Whether products with a constant weight run through oneDNN on this CPU:
// where oneDNN runs its AVX-512 kernels. Never decided by timing.
// WEFT_DNNL_MATMUL=0 turns it off, =1 on (for side-by-side measurements).
bool DnnlMatMulAvailable();

// The products without a weight packed when the kernel was built: those of
// two computed operands (attention's scores and context, a MatMul of two
// activations) and those of a constant B by too few rows of A to pack it.
// They run the tile kernel, except by this rule: oneDNN's sgemm tiles on
// AMD CPUs of family 1Ah (Zen 5) with AVX-512, where the tile kernel is
// BLIS (packed products and convolutions keep BLIS's micro-kernel). There
// oneDNN's tile ran 1.1-1.5x BLIS's skx one (docs/kernels.md, measured on
// an AMD EPYC Zen 5); on Zen 4 (19h), whose AVX-512 is half width, BLIS's
// zen3 tile measured faster than its skx one and oneDNN's is unmeasured.
bool DnnlDynamicProductsForCpu(const CpuIdentity& cpu);

// This process's tile kernel for those products: oneDNN's where
// WEFT_DNNL_DYNAMIC_MATMUL=1, ActiveGemmKernel() where it is 0 or where
// WEFT_GEMM_KERNEL chose the tile kernel, else by DnnlDynamicProductsForCpu
// where oneDNN runs its AVX-512 kernels. MatMul and the fused attention
// both take it, so that their products keep the same bits. Read once.
GemmKernel DynamicProductKernel();

// How DynamicProductKernel() was chosen, for `weft info`.
std::string DescribeDynamicProductKernel();

// Whether SessionOptions::precision = "bf16" runs its products with a
// constant weight through oneDNN (DnnlWeightProduct's bf16 plans): where
// the CPU has AMX-BF16, whose tile products oneDNN runs and weft's own
// bf16 kernel (vdpbf16ps, kernels/bf16_gemm.h) does not. Never decided by
// timing. WEFT_DNNL_BF16_MATMUL=0 turns it off, =1 on (oneDNN then runs
// AVX-512 BF16 where the CPU has no AMX). Read once.
bool DnnlBf16ProductsAvailable();

// Which kernel precision bf16's products with a constant weight run, and
// why, for `weft info`: "dnnl (per CPU: AMX-BF16)", "weft AVX-512 BF16
// (per CPU: no AMX-BF16)", either naming WEFT_DNNL_BF16_MATMUL where it
// chose, or "none (precision bf16 refused)".
std::string DescribeBf16ProductKernel();

// Whether the int8 products with a constant weight whose sums
// MultiplyUint8Direct* compute (ops/quantized_matmul_packed.h) run their
// whole tiles of kDnnlTileRows rows through oneDNN (DnnlWeightProduct's
// int8 plans): where the CPU has AMX-INT8, whose tile products oneDNN runs
// and weft's own VNNI kernels do not. Integer sums are exact, so the
// outputs keep their bits either way. Never decided by timing.
// WEFT_DNNL_INT8=0 turns it off, =1 on where the CPU has AVX-512
// VNNI (oneDNN's int8 kernels without VNNI sum pairs in saturating int16,
// which would change the sums). Read once.
bool DnnlInt8ProductsAvailable();

// Which kernel those int8 products run, and why, for `weft info`:
// "dnnl (per CPU: AMX-INT8)", "weft (per CPU: no AMX-INT8)", either naming
// WEFT_DNNL_INT8 where it chose, or saying why its 1 was not taken.
std::string DescribeInt8ProductKernel();

// What a plan multiplies in: float32, or bf16 operands (A's rows rounded
// by the caller, B's when the plan is made) with float32 sums and output,
// or uint8 A times int8 B with exact int32 sums.
enum class DnnlProductPrecision { kFloat32, kBf16, kInt8 };

// C (rows x n) = A (rows x k, row-major) * op(B) for one constant B, its
// weights reordered into oneDNN's layout once, per column block.
class DnnlWeightProduct {
 public:
  // op(B) is k x n; B's floats as the tensor holds them (n x k when
  // `transposed`). Null where oneDNN offers only its reference loops for a
  // tile, or refuses the shapes. A kBf16 plan reads A as Bf16Rows fills it
  // (rows of Bf16Pairs(k) * 2 values) and rounds B to bf16 as
  // RoundToBf16 does (to nearest, ties to even).
  static std::unique_ptr<const DnnlWeightProduct> Make(
      const float* b, bool transposed, int64_t rows, int64_t k, int64_t n,
      DnnlProductPrecision precision = DnnlProductPrecision::kFloat32);
  // A kInt8 plan: B [k, n] row-major int8, for A's uint8 rows (k bytes
  // each, row-major) in any whole number of tiles of kDnnlTileRows rows.
  // Null where oneDNN has no int8 kernel with VNNI or AMX for the shapes.
  static std::unique_ptr<const DnnlWeightProduct> MakeInt8(const int8_t* b,
                                                           int64_t k,
                                                           int64_t n);
  ~DnnlWeightProduct();

  int64_t rows() const;
  // Bytes of the reordered weights.
  int64_t bytes() const { return bytes_; }

  // Computes C over ctx's intra-op pool, tile by tile; after each tile,
  // finish(r0, rows, c0, cols) on the thread that computed it (Gemm's
  // epilogue, while the tile is in cache). False if oneDNN failed a call
  // (C is then incomplete: the caller computes it another way).
  // REQUIRES: the plan was made kFloat32.
  bool Run(KernelContext& ctx, const float* a, float* c,
           FunctionRef<void(int64_t, int64_t, int64_t, int64_t)> finish) const;
  // The same for a kBf16 plan: A's rows in bf16, `a.row(0)` on, as
  // Bf16Rows::Fill wrote them for all rows().
  bool Run(KernelContext& ctx, const Bf16Rows& a, float* c,
           FunctionRef<void(int64_t, int64_t, int64_t, int64_t)> finish) const;
  // The exact int32 sums of a kInt8 plan for A's `rows` rows (a multiple
  // of kDnnlTileRows), tile by tile: emit(r0, rows, c0, cols, sums, ld)
  // on the thread that computed the tile, sums[i * ld + j] being row r0 +
  // i's sum at column c0 + j, in a buffer of that thread's, valid until
  // emit returns.
  using Int8TileFn = FunctionRef<void(int64_t, int64_t, int64_t, int64_t,
                                      const int32_t*, int64_t)>;
  bool RunInt8(KernelContext& ctx, const uint8_t* a, int64_t rows,
               Int8TileFn emit) const;

 private:
  // A's rows at `a`, each `a_row_bytes` apart; `rows` of them (the plan's
  // but for a kInt8 plan). Tile (r0, c0)'s outputs go to tile_dst(r0, c0).
  bool RunTiles(
      KernelContext& ctx, const char* a, int64_t a_row_bytes, int64_t rows,
      FunctionRef<void*(int64_t, int64_t)> tile_dst,
      FunctionRef<void(int64_t, int64_t, int64_t, int64_t)> finish) const;

  // Make and MakeInt8: B's values as the precision's plain type (float32,
  // or int8 for kInt8) and `rows` the plan's.
  static std::unique_ptr<const DnnlWeightProduct> Build(
      const void* b, bool transposed, int64_t rows, int64_t k, int64_t n,
      DnnlProductPrecision precision);

  struct Plan;
  explicit DnnlWeightProduct(std::unique_ptr<Plan> plan);

  std::unique_ptr<Plan> plan_;
  int64_t bytes_ = 0;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_DNNL_MATMUL_H_
