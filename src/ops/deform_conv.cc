// DeformConv (ONNX opset 19; torchvision's deform_conv2d): a 2-D
// convolution whose every tap reads X at its regular place moved by a
// learned offset, bilinearly (a neighbour outside the image reads 0), and
// is scaled by the mask where one is given (DCNv2). X [N, C, H, W], W [M,
// C / group, kH, kW], offset [N, offset_group x kH x kW x 2, oH, oW] as
// (dy, dx) pairs per tap, B [M], mask [N, offset_group x kH x kW, oH, oW].
//
// Per image and band of output pixels, each tap's four neighbours and
// weights are worked out once per offset group (TapRead), the moved taps
// of every channel are gathered into columns [C / group x kH x kW, band],
// and each group is one product of its weights with its columns
// (GemmTile). Bands have a fixed size, so every output element comes from
// the same single-threaded product at any thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "framework/op_registry_impl.h"
#include "kernels/gemm_tile.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// Output pixels per gathered band: one product's columns.
constexpr int64_t kBandPixels = 128;

struct DeformGeometry {
  int64_t batch, channels, height, width;  // X
  int64_t outputs, group, offset_group;    // M and the two groupings
  int64_t kernel_h, kernel_w, out_h, out_w;
  int64_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;

  int64_t taps() const { return kernel_h * kernel_w; }
  int64_t pixels() const { return out_h * out_w; }
  int64_t group_channels() const { return channels / group; }
};

// Where one tap of one output pixel reads, for every channel of its offset
// group alike: the bilinear weights of its four neighbours and their
// offsets in the image (-1 for one outside, which reads 0), the mask's
// factor (1 without a mask), and whether the point is NaN (the value then
// is NaN). Worked out once per offset group, not once per channel.
template <class T>
struct TapRead {
  int64_t at[4];
  T weight[4];
  T scale;
  bool nan;
};

// The read at (y, x). A point a pixel or more outside reads 0 before any
// conversion to an index (an offset may be huge or infinite).
template <class T>
TapRead<T> PlanRead(int64_t height, int64_t width, T y, T x, T scale) {
  TapRead<T> r{{-1, -1, -1, -1}, {0, 0, 0, 0}, scale, false};
  if (std::isnan(y) || std::isnan(x)) {
    r.nan = true;
    return r;
  }
  if (!(y > -1 && y < static_cast<T>(height) && x > -1 &&
        x < static_cast<T>(width))) {
    return r;
  }
  const T y0 = std::floor(y), x0 = std::floor(x);
  const T dy = y - y0, dx = x - x0;
  const auto top = static_cast<int64_t>(y0), left = static_cast<int64_t>(x0);
  const int64_t rows[2] = {top, top + 1}, cols[2] = {left, left + 1};
  const T row_weights[2] = {1 - dy, dy}, col_weights[2] = {1 - dx, dx};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      const int64_t r_at = rows[i], c_at = cols[j];
      if (r_at < 0 || r_at >= height || c_at < 0 || c_at >= width) continue;
      r.at[2 * i + j] = r_at * width + c_at;
      r.weight[2 * i + j] = row_weights[i] * col_weights[j];
    }
  }
  return r;
}

template <class T>
T Read(const T* image, const TapRead<T>& r) {
  if (r.nan) return std::numeric_limits<T>::quiet_NaN();
  T value = 0;
  for (int k = 0; k < 4; ++k) {
    if (r.at[k] >= 0) value += r.weight[k] * image[r.at[k]];
  }
  return value * r.scale;
}

class DeformConvKernel : public OpKernel {
 public:
  explicit DeformConvKernel(const KernelConstruction& c)
      : kernel_shape_(c.attr<std::vector<int64_t>>("kernel_shape")),
        strides_(c.attr<std::vector<int64_t>>("strides")),
        pads_(c.attr<std::vector<int64_t>>("pads")),
        dilations_(c.attr<std::vector<int64_t>>("dilations")),
        group_(c.attr<int64_t>("group")),
        offset_group_(c.attr<int64_t>("offset_group")),
        has_bias_(c.attr<bool>("has_bias")),
        has_mask_(c.attr<bool>("has_mask")) {}

