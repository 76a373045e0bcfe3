// Convolutions on NC(D)HW tensors with ONNX semantics: Conv, FusedConv
// (made by the graph passes: Conv + bias + residual + activation) and
// ConvTranspose; their channels-last forms are in nhwc_ops.cc, their
// quantized ones in quantized_conv.cc.
//
// Here: the schemas, ConvKernel's construction (packing W), its checks and
// its choice of strategy (Run); the strategies are in the files
// conv_kernel.h lists, with the determinism rule they keep.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "framework/op_registry_impl.h"
#include "ops/conv_kernel.h"
#include "ops/registry.h"

namespace weft::internal {

// --- Conv --------------------------------------------------------------------

Status ConvKernel::Compute(KernelContext& ctx) const {
  WEFT_RETURN_IF_ERROR(activation_.status());
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* bias = ctx.num_inputs() > 2 ? &ctx.input(2) : nullptr;
  const Tensor* residual =
      fused_ && ctx.num_inputs() > 3 ? &ctx.input(3) : nullptr;
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> in, SpatialDims(x.shape(), "X"));
  if (w.shape().rank() != x.shape().rank()) {
    return InvalidArgumentError("W has shape " + w.shape().ToString() + ", X " +
                                x.shape().ToString());
  }
  const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
  const int64_t m = w.shape().dim(0), g = group_;
  if (g < 1 || c % g != 0 || m % g != 0 || w.shape().dim(1) != c / g) {
    return InvalidArgumentError("X has " + std::to_string(c) +
                                " channels, W shape " + w.shape().ToString() +
                                " and group " + std::to_string(g) +
                                " do not agree");
  }
  std::vector<int64_t> kernel;
  for (int i = 2; i < w.shape().rank(); ++i) kernel.push_back(w.shape().dim(i));
  if (!attrs_.kernel.empty() && attrs_.kernel != kernel) {
    return InvalidArgumentError("kernel_shape does not match W " +
                                w.shape().ToString());
  }
  if (bias != nullptr && bias->NumElements() != m) {
    return InvalidArgumentError("B must have " + std::to_string(m) +
                                " elements, got " + bias->shape().ToString());
  }
  WEFT_ASSIGN_OR_RETURN(Window win, ForwardWindow(attrs_, in, kernel));
  WEFT_ASSIGN_OR_RETURN(
      Tensor * y, ctx.AllocateOutputUninitialized(0, OutShape(n, m, win.out)));
  if (residual != nullptr && !(residual->shape() == y->shape())) {
    return InvalidArgumentError("Z has shape " + residual->shape().ToString() +
                                ", the output " + y->shape().ToString());
  }
  const Epilogue epilogue{*activation_, residual};
  if (x.dtype() == DataType::kFloat16) {  // In float32, rounded once.
    WEFT_ASSIGN_OR_RETURN(Tensor x32, WidenToFloat32(x));
    WEFT_ASSIGN_OR_RETURN(Tensor w32, WidenToFloat32(w));
    Tensor b32;
    if (bias != nullptr) {
      WEFT_ASSIGN_OR_RETURN(b32, WidenToFloat32(*bias));
    }
    WEFT_ASSIGN_OR_RETURN(Tensor y32, Tensor::CreateUninitialized(
                                          DataType::kFloat32, y->shape()));
    Run<float>(ctx, x32, w32, bias ? &b32 : nullptr, &y32, win, n, c / g, m / g,
               {});
    NarrowToFloat16(y32, y);
  } else if (x.dtype() == DataType::kFloat32) {
    Run<float>(ctx, x, w, bias, y, win, n, c / g, m / g, epilogue);
  } else {
    Run<double>(ctx, x, w, bias, y, win, n, c / g, m / g, epilogue);
  }
  return Status::OK();
}

