// Quantized convolution (ONNX names): ConvInteger, the int32 convolution of
// (x - x_zero_point) and (w - w_zero_point), and QLinearConv, the same
// requantized to y's scale and zero point with an optional int32 bias.
// w's zero point and scale may be per output channel.
//
// With int8 weights the sums run on the int8 micro-kernel over weights
// packed when the kernel is built (quantized_conv_packed.h). Otherwise (uint8
// weights) each image's input is first gathered into columns, (channel,
// tap) x output pixel, as int32 with the zero point subtracted (a padded tap
// is 0, as if the padding held x_zero_point); then each output channel's
// plane is one thread's sum over its group's rows in a fixed order. Integer
// sums are exact, so both give the same bits, whatever the thread count.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/conv_window.h"
#include "ops/op_util.h"
#include "ops/quantized_conv_packed.h"
#include "ops/registry.h"
#include "weft/prepared_weights.h"

namespace weft::internal {
namespace {

const std::vector<DataType> kQuantized = {DataType::kUInt8, DataType::kInt8};

StatusOr<QuantizedConv> PlanConv(const WindowAttrs& attrs, int64_t group,
                                 const Shape& x, const Shape& w) {
  QuantizedConv q;
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> in, SpatialDims(x, "x"));
  if (w.rank() != x.rank()) {
    return InvalidArgumentError("w has shape " + w.ToString() + ", x " +
                                x.ToString() + ": ranks differ");
  }
  q.n = x.dim(0);
  q.c = x.dim(1);
  q.m = w.dim(0);
  q.group = group;
  if (group < 1 || q.c % group != 0 || q.m % group != 0 ||
      w.dim(1) * group != q.c) {
    return InvalidArgumentError("group " + std::to_string(group) +
                                " does not fit x " + x.ToString() + " and w " +
                                w.ToString());
  }
  std::vector<int64_t> kernel;
  for (int i = 2; i < w.rank(); ++i) kernel.push_back(w.dim(i));
  if (!attrs.kernel.empty() && attrs.kernel != kernel) {
    return InvalidArgumentError("kernel_shape does not match w " +
                                w.ToString());
  }
  WEFT_ASSIGN_OR_RETURN(q.win, ForwardWindow(attrs, in, kernel));
  q.rows_per_group = w.dim(1) * q.win.KernelSize();
  q.out = OutShape(q.n, q.m, q.win.out);
  return q;
}

// A zero point or scale per tensor (one entry) or per output channel (M).
StatusOr<bool> PerChannel(const Tensor& t, int64_t m, const char* what) {
  if (t.NumElements() == 1) return false;
  if (t.shape().rank() == 1 && t.NumElements() == m) return true;
  return InvalidArgumentError(std::string(what) + " has shape " +
                              t.shape().ToString() +
                              "; expected one entry or one per output "
                              "channel (" +
                              std::to_string(m) + ")");
}

// The reference sums: every (image, output channel) plane as int32, from
// columns gathered as int32 with the zero point subtracted; any dtypes.
// emit(image, channel, first pixel, pixels, acc) gets each plane whole.
template <class QX, class QW, class Emit>
void ConvolveReference(KernelContext& ctx, const QuantizedConv& q, const QX* x,
                       int32_t x_zero, const QW* w, const QW* w_zero,
                       bool w_zero_per_m, Emit emit) {
  const Window& win = q.win;
  const int64_t pixels = win.OutSize();
  const int64_t in_size = win.InSize();
  const int64_t taps = win.KernelSize();
  const int64_t rows = q.c * taps;
  std::vector<int32_t> cols(static_cast<size_t>(rows * pixels));
  for (int64_t image = 0; image < q.n; ++image) {
    const QX* xi = x + image * q.c * in_size;
    ctx.ParallelFor(
        pixels, static_cast<double>(rows), [&](int64_t begin, int64_t end) {
          for (int64_t o = begin; o < end; ++o) {
            ForEachTap(win, o, [&](int64_t offset, int64_t k) {
              for (int64_t ch = 0; ch < q.c; ++ch) {
                cols[(ch * taps + k) * pixels + o] =
                    offset < 0
                        ? 0
                        : static_cast<int32_t>(xi[ch * in_size + offset]) -
                              x_zero;
              }
            });
          }
        });
    const int64_t m_per_group = q.m / q.group;
    ctx.ParallelFor(
        q.m, static_cast<double>(q.rows_per_group * pixels),
        [&](int64_t begin, int64_t end) {
          std::vector<int32_t> acc(static_cast<size_t>(pixels));
          for (int64_t oc = begin; oc < end; ++oc) {
            const int64_t g = oc / m_per_group;
            const int32_t wz =
                w_zero == nullptr
                    ? 0
                    : static_cast<int32_t>(w_zero[w_zero_per_m ? oc : 0]);
            const QW* wr = w + oc * q.rows_per_group;
            const int32_t* col = cols.data() + g * q.rows_per_group * pixels;
            std::fill(acc.begin(), acc.end(), 0);
            for (int64_t r = 0; r < q.rows_per_group; ++r) {
              const int32_t wv = static_cast<int32_t>(wr[r]) - wz;
              if (wv == 0) continue;
              const int32_t* cr = col + r * pixels;
              for (int64_t p = 0; p < pixels; ++p) acc[p] += wv * cr[p];
            }
            emit(image, oc, int64_t{0}, pixels, acc.data());
          }
        });
  }
}

template <class Fn>
Status DispatchPair(DataType x, DataType w, Fn&& fn) {
  auto second = [&](auto qx) -> Status {
    if (w == DataType::kUInt8) return fn(qx, uint8_t{});
    if (w == DataType::kInt8) return fn(qx, int8_t{});
    return InvalidArgumentError("w must be uint8 or int8");
  };
  if (x == DataType::kUInt8) return second(uint8_t{});
  if (x == DataType::kInt8) return second(int8_t{});
  return InvalidArgumentError("x must be uint8 or int8");
}

// The zero point of input `index` as int32 (0 when absent); it must be one
// element of the dtype of the tensor it offsets.
StatusOr<int32_t> ScalarZeroPoint(KernelContext& ctx, int index, DataType dtype,
                                  const char* what) {
  if (ctx.num_inputs() <= index) return 0;
  const Tensor& z = ctx.input(index);
  if (z.dtype() != dtype) {
    return InvalidArgumentError(std::string(what) + " has dtype " +
                                DataTypeName(z.dtype()) + ", expected " +
                                DataTypeName(dtype));
  }
  if (z.NumElements() != 1) {
    return InvalidArgumentError(std::string(what) + " has shape " +
                                z.shape().ToString() + "; it must be a scalar");
  }
  return dtype == DataType::kUInt8 ? int32_t{*z.data<uint8_t>()}
                                   : int32_t{*z.data<int8_t>()};
}

// What ConvInteger and QLinearConv share: the window, the group, and the
// int8 weights packed once, where w is a constant.
class QuantizedConvKernel : public OpKernel {
 public:
  QuantizedConvKernel(const KernelConstruction& c, int w_index)
      : attrs_(ReadWindowAttrs(c)), group_(c.attr<int64_t>("group")) {
    const Tensor* w = c.constant_input(w_index);
    if (w != nullptr && w->dtype() == DataType::kInt8 &&
        w->shape().rank() >= 3 && group_ >= 1 &&
        w->shape().dim(0) % group_ == 0 && w->NumElements() > 0) {
      // The packing depends on the micro-kernel's layout, chosen by the
      // CPU (or WEFT_INT8_KERNEL) when the process starts.
      constant_w_.Set(c.prepared_weights(), *w,
                      "QuantizedConv/group=" + std::to_string(group_) +
                          "/kernel=" +
                          std::to_string(static_cast<int>(ActiveInt8Kernel())));
    }
  }

