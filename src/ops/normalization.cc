// Softmax, LogSoftmax (ONNX opset 13+: `axis`, default -1; with
// `coerce_2d`, the opset 1-12 meaning: normalise over every dim from `axis`
// on) and
// LayerNormalization (`axis` default -1, `epsilon` default 1e-5; inputs X,
// Scale and an optional B; outputs Y and, as ONNX, each row's Mean and
// InvStdDev), and BatchNormalizationTraining (ONNX's BatchNormalization
// with training_mode = 1).
//
// Each is computed per row: a row is the elements sharing every index but
// the normalised ones, and one thread computes a whole row in a fixed order,
// so results do not depend on the thread count.
#include <cmath>
#include <type_traits>

#include "framework/op_registry_impl.h"
#include "kernels/softmax_row.h"
#include "kernels/vector_math.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// Softmax of one row strided by `inner` (an axis that is not the last):
// the same arithmetic, one element at a time.
template <class T, bool kLog>
void SoftmaxStridedRow(const T* x, T* y, int64_t len, int64_t inner) {
  T max = x[0];
  for (int64_t j = 1; j < len; ++j) {
    max = vmath::MaxPropagatingNaN(max, x[j * inner]);
  }
  double sum = 0;
  for (int64_t j = 0; j < len; ++j) sum += vmath::Exp(x[j * inner] - max);
  if constexpr (kLog) {
    const double log_sum = std::log(sum);
    for (int64_t j = 0; j < len; ++j) {
      y[j * inner] = static_cast<T>(double{x[j * inner] - max} - log_sum);
    }
  } else {
    const double inv = 1.0 / sum;
    for (int64_t j = 0; j < len; ++j) {
      y[j * inner] = static_cast<T>(vmath::Exp(x[j * inner] - max) * inv);
    }
  }
}

// Softmax over one axis: rows are (outer, inner) pairs, strided by inner;
// one thread computes a whole row.
template <class T, bool kLog>
void SoftmaxRows(KernelContext& ctx, const T* x, T* y, int64_t outer,
                 int64_t len, int64_t inner) {
  ctx.ParallelFor(
      outer * inner, 4.0 * static_cast<double>(len),
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t base = (r / inner) * len * inner + r % inner;
          if constexpr (std::is_same_v<T, float>) {
            if (inner == 1) {
              SoftmaxContiguousRow<kLog>(x + base, y + base, len);
              continue;
            }
          }
          SoftmaxStridedRow<T, kLog>(x + base, y + base, len, inner);
        }
      });
}

template <bool kLog>
class SoftmaxKernel : public OpKernel {
 public:
  explicit SoftmaxKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")), coerce_2d_(c.attr<bool>("coerce_2d")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& shape = x.shape();
    if (shape.rank() == 0) {
      return InvalidArgumentError("Softmax needs a tensor of rank >= 1");
    }
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, shape.rank()));
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, shape));
    if (x.NumElements() == 0) return Status::OK();
    int64_t outer = 1, len = shape.dim(axis), inner = 1;
    for (int i = 0; i < axis; ++i) outer *= shape.dim(i);
    for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape.dim(i);
    if (coerce_2d_) {  // One row of every dim from axis on.
      len *= inner;
      inner = 1;
    }
    if (x.dtype() == DataType::kFloat16) {  // Row sums in double.
      SoftmaxRows<Float16, kLog>(ctx, x.data<Float16>(), y->data<Float16>(),
                                 outer, len, inner);
    } else if (x.dtype() == DataType::kFloat32) {
      SoftmaxRows<float, kLog>(ctx, x.data<float>(), y->data<float>(), outer,
                               len, inner);
    } else {
      SoftmaxRows<double, kLog>(ctx, x.data<double>(), y->data<double>(), outer,
                                len, inner);
    }
    return Status::OK();
  }

 private:
  const int64_t axis_;
  // ONNX before opset 13: the input is seen as 2-D [outer, rest] at axis.
  const bool coerce_2d_;
};