int64_t ConvKernel::KnownOutputPlane(const KernelConstruction& c) {
  if (c.output_shapes().empty()) return 0;
  const PartialShape& y = c.output_shapes()[0];
  int64_t plane = 0;
  if (!y.rank_known() || y.rank() != 4 || y.dim(2) < 0 || y.dim(3) < 0 ||
      __builtin_mul_overflow(y.dim(2), y.dim(3), &plane)) {
    return 0;
  }
  return plane;
}

void ConvKernel::PackConstantWeights(const Tensor* w, const Tensor* bias,
                                     int64_t out_pixels) {
  if (w == nullptr || w->dtype() != DataType::kFloat32 ||
      w->shape().rank() != 4 || w->NumElements() == 0 ||
      w->shape().dim(1) < 2 || group_ < 1 || w->shape().dim(0) % group_ != 0 ||
      ActiveGemmKernel() != GemmKernel::kBlis) {
    return;
  }
  const int64_t mg = w->shape().dim(0) / group_;
  const int64_t depth = w->NumElements() / w->shape().dim(0);
  // A 1 x 1 window moving one pixel at a time reads X itself as columns.
  bool unit_window = w->shape().dim(2) == 1 && w->shape().dim(3) == 1;
  for (int64_t stride : attrs_.strides) unit_window &= stride == 1;
  if (!ConvPacksConstantWeights(mg, depth, unit_window, out_pixels)) return;
  transposed_ = ConvProductsRunTransposed(mg, depth, out_pixels);
  const bool fold_bias = !transposed_ && bias != nullptr &&
                         bias->dtype() == DataType::kFloat32 &&
                         bias->NumElements() == w->shape().dim(0);
  std::vector<float> with_bias(fold_bias ? mg * (depth + 1) : 0);
  for (int64_t group = 0; group < group_; ++group) {
    const float* w_group = w->data<float>() + group * mg * depth;
    if (transposed_) {
      packed_w_.push_back(PackedOperand::Pack(
          PackedOperand::Side::kRight, {w_group, depth, /*transposed=*/true},
          depth, mg));
    } else if (fold_bias) {
      for (int64_t r = 0; r < mg; ++r) {
        std::copy(w_group + r * depth, w_group + (r + 1) * depth,
                  with_bias.begin() + r * (depth + 1));
        with_bias[r * (depth + 1) + depth] =
            bias->data<float>()[group * mg + r];
      }
      packed_w_.push_back(PackedOperand::Pack(PackedOperand::Side::kLeft,
                                              {with_bias.data(), depth + 1}, mg,
                                              depth + 1));
    } else {
      packed_w_.push_back(PackedOperand::Pack(PackedOperand::Side::kLeft,
                                              {w_group, depth}, mg, depth));
    }
  }
  packed_source_ = *w;
  if (fold_bias) folded_bias_ = *bias;
}

void ConvKernel::ArrangeConstantLaneWeights(const Tensor* w) {
  if (w == nullptr || w->dtype() != DataType::kFloat32 ||
      w->shape().rank() != 4 || w->shape().dim(1) != 1 ||
      w->NumElements() == 0) {
    return;
  }
  const int64_t m = w->shape().dim(0);
  const int64_t taps = w->NumElements() / m;
  const int64_t block_floats = taps * kDepthwiseLanes;
  lane_w_.resize(CeilDiv(m, kDepthwiseLanes) * block_floats);
  for (int64_t oc0 = 0; oc0 < m; oc0 += kDepthwiseLanes) {
    ArrangeLaneWeights(w->data<float>(), m, taps, oc0,
                       lane_w_.data() + oc0 * taps);
  }
  lane_source_ = *w;
}

const std::vector<PackedOperand>* ConvKernel::PackedWeightsFor(
    const Tensor& w) const {
  if (packed_w_.empty() || w.raw_data() != packed_source_.raw_data()) {
    return nullptr;
  }
  return &packed_w_;
}