  int64_t prepared_bytes() const override {
    const Int8ConvWeights* prepared = constant_w_.IfMade();
    return prepared != nullptr ? prepared->bytes() : 0;
  }

 protected:
  // The int32 sums of the convolution: on the int8 micro-kernel when w is
  // int8 (packed for this call where it is not the constant packed once),
  // else the reference loop.
  template <class QX, class QW>
  void Sums(KernelContext& ctx, const QuantizedConv& q, const QX* x,
            int32_t x_zero, const Tensor& w, const QW* w_zero, bool per_m,
            const ConvSumsFn& emit) const {
    if constexpr (std::is_same_v<QW, int8_t>) {
      std::optional<Int8ConvWeights> local;
      const Int8ConvWeights* weights = PreparedFor(w);
      if (weights == nullptr || !weights->Fits(q)) {
        local = Int8ConvWeights::Prepare(w.data<int8_t>(), q.m, q.c / q.group,
                                         q.win.KernelSize(), q.group);
        weights = &*local;
      }
      ConvolveInt8(ctx, q, x, std::is_same_v<QX, int8_t>, x_zero, *weights,
                   w_zero, per_m, emit);
    } else {
      ConvolveReference<QX, QW>(ctx, q, x, x_zero, w.data<QW>(), w_zero, per_m,
                                emit);
    }
  }

