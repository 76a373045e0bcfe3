// Linear algebra and statistics over whole axes (ONNX names): Det, the
// determinant of each square matrix of the last two axes, and
// MeanVarianceNormalization. Both compute in double on one thread in a
// fixed order, so results do not depend on the thread count.
#include <cmath>
#include <utility>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"

namespace weft::internal {
namespace {

// The determinant of the n x n row-major matrix `a` (overwritten): LU
// decomposition with partial pivoting, the product of the pivots with the
// sign of the row swaps (what NumPy's det does through LAPACK's getrf).
double Determinant(std::vector<double>& a, int64_t n) {
  double det = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < n; ++r) {
      if (std::abs(a[r * n + k]) > std::abs(a[pivot * n + k])) pivot = r;
    }
    if (a[pivot * n + k] == 0) return 0;
    if (pivot != k) {
      for (int64_t c = 0; c < n; ++c) std::swap(a[k * n + c], a[pivot * n + c]);
      det = -det;
    }
    const double p = a[k * n + k];
    det *= p;
    for (int64_t r = k + 1; r < n; ++r) {
      const double f = a[r * n + k] / p;
      for (int64_t c = k + 1; c < n; ++c) a[r * n + c] -= f * a[k * n + c];
    }
  }
  return det;
}

class DetKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& shape = x.shape();
    const int rank = shape.rank();
    if (rank < 2 || shape.dim(rank - 1) != shape.dim(rank - 2)) {
      return InvalidArgumentError(
          "needs square matrices in the last two axes, got " +
          shape.ToString());
    }
    const int64_t n = shape.dim(rank - 1);
    std::vector<int64_t> batch_dims = shape.dims();
    batch_dims.resize(rank - 2);
    WEFT_ASSIGN_OR_RETURN(
        Tensor * y, ctx.AllocateOutputUninitialized(0, Shape(batch_dims)));
    const int64_t matrices = DimProduct(shape, 0, rank - 2);
    return DispatchNumeric(x.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      const T* in = x.data<T>();
      T* out = y->data<T>();
      std::vector<double> a(static_cast<size_t>(n * n));
      for (int64_t m = 0; m < matrices; ++m) {
        for (int64_t i = 0; i < n * n; ++i) {
          a[i] = static_cast<double>(in[m * n * n + i]);
        }
        out[m] = static_cast<T>(Determinant(a, n));
      }
      return Status::OK();
    });
  }
};

// MeanVarianceNormalization: (x - mean) / (std + 1e-9) with the mean and
// the (population) standard deviation taken over `axes`, as ONNX's function
// body defines it: std = sqrt(mean(x^2) - mean(x)^2).
class MeanVarianceNormalizationKernel : public OpKernel {
 public:
  explicit MeanVarianceNormalizationKernel(const KernelConstruction& c)
      : axes_(c.attr<std::vector<int64_t>>("axes")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& shape = x.shape();
    const int rank = shape.rank();
    std::vector<bool> reduced(rank, false);
    for (int64_t axis : axes_) {
      WEFT_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, rank));
      reduced[a] = true;
    }
    // Group of each element: its index with the reduced axes dropped.
    std::vector<int64_t> group_stride(rank, 0);
    int64_t groups = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (reduced[d]) continue;
      group_stride[d] = groups;
      groups *= shape.dim(d);
    }
    const int64_t count = x.NumElements();
    std::vector<int64_t> group_of(static_cast<size_t>(count));
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0; i < count; ++i) {
      int64_t g = 0;
      for (int d = 0; d < rank; ++d) g += index[d] * group_stride[d];
      group_of[i] = g;
      for (int d = rank - 1; d >= 0; --d) {
        if (++index[d] < shape.dim(d)) break;
        index[d] = 0;
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, shape));
    return DispatchNumeric(x.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      const T* in = x.data<T>();
      T* out = y->data<T>();
      std::vector<double> sum(groups, 0), sum_sq(groups, 0);
      std::vector<int64_t> n(groups, 0);
      for (int64_t i = 0; i < count; ++i) {
        const double v = static_cast<double>(in[i]);
        sum[group_of[i]] += v;
        sum_sq[group_of[i]] += v * v;
        ++n[group_of[i]];
      }
      for (int64_t i = 0; i < count; ++i) {
        const int64_t g = group_of[i];
        const double mean = sum[g] / static_cast<double>(n[g]);
        const double variance =
            std::max(sum_sq[g] / static_cast<double>(n[g]) - mean * mean, 0.0);
        out[i] = static_cast<T>((static_cast<double>(in[i]) - mean) /
                                (std::sqrt(variance) + 1e-9));
      }
      return Status::OK();
    });
  }

 private:
  const std::vector<int64_t> axes_;
};

}  // namespace

void RegisterLinalgOps(OpRegistry& registry) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Det")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Det", KernelFactoryFor<DetKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("MeanVarianceNormalization")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Attr("axes", AttrType::kListInt, std::vector<int64_t>{0, 2, 3})
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "MeanVarianceNormalization",
      KernelFactoryFor<MeanVarianceNormalizationKernel>()));
}

}  // namespace weft::internal
