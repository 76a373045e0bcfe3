// Resize (ONNX opsets 10-19): nearest, linear and cubic interpolation over
// any dimensions, with every coordinate transformation mode, the nearest
// rounding modes, cubic_coeff_a, exclude_outside, tf_crop_and_resize's
// extrapolation value, and opset 18's axes, keep_aspect_ratio_policy and
// antialias.
//
// Interpolation is separable: per dimension and output index, a list of
// (input index, weight) taps is computed once (one table per dimension); an
// output element is the sum over every combination of its dimensions' taps, in
// double, in a fixed order, by one thread, so results do not depend on the
// thread count.
#include <algorithm>
#include <cmath>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

struct Tap {
  int64_t index;  // -1: outside (tf_crop_and_resize's extrapolation).
  double weight;
};

struct ResizeAttrs {
  std::string mode, transform, nearest;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  // Linear and cubic filters stretched by 1 / scale where downscaling.
  bool antialias = false;
};

// Keys cubic convolution (a = cubic_coeff_a) at distance |t|.
double CubicWeight(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

// The input coordinate of output index `o` along one dimension of `out_int`
// outputs. As the ONNX reference, the resized length is in * scale before
// rounding.
double SourceCoordinate(const ResizeAttrs& a, int64_t o, double scale,
                        int64_t in, int64_t out_int, double roi_start,
                        double roi_end) {
  const std::string& m = a.transform;
  const double out = static_cast<double>(in) * scale;
  if (m == "half_pixel_symmetric") {  // Opset 19: centred on the input.
    const double adjustment = static_cast<double>(out_int) / out;
    const double offset = static_cast<double>(in) / 2 * (1 - adjustment);
    return offset + (o + 0.5) / scale - 0.5;
  }
  if (m == "align_corners") {
    return out == 1 ? 0.0 : static_cast<double>(o) * (in - 1) / (out - 1);
  }
  if (m == "asymmetric") return o / scale;
  if (m == "tf_half_pixel_for_nn") return (o + 0.5) / scale;
  if (m == "pytorch_half_pixel") {
    return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  }
  if (m == "tf_crop_and_resize") {
    return out > 1 ? roi_start * (in - 1) +
                         o * (roi_end - roi_start) * (in - 1) / (out - 1)
                   : 0.5 * (roi_start + roi_end) * (in - 1);
  }
  return (o + 0.5) / scale - 0.5;  // half_pixel
}

int64_t NearestIndex(const std::string& mode, double x) {
  const double f = std::floor(x);
  const bool half = x - f == 0.5;
  if (mode == "floor") return static_cast<int64_t>(f);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (mode == "round_prefer_ceil") {
    return static_cast<int64_t>(half ? f + 1 : std::round(x));
  }
  return static_cast<int64_t>(half ? f : std::round(x));  // round_prefer_floor
}

// The filter taps around x = base + t (t in [0, 1)) of an antialiased
// linear or cubic resize at `scale` (ONNX 18): the filter stretched by
// 1 / scale where scale < 1, each tap's weight normalized by their sum.
std::vector<Tap> AntialiasedTaps(const ResizeAttrs& a, int64_t base, double t,
                                 double scale) {
  const double s = std::min(scale, 1.0);
  const bool linear = a.mode == "linear";
  // Offsets start .. 1 - start hold the filter's support, |d| < 1 (linear)
  // or 2 (cubic) in output steps.
  const int64_t start =
      static_cast<int64_t>(std::floor((linear ? -1.0 : -2.0) / s)) + 1;
  std::vector<Tap> taps;
  double sum = 0;
  for (int64_t i = start; i <= 1 - start; ++i) {
    const double d = (static_cast<double>(i) - t) * s;
    const double w = linear ? std::clamp(1 - std::fabs(d), 0.0, 1.0)
                            : CubicWeight(d, a.cubic_a);
    taps.push_back({base + i, w});
    sum += w;
  }
  for (Tap& tap : taps) tap.weight = sum == 0 ? 0 : tap.weight / sum;
  return taps;
}

// The taps of output index o (of out_int) along a dimension of `in`
// elements.
std::vector<Tap> TapsFor(const ResizeAttrs& a, int64_t o, double scale,
                         int64_t in, int64_t out_int, double roi_start,
                         double roi_end) {
  const double x =
      SourceCoordinate(a, o, scale, in, out_int, roi_start, roi_end);
  if (a.transform == "tf_crop_and_resize" && (x < 0 || x > in - 1)) {
    return {{-1, 1.0}};
  }
  auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  if (a.mode == "nearest") return {{clamp(NearestIndex(a.nearest, x)), 1.0}};
  const int64_t base = static_cast<int64_t>(std::floor(x));
  const double t = x - static_cast<double>(base);
  std::vector<Tap> taps;
  if (a.antialias) {
    taps = AntialiasedTaps(a, base, t, scale);
  } else if (a.mode == "linear") {
    taps = {{base, 1 - t}, {base + 1, t}};
  } else {  // cubic
    for (int64_t k = -1; k <= 2; ++k) {
      taps.push_back(
          {base + k, CubicWeight(t - static_cast<double>(k), a.cubic_a)});
    }
  }
  if (a.exclude_outside) {  // Drop taps outside, renormalise the rest.
    double sum = 0;
    for (Tap& tap : taps) {
      if (tap.index < 0 || tap.index >= in) tap.weight = 0;
      sum += tap.weight;
    }
    for (Tap& tap : taps) tap.weight = sum == 0 ? 0 : tap.weight / sum;
  }
  std::vector<Tap> kept;
  for (Tap tap : taps) {
    if (tap.weight == 0) continue;
    tap.index = clamp(tap.index);  // Edge padding, as the ONNX reference.
    kept.push_back(tap);
  }
  if (kept.empty()) kept.push_back({clamp(base), 0.0});
  return kept;
}

// The taps of every output index along one dimension, in one array: index
// o's are taps[first[o]] to taps[first[o + 1] - 1].
struct TapTable {
  std::vector<Tap> taps;
  std::vector<int64_t> first;
};

// The most a dimension's table may take. Its size grows with that
// dimension's output length (16 bytes a tap), so a one-dimensional resize
// to 2^31 samples would need tens of GiB for it alone.
constexpr int64_t kMaxTapTableBytes = int64_t{1} << 30;

// The most taps one output index has: one (nearest, and outside a
// tf_crop_and_resize roi), two (linear), four (cubic), or an antialiased
// filter's span at `scale`.
int64_t MaxTapsPerIndex(const ResizeAttrs& a, double scale) {
  if (a.mode == "nearest") return 1;
  if (!a.antialias || scale >= 1) return a.mode == "linear" ? 2 : 4;
  const double start = std::floor((a.mode == "linear" ? -1.0 : -2.0) / scale);
  return static_cast<int64_t>(std::min(-2 * start, 1e18));
}

// Dimension d's table, or ResourceExhausted when it would pass
// kMaxTapTableBytes.
StatusOr<TapTable> TapTableFor(const ResizeAttrs& a, int d, double scale,
                               int64_t in, int64_t out, double roi_start,
                               double roi_end) {
  const double taps = static_cast<double>(MaxTapsPerIndex(a, scale));
  const double bytes =
      static_cast<double>(out) * (taps * sizeof(Tap) + sizeof(int64_t));
  if (bytes > static_cast<double>(kMaxTapTableBytes)) {
    return ResourceExhaustedError(
        "the interpolation table of dimension " + std::to_string(d) + " (" +
        std::to_string(out) + " outputs of up to " +
        std::to_string(static_cast<int64_t>(taps)) + " taps) would take " +
        std::to_string(static_cast<int64_t>(bytes / (1 << 20))) +
        " MiB, past the 1024 MiB a Resize may use for it");
  }
  TapTable table;
  table.first.reserve(static_cast<size_t>(out) + 1);
  table.first.push_back(0);
  for (int64_t o = 0; o < out; ++o) {
    for (const Tap& tap : TapsFor(a, o, scale, in, out, roi_start, roi_end)) {
      table.taps.push_back(tap);
    }
    table.first.push_back(static_cast<int64_t>(table.taps.size()));
  }
  return table;
}

class ResizeKernel : public OpKernel {
 public:
  explicit ResizeKernel(const KernelConstruction& c)
      : has_roi_(c.attr<bool>("has_roi")),
        has_scales_(c.attr<bool>("has_scales")),
        has_sizes_(c.attr<bool>("has_sizes")),
        axes_(c.attr<std::vector<int64_t>>("axes")),
        policy_(c.attr<std::string>("keep_aspect_ratio_policy")) {
    attrs_.mode = c.attr<std::string>("mode");
    attrs_.transform = c.attr<std::string>("coordinate_transformation_mode");
    attrs_.nearest = c.attr<std::string>("nearest_mode");
    attrs_.cubic_a = c.attr<double>("cubic_coeff_a");
    attrs_.exclude_outside = c.attr<int64_t>("exclude_outside") != 0;
    attrs_.extrapolation = c.attr<double>("extrapolation_value");
    attrs_.antialias = c.attr<int64_t>("antialias") != 0;
  }

  // Per dimension of X: the scale, the output length and the roi.
  struct ResizeGeometry {
    std::vector<double> scale, roi_start, roi_end;
    std::vector<int64_t> out_dims;
  };

  // The geometry the node's roi, scales or sizes (each for the dimensions
  // `axes_` lists, all when empty) and keep_aspect_ratio_policy give; the
  // other dimensions keep their length, at scale 1.
  // NOLINTNEXTLINE(readability-function-size)
  StatusOr<ResizeGeometry> GeometryOf(const Shape& in, const Tensor* roi,
                                      const Tensor* scales,
                                      const Tensor* sizes) const {
    const int rank = in.rank();
    std::vector<int> axes;
    std::vector<bool> listed(static_cast<size_t>(rank), axes_.empty());
    if (axes_.empty()) {
      for (int d = 0; d < rank; ++d) axes.push_back(d);
    }
    for (int64_t given : axes_) {
      WEFT_ASSIGN_OR_RETURN(const int d, NormalizeAxis(given, rank));
      if (listed[static_cast<size_t>(d)]) {
        return InvalidArgumentError("axes lists axis " + std::to_string(d) +
                                    " twice");
      }
      listed[static_cast<size_t>(d)] = true;
      axes.push_back(d);
    }
    const int64_t n = static_cast<int64_t>(axes.size());
    ResizeGeometry g{std::vector<double>(rank, 1.0),
                     std::vector<double>(rank, 0.0),
                     std::vector<double>(rank, 1.0), in.dims()};
    if (roi != nullptr && attrs_.transform == "tf_crop_and_resize") {
      if (roi->NumElements() != 2 * n) {
        return InvalidArgumentError("roi must have 2 x " + std::to_string(n) +
                                    " values, one start and one end for "
                                    "each resized axis");
      }
      for (int64_t i = 0; i < 2 * n; ++i) {
        const double v = roi->ValueAsDouble(i);
        if (!std::isfinite(v)) {
          return InvalidArgumentError("roi[" + std::to_string(i) + "] is " +
                                      std::to_string(v) +
                                      ": it must be finite");
        }
        (i < n ? g.roi_start[axes[i]] : g.roi_end[axes[i - n]]) = v;
      }
    }
    if (scales != nullptr) {
      if (scales->NumElements() != n || scales->dtype() != DataType::kFloat32) {
        return InvalidArgumentError("scales must be " + std::to_string(n) +
                                    " float32 values");
      }
      for (int64_t i = 0; i < n; ++i) {
        const int d = axes[i];
        g.scale[d] = scales->data<float>()[i];
        const double size = std::floor(in.dim(d) * g.scale[d]);
        if (!(g.scale[d] > 0) || !(size < 1e12)) {
          return InvalidArgumentError("scale " + std::to_string(g.scale[d]) +
                                      " for dimension " + std::to_string(d) +
                                      " is not positive and finite");
        }
        g.out_dims[d] = static_cast<int64_t>(size);
      }
      return g;
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> s,
                          IntsFromTensor(*sizes, "sizes"));
    if (static_cast<int64_t>(s.size()) != n) {
      return InvalidArgumentError("sizes must have " + std::to_string(n) +
                                  " values");
    }
    for (int64_t i = 0; i < n; ++i) {
      const int d = axes[i];
      if (s[i] < 0) return InvalidArgumentError("sizes must be >= 0");
      g.out_dims[d] = s[i];
      g.scale[d] = in.dim(d) == 0 ? 1.0
                                  : static_cast<double>(s[i]) /
                                        static_cast<double>(in.dim(d));
    }
    if (policy_ != "stretch" && n > 0) {
      // One scale for every resized axis: the smallest (not_larger) or the
      // largest (not_smaller) of theirs, each length rounded half up.
      double one = g.scale[axes[0]];
      for (int d : axes) {
        one = policy_ == "not_larger" ? std::min(one, g.scale[d])
                                      : std::max(one, g.scale[d]);
      }
      for (int d : axes) {
        const double size = std::floor(one * in.dim(d) + 0.5);
        if (!(size < 1e12)) {
          return InvalidArgumentError("the output is too large");
        }
        g.scale[d] = one;
        g.out_dims[d] = static_cast<int64_t>(size);
      }
    }
    return g;
  }

  // One piece: ONNX Resize's inputs (roi, scales, sizes, each optional and
  // each opset's) resolve to one output shape and one coordinate map, which
  // the interpolation loop at the end reads; the loop itself is short.
  // NOLINTNEXTLINE(readability-function-size)
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int rank = x.shape().rank();
    int next = 1;
    auto optional_input = [&](bool present) -> const Tensor* {
      if (!present) return nullptr;
      const Tensor* t = next < ctx.num_inputs() ? &ctx.input(next) : nullptr;
      ++next;
      return t != nullptr && t->NumElements() > 0 ? t : nullptr;
    };
    const Tensor* roi = optional_input(has_roi_);
    const Tensor* scales = optional_input(has_scales_);
    const Tensor* sizes = optional_input(has_sizes_);
    if ((scales == nullptr) == (sizes == nullptr)) {
      return InvalidArgumentError(
          "exactly one of scales and sizes must be given");
    }
    WEFT_ASSIGN_OR_RETURN(ResizeGeometry geometry,
                          GeometryOf(x.shape(), roi, scales, sizes));
    const std::vector<double>& scale = geometry.scale;
    const std::vector<double>& roi_start = geometry.roi_start;
    const std::vector<double>& roi_end = geometry.roi_end;
    const std::vector<int64_t>& out_dims = geometry.out_dims;
    Shape out_shape(out_dims);
    if (!out_shape.IsValid())
      return InvalidArgumentError("the output is too large");
    if (out_shape.NumElements() == 0) {
      return ctx.AllocateOutputUninitialized(0, out_shape).status();
    }
    if (x.NumElements() == 0) {
      return InvalidArgumentError(
          "cannot resize an empty input to a non-empty output");
    }
    // Per dimension, per output index: its taps (before the output, so
    // that a table refused leaves nothing allocated).
    std::vector<TapTable> tables;
    for (int d = 0; d < rank; ++d) {
      WEFT_ASSIGN_OR_RETURN(TapTable table,
                            TapTableFor(attrs_, d, scale[d], x.shape().dim(d),
                                        out_dims[d], roi_start[d], roi_end[d]));
      tables.push_back(std::move(table));
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, out_shape));
    std::vector<int64_t> strides(rank, 1);
    for (int d = rank - 2; d >= 0; --d) {
      strides[d] = strides[d + 1] * x.shape().dim(d + 1);
    }
    return DispatchNumeric(x.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y->data<T>();
      const double extrapolation = attrs_.extrapolation;
      ctx.ParallelFor(y->NumElements(), 8.0, [&](int64_t b, int64_t e) {
        // Per dimension: this output's taps and how many.
        std::vector<const Tap*> per_dim(rank);
        std::vector<int64_t> count(rank), pick(rank);
        for (int64_t o = b; o < e; ++o) {
          int64_t rest = o;
          bool outside = false;
          for (int d = rank - 1; d >= 0; --d) {
            const TapTable& table = tables[d];
            const int64_t index = rest % out_dims[d];
            per_dim[d] = table.taps.data() + table.first[index];
            count[d] = table.first[index + 1] - table.first[index];
            rest /= out_dims[d];
            outside = outside || per_dim[d][0].index < 0;
          }
          if (outside) {
            py[o] = static_cast<T>(extrapolation);
            continue;
          }
          // Every combination of the dimensions' taps, odometer order.
          std::fill(pick.begin(), pick.end(), 0);
          double sum = 0;
          while (true) {
            double w = 1;
            int64_t offset = 0;
            for (int d = 0; d < rank; ++d) {
              const Tap& tap = per_dim[d][pick[d]];
              w *= tap.weight;
              offset += tap.index * strides[d];
            }
            sum += w * static_cast<double>(px[offset]);
            int d = rank - 1;
            while (d >= 0 && ++pick[d] == count[d]) pick[d--] = 0;
            if (d < 0) break;
          }
          if constexpr (std::is_integral_v<T>) {
            py[o] = static_cast<T>(std::nearbyint(sum));
          } else {
            py[o] = static_cast<T>(sum);
          }
        }
      });
      return Status::OK();
    });
  }

 private:
  ResizeAttrs attrs_;
  const bool has_roi_, has_scales_, has_sizes_;
  const std::vector<int64_t> axes_;
  const std::string policy_;  // keep_aspect_ratio_policy.
};