  Status Compute(KernelContext& ctx) const override {
    const int expected = 3 + int{has_bias_} + int{has_mask_};
    if (ctx.num_inputs() != expected) {
      return InvalidArgumentError("expected " + std::to_string(expected) +
                                  " inputs, got " +
                                  std::to_string(ctx.num_inputs()));
    }
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& offset = ctx.input(2);
    const Tensor* bias = has_bias_ ? &ctx.input(3) : nullptr;
    const Tensor* mask = has_mask_ ? &ctx.input(has_bias_ ? 4 : 3) : nullptr;
    WEFT_ASSIGN_OR_RETURN(const DeformGeometry g,
                          Geometry(x.shape(), w.shape()));
    WEFT_RETURN_IF_ERROR(CheckPerTap(offset.shape(), g, 2, "offset"));
    if (mask != nullptr)
      WEFT_RETURN_IF_ERROR(CheckPerTap(mask->shape(), g, 1, "mask"));
    if (bias != nullptr && !(bias->shape() == Shape{g.outputs})) {
      return InvalidArgumentError("B must be [" + std::to_string(g.outputs) +
                                  "], got " + bias->shape().ToString());
    }
    for (const Tensor* t : {&w, &offset, bias, mask}) {
      if (t != nullptr && t->dtype() != x.dtype()) {
        return InvalidArgumentError(
            "W, offset, B and mask must have X's dtype " +
            std::string(DataTypeName(x.dtype())));
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(
                              0, Shape{g.batch, g.outputs, g.out_h, g.out_w}));
    DispatchFloat32Or64(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      Run<T>(ctx, g, x.data<T>(), w.data<T>(), offset.data<T>(),
             bias ? bias->data<T>() : nullptr, mask ? mask->data<T>() : nullptr,
             y->data<T>());
    });
    return Status::OK();
  }