  WindowAttrs attrs_;
  int64_t group_;

 private:
  // The constant W's packing, made by the first Run that reads W and shared
  // with the session's other compiles (PreparedOnFirstRun): a session whose
  // feeds leave a shape open builds this graph at creation and, at its
  // first Run, another for the feeds' shapes, where NhwcQLinearConv packs W
  // in its own layout; packing here at creation was work and memory for a
  // graph that then did not run (int8 ResNet-18: about 40 ms of `weft run`
  // and 11 MB). Null where w is not that constant (a Run fed the Const's
  // output).
  const Int8ConvWeights* PreparedFor(const Tensor& w) const {
    if (!constant_w_.Is(w)) return nullptr;
    return constant_w_.Get([this](const Tensor& cw) {
      const int64_t m = cw.shape().dim(0), c_per_group = cw.shape().dim(1);
      return std::make_shared<const Int8ConvWeights>(Int8ConvWeights::Prepare(
          cw.data<int8_t>(), m, c_per_group,
          cw.NumElements() / (m * c_per_group), group_));
    });
  }

  PreparedOnFirstRun<Int8ConvWeights> constant_w_;
};

// ConvInteger (x, w[, x_zero_point[, w_zero_point]]) -> int32.
class ConvIntegerKernel : public QuantizedConvKernel {
 public:
  explicit ConvIntegerKernel(const KernelConstruction& c)
      : QuantizedConvKernel(c, 1) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    WEFT_ASSIGN_OR_RETURN(QuantizedConv q,
                          PlanConv(attrs_, group_, x.shape(), w.shape()));
    WEFT_ASSIGN_OR_RETURN(int32_t x_zero,
                          ScalarZeroPoint(ctx, 2, x.dtype(), "x_zero_point"));
    const Tensor* w_zero = ctx.num_inputs() > 3 ? &ctx.input(3) : nullptr;
    bool per_m = false;
    if (w_zero != nullptr) {
      if (w_zero->dtype() != w.dtype()) {
        return InvalidArgumentError("w_zero_point has dtype " +
                                    std::string(DataTypeName(w_zero->dtype())) +
                                    ", expected " + DataTypeName(w.dtype()));
      }
      WEFT_ASSIGN_OR_RETURN(per_m, PerChannel(*w_zero, q.m, "w_zero_point"));
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, q.out));
    int32_t* out = y->data<int32_t>();
    const int64_t pixels = q.win.OutSize();
    return DispatchPair(x.dtype(), w.dtype(), [&](auto qx, auto qw) {
      using QX = decltype(qx);
      using QW = decltype(qw);
      Sums<QX, QW>(ctx, q, x.data<QX>(), x_zero, w,
                   w_zero ? w_zero->data<QW>() : nullptr, per_m,
                   [&](int64_t image, int64_t oc, int64_t p0, int64_t count,
                       const int32_t* acc) {
                     std::copy(acc, acc + count,
                               out + (image * q.m + oc) * pixels + p0);
                   });
      return Status::OK();
    });
  }
};

