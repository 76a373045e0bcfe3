// GridSample (ONNX opset 16, PyTorch's grid_sample in 2-D): output pixel
// (n, c, h, w) samples X[n, c] at the point grid[n, h, w] = (x, y), given
// in [-1, 1] from the left/top to the right/bottom edge (align_corners = 0:
// pixel edges; 1: pixel centres). `mode` is bilinear, nearest (ties to
// even) or bicubic (A = -0.75); `padding_mode` says what lies outside:
// zeros, the border pixel, or the image reflected. From opset 20 X may be
// a volume [N, C, D, H, W] sampled at (x, y, z), trilinear or nearest. Each
// output element is computed by one thread from the same reads, so results do
// not depend on the thread count.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

enum class SampleMode { kBilinear, kNearest, kBicubic };
enum class Padding { kZeros, kBorder, kReflection };

StatusOr<SampleMode> ParseMode(const std::string& mode) {
  if (mode == "bilinear") return SampleMode::kBilinear;
  if (mode == "nearest") return SampleMode::kNearest;
  if (mode == "bicubic") return SampleMode::kBicubic;
  return InvalidArgumentError("mode '" + mode +
                              "' is not bilinear, nearest or bicubic");
}

StatusOr<Padding> ParsePadding(const std::string& padding) {
  if (padding == "zeros") return Padding::kZeros;
  if (padding == "border") return Padding::kBorder;
  if (padding == "reflection") return Padding::kReflection;
  return InvalidArgumentError("padding_mode '" + padding +
                              "' is not zeros, border or reflection");
}

// One axis of the image: `size` pixels.
class Axis {
 public:
  Axis(int64_t size, bool align_corners, Padding padding)
      : size_(size), align_corners_(align_corners), padding_(padding) {}

  // The pixel coordinate of a grid value in [-1, 1].
  float Unnormalize(float g) const {
    const auto n = static_cast<float>(size_);
    return align_corners_ ? (g + 1) / 2 * (n - 1) : ((g + 1) * n - 1) / 2;
  }

  // A coordinate moved inside the image as the padding mode says (zeros:
  // unchanged; out-of-range reads then give 0).
  float Pad(float coord) const {
    const auto n = static_cast<float>(size_);
    if (padding_ == Padding::kBorder) return Clip(coord);
    if (padding_ == Padding::kReflection) {
      coord = align_corners_ ? Reflect(coord, 0, 2 * (n - 1))
                             : Reflect(coord, -1, 2 * n - 1);
      return Clip(coord);
    }
    return coord;
  }

  bool Inside(int64_t i) const { return i >= 0 && i < size_; }

 private:
  float Clip(float coord) const {
    return std::min(static_cast<float>(size_ - 1), std::max(coord, 0.f));
  }
  // Reflects into [twice_low / 2, twice_high / 2] as often as it takes.
  static float Reflect(float coord, float twice_low, float twice_high) {
    if (twice_low == twice_high) return 0;
    const float low = twice_low / 2;
    const float span = (twice_high - twice_low) / 2;
    coord = std::fabs(coord - low);
    const float extra = std::fmod(coord, span);
    // The parity of the flips in float: a coordinate past int64's range
    // (or NaN) has no defined integer conversion.
    const bool even = std::fmod(std::floor(coord / span), 2.0f) == 0;
    return even ? extra + low : span - extra + low;
  }

  int64_t size_;
  bool align_corners_;
  Padding padding_;
};

// The pixel index of an integer-valued coordinate; far outside every image
// for NaN, infinities and values past int64's range, which C++ converts to
// no defined integer (the neighbour at +1 stays outside too).
int64_t PixelIndex(float whole) {
  constexpr float kLimit = 1e18f;
  constexpr int64_t kOutside = std::numeric_limits<int64_t>::min() / 2;
  return whole > -kLimit && whole < kLimit ? static_cast<int64_t>(whole)
                                           : kOutside;
}

