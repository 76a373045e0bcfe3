// Ops whose output positions come from the data (ONNX names): NonZero (the
// indices of the non-zero elements), ReverseSequence (each batch entry's
// first seq_lens[i] steps reversed) and Unique (distinct elements or
// slices, with where they first occur, where each went, and how many). Both run
// on one thread in index order, so their results do not depend on the thread
// count; every length is checked against its dimension before any element
// moves.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// NonZero: a [rank, count] int64 tensor whose column j holds the index of
// the j-th non-zero element in row-major order (NumPy's nonzero, stacked).
class NonZeroKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& shape = x.shape();
    std::vector<int64_t> flat;  // Row-major offsets of the non-zeros.
    DispatchDtype(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.NumElements(); ++i) {
        if (static_cast<double>(p[i]) != 0) flat.push_back(i);
      }
    });
    const int rank = shape.rank();
    const auto count = static_cast<int64_t>(flat.size());
    // A scalar is indexed as one element of rank 1 (ONNX's reference).
    const int rows = rank == 0 ? 1 : rank;
    WEFT_ASSIGN_OR_RETURN(
        Tensor * y, ctx.AllocateOutputUninitialized(0, Shape{rows, count}));
    int64_t* out = y->data<int64_t>();
    for (int64_t j = 0; j < count; ++j) {
      int64_t rest = flat[j];
      for (int d = rank - 1; d >= 0; --d) {
        out[d * count + j] = rest % shape.dim(d);
        rest /= shape.dim(d);
      }
      if (rank == 0) out[j] = 0;
    }
    return Status::OK();
  }
};

// ReverseSequence: along time_axis, reverses the first seq_lens[b] entries
// of every batch entry b (batch_axis), copying the rest. The input is at
// least 2-D, and batch_axis and time_axis are 0 and 1 in some order.
class ReverseSequenceKernel : public OpKernel {
 public:
  explicit ReverseSequenceKernel(const KernelConstruction& c)
      : batch_axis_(c.attr<int64_t>("batch_axis")),
        time_axis_(c.attr<int64_t>("time_axis")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& shape = x.shape();
    if (shape.rank() < 2) {
      return InvalidArgumentError("input must be at least 2-D, got " +
                                  shape.ToString());
    }
    if (!((batch_axis_ == 0 && time_axis_ == 1) ||
          (batch_axis_ == 1 && time_axis_ == 0))) {
      return InvalidArgumentError(
          "batch_axis and time_axis must be 0 and 1 in some order, got " +
          std::to_string(batch_axis_) + " and " + std::to_string(time_axis_));
    }
    const int64_t batch = shape.dim(static_cast<int>(batch_axis_));
    const int64_t steps = shape.dim(static_cast<int>(time_axis_));
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> lens,
                          IntsFromTensor(ctx.input(1), "sequence_lens"));
    if (static_cast<int64_t>(lens.size()) != batch) {
      return InvalidArgumentError(
          "sequence_lens has " + std::to_string(lens.size()) +
          " entries for a batch of " + std::to_string(batch));
    }
    for (size_t b = 0; b < lens.size(); ++b) {
      if (lens[b] < 0 || lens[b] > steps) {
        return InvalidArgumentError("sequence_lens[" + std::to_string(b) +
                                    "] = " + std::to_string(lens[b]) +
                                    " is outside [0, " + std::to_string(steps) +
                                    "]");
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, shape));
    // Rows of the inner dimensions move whole: element (i0, i1) of the two
    // leading axes is one row of `row` bytes.
    const size_t row =
        static_cast<size_t>(DimProduct(shape, 2, shape.rank()) *
                            static_cast<int64_t>(DataTypeSize(x.dtype())));
    const int64_t dim1 = shape.dim(1);
    const auto* src = static_cast<const char*>(x.raw_data());
    auto* dst = static_cast<char*>(y->raw_data());
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
        const int64_t out_pos = batch_axis_ == 0 ? b * dim1 + t : t * dim1 + b;
        const int64_t in_pos =
            batch_axis_ == 0 ? b * dim1 + from : from * dim1 + b;
        std::memcpy(dst + out_pos * row, src + in_pos * row, row);
      }
    }
    return Status::OK();
  }

 private:
  const int64_t batch_axis_, time_axis_;
};

