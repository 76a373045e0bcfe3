// MatMul (2-D, transpose_a / transpose_b).
//
// The output is cut into tiles (ChooseTiles) that threads claim through
// ParallelFor; each tile is one single-threaded Eigen product over the full
// inner dimension. Why this is deterministic: a tile's shape, and so Eigen's
// blocking and summation order for each element, depends only on the matrix
// sizes, never on the thread count or on which thread computes it. Why no
// thread but weft's computes: Eigen's products use threads only with OpenMP or
// EIGEN_USE_THREADS, and weft builds with neither (docs/kernels.md).
#include <Eigen/Core>
#include <algorithm>

#include "framework/op_registry_impl.h"

namespace weft::internal {
namespace {

struct MatMulDims {
  int64_t m, k, n;
};

StatusOr<MatMulDims> CheckDims(const PartialShape& a, const PartialShape& b,
                               bool ta, bool tb) {
  if (a.rank_known() && a.rank() != 2) {
    return InvalidArgumentError("MatMul needs 2-D inputs; A has shape " +
                                a.ToString());
  }
  if (b.rank_known() && b.rank() != 2) {
    return InvalidArgumentError("MatMul needs 2-D inputs; B has shape " +
                                b.ToString());
  }
  MatMulDims d{-1, -1, -1};
  int64_t kb = -1;
  if (a.rank_known()) {
    d.m = a.dim(ta ? 1 : 0);
    d.k = a.dim(ta ? 0 : 1);
  }
  if (b.rank_known()) {
    kb = b.dim(tb ? 1 : 0);
    d.n = b.dim(tb ? 0 : 1);
  }
  if (d.k >= 0 && kb >= 0 && d.k != kb) {
    return InvalidArgumentError("inner dimensions do not match: A " +
                                a.ToString() + (ta ? " (transposed)" : "") +
                                " and B " + b.ToString() +
                                (tb ? " (transposed)" : ""));
  }
  if (d.k < 0) d.k = kb;
  return d;
}

// Output tile size: rows x cols of C computed by one single-threaded call.
// It depends only on the matrix sizes, never on the thread count, so results
// are the same for every configuration. Large tiles run Eigen's kernel best
// (measured on the development machine: 512 x 512 tiles of a 2048 product
// reach ~90 GFLOP/s on one core, 64 x 256 tiles ~47); at least two row tiles
// keep two cores busy on small products.
struct TileShape {
  int64_t rows, cols;
};

TileShape ChooseTiles(const MatMulDims& d) {
  constexpr int64_t kMaxTile = 512;
  auto round_up16 = [](int64_t x) { return (x + 15) / 16 * 16; };
  return {std::clamp<int64_t>(round_up16((d.m + 1) / 2), 16, kMaxTile),
          std::clamp<int64_t>(d.n, 1, kMaxTile)};
}

template <class T>
using RowMajor =
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap =
    Eigen::Map<const RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using MutableMap =
    Eigen::Map<RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

// C[r0:r0+rows, c0:c0+cols] = op(A)[r0:r0+rows, :] * op(B)[:, c0:c0+cols].
template <class T>
void MultiplyTile(const T* a, const T* b, T* c, const MatMulDims& d, bool ta,
                  bool tb, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
  MutableMap<T> out(c + r0 * d.n + c0, rows, cols, Eigen::OuterStride<>(d.n));
  // A is m x k (or k x m when transposed), B is k x n (or n x k), row-major.
  const ConstMap<T> a_full(a, ta ? d.k : d.m, ta ? d.m : d.k,
                           Eigen::OuterStride<>(ta ? d.m : d.k));
  const ConstMap<T> b_full(b, tb ? d.n : d.k, tb ? d.k : d.n,
                           Eigen::OuterStride<>(tb ? d.k : d.n));
  if (!ta && !tb) {
    out.noalias() = a_full.middleRows(r0, rows) * b_full.middleCols(c0, cols);
  } else if (!ta && tb) {
    out.noalias() =
        a_full.middleRows(r0, rows) * b_full.middleRows(c0, cols).transpose();
  } else if (ta && !tb) {
    out.noalias() =
        a_full.middleCols(r0, rows).transpose() * b_full.middleCols(c0, cols);
  } else {
    out.noalias() = a_full.middleCols(r0, rows).transpose() *
                    b_full.middleRows(c0, cols).transpose();
  }
}

class MatMulKernel : public OpKernel {
 public:
  explicit MatMulKernel(const KernelConstruction& c)
      : ta_(c.attr<bool>("transpose_a")), tb_(c.attr<bool>("transpose_b")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    WEFT_ASSIGN_OR_RETURN(MatMulDims d,
                          CheckDims(a.shape(), b.shape(), ta_, tb_));
    WEFT_ASSIGN_OR_RETURN(Tensor * c, ctx.AllocateOutput(0, Shape{d.m, d.n}));
    if (a.dtype() == DataType::kFloat32) {
      Run<float>(ctx, a, b, c, d);
    } else {
      Run<double>(ctx, a, b, c, d);
    }
    return Status::OK();
  }

 private:
  template <class T>
  void Run(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor* c,
           const MatMulDims& d) const {
    if (d.m == 0 || d.n == 0) return;
    if (d.k == 0) return;  // C stays zero-filled.
    const TileShape tile = ChooseTiles(d);
    const int64_t row_tiles = (d.m + tile.rows - 1) / tile.rows;
    const int64_t col_tiles = (d.n + tile.cols - 1) / tile.cols;
    // About 0.02 ns per multiply-add at Eigen's speed on one core.
    const double tile_cost = 0.02 * static_cast<double>(tile.rows) *
                             static_cast<double>(tile.cols) *
                             static_cast<double>(d.k);
    ctx.ParallelFor(
        row_tiles * col_tiles, tile_cost, [&](int64_t begin, int64_t end) {
          for (int64_t t = begin; t < end; ++t) {
            const int64_t r0 = (t / col_tiles) * tile.rows;
            const int64_t c0 = (t % col_tiles) * tile.cols;
            MultiplyTile(a.data<T>(), b.data<T>(), c->data<T>(), d, ta_, tb_,
                         r0, std::min(tile.rows, d.m - r0), c0,
                         std::min(tile.cols, d.n - c0));
          }
        });
  }

  const bool ta_;
  const bool tb_;
};

}  // namespace

void RegisterMatMulOps(OpRegistry& registry) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("MatMul")
          .Input(ArgDef::Typed("A", "T"))
          .Input(ArgDef::Typed("B", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt,
                {DataType::kFloat32, DataType::kFloat64})
          .Attr("transpose_a", AttrType::kBool, false)
          .Attr("transpose_b", AttrType::kBool, false)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            WEFT_ASSIGN_OR_RETURN(
                MatMulDims d, CheckDims(ctx.input_shape(0), ctx.input_shape(1),
                                        ctx.attr<bool>("transpose_a"),
                                        ctx.attr<bool>("transpose_b")));
            ctx.set_output(0, PartialShape({d.m, d.n}));
            return Status::OK();
          })
          .SetCostFn([](const InferenceContext& ctx) {
            const PartialShape& a = ctx.input_shape(0);
            const PartialShape& b = ctx.input_shape(1);
            if (!a.IsFullyDefined() || !b.IsFullyDefined()) return 1e5;
            // About 0.02 ns per multiply-add (Eigen, one core).
            return 0.02 * static_cast<double>(a.dim(0)) * a.dim(1) * b.dim(1);
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("MatMul", KernelFactoryFor<MatMulKernel>()));
}

}  // namespace weft::internal
