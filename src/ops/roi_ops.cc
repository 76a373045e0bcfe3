// RoiAlign and MaxUnpool (ONNX names).
//
// RoiAlign pools each region of interest of an N x C x H x W feature map
// into output_height x output_width bins, each the average (or maximum)
// of bilinear samples on a regular grid inside the bin, as Mask R-CNN
// defines it (ONNX's reference, ONNX Runtime's kernel). MaxUnpool scatters
// values back to the flat positions MaxPool's Indices recorded, zeros
// elsewhere. Every output element is computed by one thread in a fixed
// order, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/conv_window.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// One bilinear sample at (y, x) of an h x w plane: the four neighbours'
// offsets and weights; all weights 0 outside the plane's margin.
struct Sample {
  int64_t offset[4] = {0, 0, 0, 0};
  float weight[4] = {0, 0, 0, 0};
};

Sample BilinearSample(float y, float x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0f || y > static_cast<float>(h) || x < -1.0f ||
      x > static_cast<float>(w)) {
    return s;
  }
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x);
  int64_t y1, x1;
  if (y0 >= h - 1) {
    y0 = y1 = h - 1;
    y = static_cast<float>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x0 = x1 = w - 1;
    x = static_cast<float>(x0);
  } else {
    x1 = x0 + 1;
  }
  const float ly = y - static_cast<float>(y0), lx = x - static_cast<float>(x0);
  const float hy = 1.0f - ly, hx = 1.0f - lx;
  s.offset[0] = y0 * w + x0;
  s.offset[1] = y0 * w + x1;
  s.offset[2] = y1 * w + x0;
  s.offset[3] = y1 * w + x1;
  s.weight[0] = hy * hx;
  s.weight[1] = hy * lx;
  s.weight[2] = ly * hx;
  s.weight[3] = ly * lx;
  return s;
}