template <class T>
void ConvKernel::Run(KernelContext& ctx, const Tensor& x, const Tensor& w,
                     const Tensor* bias, Tensor* y, const Window& win,
                     int64_t n, int64_t cg, int64_t mg,
                     const Epilogue& epilogue) const {
  if (y->NumElements() == 0) return;
  if (win.rank != 2) {
    RunAnyRank<T>(ctx, x, w, bias, y, win, n, cg, mg, epilogue);
  } else if (cg == 1) {
    RunDepthwise2D<T>(ctx, x, w, bias, y, Geometry2D(win), n, mg, epilogue);
  } else {
    // W transformed for Winograd or packed at construction (float32
    // only), in the orientation chosen there: transposed products, or the
    // left operand of the phase panels'.
    if constexpr (std::is_same_v<T, float>) {
      const Conv2DGeometry geo = Geometry2D(win);
      if (!winograd_u_.empty() && w.raw_data() == packed_source_.raw_data() &&
          WinogradTileFor(geo) == winograd_tile_) {
        RunWinograd2D(ctx, x, bias, y, geo, n, cg, mg, epilogue);
        return;
      }
      if (const std::vector<PackedOperand>* packed_w = PackedWeightsFor(w)) {
        if (transposed_) {
          RunTransposed2D(ctx, x, *packed_w, bias, y, Geometry2D(win), n, cg,
                          mg, epilogue);
        } else {
          RunPhasePanels2D(ctx, x, *packed_w, bias, y, Geometry2D(win), n, cg,
                           mg, epilogue);
        }
        return;
      }
    }
    RunProduct2D<T>(ctx, x, w, bias, y, Geometry2D(win), n, cg, mg, epilogue);
  }
}