// Keys' cubic convolution weights for the taps at -1, 0, 1, 2 from the
// floor of a coordinate `t` past it (PyTorch's A = -0.75).
void CubicWeights(float t, float w[4]) {
  constexpr float kA = -0.75f;
  auto near = [](float x) { return ((kA + 2) * x - (kA + 3)) * x * x + 1; };
  auto far = [](float x) {
    return ((kA * x - 5 * kA) * x + 8 * kA) * x - 4 * kA;
  };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

class GridSampleKernel : public OpKernel {
 public:
  explicit GridSampleKernel(const KernelConstruction& c)
      : align_corners_(c.attr<int64_t>("align_corners") != 0),
        mode_text_(c.attr<std::string>("mode")),
        padding_text_(c.attr<std::string>("padding_mode")) {}

  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(SampleMode mode, ParseMode(mode_text_));
    WEFT_ASSIGN_OR_RETURN(Padding padding, ParsePadding(padding_text_));
    const Tensor& x = ctx.input(0);
    const Tensor& grid = ctx.input(1);
    const Shape& xs = x.shape();
    const Shape& gs = grid.shape();
    const bool planes = xs.rank() == 4 && gs.rank() == 4 && gs.dim(3) == 2;
    const bool volumes = xs.rank() == 5 && gs.rank() == 5 && gs.dim(4) == 3;
    if (!(planes || volumes) || gs.dim(0) != xs.dim(0)) {
      return InvalidArgumentError(
          "X must be [N, C, H, W] and grid [N, H_out, W_out, 2], or X "
          "[N, C, D, H, W] and grid [N, D_out, H_out, W_out, 3]; got " +
          xs.ToString() + " and " + gs.ToString());
    }
    if (volumes && mode == SampleMode::kBicubic) {
      return UnimplementedError(
          "cubic sampling of a volume (X of rank 5); weft samples volumes "
          "with the linear and nearest modes, as PyTorch's grid_sample");
    }
    std::vector<int64_t> out_dims = {xs.dim(0), xs.dim(1)};
    for (int d = 1; d < gs.rank() - 1; ++d) out_dims.push_back(gs.dim(d));
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape(out_dims)));
    return DispatchAmong<FloatDtypes>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      if constexpr (!std::is_floating_point_v<T>) {
        return InvalidArgumentError("X must be float32 or float64");
      } else {
        if (planes) {
          SamplePlanes<T>(ctx, x, grid, y, mode, padding);
        } else {
          SampleVolumes<T>(ctx, x, grid, y, mode, padding);
        }
        return Status::OK();
      }
    });
  }

 private:
  // X [N, C, H, W] at grid [N, H_out, W_out, (x, y)].
  template <class T>
  void SamplePlanes(KernelContext& ctx, const Tensor& x, const Tensor& grid,
                    Tensor* y, SampleMode mode, Padding padding) const {
    const int64_t batch = x.shape().dim(0), channels = x.shape().dim(1),
                  height = x.shape().dim(2), width = x.shape().dim(3);
    const int64_t plane = grid.shape().dim(1) * grid.shape().dim(2);
    const Axis along_x(width, align_corners_, padding);
    const Axis along_y(height, align_corners_, padding);
    const T* in = x.data<T>();
    const T* g = grid.data<T>();
    T* out = y->data<T>();
    const double cost = mode == SampleMode::kBicubic ? 40.0 : 10.0;
    ctx.ParallelFor(
        batch * plane, cost * static_cast<double>(channels),
        [&](int64_t begin, int64_t end) {
          for (int64_t p = begin; p < end; ++p) {
            const int64_t n = p / plane, pixel = p % plane;
            const float gx = static_cast<float>(g[p * 2]);
            const float gy = static_cast<float>(g[p * 2 + 1]);
            for (int64_t c = 0; c < channels; ++c) {
              const T* image = in + (n * channels + c) * height * width;
              // A pixel, 0 outside the image (after padding's move).
              auto at = [&](int64_t ix, int64_t iy) -> float {
                if (!along_x.Inside(ix) || !along_y.Inside(iy)) return 0;
                return static_cast<float>(image[iy * width + ix]);
              };
              float value = 0;
              if (mode == SampleMode::kBicubic) {
                // Taps around the unpadded point, each moved by padding.
                const float fx = along_x.Unnormalize(gx);
                const float fy = along_y.Unnormalize(gy);
                const float x0 = std::floor(fx), y0 = std::floor(fy);
                float wx[4], wy[4];
                CubicWeights(fx - x0, wx);
                CubicWeights(fy - y0, wy);
                auto tap = [&](float tx, float ty) {
                  const float px = along_x.Pad(tx), py = along_y.Pad(ty);
                  return at(PixelIndex(std::trunc(px)),
                            PixelIndex(std::trunc(py)));
                };
                for (int j = 0; j < 4; ++j) {
                  float row = 0;
                  for (int i = 0; i < 4; ++i) {
                    row += wx[i] * tap(x0 - 1 + static_cast<float>(i),
                                       y0 - 1 + static_cast<float>(j));
                  }
                  value += wy[j] * row;
                }
              } else {
                const float fx = along_x.Pad(along_x.Unnormalize(gx));
                const float fy = along_y.Pad(along_y.Unnormalize(gy));
                if (mode == SampleMode::kNearest) {
                  value = at(PixelIndex(std::nearbyint(fx)),
                             PixelIndex(std::nearbyint(fy)));
                } else {
                  const float x0 = std::floor(fx), y0 = std::floor(fy);
                  const float tx = fx - x0, ty = fy - y0;
                  const int64_t ix = PixelIndex(x0);
                  const int64_t iy = PixelIndex(y0);
                  value = at(ix, iy) * (1 - tx) * (1 - ty) +
                          at(ix + 1, iy) * tx * (1 - ty) +
                          at(ix, iy + 1) * (1 - tx) * ty +
                          at(ix + 1, iy + 1) * tx * ty;
                }
              }
              out[(n * channels + c) * plane + pixel] = static_cast<T>(value);
            }
          }
        });
  }

  // X [N, C, D, H, W] at grid [N, D_out, H_out, W_out, (x, y, z)]: x across
  // W, y across H, z across D; trilinear (the linear mode) or nearest.
  template <class T>
  void SampleVolumes(KernelContext& ctx, const Tensor& x, const Tensor& grid,
                     Tensor* y, SampleMode mode, Padding padding) const {
    const int64_t batch = x.shape().dim(0), channels = x.shape().dim(1),
                  depth = x.shape().dim(2), height = x.shape().dim(3),
                  width = x.shape().dim(4);
    const int64_t volume =
        grid.shape().dim(1) * grid.shape().dim(2) * grid.shape().dim(3);
    const Axis along_x(width, align_corners_, padding);
    const Axis along_y(height, align_corners_, padding);
    const Axis along_z(depth, align_corners_, padding);
    const T* in = x.data<T>();
    const T* g = grid.data<T>();
    T* out = y->data<T>();
    ctx.ParallelFor(
        batch * volume, 20.0 * static_cast<double>(channels),
        [&](int64_t begin, int64_t end) {
          for (int64_t p = begin; p < end; ++p) {
            const int64_t n = p / volume, point = p % volume;
            const float fx =
                along_x.Pad(along_x.Unnormalize(static_cast<float>(g[p * 3])));
            const float fy = along_y.Pad(
                along_y.Unnormalize(static_cast<float>(g[p * 3 + 1])));
            const float fz = along_z.Pad(
                along_z.Unnormalize(static_cast<float>(g[p * 3 + 2])));
            for (int64_t c = 0; c < channels; ++c) {
              const T* image = in + (n * channels + c) * depth * height * width;
              // A voxel, 0 outside the volume (after padding's move).
              auto at = [&](int64_t ix, int64_t iy, int64_t iz) -> float {
                if (!along_x.Inside(ix) || !along_y.Inside(iy) ||
                    !along_z.Inside(iz)) {
                  return 0;
                }
                return static_cast<float>(
                    image[(iz * height + iy) * width + ix]);
              };
              float value = 0;
              if (mode == SampleMode::kNearest) {
                value = at(PixelIndex(std::nearbyint(fx)),
                           PixelIndex(std::nearbyint(fy)),
                           PixelIndex(std::nearbyint(fz)));
              } else {
                const float x0 = std::floor(fx), y0 = std::floor(fy),
                            z0 = std::floor(fz);
                const float t[3] = {fx - x0, fy - y0, fz - z0};
                const int64_t ix = PixelIndex(x0), iy = PixelIndex(y0),
                              iz = PixelIndex(z0);
                // The eight corners, x fastest, each weighted by its
                // distances' complements.
                for (int k = 0; k < 8; ++k) {
                  const int dx = k & 1, dy = (k >> 1) & 1, dz = k >> 2;
                  value += at(ix + dx, iy + dy, iz + dz) *
                           (dx ? t[0] : 1 - t[0]) * (dy ? t[1] : 1 - t[1]) *
                           (dz ? t[2] : 1 - t[2]);
                }
              }
              out[(n * channels + c) * volume + point] = static_cast<T>(value);
            }
          }
        });
  }

  const bool align_corners_;
  const std::string mode_text_, padding_text_;
};

