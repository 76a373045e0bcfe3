// A float32 matrix product driven by weft around the BLIS micro-kernel, so
// that a constant operand (a Conv, MatMul or Gemm weight) is packed into the
// micro-kernel's layout once, when the kernel is built, instead of on every
// call as bli_sgemm does (issue 15, item 2; ONNX Runtime pre-packs the same
// way). It is used where the tile kernel is BLIS (GemmKernel::kBlis).
//
// Layout. The micro-kernel multiplies an mr-row panel of op(A) by an nr-column
// panel of op(B), both stored depth-major, over a depth block of at most kc.
// A packed operand holds, for each depth block [p0, p0 + kc), its panels one
// after the other (zero-padded to whole panels):
//   element (o, p) is at  p0 * padded_outer + (o / width) * width * kc
//                         + (p - p0) * width + o % width
// where "outer" is the row of op(A) or the column of op(B) and width is mr
// or nr.
//
// Determinism: every element of C is summed over the depth blocks in order,
// each block by the micro-kernel, whether an operand was packed ahead or is
// packed in the call: the bits depend on the shapes alone (checked by
// PackedGemmTest).
#ifndef WEFT_SRC_OPS_PACKED_GEMM_H_
#define WEFT_SRC_OPS_PACKED_GEMM_H_

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "ops/gemm_tile.h"

namespace weft::internal {

// The BLIS micro-kernel's panel shape for float32 on this CPU.
struct MicroKernelShape {
  int64_t mr;  // rows of an op(A) panel
  int64_t nr;  // columns of an op(B) panel
  int64_t kc;  // depth block
  int64_t mc;  // rows of op(A) packed per depth block when packing in a call
};
const MicroKernelShape& FloatMicroKernel();

// One operand of the product, packed ahead of time.
class PackedOperand {
 public:
  enum class Side { kLeft, kRight };  // op(A), or op(B)

  // Packs op(x), which is rows x cols: m x k for kLeft, k x n for kRight,
  // as GemmTile takes its operands.
  static PackedOperand Pack(Side side, const GemmOperand<float>& x,
                            int64_t rows, int64_t cols);

  Side side() const { return side_; }
  int64_t outer() const { return outer_; }
  int64_t depth() const { return depth_; }
  // Panel width: mr for kLeft, nr for kRight. A product may start at any
  // multiple of it along the outer dimension.
  int64_t width() const { return width_; }
  // Memory held, for `weft info`.
  int64_t bytes() const {
    return depth_ * padded_outer_ * static_cast<int64_t>(sizeof(float));
  }
  // The first panel holding outer index `o0` (a multiple of width()) in the
  // depth block starting at p0.
  const float* Panels(int64_t p0, int64_t o0) const;

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  Side side_ = Side::kLeft;
  int64_t outer_ = 0, depth_ = 0, width_ = 1, padded_outer_ = 0;
  std::unique_ptr<float, Free> data_;
};

// An operand of PackedGemmTile: a packed operand from outer index `offset`
// on (a multiple of its width), or a plain one packed during the call.
struct GemmInput {
  const PackedOperand* packed = nullptr;
  int64_t offset = 0;
  GemmOperand<float> plain{nullptr, 0};

  static GemmInput Plain(GemmOperand<float> x) { return {nullptr, 0, x}; }
  static GemmInput Packed(const PackedOperand& x, int64_t offset) {
    return {&x, offset, {nullptr, 0}};
  }
};

// C = op(A) * op(B) + (accumulate ? C : 0), as GemmTile; C is m x n
// row-major with leading dimension ldc. Single-threaded.
void PackedGemmTile(int64_t m, int64_t n, int64_t k, const GemmInput& a,
                    const GemmInput& b, float* c, int64_t ldc, bool accumulate);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_PACKED_GEMM_H_