class LayerNormKernel : public OpKernel {
 public:
  explicit LayerNormKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")), epsilon_(c.attr<double>("epsilon")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const Tensor* bias = ctx.num_inputs() > 2 ? &ctx.input(2) : nullptr;
    const Shape& shape = x.shape();
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, shape.rank()));
    int64_t rows = 1, len = 1;
    for (int i = 0; i < axis; ++i) rows *= shape.dim(i);
    for (int i = axis; i < shape.rank(); ++i) len *= shape.dim(i);
    const std::vector<int64_t> dims = shape.dims();
    const std::vector<int64_t> normalised(dims.begin() + axis, dims.end());
    for (const Tensor* p : {&scale, bias}) {
      if (p != nullptr && p->NumElements() != len &&
          !BroadcastsTo(p->shape(), normalised)) {
        return InvalidArgumentError(
            "Scale and B must broadcast to the normalised shape " +
            Shape(normalised).ToString() + " (X " + shape.ToString() +
            ", axis " + std::to_string(axis) + "); got shape " +
            p->shape().ToString());
      }
      if (p != nullptr && p->dtype() != x.dtype()) {
        return InvalidArgumentError("Scale and B must have X's dtype");
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, shape));
    const Shape stats_shape = StatsShape(shape, axis);
    WEFT_ASSIGN_OR_RETURN(Tensor * mean,
                          ctx.AllocateOutputUninitialized(1, stats_shape));
    WEFT_ASSIGN_OR_RETURN(Tensor * inv_std,
                          ctx.AllocateOutputUninitialized(2, stats_shape));
    if (x.dtype() == DataType::kFloat16) {  // Statistics in double.
      Run<Float16>(ctx, x, scale, bias, y, mean, inv_std, rows, len,
                   normalised);
    } else if (x.dtype() == DataType::kFloat32) {
      Run<float>(ctx, x, scale, bias, y, mean, inv_std, rows, len, normalised);
    } else {
      Run<double>(ctx, x, scale, bias, y, mean, inv_std, rows, len, normalised);
    }
    return Status::OK();
  }

  // Whether `s` broadcasts (NumPy's rules) to `dims` without growing them.
  static bool BroadcastsTo(const Shape& s, const std::vector<int64_t>& dims) {
    const int extra = static_cast<int>(dims.size()) - s.rank();
    if (extra < 0) return false;
    for (int i = 0; i < s.rank(); ++i) {
      if (s.dim(i) != 1 && s.dim(i) != dims[extra + i]) return false;
    }
    return true;
  }

  // Scale or B as the normalised shape's `len` values: its own data when it
  // has them all (in any shape, as ONNX Runtime takes them), else broadcast
  // into `storage`. ONNX defines
  // LayerNormalization as Mul and Add, which broadcast (exporters write a
  // [1, C] scale for a [N, C] input normalised over its last axis).
  // REQUIRES: p has len elements or BroadcastsTo(p.shape(), normalised).
  template <class T>
  static const T* Expanded(const Tensor& p,
                           const std::vector<int64_t>& normalised, int64_t len,
                           std::vector<T>& storage) {
    if (p.NumElements() == len) return p.data<T>();
    const int rank = static_cast<int>(normalised.size());
    const int extra = rank - p.shape().rank();
    std::vector<int64_t> strides(rank, 0);  // p's stride per dim, 0 if 1.
    int64_t step = 1;
    for (int i = p.shape().rank() - 1; i >= 0; --i) {
      if (p.shape().dim(i) != 1) strides[extra + i] = step;
      step *= p.shape().dim(i);
    }
    storage.resize(len);
    std::vector<int64_t> at(rank, 0);
    const T* src = p.data<T>();
    for (int64_t j = 0; j < len; ++j) {
      int64_t offset = 0;
      for (int d = 0; d < rank; ++d) offset += at[d] * strides[d];
      storage[j] = src[offset];
      for (int d = rank - 1; d >= 0 && ++at[d] == normalised[d]; --d) {
        at[d] = 0;
      }
    }
    return storage.data();
  }

  // The shape of Mean and InvStdDev: X's with the normalised dims set to 1.
  static Shape StatsShape(const Shape& x, int axis) {
    std::vector<int64_t> dims = x.dims();
    for (int i = axis; i < x.rank(); ++i) dims[i] = 1;
    return Shape(dims);
  }

 private:
  template <class T>
  void Run(KernelContext& ctx, const Tensor& x, const Tensor& scale,
           const Tensor* bias, Tensor* y, Tensor* mean_out, Tensor* inv_std_out,
           int64_t rows, int64_t len,
           const std::vector<int64_t>& normalised) const {
    const T* px = x.data<T>();
    std::vector<T> scale_values, bias_values;
    const T* ps = Expanded(scale, normalised, len, scale_values);
    const T* pb =
        bias ? Expanded(*bias, normalised, len, bias_values) : nullptr;
    T* py = y->data<T>();
    const double eps = epsilon_;
    ctx.ParallelFor(
        rows, 3.0 * static_cast<double>(len), [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const T* row = px + r * len;
            const double mean =
                RowSum(len, [row](int64_t j) { return double{row[j]}; }) /
                static_cast<double>(len);
            const double var = RowSum(len,
                                      [row, mean](int64_t j) {
                                        const double d = row[j] - mean;
                                        return d * d;
                                      }) /
                               static_cast<double>(len);
            const double inv_std = 1.0 / std::sqrt(var + eps);
            mean_out->data<T>()[r] = static_cast<T>(mean);
            inv_std_out->data<T>()[r] = static_cast<T>(inv_std);
            T* out = py + r * len;
            for (int64_t j = 0; j < len; ++j) {
              const double v = (row[j] - mean) * inv_std * ps[j];
              out[j] = static_cast<T>(pb ? v + pb[j] : v);
            }
          }
        });
  }

  const int64_t axis_;
  const double epsilon_;
};