// y = saturate(round_half_even(float(acc + bias) * multiplier) + zero) for
// a run of sums, as QLinearConv and QLinearMatMul define it; a NaN (a
// non-finite scale) gives 0.
template <class QY>
void Requantize(const int32_t* acc, int64_t count, int32_t bias,
                float multiplier, float zero, QY* dst) {
  constexpr float lo = std::numeric_limits<QY>::min();
  constexpr float hi = std::numeric_limits<QY>::max();
  if (!std::isfinite(multiplier)) {
    for (int64_t p = 0; p < count; ++p) {
      const float v =
          std::nearbyint(static_cast<float>(WrappingAdd(acc[p], bias)) *
                         multiplier) +
          zero;
      dst[p] = std::isnan(v) ? QY(0) : static_cast<QY>(std::clamp(v, lo, hi));
    }
    return;
  }
  if constexpr (std::is_same_v<QY, uint8_t>) {
    RequantizeToUint8(acc, count, bias, multiplier, zero, dst);
  } else {
    RequantizeToInt8(acc, count, bias, multiplier, zero, dst);
  }
}

// QLinearConv (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point[, B]): y = saturate(round_half_even((acc + B) * x_scale *
// w_scale / y_scale) + y_zero_point), in float32 as QLinearMatMul.
class QLinearConvKernel : public QuantizedConvKernel {
 public:
  explicit QLinearConvKernel(const KernelConstruction& c)
      : QuantizedConvKernel(c, 3) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(3);
    WEFT_ASSIGN_OR_RETURN(QuantizedConv q,
                          PlanConv(attrs_, group_, x.shape(), w.shape()));
    const Tensor& x_scale = ctx.input(1);
    const Tensor& w_scale = ctx.input(4);
    const Tensor& y_scale = ctx.input(6);
    const Tensor& y_zero = ctx.input(7);
    if (x_scale.NumElements() != 1 || y_scale.NumElements() != 1 ||
        y_zero.NumElements() != 1) {
      return InvalidArgumentError(
          "x_scale, y_scale and y_zero_point must be scalars");
    }
    WEFT_ASSIGN_OR_RETURN(int32_t x_zero,
                          ScalarZeroPoint(ctx, 2, x.dtype(), "x_zero_point"));
    WEFT_ASSIGN_OR_RETURN(bool scale_per_m,
                          PerChannel(w_scale, q.m, "w_scale"));
    WEFT_ASSIGN_OR_RETURN(bool zero_per_m,
                          PerChannel(ctx.input(5), q.m, "w_zero_point"));
    const float xs = *x_scale.data<float>();
    const float ys = *y_scale.data<float>();
    const float* ws = w_scale.data<float>();
    for (float s : {xs, ys}) {
      if (!(s != 0) || !std::isfinite(s)) {
        return InvalidArgumentError(
            "x_scale and y_scale must be finite and non-zero");
      }
    }
    const int32_t* bias = nullptr;
    if (ctx.num_inputs() > 8) {
      const Tensor& b = ctx.input(8);
      if (b.dtype() != DataType::kInt32 || b.shape().rank() != 1 ||
          b.NumElements() != q.m) {
        return InvalidArgumentError(
            "B must be int32 of shape [" + std::to_string(q.m) + "], got " +
            DataTypeName(b.dtype()) + " " + b.shape().ToString());
      }
      bias = b.data<int32_t>();
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, q.out));
    const int64_t pixels = q.win.OutSize();
    // Each channel's multiplier once: the sums come a few pixels at a time
    // (a division per call had been a fifth of this emitter's time).
    std::vector<float> multipliers(static_cast<size_t>(q.m));
    for (int64_t oc = 0; oc < q.m; ++oc) {
      multipliers[static_cast<size_t>(oc)] = xs * ws[scale_per_m ? oc : 0] / ys;
    }
    return DispatchPair(x.dtype(), w.dtype(), [&](auto qx, auto qw) {
      using QX = decltype(qx);
      using QW = decltype(qw);
      auto requantize = [&](auto qy) {
        using QY = decltype(qy);
        QY* out = y->data<QY>();
        const float zy = static_cast<float>(*y_zero.data<QY>());
        Sums<QX, QW>(ctx, q, x.data<QX>(), x_zero, w, ctx.input(5).data<QW>(),
                     zero_per_m,
                     [&](int64_t image, int64_t oc, int64_t p0, int64_t count,
                         const int32_t* acc) {
                       Requantize(acc, count, bias ? bias[oc] : 0,
                                  multipliers[static_cast<size_t>(oc)], zy,
                                  out + (image * q.m + oc) * pixels + p0);
                     });
      };
      if (y_zero.dtype() == DataType::kUInt8) {
        requantize(uint8_t{});
      } else {
        requantize(int8_t{});
      }
      return Status::OK();
    });
  }
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"ConvInteger", "int8/uint8 convolution minus zero points, exact in int32"},
    {"QLinearConv",
     "quantized convolution, requantized to y's scale and zero point"},
};

}  // namespace

void RegisterQuantizedConvOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  {
    OpDefBuilder b("ConvInteger");
    b.Input(ArgDef::Typed("x", "TX"))
        .Input(ArgDef::Typed("w", "TW"))
        .Input(ArgDef::AnyList("zero_points"))
        .Output(ArgDef::Fixed("y", DataType::kInt32))
        .Attr("TX", AttrType::kType, std::nullopt, kQuantized)
        .Attr("TW", AttrType::kType, std::nullopt, kQuantized)
        .Attr("group", AttrType::kInt, int64_t{1});
    CheckRegistered(
        registry.RegisterOp(WindowAttrsOn(b)
                                .SetShapeFn([](InferenceContext& ctx) {
                                  return InferForwardConvShape(ctx, 1);
                                })
                                .Build()));
    CheckRegistered(registry.RegisterKernel(
        "ConvInteger", KernelFactoryFor<ConvIntegerKernel>()));
  }
  {
    OpDefBuilder b("QLinearConv");
    b.Input(ArgDef::Typed("x", "TX"))
        .Input(ArgDef::Fixed("x_scale", DataType::kFloat32))
        .Input(ArgDef::Typed("x_zero_point", "TX"))
        .Input(ArgDef::Typed("w", "TW"))
        .Input(ArgDef::Fixed("w_scale", DataType::kFloat32))
        .Input(ArgDef::Typed("w_zero_point", "TW"))
        .Input(ArgDef::Fixed("y_scale", DataType::kFloat32))
        .Input(ArgDef::Typed("y_zero_point", "TY"))
        .Input(ArgDef::AnyList("B"))
        .Output(ArgDef::Typed("y", "TY"))
        .Attr("TX", AttrType::kType, std::nullopt, kQuantized)
        .Attr("TW", AttrType::kType, std::nullopt, kQuantized)
        .Attr("TY", AttrType::kType, std::nullopt, kQuantized)
        .Attr("group", AttrType::kInt, int64_t{1});
    CheckRegistered(
        registry.RegisterOp(WindowAttrsOn(b)
                                .SetShapeFn([](InferenceContext& ctx) {
                                  return InferForwardConvShape(ctx, 3);
                                })
                                .Build()));
    CheckRegistered(registry.RegisterKernel(
        "QLinearConv", KernelFactoryFor<QLinearConvKernel>()));
  }
}

}  // namespace weft::internal
