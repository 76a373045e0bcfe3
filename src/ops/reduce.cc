// ReduceSum (ONNX: `axes`, `keepdims` = 1 by default; no axes = all).
#include <algorithm>
#include <set>

#include "framework/op_registry_impl.h"

namespace weft::internal {
namespace {

// Elements per partial sum of a full reduction: fixed, so the order in which
// partial sums combine does not depend on the thread count.
constexpr int64_t kReduceBlock = 8192;

StatusOr<std::vector<int>> NormalizeAxes(const std::vector<int64_t>& axes,
                                         int rank) {
  std::set<int> out;
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) out.insert(i);
  }
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return InvalidArgumentError("axis " + std::to_string(axis) +
                                  " is out of range for rank " +
                                  std::to_string(rank));
    }
    if (!out.insert(static_cast<int>(axis < 0 ? axis + rank : axis)).second) {
      return InvalidArgumentError("axis " + std::to_string(axis) +
                                  " is given twice");
    }
  }
  return std::vector<int>(out.begin(), out.end());
}

PartialShape ReducedShape(const PartialShape& in, const std::vector<int>& axes,
                          bool keepdims) {
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced) {
      dims.push_back(in.dim(i));
    } else if (keepdims) {
      dims.push_back(1);
    }
  }
  return PartialShape(std::move(dims));
}

template <class T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, T>;

class ReduceSumKernel : public OpKernel {
 public:
  explicit ReduceSumKernel(const KernelConstruction& c)
      : axes_(c.attr<std::vector<int64_t>>("axes")),
        keepdims_(c.attr<int64_t>("keepdims") != 0) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::vector<int> axes,
                          NormalizeAxes(axes_, x.shape().rank()));
    const Shape out_shape = ReducedShape(x.shape(), axes, keepdims_).ToShape();
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, out_shape));
    switch (x.dtype()) {
      case DataType::kFloat32:
        return Reduce<float>(ctx, x, axes, y);
      case DataType::kFloat64:
        return Reduce<double>(ctx, x, axes, y);
      case DataType::kInt32:
        return Reduce<int32_t>(ctx, x, axes, y);
      default:
        return Reduce<int64_t>(ctx, x, axes, y);
    }
  }

 private:
  template <class T>
  Status Reduce(KernelContext& ctx, const Tensor& x,
                const std::vector<int>& axes, Tensor* y) const {
    const T* px = x.data<T>();
    T* py = y->data<T>();
    const Shape& shape = x.shape();
    const int rank = shape.rank();
    if (y->NumElements() == 1) {
      // Everything into one value: fixed blocks of partial sums, combined in
      // block order.
      const int64_t n = x.NumElements();
      const int64_t blocks = (n + kReduceBlock - 1) / kReduceBlock;
      std::vector<Accumulator<T>> partial(blocks, 0);
      ctx.ParallelForFixedBlocks(n, kReduceBlock, [&](int64_t b, int64_t e) {
        Accumulator<T> sum = 0;
        for (int64_t i = b; i < e; ++i) sum += px[i];
        partial[b / kReduceBlock] = sum;
      });
      Accumulator<T> total = 0;
      for (const auto& p : partial) total += p;
      py[0] = static_cast<T>(total);
      return Status::OK();
    }
    // Row-major strides; the reduced sub-space's offsets in input order.
    std::vector<int64_t> strides(rank, 1);
    for (int i = rank - 2; i >= 0; --i) {
      strides[i] = strides[i + 1] * shape.dim(i + 1);
    }
    std::vector<int64_t> reduced_offsets = {0};
    for (int axis : axes) {
      std::vector<int64_t> next;
      next.reserve(reduced_offsets.size() * shape.dim(axis));
      for (int64_t base : reduced_offsets) {
        for (int64_t c = 0; c < shape.dim(axis); ++c) {
          next.push_back(base + c * strides[axis]);
        }
      }
      reduced_offsets.swap(next);
    }
    std::sort(reduced_offsets.begin(), reduced_offsets.end());
    std::vector<int> kept;
    for (int i = 0; i < rank; ++i) {
      if (!std::binary_search(axes.begin(), axes.end(), i)) kept.push_back(i);
    }
    const int64_t outputs = y->NumElements();
    const double cost = static_cast<double>(reduced_offsets.size());
    ctx.ParallelFor(outputs, cost, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        // Output index o -> input offset of its first element.
        int64_t rest = o, base = 0;
        for (int k = static_cast<int>(kept.size()) - 1; k >= 0; --k) {
          const int64_t dim = shape.dim(kept[k]);
          base += (rest % dim) * strides[kept[k]];
          rest /= dim;
        }
        Accumulator<T> sum = 0;
        for (int64_t off : reduced_offsets) sum += px[base + off];
        py[o] = static_cast<T>(sum);
      }
    });
    return Status::OK();
  }

  const std::vector<int64_t> axes_;
  const bool keepdims_;
};

}  // namespace

void RegisterReduceOps(OpRegistry& registry) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("ReduceSum")
          .Input(ArgDef::Typed("data", "T"))
          .Output(ArgDef::Typed("reduced", "T"))
          .Attr("T", AttrType::kType, std::nullopt,
                {DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                 DataType::kInt64})
          .Attr("axes", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("keepdims", AttrType::kInt, int64_t{1})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const PartialShape& in = ctx.input_shape(0);
            if (!in.rank_known()) {
              ctx.set_output(0, PartialShape::UnknownRank());
              return Status::OK();
            }
            WEFT_ASSIGN_OR_RETURN(
                std::vector<int> axes,
                NormalizeAxes(ctx.attr<std::vector<int64_t>>("axes"),
                              in.rank()));
            ctx.set_output(
                0, ReducedShape(in, axes, ctx.attr<int64_t>("keepdims") != 0));
            return Status::OK();
          })
          .SetCostFn([](const InferenceContext& ctx) {
            const PartialShape& in = ctx.input_shape(0);
            return in.IsFullyDefined()
                       ? static_cast<double>(in.ToShape().NumElements())
                       : 1e4;
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel("ReduceSum",
                                          KernelFactoryFor<ReduceSumKernel>()));
}

}  // namespace weft::internal