// AffineGrid (ONNX 20): for theta [N, 2, 3] and size [N, C, H, W], grid
// [N, H, W, 2] holding theta[n] (x, y, 1) at each position's normalized
// coordinates (x across W, y across H, in [-1, 1]: pixel centres, or the
// corners with align_corners); [N, 3, 4] and [N, C, D, H, W] likewise in
// three dimensions.
class AffineGridKernel : public OpKernel {
 public:
  explicit AffineGridKernel(const KernelConstruction& c)
      : align_corners_(c.attr<int64_t>("align_corners") != 0) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& theta = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> size,
                          IntsFromTensor(ctx.input(1), "size"));
    if (size.size() != 4 && size.size() != 5) {
      return InvalidArgumentError(
          "size must be [N, C, H, W] or [N, C, D, H, "
          "W], got " +
          std::to_string(size.size()) + " values");
    }
    const int dims = static_cast<int>(size.size()) - 2;  // 2 or 3.
    const int64_t n = size[0];
    if (theta.shape() != Shape{n, dims, dims + 1}) {
      return InvalidArgumentError("theta must be [" + std::to_string(n) + ", " +
                                  std::to_string(dims) + ", " +
                                  std::to_string(dims + 1) + "] for size of " +
                                  std::to_string(size.size()) +
                                  " values, got " + theta.shape().ToString());
    }
    // Spatial lengths, outermost first (D, H, W or H, W).
    const std::vector<int64_t> lengths(size.begin() + 2, size.end());
    std::vector<int64_t> out_dims = {n};
    for (int64_t l : lengths) {
      if (l < 0) return InvalidArgumentError("size must be >= 0");
      out_dims.push_back(l);
    }
    out_dims.push_back(dims);
    const Shape out_shape(out_dims);
    if (!out_shape.IsValid()) {
      return InvalidArgumentError("the grid " + out_shape.ToString() +
                                  " is too large");
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * grid,
                          ctx.AllocateOutputUninitialized(0, out_shape));
    const int64_t positions = DimProduct(Shape(lengths), 0, dims);
    const bool corners = align_corners_;
    // The normalized coordinate of index i of `length`.
    auto coordinate = [corners](int64_t i, int64_t length) {
      if (corners) {
        return length == 1 ? -1.0
                           : -1.0 + 2.0 * static_cast<double>(i) /
                                        static_cast<double>(length - 1);
      }
      return -1.0 +
             (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(length);
    };
    return DispatchAmong<FloatDtypes>(theta.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* pt = theta.data<T>();
      T* pg = grid->data<T>();
      ctx.ParallelFor(
          n * positions, 4.0 * dims * dims, [&](int64_t b, int64_t e) {
            for (int64_t at = b; at < e; ++at) {
              const int64_t batch = at / positions;
              // (x, y[, z], 1): x from the innermost index.
              double point[4];
              int64_t rest = at % positions;
              for (int d = dims - 1; d >= 0; --d) {
                point[dims - 1 - d] = coordinate(rest % lengths[d], lengths[d]);
                rest /= lengths[d];
              }
              point[dims] = 1.0;
              const T* m = pt + batch * dims * (dims + 1);
              for (int r = 0; r < dims; ++r) {
                double v = 0;
                for (int k = 0; k <= dims; ++k) {
                  v += static_cast<double>(m[r * (dims + 1) + k]) * point[k];
                }
                pg[at * dims + r] = static_cast<T>(v);
              }
            }
          });
      return Status::OK();
    });
  }

 private:
  const bool align_corners_;
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"AffineGrid",
     "sampling grid of affine matrices, for GridSample (ONNX 20)"},
    {"GridSample",
     "sample an image at grid points (bilinear, nearest, bicubic), or a "
     "volume (trilinear, nearest)"},
};

}  // namespace

void RegisterGridSampleOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("AffineGrid")
          .Input(ArgDef::Typed("theta", "T"))
          .Input(ArgDef::Fixed("size", DataType::kInt64))
          .Output(ArgDef::Typed("grid", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Attr("align_corners", AttrType::kInt, int64_t{0})
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "AffineGrid", KernelFactoryFor<AffineGridKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("GridSample")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Typed("grid", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Attr("align_corners", AttrType::kInt, int64_t{0})
          .Attr("mode", AttrType::kString, std::string("bilinear"))
          .Attr("padding_mode", AttrType::kString, std::string("zeros"))
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            // [N, C, H_out, W_out] or [N, C, D_out, H_out, W_out].
            const PartialShape& x = ctx.input_shape(0);
            ctx.set_output(0, x.rank_known() && x.rank() == 5
                                  ? PartialShape({-1, -1, -1, -1, -1})
                                  : PartialShape({-1, -1, -1, -1}));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "GridSample", KernelFactoryFor<GridSampleKernel>()));
}

}  // namespace weft::internal