void RegisterSoftmax(OpRegistry& registry, const char* name,
                     KernelFactory factory) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder(name)
          .Input(ArgDef::Typed("input", "T"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypesWithHalf)
          .Attr("axis", AttrType::kInt, int64_t{-1})
          .Attr("coerce_2d", AttrType::kBool, false)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const PartialShape& in = ctx.input_shape(0);
            if (in.rank_known()) {
              if (in.rank() == 0) {
                return InvalidArgumentError("needs a tensor of rank >= 1");
              }
              WEFT_RETURN_IF_ERROR(
                  NormalizeAxis(ctx.attr<int64_t>("axis"), in.rank()).status());
            }
            return shape_fns::SameAsInput0(ctx);
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(name, std::move(factory)));
}

}  // namespace

// BatchNormalizationTraining (X, scale, B, input_mean, input_var) -> (Y,
// running_mean, running_var): each channel normalised with the batch's
// mean and (population) variance over N and the spatial dims, and the
// running statistics moved towards them by (1 - momentum). One thread per
// channel, sums in double in a fixed order.
class BatchNormTrainingKernel : public OpKernel {
 public:
  explicit BatchNormTrainingKernel(const KernelConstruction& c)
      : epsilon_(c.attr<double>("epsilon")),
        momentum_(c.attr<double>("momentum")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.shape().rank() < 2) {
      return InvalidArgumentError("X must be N x C x ..., got " +
                                  x.shape().ToString());
    }
    const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
    const int64_t inner = c == 0 || n == 0 ? 0 : x.NumElements() / (n * c);
    for (int i = 1; i < 5; ++i) {
      if (!(ctx.input(i).shape() == Shape{c})) {
        return InvalidArgumentError("input " + std::to_string(i) +
                                    " has shape " +
                                    ctx.input(i).shape().ToString() +
                                    "; expected [" + std::to_string(c) + "]");
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    WEFT_ASSIGN_OR_RETURN(Tensor * mean_out,
                          ctx.AllocateOutputUninitialized(1, Shape{c}));
    WEFT_ASSIGN_OR_RETURN(Tensor * var_out,
                          ctx.AllocateOutputUninitialized(2, Shape{c}));
    const double count = static_cast<double>(n * inner);
    DispatchFloat32Or64(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* xd = x.data<T>();
      const T* scale = ctx.input(1).data<T>();
      const T* bias = ctx.input(2).data<T>();
      const T* mean_in = ctx.input(3).data<T>();
      const T* var_in = ctx.input(4).data<T>();
      T* yd = y->data<T>();
      ctx.ParallelFor(
          c, static_cast<double>(3 * n * inner),
          [&](int64_t begin, int64_t end) {
            for (int64_t ch = begin; ch < end; ++ch) {
              double sum = 0, squares = 0;
              for (int64_t b = 0; b < n; ++b) {
                const T* p = xd + (b * c + ch) * inner;
                for (int64_t i = 0; i < inner; ++i) sum += p[i];
              }
              const double mean = count > 0 ? sum / count : 0;
              for (int64_t b = 0; b < n; ++b) {
                const T* p = xd + (b * c + ch) * inner;
                for (int64_t i = 0; i < inner; ++i) {
                  squares += (p[i] - mean) * (p[i] - mean);
                }
              }
              const double var = count > 0 ? squares / count : 0;
              const double k = scale[ch] / std::sqrt(var + epsilon_);
              for (int64_t b = 0; b < n; ++b) {
                const T* p = xd + (b * c + ch) * inner;
                T* q = yd + (b * c + ch) * inner;
                for (int64_t i = 0; i < inner; ++i) {
                  q[i] = static_cast<T>((p[i] - mean) * k + bias[ch]);
                }
              }
              mean_out->data<T>()[ch] = static_cast<T>(mean_in[ch] * momentum_ +
                                                       mean * (1 - momentum_));
              var_out->data<T>()[ch] = static_cast<T>(var_in[ch] * momentum_ +
                                                      var * (1 - momentum_));
            }
          });
    });
    return Status::OK();
  }

