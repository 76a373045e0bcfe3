#include "ops/broadcast.h"

#include "weft/op_registry.h"

namespace weft::internal {
namespace {

// Row-major strides of `shape` aligned to the last `rank` output dims, with
// 0 where the dimension is broadcast (size 1 against a larger output dim).
std::vector<int64_t> AlignedStrides(const Shape& shape, const Shape& out) {
  const int rank = out.rank();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    const int o = rank - shape.rank() + i;
    strides[o] = shape.dim(i) == 1 && out.dim(o) != 1 ? 0 : stride;
    stride *= shape.dim(i);
  }
  return strides;
}

}  // namespace

BroadcastIndexer::BroadcastIndexer(const Shape& a_shape, const Shape& b_shape,
                                   const Shape& out_shape) {
  const int rank = out_shape.rank();
  std::vector<int64_t> sa = AlignedStrides(a_shape, out_shape);
  std::vector<int64_t> sb = AlignedStrides(b_shape, out_shape);
  if (rank == 0) return;
  row_length_ = out_shape.dim(rank - 1);
  a_inner_stride_ = sa[rank - 1];
  b_inner_stride_ = sb[rank - 1];
  for (int i = 0; i < rank - 1; ++i) {
    outer_dims_.push_back(out_shape.dim(i));
    a_strides_.push_back(sa[i]);
    b_strides_.push_back(sb[i]);
    rows_ *= out_shape.dim(i);
  }
}

void BroadcastIndexer::RowOffsets(int64_t row, int64_t* a_offset,
                                  int64_t* b_offset) const {
  int64_t oa = 0, ob = 0;
  for (int i = static_cast<int>(outer_dims_.size()) - 1; i >= 0; --i) {
    const int64_t coord = row % outer_dims_[i];
    row /= outer_dims_[i];
    oa += coord * a_strides_[i];
    ob += coord * b_strides_[i];
  }
  *a_offset = oa;
  *b_offset = ob;
}

StatusOr<Tensor*> AllocateBroadcastOutput(KernelContext& ctx, const Tensor& a,
                                          const Tensor& b, int index) {
  if (a.shape() == b.shape()) {
    return ctx.AllocateOutputUninitialized(index, a.shape());
  }
  WEFT_ASSIGN_OR_RETURN(PartialShape shape,
                        BroadcastShapes(a.shape(), b.shape()));
  return ctx.AllocateOutputUninitialized(index, shape.ToShape());
}

}  // namespace weft::internal