class RoiAlignKernel : public OpKernel {
 public:
  explicit RoiAlignKernel(const KernelConstruction& c)
      : half_pixel_(c.attr<std::string>("coordinate_transformation_mode") ==
                    "half_pixel"),
        max_mode_(c.attr<std::string>("mode") == "max"),
        out_h_(c.attr<int64_t>("output_height")),
        out_w_(c.attr<int64_t>("output_width")),
        sampling_ratio_(c.attr<int64_t>("sampling_ratio")),
        spatial_scale_(static_cast<float>(c.attr<double>("spatial_scale"))) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& rois = ctx.input(1);
    const Tensor& batch = ctx.input(2);
    if (x.shape().rank() != 4) {
      return InvalidArgumentError("X must be N x C x H x W, got " +
                                  x.shape().ToString());
    }
    const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
    const int64_t h = x.shape().dim(2), w = x.shape().dim(3);
    if (rois.shape().rank() != 2 || rois.shape().dim(1) != 4) {
      return InvalidArgumentError("rois must be num_rois x 4, got " +
                                  rois.shape().ToString());
    }
    const int64_t num_rois = rois.shape().dim(0);
    if (batch.shape().rank() != 1 || batch.NumElements() != num_rois) {
      return InvalidArgumentError("batch_indices has shape " +
                                  batch.shape().ToString() + " for " +
                                  std::to_string(num_rois) + " rois");
    }
    const int64_t* batch_of = batch.data<int64_t>();
    for (int64_t r = 0; r < num_rois; ++r) {
      if (batch_of[r] < 0 || batch_of[r] >= n) {
        return InvalidArgumentError("batch_indices[" + std::to_string(r) +
                                    "] = " + std::to_string(batch_of[r]) +
                                    " is outside [0, " + std::to_string(n) +
                                    ")");
      }
    }
    // float32 or float64 (the op's T).
    Status status;
    auto run = [&](auto zero) {
      using T = decltype(zero);
      const T* rd = rois.data<T>();
      std::vector<RoiGrid> grids(static_cast<size_t>(num_rois));
      for (int64_t r = 0; r < num_rois; ++r) {
        auto grid = GridOf(rd + r * 4, r);
        if (!grid.ok()) {
          status = grid.status();
          return;
        }
        grids[r] = *grid;
      }
      auto y = ctx.AllocateOutputUninitialized(
          0, Shape{num_rois, c, out_h_, out_w_});
      if (!y.ok()) {
        status = y.status();
        return;
      }
      const T* xd = x.data<T>();
      T* yd = (*y)->template data<T>();
      const double cost = 16.0 * static_cast<double>(out_h_ * out_w_);
      ctx.ParallelFor(num_rois * c, cost, [&](int64_t begin, int64_t end) {
        for (int64_t rc = begin; rc < end; ++rc) {
          const int64_t r = rc / c, ch = rc % c;
          Pool(grids[r], xd + (batch_of[r] * c + ch) * h * w, h, w,
               yd + rc * out_h_ * out_w_);
        }
      });
    };
    DispatchFloat32Or64(x.dtype(), run);
    return status;
  }

 private:
  // Samples per bin above this are refused: a hostile roi of 1e30 pixels
  // would otherwise sample for ever (or overflow the grid's size).
  static constexpr double kMaxSamplesPerBin = double{1 << 20};

  // Where one roi's bins start and how they are sampled, in float as ONNX's
  // reference computes them.
  struct RoiGrid {
    float start_h = 0, start_w = 0, bin_h = 0, bin_w = 0;
    int64_t grid_h = 0, grid_w = 0;  // Samples per bin, each way.
  };

  // Roi r's grid; an error for a coordinate that is not finite, or a grid
  // of more than kMaxSamplesPerBin samples per bin.
  template <class T>
  StatusOr<RoiGrid> GridOf(const T* roi, int64_t r) const {
    for (int k = 0; k < 4; ++k) {
      if (!std::isfinite(static_cast<double>(roi[k]))) {
        return InvalidArgumentError("rois[" + std::to_string(r) +
                                    "] holds a value that is not finite");
      }
    }
    const float offset = half_pixel_ ? 0.5f : 0.0f;
    RoiGrid g;
    g.start_w = static_cast<float>(roi[0]) * spatial_scale_ - offset;
    g.start_h = static_cast<float>(roi[1]) * spatial_scale_ - offset;
    const float end_w = static_cast<float>(roi[2]) * spatial_scale_ - offset;
    const float end_h = static_cast<float>(roi[3]) * spatial_scale_ - offset;
    float roi_w = end_w - g.start_w, roi_h = end_h - g.start_h;
    if (!half_pixel_) {  // The older definition: at least one pixel.
      roi_w = std::max(roi_w, 1.0f);
      roi_h = std::max(roi_h, 1.0f);
    }
    g.bin_h = roi_h / static_cast<float>(out_h_);
    g.bin_w = roi_w / static_cast<float>(out_w_);
    // Counted in double before any conversion: a float64 roi of 1e300, or
    // one that overflows float, gives an infinite count, refused here.
    auto samples = [&](float bin) {
      return sampling_ratio_ > 0
                 ? static_cast<double>(sampling_ratio_)
                 : std::fabs(std::ceil(static_cast<double>(bin)));
    };
    const double gh = samples(g.bin_h), gw = samples(g.bin_w);
    // Each way too, before converting: an empty way (0 samples) must not
    // let a huge other way through.
    if (!(gh <= kMaxSamplesPerBin && gw <= kMaxSamplesPerBin &&
          gh * gw <= kMaxSamplesPerBin)) {
      return InvalidArgumentError(
          "roi " + std::to_string(r) + " would take " +
          std::to_string(gh * gw) + " samples per bin; at most " +
          std::to_string(static_cast<int64_t>(kMaxSamplesPerBin)) +
          " (a smaller sampling_ratio, or a roi of sane size)");
    }
    // A negative extent (end before start) samples nothing, as before.
    g.grid_h = sampling_ratio_ > 0 ? sampling_ratio_
                                   : static_cast<int64_t>(std::ceil(g.bin_h));
    g.grid_w = sampling_ratio_ > 0 ? sampling_ratio_
                                   : static_cast<int64_t>(std::ceil(g.bin_w));
    return g;
  }

  template <class T>
  void Pool(const RoiGrid& g, const T* plane, int64_t h, int64_t w,
            T* out) const {
    const float count =
        static_cast<float>(std::max<int64_t>(g.grid_h * g.grid_w, 1));
    for (int64_t ph = 0; ph < out_h_; ++ph) {
      for (int64_t pw = 0; pw < out_w_; ++pw) {
        float acc = 0.0f;
        bool first = true;
        for (int64_t iy = 0; iy < g.grid_h; ++iy) {
          const float yy = g.start_h + static_cast<float>(ph) * g.bin_h +
                           (static_cast<float>(iy) + 0.5f) * g.bin_h /
                               static_cast<float>(g.grid_h);
          for (int64_t ix = 0; ix < g.grid_w; ++ix) {
            const float xx = g.start_w + static_cast<float>(pw) * g.bin_w +
                             (static_cast<float>(ix) + 0.5f) * g.bin_w /
                                 static_cast<float>(g.grid_w);
            const Sample s = BilinearSample(yy, xx, h, w);
            if (max_mode_) {
              // ONNX's definition: the largest weighted neighbour.
              float v = s.weight[0] * static_cast<float>(plane[s.offset[0]]);
              for (int k = 1; k < 4; ++k) {
                v = std::max(
                    v, s.weight[k] * static_cast<float>(plane[s.offset[k]]));
              }
              acc = first ? v : std::max(acc, v);
              first = false;
            } else {
              for (int k = 0; k < 4; ++k) {
                acc += s.weight[k] * static_cast<float>(plane[s.offset[k]]);
              }
            }
          }
        }
        out[ph * out_w_ + pw] = static_cast<T>(max_mode_ ? acc : acc / count);
      }
    }
  }

  const bool half_pixel_;
  const bool max_mode_;
  const int64_t out_h_, out_w_, sampling_ratio_;
  const float spatial_scale_;
};