 private:
  const double epsilon_;
  const double momentum_;
};

namespace {

// --- BatchNormalization (inference), InstanceNormalization, LRN ------------

// BatchNormalization in inference: y = scale (x - mean) / sqrt(var + eps) + B
// per channel (axis 1).
class BatchNormKernel : public OpKernel {
 public:
  explicit BatchNormKernel(const KernelConstruction& c)
      : epsilon_(c.attr<double>("epsilon")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.shape().rank() < 2) {
      return InvalidArgumentError("X must have rank >= 2, got " +
                                  x.shape().ToString());
    }
    const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
    for (int i = 1; i <= 4; ++i) {
      if (ctx.input(i).NumElements() != c) {
        return InvalidArgumentError("scale, B, mean and var must have " +
                                    std::to_string(c) + " elements; input " +
                                    std::to_string(i) + " has shape " +
                                    ctx.input(i).shape().ToString());
      }
    }
    const int64_t inner = c == 0 || n == 0 ? 0 : x.NumElements() / (n * c);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    return DispatchAmong<FloatDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      std::vector<double> mul(c), add(c);
      for (int64_t ch = 0; ch < c; ++ch) {
        const double inv =
            1.0 / std::sqrt(static_cast<double>(ctx.input(4).data<T>()[ch]) +
                            epsilon_);
        mul[ch] = static_cast<double>(ctx.input(1).data<T>()[ch]) * inv;
        add[ch] = static_cast<double>(ctx.input(2).data<T>()[ch]) -
                  static_cast<double>(ctx.input(3).data<T>()[ch]) * mul[ch];
      }
      const T* px = x.data<T>();
      T* py = y->data<T>();
      ctx.ParallelFor(
          n * c, static_cast<double>(inner), [&](int64_t b, int64_t e) {
            for (int64_t p = b; p < e; ++p) {
              const int64_t ch = p % c;
              for (int64_t i = 0; i < inner; ++i) {
                py[p * inner + i] = static_cast<T>(
                    static_cast<double>(px[p * inner + i]) * mul[ch] + add[ch]);
              }
            }
          });
      return Status::OK();
    });
  }

 private:
  const double epsilon_;
};

