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
#ifndef WEFT_SRC_KERNELS_PACKED_GEMM_H_
#define WEFT_SRC_KERNELS_PACKED_GEMM_H_

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "kernels/gemm_tile.h"

namespace weft::internal {

// The BLIS micro-kernel's panel shape for float32 on this CPU.
struct MicroKernelShape {
  int64_t mr;  // rows of an op(A) panel
  int64_t nr;  // columns of an op(B) panel
  int64_t kc;  // depth block
  int64_t mc;  // rows of op(A) packed per depth block when packing in a call
};
const MicroKernelShape& FloatMicroKernel();

// 64-byte-aligned float storage for packed panels, with a pad after the
// last panel (see kPanelTailFloats in packed_gemm.cc); grows, never shrinks.
// Uninitialised: packing writes every float the micro-kernel uses.
class PanelBuffer {
 public:
  float* Get(int64_t floats);
  float* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t floats_ = 0;
};

// Packed panels of one operand, stored elsewhere: `outer` rows of op(A) (or
// columns of op(B)) padded to whole panels of `width`, over `depth`, in the
// layout above.
struct PanelView {
  const float* data = nullptr;
  int64_t padded_outer = 0, depth = 0, width = 1;

  // The first panel holding outer index `o0` (a multiple of width) in the
  // depth block starting at p0.
  const float* Panels(int64_t p0, int64_t o0) const;
  // Floats that panels of `outer` x `depth` take at this width.
  static int64_t Floats(int64_t outer, int64_t depth, int64_t width) {
    return (outer + width - 1) / width * width * depth;
  }
};

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
  int64_t depth() const { return view_.depth; }
  // Panel width: mr for kLeft, nr for kRight. A product may start at any
  // multiple of it along the outer dimension.
  int64_t width() const { return view_.width; }
  // Memory held, for `weft info`.
  int64_t bytes() const {
    return view_.depth * view_.padded_outer *
           static_cast<int64_t>(sizeof(float));
  }
  const PanelView& view() const { return view_; }

 private:
  Side side_ = Side::kLeft;
  int64_t outer_ = 0;
  PanelView view_;
  PanelBuffer storage_;
};

// One panel of `width` outer indices by `kc` depth steps from `live`
// (<= width) runs whose steps are contiguous, run i at src + i * stride:
// dst[p * width + i] = src[i * stride + p], and 0 for i >= live. The
// transposing case of the packing below (a row-major A, a transposed B),
// eight runs by eight steps at a time where the CPU has AVX2.
void PackPanelFromRuns(const float* src, int64_t stride, int64_t live,
                       int64_t kc, int64_t width, float* dst);

// Packs outer indices [begin, end) of op(x) (rows of op(A) for kLeft,
// columns of op(B) for kRight; op(x) is rows x cols as for Pack) into `dst`,
// laid out as Pack lays out the whole operand: PanelView{dst,
// RoundUp(outer, width), depth, width} then reads them. `begin` is a
// multiple of the panel width; the last panel is zero-padded. Threads may
// pack disjoint ranges of one buffer at once.
void PackOuterRange(PackedOperand::Side side, const GemmOperand<float>& x,
                    int64_t rows, int64_t cols, int64_t begin, int64_t end,
                    float* dst);

// An operand of PackedGemmTile: packed panels from outer index `offset` on
// (a multiple of their width), or a plain operand packed during the call.
struct GemmInput {
  PanelView packed;  // packed.data is null for a plain operand
  int64_t offset = 0;
  GemmOperand<float> plain{nullptr, 0};

  static GemmInput Plain(GemmOperand<float> x) { return {{}, 0, x}; }
  static GemmInput Packed(const PackedOperand& x, int64_t offset) {
    return Panels(x.view(), offset);
  }
  static GemmInput Panels(const PanelView& x, int64_t offset) {
    return {x, offset, {nullptr, 0}};
  }
  bool is_packed() const { return packed.data != nullptr; }
};

// Where PackedGemmTile writes C: element (i, j) at data[i * row_stride +
// j * col_stride]. Row-major C has col_stride 1; a column-stored one (a
// product computed transposed) has row_stride 1.
struct OutputMatrix {
  float* data;
  int64_t row_stride;
  int64_t col_stride = 1;
};

// C = op(A) * op(B) + (accumulate ? C : 0), as GemmTile; C is m x n.
// Single-threaded.
void PackedGemmTile(int64_t m, int64_t n, int64_t k, const GemmInput& a,
                    const GemmInput& b, OutputMatrix c, bool accumulate);

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_PACKED_GEMM_H_