Status CheckRoiAlignAttrs(InferenceContext& ctx) {
  const std::string& mode = ctx.attr<std::string>("mode");
  if (mode != "avg" && mode != "max") {
    return InvalidArgumentError("mode \"" + mode + "\" is not one of avg, max");
  }
  const std::string& transform =
      ctx.attr<std::string>("coordinate_transformation_mode");
  if (transform != "half_pixel" && transform != "output_half_pixel") {
    return InvalidArgumentError("coordinate_transformation_mode \"" +
                                transform +
                                "\" is not one of half_pixel, "
                                "output_half_pixel");
  }
  for (const char* name : {"output_height", "output_width"}) {
    if (ctx.attr<int64_t>(name) < 1) {
      return InvalidArgumentError(std::string(name) + " must be >= 1");
    }
  }
  if (ctx.attr<int64_t>("sampling_ratio") < 0) {
    return InvalidArgumentError("sampling_ratio must be >= 0");
  }
  ctx.set_output(0, PartialShape::UnknownRank());
  return Status::OK();
}

// MaxUnpool (X, I[, output_shape]): Y zero but Y.flat[I[j]] = X.flat[j].
class MaxUnpoolKernel : public OpKernel {
 public:
  explicit MaxUnpoolKernel(const KernelConstruction& c)
      : attrs_(ReadWindowAttrs(c)) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    if (!(indices.shape() == x.shape())) {
      return InvalidArgumentError("I has shape " + indices.shape().ToString() +
                                  ", X " + x.shape().ToString());
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> in, SpatialDims(x.shape(), "X"));
    if (attrs_.kernel.size() != in.size()) {
      return InvalidArgumentError(
          "kernel_shape has " + std::to_string(attrs_.kernel.size()) +
          " entries for " + std::to_string(in.size()) + " spatial dims");
    }
    // The unpooled shape follows from the window; indices address it.
    const size_t rank = in.size();
    std::vector<int64_t> spatial(rank);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t stride = attrs_.strides.empty() ? 1 : attrs_.strides[i];
      const int64_t pads =
          attrs_.pads.empty() ? 0 : attrs_.pads[i] + attrs_.pads[i + rank];
      spatial[i] = (in[i] - 1) * stride + attrs_.kernel[i] - pads;
    }
    const Shape unpooled =
        OutShape(x.shape().dim(0), x.shape().dim(1), spatial);
    // A larger output_shape holds the unpooled tensor at its origin (ONNX's
    // reference); a smaller one cannot.
    Shape out_shape = unpooled;
    if (ctx.num_inputs() > 2) {
      const Tensor& shape = ctx.input(2);
      if (shape.dtype() != DataType::kInt64 || shape.shape().rank() != 1 ||
          shape.NumElements() != x.shape().rank()) {
        return InvalidArgumentError("output_shape must be int64 with " +
                                    std::to_string(x.shape().rank()) +
                                    " entries, got " +
                                    shape.shape().ToString());
      }
      out_shape = Shape(std::vector<int64_t>(
          shape.data<int64_t>(), shape.data<int64_t>() + shape.NumElements()));
      for (int d = 0; d < out_shape.rank(); ++d) {
        const bool same = d < 2;  // N and C stay.
        if (same ? out_shape.dim(d) != unpooled.dim(d)
                 : out_shape.dim(d) < unpooled.dim(d)) {
          return InvalidArgumentError("output_shape " + out_shape.ToString() +
                                      " does not hold the unpooled shape " +
                                      unpooled.ToString());
        }
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, out_shape));
    const int64_t total = unpooled.NumElements();
    const int64_t* idx = indices.data<int64_t>();
    std::vector<int64_t> target(static_cast<size_t>(x.NumElements()));
    for (int64_t j = 0; j < x.NumElements(); ++j) {
      if (idx[j] < 0 || idx[j] >= total) {
        return InvalidArgumentError(
            "I[" + std::to_string(j) + "] = " + std::to_string(idx[j]) +
            " is outside the unpooled shape " + unpooled.ToString());
      }
      // The index's coordinates in the unpooled shape, placed in the output.
      int64_t rest = idx[j], flat = 0, scale = 1;
      for (int d = unpooled.rank() - 1; d >= 0; --d) {
        flat += (rest % unpooled.dim(d)) * scale;
        rest /= unpooled.dim(d);
        scale *= out_shape.dim(d);
      }
      target[j] = flat;
    }
    // One thread, in index order: a position named twice keeps the last
    // value, as ONNX's reference does.
    return DispatchDtype(x.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      const T* xd = x.data<T>();
      T* yd = y->data<T>();
      for (int64_t j = 0; j < x.NumElements(); ++j) yd[target[j]] = xd[j];
      return Status::OK();
    });
  }

 private:
  WindowAttrs attrs_;
};

