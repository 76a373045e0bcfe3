// Convolutions on NC(D)HW tensors with ONNX semantics: Conv, FusedConv
// (made by the graph passes: Conv + bias + residual + activation) and
// ConvTranspose; their channels-last forms are in nhwc_ops.cc, their
// quantized ones in quantized_conv.cc.
//
// Determinism: Conv cuts each image's output into tiles (blocks of output
// channels x pixels) whose shapes depend on the sizes (and the micro-kernel's
// panel shape) alone and computes each tile as one single-threaded product
// over the whole depth (GemmTile, or PackedGemmTile when W was packed at
// construction, in the orientation W's shape chose); depthwise
// planes are computed by one thread each. So every output element's summation
// order depends on the sizes alone, never on the thread count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "framework/op_registry_impl.h"
#include "kernels/conv_kernels.h"
#include "kernels/conv_phase_panels.h"
#include "kernels/gemm_tile.h"
#include "kernels/int_division.h"
#include "kernels/packed_gemm.h"
#include "ops/conv_window.h"
#include "ops/fused_activation.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// --- Conv --------------------------------------------------------------------

// Output pixels per tile: each tile is one product of fixed shape.
constexpr int64_t kConvTile = 256;
// Below this many (image, group, pixel tile) jobs, output channels are split
// into blocks as well.
constexpr int64_t kConvMinJobs = 8;
// A 1 x 1 Conv with fewer output channels per group than this many panels
// of the micro-kernel's rows leaves W unpacked (PackConstantWeights).
constexpr int64_t kPackedConvMinChannels = 16;
// RunPhasePanels2D's pixel tiles: at most this many nr-wide panels each.
constexpr int64_t kPhaseTilePanels = 8;
// Taps of a depthwise window whose lane weights live on the stack.
constexpr int64_t kMaxLaneTaps = 25;

// Panels per pixel tile for a plane of `panels`: at most kPhaseTilePanels
// and at least half that, the size whose tiles two threads share most evenly
// (the fewest panels for the busier one; larger tiles on a tie). ResNet-18's
// 56 x 56 plane: 196 panels in 28 tiles of 7, not 25 of 8; its 28 x 28: 49
// in 10 tiles of 5, not 7 of 7. Depends on the plane's size alone, so the
// tiles never depend on the thread count.
int64_t PhaseTilePanels(int64_t panels) {
  if (panels <= kPhaseTilePanels) return panels;
  int64_t best = kPhaseTilePanels, best_load = panels;
  for (int64_t per = kPhaseTilePanels; per >= kPhaseTilePanels / 2; --per) {
    const int64_t load = CeilDiv(CeilDiv(panels, per), 2) * per;
    if (load < best_load) {
      best = per;
      best_load = load;
    }
  }
  return best;
}

// Starts a tile of `channels` output rows of `pixels` (row stride ld) at
// each channel's bias, for the product to accumulate onto.
template <class T>
void FillBias(const T* bias, int64_t channels, int64_t pixels, int64_t ld,
              T* out) {
  for (int64_t r = 0; r < channels; ++r) {
    std::fill(out + r * ld, out + r * ld + pixels, bias[r]);
  }
}

class ConvKernel : public OpKernel {
 public:
  // Conv, or FusedConv when the node has an `activation` attribute.
  explicit ConvKernel(const KernelConstruction& c)
      : attrs_(ReadWindowAttrs(c)),
        group_(c.attr<int64_t>("group")),
        fused_(c.attrs().count("activation") > 0),
        activation_(ActivationFromAttrs(c.attrs())) {
    PackConstantWeights(c.constant_input(1), c.constant_input(2),
                        KnownOutputPlane(c));
    ArrangeConstantLaneWeights(c.constant_input(1));
  }

  int64_t prepared_bytes() const override {
    int64_t bytes = 0;
    for (const PackedOperand& w : packed_w_) bytes += w.bytes();
    bytes += static_cast<int64_t>(lane_w_.size() * sizeof(float));
    return bytes;
  }

  Status Compute(KernelContext& ctx) const override {
    WEFT_RETURN_IF_ERROR(activation_.status());
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* bias = ctx.num_inputs() > 2 ? &ctx.input(2) : nullptr;
    const Tensor* residual =
        fused_ && ctx.num_inputs() > 3 ? &ctx.input(3) : nullptr;
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> in, SpatialDims(x.shape(), "X"));
    if (w.shape().rank() != x.shape().rank()) {
      return InvalidArgumentError("W has shape " + w.shape().ToString() +
                                  ", X " + x.shape().ToString());
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
    for (int i = 2; i < w.shape().rank(); ++i)
      kernel.push_back(w.shape().dim(i));
    if (!attrs_.kernel.empty() && attrs_.kernel != kernel) {
      return InvalidArgumentError("kernel_shape does not match W " +
                                  w.shape().ToString());
    }
    if (bias != nullptr && bias->NumElements() != m) {
      return InvalidArgumentError("B must have " + std::to_string(m) +
                                  " elements, got " + bias->shape().ToString());
    }
    WEFT_ASSIGN_OR_RETURN(Window win, ForwardWindow(attrs_, in, kernel));
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutputUninitialized(
                                          0, OutShape(n, m, win.out)));
    if (residual != nullptr && !(residual->shape() == y->shape())) {
      return InvalidArgumentError("Z has shape " +
                                  residual->shape().ToString() +
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
      Run<float>(ctx, x32, w32, bias ? &b32 : nullptr, &y32, win, n, c / g,
                 m / g, {});
      NarrowToFloat16(y32, y);
    } else if (x.dtype() == DataType::kFloat32) {
      Run<float>(ctx, x, w, bias, y, win, n, c / g, m / g, epilogue);
    } else {
      Run<double>(ctx, x, w, bias, y, win, n, c / g, m / g, epilogue);
    }
    return Status::OK();
  }