// Unique: the distinct slices of X along `axis` (elements of the
// flattened X without one), ascending (lexicographically for slices) when
// `sorted`, else in order of first occurrence; NaNs are one value, sorted
// after every number (NumPy's unique, equal_nan=True). Outputs: Y, the index of
// each one's first occurrence, for each slice of X the position of its value in
// Y, and each one's count (NumPy's unique with every return_*).
class UniqueKernel : public OpKernel {
 public:
  explicit UniqueKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")),
        has_axis_(c.attr<int64_t>("has_axis") != 0),
        sorted_(c.attr<int64_t>("sorted") != 0) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const Tensor x = has_axis_ ? in : in.WithShape(Shape{in.NumElements()});
    const Shape& shape = x.shape();
    WEFT_ASSIGN_OR_RETURN(int axis,
                          NormalizeAxis(has_axis_ ? axis_ : 0, shape.rank()));
    // X as [outer, length, inner]: slice j is X[o, j, i] in (o, i) order.
    const int64_t outer = DimProduct(shape, 0, axis);
    const int64_t length = shape.dim(axis);
    const int64_t inner = DimProduct(shape, axis + 1, shape.rank());
    std::vector<int64_t> order(static_cast<size_t>(length));
    std::iota(order.begin(), order.end(), 0);
    std::vector<int64_t> group_start;  // In `order`, where each group begins.
    DispatchDtype(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* p = x.data<T>();
      auto at = [&](int64_t slice, int64_t k) {
        return p[(k / inner * length + slice) * inner + k % inner];
      };
      const int64_t slice_size = outer * inner;
      auto less = [&](int64_t a, int64_t b) {
        for (int64_t k = 0; k < slice_size; ++k) {
          if (LessNaNLast(at(a, k), at(b, k))) return true;
          if (LessNaNLast(at(b, k), at(a, k))) return false;
        }
        return false;
      };
      // Stable: equal slices stay in index order, so a group's first entry
      // is its first occurrence.
      std::stable_sort(order.begin(), order.end(), less);
      for (int64_t r = 0; r < length; ++r) {
        if (r == 0 || less(order[r - 1], order[r])) group_start.push_back(r);
      }
    });
    const auto groups = static_cast<int64_t>(group_start.size());
    // Group g covers order[group_start[g], group_start[g + 1]).
    std::vector<int64_t> rank(static_cast<size_t>(groups));
    std::iota(rank.begin(), rank.end(), 0);
    if (!sorted_) {
      std::sort(rank.begin(), rank.end(), [&](int64_t a, int64_t b) {
        return order[group_start[a]] < order[group_start[b]];
      });
    }
    // rank[position in Y] = the group there.

    std::vector<int64_t> y_dims = shape.dims();
    y_dims[axis] = groups;
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape(y_dims)));
    const size_t esize = DataTypeSize(x.dtype());
    const auto* src = static_cast<const char*>(x.raw_data());
    auto* dst = static_cast<char*>(y->raw_data());
    for (int64_t pos = 0; pos < groups; ++pos) {
      const int64_t slice = order[group_start[rank[pos]]];
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(dst + ((o * groups + pos) * inner) * esize,
                    src + ((o * length + slice) * inner) * esize,
                    static_cast<size_t>(inner) * esize);
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * first,
                          ctx.AllocateOutputUninitialized(1, Shape{groups}));
    WEFT_ASSIGN_OR_RETURN(Tensor * inverse,
                          ctx.AllocateOutputUninitialized(2, Shape{length}));
    WEFT_ASSIGN_OR_RETURN(Tensor * counts,
                          ctx.AllocateOutputUninitialized(3, Shape{groups}));
    for (int64_t pos = 0; pos < groups; ++pos) {
      const int64_t g = rank[pos];
      const int64_t end = g + 1 < groups ? group_start[g + 1] : length;
      first->data<int64_t>()[pos] = order[group_start[g]];
      counts->data<int64_t>()[pos] = end - group_start[g];
      for (int64_t r = group_start[g]; r < end; ++r) {
        inverse->data<int64_t>()[order[r]] = pos;
      }
    }
    return Status::OK();
  }

 private:
  const int64_t axis_;
  const bool has_axis_, sorted_;
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"NonZero", "indices of the non-zero elements, one column each"},
    {"ReverseSequence", "reverse the first seq_lens steps of each batch entry"},
    {"Unique",
     "distinct elements or slices, first indices, inverse and counts"},
};

}  // namespace

void RegisterSequenceIndexOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("NonZero")
                              .Input(ArgDef::Typed("X", "T"))
                              .Output(ArgDef::Fixed("Y", DataType::kInt64))
                              .Attr("T", AttrType::kType)
                              .SetShapeFn([](InferenceContext& ctx) -> Status {
                                ctx.set_output(0, PartialShape({-1, -1}));
                                return Status::OK();
                              })
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("NonZero", KernelFactoryFor<NonZeroKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("ReverseSequence")
          .Input(ArgDef::Typed("input", "T"))
          .Input(ArgDef::Fixed("sequence_lens", DataType::kInt64))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType)
          .Attr("batch_axis", AttrType::kInt, int64_t{1})
          .Attr("time_axis", AttrType::kInt, int64_t{0})
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "ReverseSequence", KernelFactoryFor<ReverseSequenceKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Unique")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Output(ArgDef::Fixed("indices", DataType::kInt64))
          .Output(ArgDef::Fixed("inverse_indices", DataType::kInt64))
          .Output(ArgDef::Fixed("counts", DataType::kInt64))
          .Attr("T", AttrType::kType)
          .Attr("axis", AttrType::kInt, int64_t{0})
          // ONNX tells "no axis" (flatten first) by the attribute's absence;
          // the importer sets this.
          .Attr("has_axis", AttrType::kInt, int64_t{1})
          .Attr("sorted", AttrType::kInt, int64_t{1})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            for (int i = 0; i < ctx.num_outputs(); ++i) {
              ctx.set_output(i, PartialShape::UnknownRank());
            }
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Unique", KernelFactoryFor<UniqueKernel>()));
}

}  // namespace weft::internal