Status CheckMaxUnpoolAttrs(InferenceContext& ctx) {
  if (ctx.attr<std::vector<int64_t>>("kernel_shape").empty()) {
    return InvalidArgumentError("kernel_shape is required");
  }
  return CheckWindowAttrs(ctx);
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"MaxUnpool",
     "scatter values back to the positions MaxPool's indices name"},
    {"RoiAlign", "bilinear average or max pooling of regions of interest"},
};

}  // namespace

void RegisterRoiOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("RoiAlign")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Typed("rois", "T"))
          .Input(ArgDef::Fixed("batch_indices", DataType::kInt64))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Attr("coordinate_transformation_mode", AttrType::kString,
                std::string("half_pixel"))
          .Attr("mode", AttrType::kString, std::string("avg"))
          .Attr("output_height", AttrType::kInt, int64_t{1})
          .Attr("output_width", AttrType::kInt, int64_t{1})
          .Attr("sampling_ratio", AttrType::kInt, int64_t{0})
          .Attr("spatial_scale", AttrType::kFloat, 1.0)
          .SetShapeFn(CheckRoiAlignAttrs)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("RoiAlign", KernelFactoryFor<RoiAlignKernel>()));
  OpDefBuilder unpool("MaxUnpool");
  unpool.Input(ArgDef::Typed("X", "T"))
      .Input(ArgDef::Fixed("I", DataType::kInt64))
      .Input(ArgDef::AnyList("output_shape"))
      .Output(ArgDef::Typed("Y", "T"))
      .Attr("T", AttrType::kType, std::nullopt, kFloatTypes);
  WindowAttrsOn(unpool).SetShapeFn(CheckMaxUnpoolAttrs);
  CheckRegistered(registry.RegisterOp(unpool.Build()));
  CheckRegistered(registry.RegisterKernel("MaxUnpool",
                                          KernelFactoryFor<MaxUnpoolKernel>()));
}

}  // namespace weft::internal