 private:
  // The output plane's size (H x W) when the graph fixes it, else 0.
  static int64_t KnownOutputPlane(const KernelConstruction& c) {
    if (c.output_shapes().empty()) return 0;
    const PartialShape& y = c.output_shapes()[0];
    if (!y.rank_known() || y.rank() != 4 || y.dim(2) < 0 || y.dim(3) < 0) {
      return 0;
    }
    return y.dim(2) * y.dim(3);
  }

  // A constant float32 W of a 2-D convolution that runs as products is
  // packed for the micro-kernel here, once, one operand per group, where the
  // tile kernel is BLIS: the products' left side (output channels x C/g *
  // taps), or their right side (its transpose) when they run transposed
  // (ConvProductsRunTransposed, given the output plane's size when known).
  // A constant bias of a layer whose products are not transposed (they run
  // in RunPhasePanels2D) becomes one more column of the left side, for a row
  // of ones in the columns: the product then adds it, where filling each
  // output tile with it first cost a pass over the tile and the
  // micro-kernel a read of it (a fifth of a 3 x 3 / 2 stem over three
  // channels, depth 27).
  void PackConstantWeights(const Tensor* w, const Tensor* bias,
                           int64_t out_pixels) {
    if (w == nullptr || w->dtype() != DataType::kFloat32 ||
        w->shape().rank() != 4 || w->NumElements() == 0 ||
        w->shape().dim(1) < 2 || group_ < 1 ||
        w->shape().dim(0) % group_ != 0 ||
        ActiveGemmKernel() != GemmKernel::kBlis) {
      return;
    }
    const int64_t mg = w->shape().dim(0) / group_;
    const int64_t depth = w->NumElements() / w->shape().dim(0);
    // A 1 x 1 window moving one pixel at a time reads X itself as columns.
    bool unit_window = w->shape().dim(2) == 1 && w->shape().dim(3) == 1;
    for (int64_t stride : attrs_.strides) unit_window &= stride == 1;
    // Fewer than 96 output channels over X itself: packing X's columns for
    // the micro-kernel each Run costs about what the product does (K x
    // pixels floats copied for m x K x pixels multiply-adds), and
    // bli_sgemm's own path (GemmTile) ran these layers faster: 128 -> 16
    // at 55 x 55 0.26 -> 0.18 ms, 144 -> 24 at 56 x 56 0.33 -> 0.27,
    // 384 -> 64 at 14 x 14 0.14 -> 0.13 (one core of an AMD EPYC Zen 4;
    // at 96 channels the two paths tied).
    if (unit_window && mg < kPackedConvMinChannels * FloatMicroKernel().mr) {
      return;
    }
    transposed_ = ConvProductsRunTransposed(mg, depth, out_pixels);
    // The other orientation gathers the micro-kernel's nr-wide pixel panels
    // with vector rows of at most kMaxPhasePanelWidth (every x86 kernel BLIS
    // has); a wider one would leave W to the unpacked products.
    if (!transposed_ && FloatMicroKernel().nr > kMaxPhasePanelWidth) return;
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
                                                {with_bias.data(), depth + 1},
                                                mg, depth + 1));
      } else {
        packed_w_.push_back(PackedOperand::Pack(PackedOperand::Side::kLeft,
                                                {w_group, depth}, mg, depth));
      }
    }
    packed_source_ = *w;
    if (fold_bias) folded_bias_ = *bias;
  }

  // A constant float32 W of a depthwise 2-D convolution (one input channel
  // per group), in DepthwiseLanes2D's layout for every block of output
  // planes, so that a Run on small planes does not re-arrange it per block.
  void ArrangeConstantLaneWeights(const Tensor* w) {
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

  // The packed groups of W when this Run's W is the constant they were
  // packed from (a Run may feed the Const's output), else null.
  const std::vector<PackedOperand>* PackedWeightsFor(const Tensor& w) const {
    if (packed_w_.empty() || w.raw_data() != packed_source_.raw_data()) {
      return nullptr;
    }
    return &packed_w_;
  }

  // FusedConv's residual input and activation (FusedConv takes float32 and
  // float64 only, so the float16 path never has one).
  struct Epilogue {
    ActivationSpec activation;
    const Tensor* residual = nullptr;
    bool empty() const {
      return residual == nullptr && activation.kind == FusedActivation::kNone;
    }
    // Finishes the rows x cols block of y at `offset` (row stride ld).
    template <class T>
    void Finish(Tensor* y, int64_t offset, int64_t rows, int64_t cols,
                int64_t ld) const {
      if (empty()) return;
      FinishBlock<T>(activation,
                     residual ? residual->data<T>() + offset : nullptr,
                     y->data<T>() + offset, rows, cols, ld);
    }
  };

  // The depthwise kernels' bounds for an epilogue: Relu and Clip without a
  // residual are bounds (and then the epilogue is finished); anything else
  // runs as the epilogue after unbounded outputs.
  template <class T>
  struct ClipBounds {
    T lower = -std::numeric_limits<T>::infinity();
    T upper = std::numeric_limits<T>::infinity();
    bool finished = true;
  };
  template <class T>
  static ClipBounds<T> ClipBoundsOf(const Epilogue& epilogue) {
    ClipBounds<T> bounds;
    if (epilogue.residual != nullptr) {
      bounds.finished = false;
      return bounds;
    }
    switch (epilogue.activation.kind) {
      case FusedActivation::kNone:
        break;
      case FusedActivation::kRelu:  // max(x, 0) keeps NaN, as Clip does.
        bounds.lower = T(0);
        break;
      case FusedActivation::kClip:
        bounds.lower = SaturateBound<T>(epilogue.activation.alpha);
        bounds.upper = SaturateBound<T>(epilogue.activation.beta);
        break;
      default:
        bounds.finished = false;
    }
    return bounds;
  }

  template <class T>
  void Run(KernelContext& ctx, const Tensor& x, const Tensor& w,
           const Tensor* bias, Tensor* y, const Window& win, int64_t n,
           int64_t cg, int64_t mg, const Epilogue& epilogue) const {
    if (y->NumElements() == 0) return;
    if (win.rank != 2) {
      RunAnyRank<T>(ctx, x, w, bias, y, win, n, cg, mg, epilogue);
    } else if (cg == 1) {
      RunDepthwise2D<T>(ctx, x, w, bias, y, Geometry2D(win), n, mg, epilogue);
    } else {
      // W packed at construction (float32 only), in the orientation chosen
      // there: transposed products, or the left operand of the phase panels'.
      if constexpr (std::is_same_v<T, float>) {
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

  // Groups of one input channel (depthwise): each output plane computed
  // directly by one thread.
  template <class T>
  void RunDepthwise2D(KernelContext& ctx, const Tensor& x, const Tensor& w,
                      const Tensor* bias, Tensor* y, const Conv2DGeometry& geo,
                      int64_t n, int64_t mg, const Epilogue& epilogue) const {
    const int64_t m = group_ * mg, c = group_;
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    const T* pb = bias ? bias->data<T>() : nullptr;
    T* py = y->data<T>();
    const double cost = 0.5 * static_cast<double>(geo.OutSize() * geo.Taps());
    if constexpr (std::is_same_v<T, float>) {
      if (DepthwiseRunsInLanes(geo)) {
        RunDepthwiseLanes(ctx, x, w, bias, y, geo, n, mg, epilogue);
        return;
      }
    }
    const ClipBounds<T> bounds = ClipBoundsOf<T>(epilogue);
    ctx.ParallelFor(n * m, cost, [&](int64_t begin, int64_t end) {
      // Kept between calls: its zero border is written once per layout.
      thread_local PlaneScratch<T> scratch;
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t image = plane / m, oc = plane % m, group = oc / mg;
        DepthwisePlane2D<T>(geo, px + (image * c + group) * geo.InSize(),
                            pw + oc * geo.Taps(), pb ? pb[oc] : T(0),
                            bounds.lower, bounds.upper,
                            py + plane * geo.OutSize(), scratch);
        if (!bounds.finished) {
          epilogue.Finish<T>(y, plane * geo.OutSize(), 1, geo.OutSize(),
                             geo.OutSize());
        }
      }
    });
  }

  // RunDepthwise2D's small planes: DepthwiseLanes2D over each (image, block
  // of kDepthwiseLanes output planes), W taken arranged from construction
  // when it is the constant it was arranged from.
  void RunDepthwiseLanes(KernelContext& ctx, const Tensor& x, const Tensor& w,
                         const Tensor* bias, Tensor* y,
                         const Conv2DGeometry& geo, int64_t n, int64_t mg,
                         const Epilogue& epilogue) const {
    const int64_t m = group_ * mg, c = group_, taps = geo.Taps();
    const float* px = x.data<float>();
    const float* pb = bias ? bias->data<float>() : nullptr;
    float* py = y->data<float>();
    const float* arranged =
        !lane_w_.empty() && w.raw_data() == lane_source_.raw_data()
            ? lane_w_.data()
            : nullptr;
    const int64_t blocks = CeilDiv(m, kDepthwiseLanes);
    const ClipBounds<float> bounds = ClipBoundsOf<float>(epilogue);
    const double cost =
        0.5 * static_cast<double>(geo.OutSize() * taps * kDepthwiseLanes);
    ctx.ParallelFor(n * blocks, cost, [&](int64_t begin, int64_t end) {
      // Kept between calls: a fresh one was zeroed per chunk.
      thread_local std::vector<float> scratch;
      const float* planes[kDepthwiseLanes];
      float* outs[kDepthwiseLanes];
      // W arranged here when it is not the constant (a fed W).
      float w16[kMaxLaneTaps * kDepthwiseLanes];
      std::vector<float> wide_w;
      float* own_w = w16;
      if (arranged == nullptr && taps > kMaxLaneTaps) {
        wide_w.resize(taps * kDepthwiseLanes);
        own_w = wide_w.data();
      }
      float bias16[kDepthwiseLanes];
      for (int64_t job = begin; job < end; ++job) {
        const int64_t image = job / blocks;
        const int64_t oc0 = job % blocks * kDepthwiseLanes;
        const int64_t lanes = std::min(kDepthwiseLanes, m - oc0);
        for (int64_t lane = 0; lane < kDepthwiseLanes; ++lane) {
          const int64_t oc = oc0 + lane;
          bias16[lane] = lane < lanes && pb != nullptr ? pb[oc] : 0.0f;
          if (lane >= lanes) continue;
          planes[lane] = px + (image * c + oc / mg) * geo.InSize();
          outs[lane] = py + (image * m + oc) * geo.OutSize();
        }
        const float* lane_w = own_w;
        if (arranged != nullptr) {
          lane_w = arranged + oc0 * taps;
        } else {
          ArrangeLaneWeights(w.data<float>(), m, taps, oc0, own_w);
        }
        DepthwiseLanes2D(geo, planes, lane_w, bias16, bounds.lower,
                         bounds.upper, lanes, outs, scratch);
        if (!bounds.finished) {
          epilogue.Finish<float>(y, (image * m + oc0) * geo.OutSize(), lanes,
                                 geo.OutSize(), geo.OutSize());
        }
      }
    });
  }

  // Per (image, group, block of output channels, tile of output pixels):
  // Y_tile [channels, P] = W_g [channels, C/g * K] * cols [C/g * K, P],
  // where cols gathers the tile's receptive fields (Im2Col2D) or, for a 1x1
  // window over every pixel, is the input itself. The tiles' shapes depend
  // on the sizes only: every output element is one product over the whole
  // depth, whatever the thread count. W is read as it is (not packed).
  template <class T>
  void RunProduct2D(KernelContext& ctx, const Tensor& x, const Tensor& w,
                    const Tensor* bias, Tensor* y, const Conv2DGeometry& geo,
                    int64_t n, int64_t cg, int64_t mg,
                    const Epilogue& epilogue) const {
    const int64_t g = group_;
    const int64_t out_size = geo.OutSize(), in_size = geo.InSize();
    const int64_t depth = cg * geo.Taps();
    const bool pointwise = geo.IsPointwise();
    const int64_t pixel_tiles = (out_size + kConvTile - 1) / kConvTile;
    // Few pixel tiles (late layers, batch 1): split the output channels too,
    // so that the pool has work for more than one thread.
    const int64_t base_jobs = n * g * pixel_tiles;
    int64_t channel_blocks = 1;
    if (base_jobs < kConvMinJobs) {
      channel_blocks =
          std::min((mg + 15) / 16, (kConvMinJobs + base_jobs - 1) / base_jobs);
    }
    const int64_t channel_tile = (mg + channel_blocks - 1) / channel_blocks;
    channel_blocks = (mg + channel_tile - 1) / channel_tile;
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    const T* pb = bias ? bias->data<T>() : nullptr;
    T* py = y->data<T>();
    // When output channels are split, every block of a pixel tile needs the
    // same columns: gather them once, into one buffer per (image, group,
    // pixel tile), before the products. Small by construction (fewer than
    // kConvMinJobs tiles).
    const bool shared_columns = channel_blocks > 1 && !pointwise;
    std::vector<T> gathered(shared_columns ? base_jobs * depth * kConvTile : 0);
    auto gather = [&](int64_t ng, int64_t tile, T* cols) {
      const int64_t p0 = tile * kConvTile;
      const int64_t pixels = std::min(kConvTile, out_size - p0);
      Im2Col2D<T>(geo, px + ng * cg * in_size, cg, p0, pixels, cols, pixels);
      return pixels;
    };
    const double gather_cost = 0.5 * static_cast<double>(depth * kConvTile);
    if (shared_columns) {
      ctx.ParallelFor(base_jobs, gather_cost, [&](int64_t begin, int64_t end) {
        for (int64_t job = begin; job < end; ++job) {
          gather(job / pixel_tiles, job % pixel_tiles,
                 gathered.data() + job * depth * kConvTile);
        }
      });
    }
    // About 0.01 ns per multiply-add in the tile kernel, plus the gather.
    const double cost =
        0.01 * static_cast<double>(channel_tile * depth * kConvTile) +
        (pointwise || shared_columns ? 0.0 : gather_cost);
    const int64_t jobs = base_jobs * channel_blocks;
    ctx.ParallelFor(jobs, cost, [&](int64_t begin, int64_t end) {
      std::vector<T> own(pointwise || shared_columns ? 0 : depth * kConvTile);
      for (int64_t job = begin; job < end; ++job) {
        const int64_t tile = job % pixel_tiles;
        const int64_t block = job / pixel_tiles % channel_blocks;
        const int64_t ng = job / pixel_tiles / channel_blocks;
        const int64_t group = ng % g;
        const int64_t p0 = tile * kConvTile;
        const int64_t pixels = std::min(kConvTile, out_size - p0);
        const int64_t ch0 = block * channel_tile;
        const int64_t channels = std::min(channel_tile, mg - ch0);
        const int64_t chunk = ng * pixel_tiles + tile;
        GemmOperand<T> columns{px + ng * cg * in_size + p0, in_size};
        if (shared_columns) {
          columns = {gathered.data() + chunk * depth * kConvTile, pixels};
        } else if (!pointwise) {
          gather(ng, tile, own.data());
          columns = {own.data(), pixels};
        }
        const int64_t oc0 = group * mg + ch0;
        T* out = py + ((ng - group) * mg + oc0) * out_size + p0;
        if (pb != nullptr) FillBias(pb + oc0, channels, pixels, out_size, out);
        GemmTile<T>(channels, pixels, depth, {pw + oc0 * depth, depth}, columns,
                    out, out_size, /*accumulate=*/pb != nullptr);
        epilogue.Finish<T>(y, out - py, channels, pixels, out_size);
      }
    });
  }

  // How RunTransposed2D and RunPhasePanels2D cut a layer: per image and
  // group, pixel tiles of `pixel_tile` (whole panels of the pixels' side);
  // when these give fewer than kConvMinJobs (image, group, pixel tile)
  // chunks, the mg output channels are split into blocks too, each starting
  // on W's panels (`channel_width`). Every size comes from the shapes alone.
  struct PanelTiles {
    int64_t pixel_tile, pixel_tiles, chunks;
    int64_t channel_tile, channel_blocks;
    int64_t tile_floats, depth_blocks;  // panels of one chunk, over `depth`
    int64_t out_size;

    static PanelTiles Of(int64_t out_size, int64_t pixel_tile,
                         int64_t images_groups, int64_t mg,
                         int64_t channel_width, int64_t pixel_width,
                         int64_t depth) {
      PanelTiles t;
      t.out_size = out_size;
      t.pixel_tile = pixel_tile;
      t.pixel_tiles = CeilDiv(out_size, pixel_tile);
      t.chunks = images_groups * t.pixel_tiles;
      int64_t blocks = 1;
      if (t.chunks < kConvMinJobs) {
        blocks = std::min(CeilDiv(mg, channel_width),
                          CeilDiv(kConvMinJobs, t.chunks));
      }
      t.channel_tile = RoundUp(CeilDiv(mg, blocks), channel_width);
      t.channel_blocks = CeilDiv(mg, t.channel_tile);
      t.tile_floats = PanelView::Floats(pixel_tile, depth, pixel_width);
      t.depth_blocks = CeilDiv(depth, FloatMicroKernel().kc);
      return t;
    }
    int64_t PixelsOf(int64_t tile) const {
      return std::min(pixel_tile, out_size - tile * pixel_tile);
    }
    // Where tile (chunk, channel block) lies: its group, first pixel and
    // pixels, first channel in the group and channels, first channel in Y,
    // and the offset of its first output in Y.
    struct Tile {
      int64_t group, p0, pixels, ch0, channels, oc0, offset;
    };
    Tile At(int64_t chunk, int64_t block, int64_t groups, int64_t mg) const {
      const int64_t ng = chunk / pixel_tiles, tile = chunk % pixel_tiles;
      Tile at;
      at.group = ng % groups;
      at.p0 = tile * pixel_tile;
      at.pixels = PixelsOf(tile);
      at.ch0 = block * channel_tile;
      at.channels = std::min(channel_tile, mg - at.ch0);
      at.oc0 = at.group * mg + at.ch0;
      at.offset = ((ng - at.group) * mg + at.oc0) * out_size + at.p0;
      return at;
    }
  };

  // Runs a layer cut as `t`: gather(chunk, first_block, end_block, panels)
  // fills a chunk's panels (tile_floats floats) for depth blocks
  // [first_block, end_block); product(chunk, channel_block, panels) computes
  // one tile from them. Split channel blocks share panels gathered once,
  // one depth block per job, before the products; otherwise each job
  // gathers into its own thread's buffer. Costs are per chunk (gather) and
  // per tile (product), in ns, for ParallelFor.
  template <class Gather, class Product>
  static void RunPanelTiles(KernelContext& ctx, const PanelTiles& t,
                            double gather_cost, double product_cost,
                            const Gather& gather, const Product& product) {
    const bool shared_columns = t.channel_blocks > 1;
    // Kept between calls, so that a steady Run allocates nothing. Only this
    // thread names it: a lambda run by a helper would name the helper's.
    thread_local PanelBuffer shared_buffer;
    float* const shared =
        shared_columns ? shared_buffer.Get(t.chunks * t.tile_floats) : nullptr;
    if (shared_columns) {
      ctx.ParallelFor(t.chunks * t.depth_blocks, gather_cost / t.depth_blocks,
                      [&](int64_t begin, int64_t end) {
                        for (int64_t job = begin; job < end; ++job) {
                          const int64_t chunk = job / t.depth_blocks;
                          const int64_t block = job % t.depth_blocks;
                          gather(chunk, block, block + 1,
                                 shared + chunk * t.tile_floats);
                        }
                      });
    }
    ctx.ParallelFor(
        t.chunks * t.channel_blocks,
        product_cost + (shared_columns ? 0.0 : gather_cost),
        [&](int64_t begin, int64_t end) {
          thread_local PanelBuffer own;  // Kept between Runs: no allocation.
          for (int64_t job = begin; job < end; ++job) {
            const int64_t tile = job % t.pixel_tiles;
            const int64_t block = job / t.pixel_tiles % t.channel_blocks;
            const int64_t ng = job / t.pixel_tiles / t.channel_blocks;
            const int64_t chunk = ng * t.pixel_tiles + tile;
            float* panels = shared_columns ? shared + chunk * t.tile_floats
                                           : own.Get(t.tile_floats);
            if (!shared_columns) gather(chunk, 0, t.depth_blocks, panels);
            product(chunk, block, panels);
          }
        });
  }

  // W packed as the products' right side (ConvProductsRunTransposed): per
  // (image, group, pixel tile, channel block),
  //   Y_tile^T [pixels, channels] = cols^T [pixels, C/g * K] * W_g^T,
  // written into Y by column. cols^T is gathered straight into packed panels
  // (Im2ColPanels), also for a 1 x 1 window with unit strides, which the
  // rule sends here over small planes only. Pixel tiles are of about one mc
  // block (the rows of A a depth block keeps in L2) and of equal size; when
  // they give fewer than kConvMinJobs jobs, the channels are split into blocks
  // too, and the blocks share columns gathered once, one depth block per job.
  void RunTransposed2D(KernelContext& ctx, const Tensor& x,
                       const std::vector<PackedOperand>& packed_w,
                       const Tensor* bias, Tensor* y, const Conv2DGeometry& geo,
                       int64_t n, int64_t cg, int64_t mg,
                       const Epilogue& epilogue) const {
    const MicroKernelShape& shape = FloatMicroKernel();
    const int64_t g = group_;
    const int64_t out_size = geo.OutSize(), in_size = geo.InSize();
    const int64_t depth = cg * geo.Taps();
    const PanelTiles t = PanelTiles::Of(
        out_size,
        RoundUp(CeilDiv(out_size, CeilDiv(out_size, shape.mc)), shape.mr),
        n * g, mg, /*channel_width=*/shape.nr, /*pixel_width=*/shape.mr, depth);
    const float* px = x.data<float>();
    const float* pb = bias ? bias->data<float>() : nullptr;
    float* py = y->data<float>();
    auto gather = [&](int64_t chunk, int64_t first_block, int64_t end_block,
                      float* panels) {
      const int64_t ng = chunk / t.pixel_tiles, tile = chunk % t.pixel_tiles;
      Im2ColPanels(geo, px + ng * cg * in_size, cg, tile * t.pixel_tile,
                   t.PixelsOf(tile), shape.mr, shape.kc, first_block, end_block,
                   panels);
    };
    auto product = [&](int64_t chunk, int64_t block, const float* panels) {
      const PanelTiles::Tile at = t.At(chunk, block, g, mg);
      const GemmInput columns = GemmInput::Panels(
          {panels, RoundUp(at.pixels, shape.mr), depth, shape.mr}, 0);
      float* out = py + at.offset;
      if (pb != nullptr) {
        FillBias(pb + at.oc0, at.channels, at.pixels, out_size, out);
      }
      PackedGemmTile(at.pixels, at.channels, depth, columns,
                     GemmInput::Packed(packed_w[at.group], at.ch0),
                     {out, /*row_stride=*/1, /*col_stride=*/out_size},
                     /*accumulate=*/pb != nullptr);
      epilogue.Finish<float>(y, at.offset, at.channels, at.pixels, out_size);
    };
    // About 0.01 ns per multiply-add in the tile kernel; a gather of 6-pixel
    // panel rows about 0.5 ns per float.
    RunPanelTiles(
        ctx, t, 0.5 * static_cast<double>(depth * t.pixel_tile),
        0.01 * static_cast<double>(t.channel_tile * depth * t.pixel_tile),
        gather, product);
  }

  // W packed as the products' left side, X's windows gathered from a phase
  // copy (conv_phase_panels.h): the input is copied once, padded and split
  // into stride phases (or read as it is by a 1 x 1 window over every
  // pixel), then per (image, group, pixel tile, channel block)
  //   Y_tile [channels, pixels] = W_g [channels, C/g * K] * cols,
  // where cols is gathered straight into nr-wide panels, each panel row one
  // vector load and store, and Y's rows are written in place. Pixel tiles
  // are whole panels (PhaseTilePanels); when they give fewer than
  // kConvMinJobs jobs, the channels are split into blocks too, sharing
  // columns gathered once.
  void RunPhasePanels2D(KernelContext& ctx, const Tensor& x,
                        const std::vector<PackedOperand>& packed_w,
                        const Tensor* bias, Tensor* y,
                        const Conv2DGeometry& geo, int64_t n, int64_t cg,
                        int64_t mg, const Epilogue& epilogue) const {
    const MicroKernelShape& shape = FloatMicroKernel();
    const int64_t g = group_;
    const int64_t out_size = geo.OutSize(), in_size = geo.InSize();
    const int64_t depth = cg * geo.Taps();
    const PhasePlanes layout = PhasePlanes::Of(geo);
    const float* px = x.data<float>();
    const float* pb = bias ? bias->data<float>() : nullptr;
    float* py = y->data<float>();

    // The copy, with its slack zeroed (lanes read from it are discarded,
    // but never uninitialised). A 1 x 1 window over every pixel reads X
    // itself: its one phase plane is the input plane. This thread's buffers
    // are kept between calls, so that a steady Run allocates no copy (issue
    // 15, item 5); the thread runs no other kernel while its ParallelFor
    // calls wait.
    thread_local PanelBuffer copy_buffer;
    const bool pointwise = geo.IsPointwise();
    const float* copy = px;
    if (!pointwise) {
      const int64_t channels = n * g * cg;
      float* own = copy_buffer.Get(layout.BufferFloats(channels));
      std::fill(own, own + kPhaseCopySlack, 0.0f);
      own += kPhaseCopySlack;
      std::fill(own + channels * layout.ChannelFloats(),
                own + channels * layout.ChannelFloats() + kPhaseCopySlack,
                0.0f);
      ctx.ParallelFor(channels, static_cast<double>(layout.ChannelFloats()),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t ch = begin; ch < end; ++ch) {
                          CopyIntoPhasePlanes(
                              geo, layout, px + ch * in_size,
                              own + ch * layout.ChannelFloats());
                        }
                      });
      copy = own;
    }
    std::vector<int64_t> offsets(depth);
    PhaseTapOffsets(geo, layout, cg, offsets.data());
    // W packed with the bias as its last column (PackConstantWeights): the
    // columns end in a row of ones, or of zeros when this Run's bias is
    // another one (a Run may feed the Const's output), added as a fill.
    const int64_t rows = packed_w[0].depth();
    const bool bias_in_product = rows > depth && bias != nullptr &&
                                 bias->raw_data() == folded_bias_.raw_data();
    const PhaseSource source{copy, offsets.data(), depth,
                             bias_in_product ? 1.0f : 0.0f, pointwise};
    if (bias_in_product) pb = nullptr;

    const PanelTiles t = PanelTiles::Of(
        out_size, PhaseTilePanels(CeilDiv(out_size, shape.nr)) * shape.nr,
        n * g, mg, /*channel_width=*/shape.mr, /*pixel_width=*/shape.nr, rows);
    auto gather = [&](int64_t chunk, int64_t first_block, int64_t end_block,
                      float* panels) {
      const int64_t ng = chunk / t.pixel_tiles, tile = chunk % t.pixel_tiles;
      PhaseSource at = source;
      at.copy += ng * cg * layout.ChannelFloats();
      GatherPhasePanels(geo, layout, at, rows, tile * t.pixel_tile,
                        t.PixelsOf(tile), shape.nr, shape.kc, first_block,
                        end_block, panels);
    };
    auto product = [&](int64_t chunk, int64_t block, const float* panels) {
      const PanelTiles::Tile at = t.At(chunk, block, g, mg);
      const GemmInput columns = GemmInput::Panels(
          {panels, RoundUp(at.pixels, shape.nr), rows, shape.nr}, 0);
      float* out = py + at.offset;
      if (pb != nullptr) {
        FillBias(pb + at.oc0, at.channels, at.pixels, out_size, out);
      }
      PackedGemmTile(at.channels, at.pixels, rows,
                     GemmInput::Packed(packed_w[at.group], at.ch0), columns,
                     {out, out_size}, /*accumulate=*/pb != nullptr);
      epilogue.Finish<float>(y, at.offset, at.channels, at.pixels, out_size);
    };
    // About 0.01 ns per multiply-add in the tile kernel; a panel row about a
    // load and a store.
    RunPanelTiles(
        ctx, t, 0.1 * static_cast<double>(rows * t.pixel_tile),
        0.01 * static_cast<double>(t.channel_tile * rows * t.pixel_tile),
        gather, product);
  }

  // Any spatial rank: per (image, group, tile of output pixels), gather the
  // tile's inputs into columns [C/g * K, P], then one product as above.
  template <class T>
  void RunAnyRank(KernelContext& ctx, const Tensor& x, const Tensor& w,
                  const Tensor* bias, Tensor* y, const Window& win, int64_t n,
                  int64_t cg, int64_t mg, const Epilogue& epilogue) const {
    const int64_t g = group_;
    const int64_t out_size = win.OutSize(), in_size = win.InSize();
    const int64_t taps = win.KernelSize();
    const int64_t depth = cg * taps;
    const int64_t tiles = (out_size + kConvTile - 1) / kConvTile;
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    const T* pb = bias ? bias->data<T>() : nullptr;
    T* py = y->data<T>();
    const double cost =
        2.0 * static_cast<double>(mg * depth * kConvTile) * 0.05;
    ctx.ParallelFor(n * g * tiles, cost, [&](int64_t begin, int64_t end) {
      std::vector<T> cols(depth * kConvTile);
      for (int64_t job = begin; job < end; ++job) {
        const int64_t tile = job % tiles, ng = job / tiles;
        const int64_t image = ng / g, group = ng % g;
        const int64_t p0 = tile * kConvTile;
        const int64_t pixels = std::min(kConvTile, out_size - p0);
        const T* x_group = px + (image * g + group) * cg * in_size;
        std::fill(cols.begin(), cols.end(), T(0));
        for (int64_t p = 0; p < pixels; ++p) {
          ForEachTap(win, p0 + p, [&](int64_t offset, int64_t k) {
            if (offset < 0) return;
            for (int64_t ch = 0; ch < cg; ++ch) {
              cols[(ch * taps + k) * pixels + p] =
                  x_group[ch * in_size + offset];
            }
          });
        }
        T* out = py + (image * g + group) * mg * out_size + p0;
        GemmTile<T>(mg, pixels, depth, {pw + group * mg * depth, depth},
                    {cols.data(), pixels}, out, out_size, false);
        if (pb != nullptr) {
          for (int64_t r = 0; r < mg; ++r) {
            for (int64_t p = 0; p < pixels; ++p) {
              out[r * out_size + p] += pb[group * mg + r];
            }
          }
        }
        epilogue.Finish<T>(y, out - py, mg, pixels, out_size);
      }
    });
  }

  const WindowAttrs attrs_;
  const int64_t group_;
  const bool fused_;
  const StatusOr<ActivationSpec> activation_;  // An error fails Compute.
  std::vector<PackedOperand> packed_w_;        // Empty when W is not packed.
  Tensor packed_source_;                       // The W they were packed from.
  // The bias packed_w_ holds as its last column, when it holds one.
  Tensor folded_bias_;
  bool transposed_ = false;    // packed_w_ is W^T: RunTransposed2D.
  std::vector<float> lane_w_;  // W for DepthwiseLanes2D; empty when not made.
  Tensor lane_source_;         // The W it was arranged from.
};

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
        // ONNX: SAME_UPPER puts the extra pad at the end.
        const int64_t small = total / 2;
        win.pad_begin[i] =
            attrs_.auto_pad == "SAME_LOWER" ? total - small : small;
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
    return DispatchNumeric(x.dtype(), [&](auto zero) -> Status {
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

// Conv's and FusedConv's output shape when X's and W's are known (the
// graph passes need it to fuse a residual Add); unknown otherwise, or when
// the sizes do not fit, which the kernel then reports.
Status InferConvShape(InferenceContext& ctx) {
  WEFT_RETURN_IF_ERROR(CheckWindowAttrs(ctx));
  const PartialShape& x = ctx.input_shape(0);
  const PartialShape& w = ctx.input_shape(1);
  if (!x.IsFullyDefined() || !w.IsFullyDefined() || x.rank() < 3 ||
      w.rank() != x.rank()) {
    return Status::OK();
  }
  const WindowAttrs attrs = InferredWindowAttrs(ctx);
  std::vector<int64_t> in, kernel;
  for (int i = 2; i < x.rank(); ++i) {
    in.push_back(x.dim(i));
    kernel.push_back(w.dim(i));
  }
  if (!attrs.kernel.empty() && attrs.kernel != kernel) return Status::OK();
  auto window = ForwardWindow(attrs, in, kernel);
  if (!window.ok()) return Status::OK();
  std::vector<int64_t> out = {x.dim(0), w.dim(0)};
  out.insert(out.end(), window->out.begin(), window->out.end());
  ctx.set_output(0, PartialShape(out));
  return Status::OK();
}

template <class K>
KernelFactory Factory() {
  return KernelFactoryFor<K>();
}

}  // namespace

void RegisterConvOps(OpRegistry& registry) {
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