namespace {

// --- ConvTranspose
// ---------------------------------------------------------------

// The gradient of Conv with respect to its input: each output element sums
// x[ic, i] * w[ic, oc, k] over the input positions i and taps k that land on
// it (i * stride - pad_begin + k * dilation = o).
class ConvTransposeKernel : public OpKernel {
 public:
  explicit ConvTransposeKernel(const KernelConstruction& c)
      : attrs_(ReadWindowAttrs(c)),
        group_(c.attr<int64_t>("group")),
        output_padding_(c.attr<std::vector<int64_t>>("output_padding")),
        output_shape_(c.attr<std::vector<int64_t>>("output_shape")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* bias = ctx.num_inputs() > 2 ? &ctx.input(2) : nullptr;
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> in, SpatialDims(x.shape(), "X"));
    const int rank = static_cast<int>(in.size());
    const int64_t n = x.shape().dim(0), c = x.shape().dim(1), g = group_;
    if (w.shape().rank() != x.shape().rank() || w.shape().dim(0) != c ||
        g < 1 || c % g != 0) {
      return InvalidArgumentError("W shape " + w.shape().ToString() +
                                  " and group " + std::to_string(g) +
                                  " do not fit X " + x.shape().ToString());
    }
    const int64_t mg = w.shape().dim(1), m = mg * g, cg = c / g;
    if (bias != nullptr && bias->NumElements() != m) {
      return InvalidArgumentError("B must have " + std::to_string(m) +
                                  " elements");
    }
    Window win;
    win.rank = rank;
    win.in = in;
    for (int i = 2; i < w.shape().rank(); ++i)
      win.kernel.push_back(w.shape().dim(i));
    auto per_dim = [&](const std::vector<int64_t>& v, int64_t fallback) {
      return v.empty() ? std::vector<int64_t>(rank, fallback) : v;
    };
    win.stride = per_dim(attrs_.strides, 1);
    win.dilation = per_dim(attrs_.dilations, 1);
    const std::vector<int64_t> out_pad = per_dim(output_padding_, 0);
    std::vector<int64_t> pads = attrs_.pads;
    if (pads.empty()) pads.assign(2 * rank, 0);
    if (static_cast<int>(win.stride.size()) != rank ||
        static_cast<int>(win.dilation.size()) != rank ||
        static_cast<int>(out_pad.size()) != rank ||
        static_cast<int>(pads.size()) != 2 * rank) {
      return InvalidArgumentError(
          "strides, dilations, output_padding and pads must have one entry "
          "per spatial dim (pads two)");
    }
    WEFT_RETURN_IF_ERROR(CheckWindowAttrBound(win.kernel, "kernel_shape"));
    WEFT_RETURN_IF_ERROR(CheckWindowAttrBound(win.stride, "strides"));
    WEFT_RETURN_IF_ERROR(CheckWindowAttrBound(win.dilation, "dilations"));
    WEFT_RETURN_IF_ERROR(CheckWindowAttrBound(out_pad, "output_padding"));
    WEFT_RETURN_IF_ERROR(CheckWindowAttrBound(pads, "pads"));
    for (int64_t v : output_shape_) {
      if (v < 0 || v > (int64_t{1} << 40)) {
        return InvalidArgumentError("output_shape value " + std::to_string(v) +
                                    " is out of range");
      }
    }
    for (int64_t d : in) {  // stride * d must stay inside int64.
      if (d > (int64_t{1} << 36)) {
        return InvalidArgumentError("spatial dim " + std::to_string(d) +
                                    " is too large for ConvTranspose");
      }
    }
    win.pad_begin.assign(pads.begin(), pads.begin() + rank);
    win.pad_end.assign(pads.begin() + rank, pads.end());
    win.out.resize(rank);
    const std::vector<int64_t> target =
        output_shape_.size() > static_cast<size_t>(rank)
            ? std::vector<int64_t>(output_shape_.end() - rank,
                                   output_shape_.end())
            : output_shape_;
    for (int i = 0; i < rank; ++i) {
      if (win.stride[i] < 1 || win.dilation[i] < 1) {
        return InvalidArgumentError("strides and dilations must be >= 1");
      }
      const int64_t span = (win.kernel[i] - 1) * win.dilation[i] + 1;
      const int64_t full = win.stride[i] * (in[i] - 1) + out_pad[i] + span;
      if (!target.empty() || attrs_.auto_pad == "SAME_UPPER" ||
          attrs_.auto_pad == "SAME_LOWER") {
        win.out[i] = !target.empty() ? target[i] : in[i] * win.stride[i];
        const int64_t total = std::max<int64_t>(0, full - win.out[i]);
        // ONNX: SAME_UPPER puts the odd pad at the end; SAME_LOWER, and an
        // output_shape without auto_pad, at the beginning.
        const int64_t small = total / 2;
        win.pad_begin[i] =
            attrs_.auto_pad == "SAME_UPPER" ? small : total - small;
        win.pad_end[i] = total - win.pad_begin[i];
      } else {
        win.out[i] = full - win.pad_begin[i] - win.pad_end[i];
      }
      if (win.out[i] < 0) {
        return InvalidArgumentError("the output would have a negative size");
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutputUninitialized(
                                          0, OutShape(n, m, win.out)));
    return DispatchAmong<FloatDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      if constexpr (std::is_floating_point_v<T> ||
                    std::is_same_v<T, Float16>) {  // Sums in double.
        Run<T>(ctx, x, w, bias, y, win, n, cg, mg);
      }
      return Status::OK();
    });
  }

 private:
  template <class T>
  void Run(KernelContext& ctx, const Tensor& x, const Tensor& w,
           const Tensor* bias, Tensor* y, const Window& win, int64_t n,
           int64_t cg, int64_t mg) const {
    const int64_t g = group_, m = mg * g;
    const int64_t out_size = win.OutSize(), in_size = win.InSize();
    const int64_t taps = win.KernelSize();
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    T* py = y->data<T>();
    const int rank = win.rank;
    ctx.ParallelFor(
        n * m * out_size, static_cast<double>(cg * taps),
        [&](int64_t begin, int64_t end) {
          for (int64_t idx = begin; idx < end; ++idx) {
            const int64_t o = idx % out_size, oc = (idx / out_size) % m,
                          image = idx / (out_size * m);
            const int64_t group = oc / mg, ocg = oc % mg;
            int64_t coord[3];
            int64_t rest = o;
            for (int d = rank - 1; d >= 0; --d) {
              coord[d] = rest % win.out[d] + win.pad_begin[d];
              rest /= win.out[d];
            }
            double acc = bias ? static_cast<double>(bias->data<T>()[oc]) : 0.0;
            for (int64_t k = 0; k < taps; ++k) {
              int64_t kr = k, offset = 0;
              bool hit = true;
              int64_t pos[3];
              for (int d = rank - 1; d >= 0 && hit; --d) {
                const int64_t shifted =
                    coord[d] - (kr % win.kernel[d]) * win.dilation[d];
                kr /= win.kernel[d];
                if (shifted < 0 || shifted % win.stride[d] != 0) {
                  hit = false;
                  break;
                }
                pos[d] = shifted / win.stride[d];
                hit = pos[d] < win.in[d];
              }
              if (!hit) continue;
              for (int d = 0; d < rank; ++d)
                offset = offset * win.in[d] + pos[d];
              for (int64_t ic = 0; ic < cg; ++ic) {
                const int64_t channel = group * cg + ic;
                acc += static_cast<double>(
                           px[(image * cg * g + channel) * in_size + offset]) *
                       static_cast<double>(pw[(channel * mg + ocg) * taps + k]);
              }
            }
            py[idx] = static_cast<T>(acc);
          }
        });
  }

  const WindowAttrs attrs_;
  const int64_t group_;
  const std::vector<int64_t> output_padding_, output_shape_;
};