// InstanceNormalization: per (image, channel) over the spatial dims.
class InstanceNormKernel : public OpKernel {
 public:
  explicit InstanceNormKernel(const KernelConstruction& c)
      : epsilon_(c.attr<double>("epsilon")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.shape().rank() < 3) {
      return InvalidArgumentError("X must have rank >= 3, got " +
                                  x.shape().ToString());
    }
    const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
    if (ctx.input(1).NumElements() != c || ctx.input(2).NumElements() != c) {
      return InvalidArgumentError("scale and B must have " + std::to_string(c) +
                                  " elements");
    }
    const int64_t inner = n * c == 0 ? 0 : x.NumElements() / (n * c);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    return DispatchAmong<FloatDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      const T* scale = ctx.input(1).data<T>();
      const T* bias = ctx.input(2).data<T>();
      T* py = y->data<T>();
      ctx.ParallelFor(n * c, 3.0 * inner, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          const T* row = px + p * inner;
          double mean = 0, var = 0;
          for (int64_t i = 0; i < inner; ++i) mean += row[i];
          mean /= static_cast<double>(inner);
          for (int64_t i = 0; i < inner; ++i) {
            var += (row[i] - mean) * (row[i] - mean);
          }
          var /= static_cast<double>(inner);
          const double k =
              static_cast<double>(scale[p % c]) / std::sqrt(var + epsilon_);
          for (int64_t i = 0; i < inner; ++i) {
            py[p * inner + i] =
                static_cast<T>((row[i] - mean) * k + bias[p % c]);
          }
        }
      });
      return Status::OK();
    });
  }

 private:
  const double epsilon_;
};

// LRN across channels: x / (bias + alpha / size * sum of squares)^beta.
class LrnKernel : public OpKernel {
 public:
  explicit LrnKernel(const KernelConstruction& c)
      : size_(c.attr<int64_t>("size")),
        alpha_(c.attr<double>("alpha")),
        beta_(c.attr<double>("beta")),
        bias_(c.attr<double>("bias")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.shape().rank() < 3 || size_ < 1) {
      return InvalidArgumentError("needs N x C x D1... and size >= 1");
    }
    const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
    const int64_t inner = n * c == 0 ? 0 : x.NumElements() / (n * c);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    return DispatchAmong<FloatDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y->data<T>();
      ctx.ParallelFor(
          x.NumElements(), static_cast<double>(size_),
          [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
              const int64_t pos = i % inner, ch = (i / inner) % c,
                            img = i / (inner * c);
              double sq = 0;
              for (int64_t k = std::max<int64_t>(0, ch - before);
                   k <= std::min(c - 1, ch + after); ++k) {
                const double v = px[(img * c + k) * inner + pos];
                sq += v * v;
              }
              py[i] = static_cast<T>(
                  px[i] /
                  std::pow(bias_ + alpha_ / static_cast<double>(size_) * sq,
                           beta_));
            }
          });
      return Status::OK();
    });
  }

 private:
  const int64_t size_;
  const double alpha_, beta_, bias_;
};

// GroupNormalization: X [N, C, ...] normalized over each group of C /
// num_groups channels and all positions, by the group's mean and
// (population) variance in double, then scaled and shifted: per group
// (ONNX 18's definition, scale and bias of num_groups entries) or per
// channel (21's, C entries), which `per_channel` says.
class GroupNormKernel : public OpKernel {
 public:
  explicit GroupNormKernel(const KernelConstruction& c)
      : groups_(c.attr<int64_t>("num_groups")),
        epsilon_(c.attr<double>("epsilon")),
        per_channel_(c.attr<bool>("per_channel")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const Tensor& bias = ctx.input(2);
    if (x.shape().rank() < 2) {
      return InvalidArgumentError("X must have rank >= 2, got " +
                                  x.shape().ToString());
    }
    const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
    if (groups_ < 1 || c % groups_ != 0) {
      return InvalidArgumentError("num_groups " + std::to_string(groups_) +
                                  " must be >= 1 and divide the channels, " +
                                  std::to_string(c));
    }
    const int64_t params = per_channel_ ? c : groups_;
    for (const Tensor* t : {&scale, &bias}) {
      if (t->NumElements() != params) {
        return InvalidArgumentError(
            std::string(t == &scale ? "scale" : "bias") + " has " +
            std::to_string(t->NumElements()) + " values; expected " +
            std::to_string(params) + (per_channel_ ? " (C)" : " (num_groups)"));
      }
    }
    const int64_t positions = DimProduct(x.shape(), 2, x.shape().rank());
    const int64_t channels = c / groups_;
    const int64_t group_size = channels * positions;
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    return DispatchAmong<FloatDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      const T* ps = scale.data<T>();
      const T* pb = bias.data<T>();
      T* py = y->data<T>();
      ctx.ParallelFor(
          n * groups_, 3.0 * static_cast<double>(group_size),
          [&](int64_t b, int64_t e) {
            for (int64_t ng = b; ng < e; ++ng) {
              const int64_t g = ng % groups_;
              const T* in = px + ng * group_size;
              T* out = py + ng * group_size;
              double sum = 0;
              for (int64_t i = 0; i < group_size; ++i) {
                sum += static_cast<double>(in[i]);
              }
              const double mean =
                  group_size == 0 ? 0 : sum / static_cast<double>(group_size);
              double squares = 0;
              for (int64_t i = 0; i < group_size; ++i) {
                const double d = static_cast<double>(in[i]) - mean;
                squares += d * d;
              }
              const double variance =
                  group_size == 0 ? 0
                                  : squares / static_cast<double>(group_size);
              const double inv = 1.0 / std::sqrt(variance + epsilon_);
              for (int64_t i = 0; i < group_size; ++i) {
                const int64_t k =
                    per_channel_ ? g * channels + i / positions : g;
                out[i] = static_cast<T>((static_cast<double>(in[i]) - mean) *
                                            inv * static_cast<double>(ps[k]) +
                                        static_cast<double>(pb[k]));
              }
            }
          });
      return Status::OK();
    });
  }

 private:
  const int64_t groups_;
  const double epsilon_;
  const bool per_channel_;
};