bool OneOf(const std::string& v, std::initializer_list<const char*> options) {
  for (const char* o : options) {
    if (v == o) return true;
  }
  return false;
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Resize", "resize by scales or sizes: nearest, linear or cubic"},
};

}  // namespace

void RegisterResizeOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Resize")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::AnyList("roi_scales_sizes"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kAllNumericTypes)
          // Which of ONNX's optional roi, scales, sizes the node passes, in
          // that order, after X.
          .Attr("has_roi", AttrType::kBool, false)
          .Attr("has_scales", AttrType::kBool, false)
          .Attr("has_sizes", AttrType::kBool, false)
          .Attr("mode", AttrType::kString, std::string("nearest"))
          .Attr("coordinate_transformation_mode", AttrType::kString,
                std::string("half_pixel"))
          .Attr("nearest_mode", AttrType::kString,
                std::string("round_prefer_floor"))
          .Attr("cubic_coeff_a", AttrType::kFloat, -0.75)
          .Attr("exclude_outside", AttrType::kInt, int64_t{0})
          .Attr("extrapolation_value", AttrType::kFloat, 0.0)
          // Opset 18.
          .Attr("antialias", AttrType::kInt, int64_t{0})
          .Attr("axes", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("keep_aspect_ratio_policy", AttrType::kString,
                std::string("stretch"))
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const auto& mode = ctx.attr<std::string>("mode");
            const auto& policy =
                ctx.attr<std::string>("keep_aspect_ratio_policy");
            if (!OneOf(policy, {"stretch", "not_larger", "not_smaller"})) {
              return InvalidArgumentError(
                  "keep_aspect_ratio_policy \"" + policy +
                  "\" is not stretch, not_larger or not_smaller");
            }
            if (ctx.attr<int64_t>("antialias") != 0 && mode == "nearest") {
              return InvalidArgumentError(
                  "antialias applies to linear and cubic resizing, not "
                  "nearest");
            }
            const auto& transform =
                ctx.attr<std::string>("coordinate_transformation_mode");
            const auto& nearest = ctx.attr<std::string>("nearest_mode");
            if (!OneOf(mode, {"nearest", "linear", "cubic"})) {
              return InvalidArgumentError("mode \"" + mode +
                                          "\" is not nearest, linear or cubic");
            }
            if (!OneOf(transform,
                       {"half_pixel", "pytorch_half_pixel", "align_corners",
                        "asymmetric", "tf_half_pixel_for_nn",
                        "tf_crop_and_resize", "half_pixel_symmetric"})) {
              return InvalidArgumentError("coordinate_transformation_mode \"" +
                                          transform + "\" is not supported");
            }
            if (!OneOf(nearest, {"round_prefer_floor", "round_prefer_ceil",
                                 "floor", "ceil"})) {
              return InvalidArgumentError("nearest_mode \"" + nearest +
                                          "\" is not supported");
            }
            ctx.set_output(0, PartialShape::UnknownRank());
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Resize", KernelFactoryFor<ResizeKernel>()));
}

}  // namespace weft::internal