// --- Registration
// -----------------------------------------------------------------

// Conv's and FusedConv's output shape (conv_window.h).
Status InferConvShape(InferenceContext& ctx) {
  return InferForwardConvShape(ctx, 1);
}

template <class K>
KernelFactory Factory() {
  return KernelFactoryFor<K>();
}

// Col2Im (ONNX 18): the columns of an im2col, [N, C x prod(block), L],
// summed back into images [N, C, image...], L being the number of block
// positions a convolution window of `block` makes over the image (pads,
// strides, dilations as a Conv's). Each image plane is summed by one
// thread, positions then taps in order.
class Col2ImKernel : public OpKernel {
 public:
  explicit Col2ImKernel(const KernelConstruction& c)
      : attrs_(ReadWindowAttrs(c)) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> image,
                          IntsFromTensor(ctx.input(1), "image_shape"));
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> block,
                          IntsFromTensor(ctx.input(2), "block_shape"));
    if (x.shape().rank() != 3) {
      return InvalidArgumentError(
          "input must be [N, C x prod(block), L], got " + x.shape().ToString());
    }
    if (image.size() != block.size() || image.empty() || image.size() > 3) {
      return InvalidArgumentError(
          "image_shape and block_shape must have the same 1 to 3 values, got " +
          std::to_string(image.size()) + " and " +
          std::to_string(block.size()));
    }
    for (size_t d = 0; d < image.size(); ++d) {
      if (image[d] < 1 || block[d] < 1) {
        return InvalidArgumentError(
            "image_shape and block_shape values must be >= 1");
      }
    }
    WEFT_RETURN_IF_ERROR(CheckWindowAttrBound(block, "block_shape"));
    WEFT_ASSIGN_OR_RETURN(Window win, ForwardWindow(attrs_, image, block));
    const int64_t n = x.shape().dim(0), taps = win.KernelSize();
    const int64_t positions = win.OutSize();
    if (x.shape().dim(1) % taps != 0 || x.shape().dim(2) != positions) {
      return InvalidArgumentError(
          "input " + x.shape().ToString() + " does not hold C x " +
          std::to_string(taps) + " rows of the " + std::to_string(positions) +
          " block positions the image, block, pads, strides and dilations "
          "give");
    }
    const int64_t c = x.shape().dim(1) / taps;
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutput(0, OutShape(n, c, image)));
    const int64_t plane = win.InSize();
    return DispatchAmong<NumericDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y->data<T>();
      ctx.ParallelFor(n * c, static_cast<double>(taps * positions),
                      [&](int64_t b, int64_t e) {
                        for (int64_t p = b; p < e; ++p) {
                          const T* columns = px + p * taps * positions;
                          T* out = py + p * plane;
                          for (int64_t l = 0; l < positions; ++l) {
                            ForEachTap(win, l, [&](int64_t at, int64_t k) {
                              if (at >= 0) {
                                out[at] = static_cast<T>(
                                    out[at] + columns[k * positions + l]);
                              }
                            });
                          }
                        }
                      });
      return Status::OK();
    });
  }

 private:
  const WindowAttrs attrs_;
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Col2Im", "sum im2col columns back into images (ONNX 18)"},
    {"Conv", "N-d convolution with groups, strides, dilations and padding"},
    {"ConvTranspose", "N-d transposed convolution"},
    {"FusedConv",
     "Conv + bias + residual Z + activation in one pass (made by the graph "
     "passes)"},
};

}  // namespace

void RegisterConvOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  {
    OpDefBuilder b("Col2Im");
    b.Input(ArgDef::Typed("input", "T"))
        .Input(ArgDef::Fixed("image_shape", DataType::kInt64))
        .Input(ArgDef::Fixed("block_shape", DataType::kInt64))
        .Output(ArgDef::Typed("output", "T"))
        .Attr("T", AttrType::kType, std::nullopt, kNumericTypesWithHalf);
    CheckRegistered(registry.RegisterOp(WindowAttrsOn(b).Build()));
    CheckRegistered(registry.RegisterKernel("Col2Im", Factory<Col2ImKernel>()));
  }
  {
    OpDefBuilder b("Conv");
    b.Input(ArgDef::Typed("X", "T"))
        .Input(ArgDef::Typed("W", "T"))
        .Input(ArgDef::AnyList("B"))
        .Output(ArgDef::Typed("Y", "T"))
        .Attr("T", AttrType::kType, std::nullopt, kFloatTypesWithHalf)
        .Attr("group", AttrType::kInt, int64_t{1});
    CheckRegistered(registry.RegisterOp(
        WindowAttrsOn(b).SetShapeFn(InferConvShape).Build()));
    CheckRegistered(registry.RegisterKernel("Conv", Factory<ConvKernel>()));
  }
  {
    // Made by the graph passes (src/optimize/): Conv + bias, then + Z (a
    // residual of the output's shape) when given, then the activation.
    OpDefBuilder b("FusedConv");
    b.Input(ArgDef::Typed("X", "T"))
        .Input(ArgDef::Typed("W", "T"))
        .Input(ArgDef::Typed("B", "T"))
        .Input(ArgDef::AnyList("Z"))
        .Output(ArgDef::Typed("Y", "T"))
        .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
        .Attr("group", AttrType::kInt, int64_t{1})
        .Attr("activation", AttrType::kString, std::string())
        .Attr("activation_params", AttrType::kListFloat, std::vector<double>{});
    CheckRegistered(registry.RegisterOp(
        WindowAttrsOn(b).SetShapeFn(InferConvShape).Build()));
    CheckRegistered(
        registry.RegisterKernel("FusedConv", Factory<ConvKernel>()));
    for (const char* activation : kFusableActivations) {
      registry.MarkFusableActivation(activation);
    }
  }
  {
    OpDefBuilder b("ConvTranspose");
    b.Input(ArgDef::Typed("X", "T"))
        .Input(ArgDef::Typed("W", "T"))
        .Input(ArgDef::AnyList("B"))
        .Output(ArgDef::Typed("Y", "T"))
        .Attr("T", AttrType::kType, std::nullopt, kFloatTypesWithHalf)
        .Attr("group", AttrType::kInt, int64_t{1})
        .Attr("output_padding", AttrType::kListInt, std::vector<int64_t>{})
        .Attr("output_shape", AttrType::kListInt, std::vector<int64_t>{});
    CheckRegistered(registry.RegisterOp(WindowAttrsOn(b).Build()));
    CheckRegistered(registry.RegisterKernel("ConvTranspose",
                                            Factory<ConvTransposeKernel>()));
  }
}

}  // namespace weft::internal