// LpNormalization: x / ||x||_p along one axis (p = 1 or 2), each line's
// norm summed in double in order along the axis. A line of zeros stays
// zeros (ONNX Runtime's answer; 0 / 0 would be NaN); a NaN in a line makes
// the whole line NaN, through its norm.
class LpNormKernel : public OpKernel {
 public:
  explicit LpNormKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")), p_(c.attr<int64_t>("p")) {}

  Status Compute(KernelContext& ctx) const override {
    if (p_ != 1 && p_ != 2) {
      return InvalidArgumentError("p must be 1 or 2, got " +
                                  std::to_string(p_));
    }
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(const int axis,
                          NormalizeAxis(axis_, x.shape().rank()));
    const int64_t len = x.shape().dim(axis);
    const int64_t inner = DimProduct(x.shape(), axis + 1, x.shape().rank());
    const int64_t lines = len == 0 ? 0 : x.NumElements() / len;
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    return DispatchAmong<FloatDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y->data<T>();
      ctx.ParallelFor(
          lines, 2.0 * static_cast<double>(len), [&](int64_t b, int64_t e) {
            for (int64_t line = b; line < e; ++line) {
              // Line `line` starts at outer * len * inner + pos.
              const int64_t start = line / inner * len * inner + line % inner;
              double sum = 0;
              for (int64_t k = 0; k < len; ++k) {
                const double v = static_cast<double>(px[start + k * inner]);
                sum += LpPower(v, p_);
              }
              double norm = LpRoot(sum, p_);
              if (norm == 0) norm = 1;
              for (int64_t k = 0; k < len; ++k) {
                const int64_t at = start + k * inner;
                py[at] = static_cast<T>(static_cast<double>(px[at]) / norm);
              }
            }
          });
      return Status::OK();
    });
  }

 private:
  const int64_t axis_, p_;
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"BatchNormalization", "inference batch norm with given mean and variance"},
    {"BatchNormalizationTraining",
     "BatchNormalization with batch statistics; running mean and variance"},
    {"InstanceNormalization", "normalize each instance and channel"},
    {"LRN", "local response normalization across channels"},
    {"LayerNormalization", "normalize over the trailing axes, scale and shift"},
    {"GroupNormalization",
     "normalize groups of channels, then scale and shift"},
    {"LpNormalization", "divide by the L1 or L2 norm along an axis"},
    {"LogSoftmax", "log of softmax along an axis"},
    {"Softmax", "softmax along an axis"},
};

