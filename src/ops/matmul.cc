// MatMul (2-D, transpose_a / transpose_b). A correct, cache-friendly kernel;
// the BLAS-speed tiles come with the kernels issue.
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

template <class T>
void MultiplyRows(const T* a, const T* b, T* c, const MatMulDims& d, bool ta,
                  bool tb, int64_t row_begin, int64_t row_end) {
  // c[i, :] = sum_p a[i, p] * b[p, :], p in increasing order: every element
  // is accumulated in the same order whatever the thread count.
  const int64_t lda = ta ? d.m : d.k;
  const int64_t ldb = tb ? d.k : d.n;
  for (int64_t i = row_begin; i < row_end; ++i) {
    T* c_row = c + i * d.n;
    for (int64_t p = 0; p < d.k; ++p) {
      const T a_ip = ta ? a[p * lda + i] : a[i * lda + p];
      if (tb) {
        for (int64_t j = 0; j < d.n; ++j) c_row[j] += a_ip * b[j * ldb + p];
      } else {
        const T* b_row = b + p * ldb;
        for (int64_t j = 0; j < d.n; ++j) c_row[j] += a_ip * b_row[j];
      }
    }
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
    const double row_cost = static_cast<double>(d.k * d.n) * 0.5;
    if (a.dtype() == DataType::kFloat32) {
      Run<float>(ctx, a, b, c, d, row_cost);
    } else {
      Run<double>(ctx, a, b, c, d, row_cost);
    }
    return Status::OK();
  }

 private:
  template <class T>
  void Run(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor* c,
           const MatMulDims& d, double row_cost) const {
    ctx.ParallelFor(d.m, row_cost, [&](int64_t begin, int64_t end) {
      MultiplyRows(a.data<T>(), b.data<T>(), c->data<T>(), d, ta_, tb_, begin,
                   end);
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
            // About 0.5 ns per multiply-add for this simple kernel.
            return 0.5 * static_cast<double>(a.dim(0)) * a.dim(1) * b.dim(1);
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("MatMul", KernelFactoryFor<MatMulKernel>()));
}

}  // namespace weft::internal