 private:
  StatusOr<DeformGeometry> Geometry(const Shape& xs, const Shape& ws) const {
    if (xs.rank() != 4) {
      return UnimplementedError(
          "DeformConv is implemented in 2-D (X [N, C, "
          "H, W]); X is " +
          xs.ToString());
    }
    if (ws.rank() != 4) {
      return InvalidArgumentError("W must be [M, C / group, kH, kW], got " +
                                  ws.ToString());
    }
    DeformGeometry g{};
    g.batch = xs.dim(0), g.channels = xs.dim(1), g.height = xs.dim(2),
    g.width = xs.dim(3);
    g.outputs = ws.dim(0), g.group = group_, g.offset_group = offset_group_;
    g.kernel_h = ws.dim(2), g.kernel_w = ws.dim(3);
    if (!kernel_shape_.empty() &&
        kernel_shape_ != std::vector<int64_t>{g.kernel_h, g.kernel_w}) {
      return InvalidArgumentError("kernel_shape disagrees with W " +
                                  ws.ToString());
    }
    if (g.group < 1 || g.offset_group < 1 || g.channels % g.group != 0 ||
        g.outputs % g.group != 0 || ws.dim(1) * g.group != g.channels ||
        g.channels % g.offset_group != 0) {
      return InvalidArgumentError(
          "group " + std::to_string(g.group) + " and offset_group " +
          std::to_string(g.offset_group) +
          " must divide X's channels (and group W's outputs), with W [M, C / "
          "group, kH, kW]; X " +
          xs.ToString() + ", W " + ws.ToString());
    }
    auto pair = [](const std::vector<int64_t>& v, size_t size, int64_t fill,
                   size_t i) { return v.size() == size ? v[i] : fill; };
    for (const auto& [list, size, name] :
         {std::tuple{&strides_, size_t{2}, "strides"},
          std::tuple{&dilations_, size_t{2}, "dilations"},
          std::tuple{&pads_, size_t{4}, "pads"}}) {
      if (!list->empty() && list->size() != size) {
        return InvalidArgumentError(std::string(name) + " must have " +
                                    std::to_string(size) + " values");
      }
    }
    g.stride_h = pair(strides_, 2, 1, 0), g.stride_w = pair(strides_, 2, 1, 1);
    g.dilation_h = pair(dilations_, 2, 1, 0);
    g.dilation_w = pair(dilations_, 2, 1, 1);
    g.pad_top = pair(pads_, 4, 0, 0), g.pad_left = pair(pads_, 4, 0, 1);
    const int64_t pad_bottom = pair(pads_, 4, 0, 2),
                  pad_right = pair(pads_, 4, 0, 3);
    if (g.stride_h < 1 || g.stride_w < 1 || g.dilation_h < 1 ||
        g.dilation_w < 1 || g.pad_top < 0 || g.pad_left < 0 || pad_bottom < 0 ||
        pad_right < 0) {
      return InvalidArgumentError(
          "strides and dilations must be positive and pads not negative");
    }
    const int64_t span_h = (g.kernel_h - 1) * g.dilation_h + 1;
    const int64_t span_w = (g.kernel_w - 1) * g.dilation_w + 1;
    const int64_t padded_h = g.height + g.pad_top + pad_bottom;
    const int64_t padded_w = g.width + g.pad_left + pad_right;
    if (g.kernel_h < 1 || g.kernel_w < 1 || padded_h < span_h ||
        padded_w < span_w) {
      return InvalidArgumentError(
          "the kernel (with its dilation) is larger "
          "than the padded image: X " +
          xs.ToString() + ", W " + ws.ToString());
    }
    g.out_h = (padded_h - span_h) / g.stride_h + 1;
    g.out_w = (padded_w - span_w) / g.stride_w + 1;
    return g;
  }

  // offset (per_tap 2) or mask (1): [N, offset_group x taps x per_tap, oH,
  // oW].
  static Status CheckPerTap(const Shape& s, const DeformGeometry& g,
                            int64_t per_tap, const char* name) {
    const Shape want{g.batch, g.offset_group * g.taps() * per_tap, g.out_h,
                     g.out_w};
    if (!(s == want)) {
      return InvalidArgumentError(
          std::string(name) + " must be " + want.ToString() +
          " (offset_group " + std::to_string(g.offset_group) +
          ", kernel and output size), got " + s.ToString());
    }
    return Status::OK();
  }

  // The reads of pixels [first, first + count) of image n, per offset
  // group and tap, into plans (see Run).
  template <class T>
  static void PlanBand(const DeformGeometry& g, int64_t n, int64_t first,
                       int64_t count, const T* offset, const T* mask,
                       TapRead<T>* plans) {
    const int64_t pixels = g.pixels(), taps = g.taps();
    for (int64_t og = 0; og < g.offset_group; ++og) {
      for (int64_t tap = 0; tap < taps; ++tap) {
        const int64_t index = (n * g.offset_group + og) * taps + tap;
        const T* dy = offset + index * 2 * pixels;
        const T* dx = dy + pixels;
        const T* scale = mask ? mask + index * pixels : nullptr;
        const int64_t ki = tap / g.kernel_w, kj = tap % g.kernel_w;
        TapRead<T>* plan = plans + (og * taps + tap) * kBandPixels;
        for (int64_t j = 0; j < count; ++j) {
          const int64_t p = first + j;
          const int64_t oh = p / g.out_w, ow = p % g.out_w;
          const T at_y =
              static_cast<T>(oh * g.stride_h - g.pad_top + ki * g.dilation_h) +
              dy[p];
          const T at_x =
              static_cast<T>(ow * g.stride_w - g.pad_left + kj * g.dilation_w) +
              dx[p];
          plan[j] =
              PlanRead(g.height, g.width, at_y, at_x, scale ? scale[p] : T(1));
        }
      }
    }
  }