// LRN, LpNormalization and GroupNormalization: normalizations over
// neighbouring channels, one axis, and groups of channels.
void RegisterLrnLpAndGroupNorms(OpRegistry& registry) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("LRN")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypesWithHalf)
          .Attr("size", AttrType::kInt)
          .Attr("alpha", AttrType::kFloat, 0.0001)
          .Attr("beta", AttrType::kFloat, 0.75)
          .Attr("bias", AttrType::kFloat, 1.0)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("LRN", KernelFactoryFor<LrnKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("LpNormalization")
          .Input(ArgDef::Typed("input", "T"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypesWithHalf)
          .Attr("axis", AttrType::kInt, int64_t{-1})
          .Attr("p", AttrType::kInt, int64_t{2})
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel("LpNormalization",
                                          KernelFactoryFor<LpNormKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("GroupNormalization")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Typed("scale", "T"))
          .Input(ArgDef::Typed("bias", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypesWithHalf)
          .Attr("num_groups", AttrType::kInt)
          .Attr("epsilon", AttrType::kFloat, 1e-5)
          // Scale and bias per channel (ONNX 21) rather than per group (18).
          .Attr("per_channel", AttrType::kBool, false)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel("GroupNormalization",
                                          KernelFactoryFor<GroupNormKernel>()));
}

}  // namespace

void RegisterNormalizationOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("BatchNormalization")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Typed("scale", "T"))
          .Input(ArgDef::Typed("B", "T"))
          .Input(ArgDef::Typed("input_mean", "T"))
          .Input(ArgDef::Typed("input_var", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypesWithHalf)
          .Attr("epsilon", AttrType::kFloat, 1e-5)
          .Attr("momentum", AttrType::kFloat, 0.9)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel("BatchNormalization",
                                          KernelFactoryFor<BatchNormKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("InstanceNormalization")
          .Input(ArgDef::Typed("input", "T"))
          .Input(ArgDef::Typed("scale", "T"))
          .Input(ArgDef::Typed("B", "T"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypesWithHalf)
          .Attr("epsilon", AttrType::kFloat, 1e-5)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "InstanceNormalization", KernelFactoryFor<InstanceNormKernel>()));
  RegisterLrnLpAndGroupNorms(registry);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("BatchNormalizationTraining")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Typed("scale", "T"))
          .Input(ArgDef::Typed("B", "T"))
          .Input(ArgDef::Typed("input_mean", "T"))
          .Input(ArgDef::Typed("input_var", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Output(ArgDef::Typed("running_mean", "T"))
          .Output(ArgDef::Typed("running_var", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Attr("epsilon", AttrType::kFloat, 1e-5)
          .Attr("momentum", AttrType::kFloat, 0.9)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, ctx.input_shape(0));
            ctx.set_output(1, ctx.input_shape(3));
            ctx.set_output(2, ctx.input_shape(4));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("BatchNormalizationTraining",
                              KernelFactoryFor<BatchNormTrainingKernel>()));
  RegisterSoftmax(registry, "Softmax",
                  KernelFactoryFor<SoftmaxKernel<false>>());
  RegisterSoftmax(registry, "LogSoftmax",
                  KernelFactoryFor<SoftmaxKernel<true>>());
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("LayerNormalization")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Typed("Scale", "T"))
          .Input(ArgDef::AnyList("B"))
          .Output(ArgDef::Typed("Y", "T"))
          .Output(ArgDef::Typed("Mean", "T"))
          .Output(ArgDef::Typed("InvStdDev", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypesWithHalf)
          .Attr("axis", AttrType::kInt, int64_t{-1})
          .Attr("epsilon", AttrType::kFloat, 1e-5)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            if (ctx.num_inputs() > 3) {
              return InvalidArgumentError(
                  "takes X, Scale and an optional B; got " +
                  std::to_string(ctx.num_inputs()) + " inputs");
            }
            if (ctx.num_inputs() == 3 &&
                ctx.input_dtype(2) != ctx.input_dtype(0)) {
              return InvalidArgumentError("B must have X's dtype");
            }
            const PartialShape& in = ctx.input_shape(0);
            ctx.set_output(0, in);
            if (!in.rank_known()) {
              ctx.set_output(1, in);
              ctx.set_output(2, in);
              return Status::OK();
            }
            WEFT_ASSIGN_OR_RETURN(
                int axis, NormalizeAxis(ctx.attr<int64_t>("axis"), in.rank()));
            std::vector<int64_t> dims = in.dims();
            for (int i = axis; i < in.rank(); ++i) dims[i] = 1;
            ctx.set_output(1, PartialShape(dims));
            ctx.set_output(2, PartialShape(dims));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel("LayerNormalization",
                                          KernelFactoryFor<LayerNormKernel>()));
}

}  // namespace weft::internal
