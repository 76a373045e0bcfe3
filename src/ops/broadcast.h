// NumPy broadcasting of two tensors, for element-wise binary kernels.
#ifndef WEFT_SRC_OPS_BROADCAST_H_
#define WEFT_SRC_OPS_BROADCAST_H_

#include <cstdint>
#include <vector>

#include "weft/kernel.h"
#include "weft/tensor.h"

namespace weft::internal {

// Index arithmetic for out[i] = f(a[ia(i)], b[ib(i)]): the output is walked
// as rows of its last dimension; for each row the offsets of a and b and
// their strides along the row (0 when broadcast) are known.
class BroadcastIndexer {
 public:
  // REQUIRES: out_shape is the broadcast of a_shape and b_shape.
  BroadcastIndexer(const Shape& a_shape, const Shape& b_shape,
                   const Shape& out_shape);

  int64_t rows() const { return rows_; }
  int64_t row_length() const { return row_length_; }
  // Offsets of row r's first element in a and b.
  void RowOffsets(int64_t row, int64_t* a_offset, int64_t* b_offset) const;
  int64_t a_inner_stride() const { return a_inner_stride_; }
  int64_t b_inner_stride() const { return b_inner_stride_; }

 private:
  std::vector<int64_t> outer_dims_;  // Output dims but the last.
  std::vector<int64_t> a_strides_;   // Per outer dim; 0 where broadcast.
  std::vector<int64_t> b_strides_;
  int64_t rows_ = 1;
  int64_t row_length_ = 1;
  int64_t a_inner_stride_ = 0;
  int64_t b_inner_stride_ = 0;
};

// Allocates output `index` with the NumPy broadcast of a's and b's shapes,
// uninitialised (the binary kernels write every element); fails naming both
// shapes when they do not broadcast.
StatusOr<Tensor*> AllocateBroadcastOutput(KernelContext& ctx, const Tensor& a,
                                          const Tensor& b, int index = 0);

// Applies out = op(a, b) element-wise with broadcasting, for a of element
// type A and b of B, split over rows on the intra-op pool. Each output
// element is computed by one thread from the same inputs, so the result
// does not depend on the thread count.
template <class A, class B, class Out, class Op>
void BroadcastMixed(KernelContext& ctx, const Tensor& a, const Tensor& b,
                    Tensor* out, Op op) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  Out* po = out->data<Out>();
  if (a.shape() == b.shape()) {
    ctx.ParallelFor(out->NumElements(), 1.0, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = op(pa[i], pb[i]);
    });
    return;
  }
  const BroadcastIndexer index(a.shape(), b.shape(), out->shape());
  const int64_t length = index.row_length();
  const int64_t sa = index.a_inner_stride();
  const int64_t sb = index.b_inner_stride();
  ctx.ParallelFor(index.rows(), static_cast<double>(length),
                  [&](int64_t begin, int64_t end) {
                    for (int64_t r = begin; r < end; ++r) {
                      int64_t oa, ob;
                      index.RowOffsets(r, &oa, &ob);
                      Out* row = po + r * length;
                      for (int64_t j = 0; j < length; ++j) {
                        row[j] = op(pa[oa + j * sa], pb[ob + j * sb]);
                      }
                    }
                  });
}

// BroadcastMixed for two inputs of one element type.
template <class In, class Out, class Op>
void BroadcastBinary(KernelContext& ctx, const Tensor& a, const Tensor& b,
                     Tensor* out, Op op) {
  BroadcastMixed<In, In, Out>(ctx, a, b, out, op);
}

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_BROADCAST_H_