  template <class T>
  static void Run(KernelContext& ctx, const DeformGeometry& g, const T* x,
                  const T* w, const T* offset, const T* bias, const T* mask,
                  T* y) {
    const int64_t pixels = g.pixels(), taps = g.taps();
    const int64_t bands = (pixels + kBandPixels - 1) / kBandPixels;
    const int64_t depth = g.group_channels() * taps;  // Rows of the columns.
    const int64_t group_outputs = g.outputs / g.group;
    const int64_t offset_channels = g.channels / g.offset_group;
    const double cost = static_cast<double>(kBandPixels) *
                        (2.0 * static_cast<double>(g.outputs * depth) +
                         12.0 * static_cast<double>(g.channels * taps));
    ctx.ParallelFor(g.batch * bands, cost, [&](int64_t begin, int64_t end) {
      std::vector<T> columns(depth * kBandPixels);
      // plans[(og * taps + tap) * kBandPixels + j]: pixel first + j's read.
      std::vector<TapRead<T>> plans(g.offset_group * taps * kBandPixels);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n = item / bands;
        const int64_t first = item % bands * kBandPixels;
        const int64_t count = std::min(kBandPixels, pixels - first);
        PlanBand(g, n, first, count, offset, mask, plans.data());
        for (int64_t grp = 0; grp < g.group; ++grp) {
          // Columns: row (c, tap), column p - first.
          for (int64_t c = 0; c < g.group_channels(); ++c) {
            const int64_t channel = grp * g.group_channels() + c;
            const int64_t og = channel / offset_channels;
            const T* image =
                x + (n * g.channels + channel) * g.height * g.width;
            for (int64_t tap = 0; tap < taps; ++tap) {
              const TapRead<T>* plan =
                  plans.data() + (og * taps + tap) * kBandPixels;
              T* row = columns.data() + (c * taps + tap) * kBandPixels;
              for (int64_t j = 0; j < count; ++j) row[j] = Read(image, plan[j]);
            }
          }
          T* out = y + (n * g.outputs + grp * group_outputs) * pixels + first;
          GemmTile<T>(group_outputs, count, depth,
                      {w + grp * group_outputs * depth, depth},
                      {columns.data(), kBandPixels}, out, pixels,
                      /*accumulate=*/false);
          if (bias != nullptr) {
            for (int64_t o = 0; o < group_outputs; ++o) {
              const T b = bias[grp * group_outputs + o];
              for (int64_t j = 0; j < count; ++j) out[o * pixels + j] += b;
            }
          }
        }
      }
    });
  }

  const std::vector<int64_t> kernel_shape_, strides_, pads_, dilations_;
  const int64_t group_, offset_group_;
  const bool has_bias_, has_mask_;
};

constexpr OpSummary kSummaries[] = {
    {"DeformConv",
     "2-D convolution whose taps read at learned offsets, bilinearly, with "
     "an optional mask (ONNX 19)"},
};

}  // namespace

void RegisterDeformConvOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("DeformConv")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Typed("W", "T"))
          .Input(ArgDef::Typed("offset", "T"))
          // B when has_bias, then mask when has_mask (ONNX lets a model give
          // a mask without B; the importer says which it gave).
          .Input(ArgDef::AnyList("B_and_mask"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Attr("kernel_shape", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("strides", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("pads", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("dilations", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("group", AttrType::kInt, int64_t{1})
          .Attr("offset_group", AttrType::kInt, int64_t{1})
          .Attr("has_bias", AttrType::kBool, false)
          .Attr("has_mask", AttrType::kBool, false)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, PartialShape({-1, -1, -1, -1}));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "DeformConv", KernelFactoryFor<DeformConvKernel>()));
}

}  // namespace weft::internal
