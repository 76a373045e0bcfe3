// ConvKernel: Conv and FusedConv on NC(D)HW tensors (schemas in
// conv_ops.cc). It chooses one strategy per Run in one function,
// ConvKernel::Run (conv_ops.cc), by the window's rank, the group size and
// whether W was packed at construction; each strategy lives in a file of
// its own:
//   conv_depthwise.cc  RunDepthwise2D and its small-plane form,
//                      RunDepthwiseLanes (one input channel per group);
//   conv_products.cc   RunProduct2D (im2col products over W as given) and
//                      RunAnyRank (1-D, 3-D and other window ranks);
//   conv_packed.cc     RunTransposed2D and RunPhasePanels2D, over W packed
//                      for the micro-kernel at construction, and the tiling
//                      they share (PanelTiles, RunPanelTiles);
//   conv_winograd.cc   RunWinograd2D, 3 x 3 windows with stride 1 as
//                      Winograd's F(m x m, 3 x 3) over W transformed at
//                      construction (kernels/winograd.h).
//
// Determinism: every strategy cuts the output into tiles whose shapes
// depend on the sizes (and the micro-kernel's panel shape) alone and
// computes each tile as one single-threaded product over the whole depth;
// depthwise planes are computed by one thread each. So every output
// element's summation order depends on the sizes alone, never on the
// thread count.
#ifndef WEFT_SRC_OPS_CONV_KERNEL_H_
#define WEFT_SRC_OPS_CONV_KERNEL_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/conv_kernels.h"
#include "kernels/conv_phase_panels.h"
#include "kernels/gemm_tile.h"
#include "kernels/int_division.h"
#include "kernels/packed_gemm.h"
#include "kernels/winograd.h"
#include "ops/conv_window.h"
#include "ops/fused_activation.h"
#include "ops/op_util.h"
#include "weft/kernel.h"

namespace weft::internal {

// Output pixels per tile: each tile is one product of fixed shape.
constexpr int64_t kConvTile = 256;
// Below this many (image, group, pixel tile) jobs, output channels are split
// into blocks as well.
constexpr int64_t kConvMinJobs = 8;
// RunPhasePanels2D's pixel tiles: at most this many nr-wide panels each.
constexpr int64_t kPhaseTilePanels = 8;
// Taps of a depthwise window whose lane weights live on the stack.
constexpr int64_t kMaxLaneTaps = 25;
// Input and output channels (one group) from which a 3 x 3 layer runs as
// Winograd: with fewer, the transforms, whose cost per
// tile and channel is fixed, weigh against products over few channels.
constexpr int64_t kWinogradMinChannels = 16;

// Whether Conv layers that fit Winograd's F(m x m, 3 x 3) (WinogradFits,
// one group, kWinogradMinChannels, a constant float32 W and BLIS tiles) run
// as it: yes, unless WEFT_NCHW_WINOGRAD=0 (read once). The rule is the
// arithmetic's, 4 or 2.25 times fewer multiply-adds in the products, not
// one CPU's.
bool NchwWinogradEnabled();

// The Winograd tile (WinogradTileFor) a Conv layer with a constant float32 W
// of m output and `channels` input channels in `group` groups runs as, over
// `geo` (window, strides, dilations and output plane; the pads are checked
// per Run), or 0 where it runs as products: BLIS tiles, NchwWinogradEnabled,
// one group, kWinogradMinChannels both ways. What ConvKernel decides at
// session creation, for it and for the tests that assert the decision.
int64_t NchwWinogradTile(int64_t m, int64_t channels, int64_t group,
                         const Conv2DGeometry& geo);

// Panels per pixel tile for a plane of `panels`: at most kPhaseTilePanels
// and at least half that, the size whose tiles two threads share most evenly
// (the fewest panels for the busier one; larger tiles on a tie). ResNet-18's
// 56 x 56 plane: 196 panels in 28 tiles of 7, not 25 of 8; its 28 x 28: 49
// in 10 tiles of 5, not 7 of 7. Depends on the plane's size alone, so the
// tiles never depend on the thread count.
inline int64_t PhaseTilePanels(int64_t panels) {
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
        batch_invariant_(c.batch_invariant()),
        activation_(ActivationFromAttrs(c.attrs())) {
    if (!TransformWinogradWeights(c)) {
      PackConstantWeights(c.constant_input(1), c.constant_input(2),
                          KnownOutputPlane(c));
    }
    ArrangeConstantLaneWeights(c.constant_input(1));
  }

  int64_t prepared_bytes() const override {
    int64_t bytes = 0;
    for (const PackedOperand& w : packed_w_) bytes += w.bytes();
    for (const PackedOperand& u : winograd_u_) bytes += u.bytes();
    bytes += static_cast<int64_t>(lane_w_.size() * sizeof(float));
    return bytes;
  }

  Status Compute(KernelContext& ctx) const override;

 private:
  // The output plane's size (H x W) when the graph fixes it, else 0.
  static int64_t KnownOutputPlane(const KernelConstruction& c);

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
                           int64_t out_pixels);

  // A constant float32 W of a layer that runs as Winograd (NchwWinogradEnabled,
  // the output plane fixed by the graph and WinogradFits), transformed once
  // here and packed as the left side of the products, one a point. Returns
  // whether it did; such a layer packs nothing else.
  bool TransformWinogradWeights(const KernelConstruction& c);

  // A constant float32 W of a depthwise 2-D convolution (one input channel
  // per group), in DepthwiseLanes2D's layout for every block of output
  // planes, so that a Run on small planes does not re-arrange it per block.
  void ArrangeConstantLaneWeights(const Tensor* w);

  // The packed groups of W when this Run's W is the constant they were
  // packed from (a Run may feed the Const's output), else null.
  const std::vector<PackedOperand>* PackedWeightsFor(const Tensor& w) const;

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
           int64_t cg, int64_t mg, const Epilogue& epilogue) const;

  // Groups of one input channel (depthwise): each output plane computed
  // directly by one thread.
  template <class T>
  void RunDepthwise2D(KernelContext& ctx, const Tensor& x, const Tensor& w,
                      const Tensor* bias, Tensor* y, const Conv2DGeometry& geo,
                      int64_t n, int64_t mg, const Epilogue& epilogue) const;

  // RunDepthwise2D's small planes: DepthwiseLanes2D over each (image, block
  // of kDepthwiseLanes output planes), W taken arranged from construction
  // when it is the constant it was arranged from.
  void RunDepthwiseLanes(KernelContext& ctx, const Tensor& x, const Tensor& w,
                         const Tensor* bias, Tensor* y,
                         const Conv2DGeometry& geo, int64_t n, int64_t mg,
                         const Epilogue& epilogue) const;

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
                    const Epilogue& epilogue) const;

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
                            const Gather& gather, const Product& product);

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
                       const Epilogue& epilogue) const;

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
                        int64_t mg, const Epilogue& epilogue) const;

  // Winograd's F(m x m, 3 x 3) over W transformed at construction
  // (winograd_u_), one group: per (image, block of tile rows), the block's
  // input is transformed once (WinogradInputBlock), then per block of output
  // channels the (m + 2)^2 products
  //   M_point [channels, tiles] = U_point [channels, C] * V_point [C, tiles]
  // run and are transformed back into Y's rows with the bias
  // (WinogradOutputBlock), then the epilogue. The blocks depend on the
  // plane's size alone and each output comes from one single-threaded
  // product, so its bits do not depend on the thread count or the batch.
  void RunWinograd2D(KernelContext& ctx, const Tensor& x, const Tensor* bias,
                     Tensor* y, const Conv2DGeometry& geo, int64_t n,
                     int64_t cg, int64_t mg, const Epilogue& epilogue) const;

  // Any spatial rank: per (image, group, tile of output pixels), gather the
  // tile's inputs into columns [C/g * K, P], then one product as above.
  template <class T>
  void RunAnyRank(KernelContext& ctx, const Tensor& x, const Tensor& w,
                  const Tensor* bias, Tensor* y, const Window& win, int64_t n,
                  int64_t cg, int64_t mg, const Epilogue& epilogue) const;

  const WindowAttrs attrs_;
  const int64_t group_;
  const bool fused_;
  // SessionOptions::batch_invariant: products split as for one image.
  const bool batch_invariant_;
  const StatusOr<ActivationSpec> activation_;  // An error fails Compute.
  std::vector<PackedOperand> packed_w_;        // Empty when W is not packed.
  // The W packed_w_ or winograd_u_ were made from.
  Tensor packed_source_;
  // The bias packed_w_ holds as its last column, when it holds one.
  Tensor folded_bias_;
  bool transposed_ = false;    // packed_w_ is W^T: RunTransposed2D.
  std::vector<float> lane_w_;  // W for DepthwiseLanes2D; empty when not made.
  Tensor lane_source_;         // The W it was arranged from.
  // W transformed for Winograd, one packed operand a point; empty when not.
  std::vector<PackedOperand> winograd_u_;
  int64_t winograd_tile_ = 0;  // The tile side winograd_u_ was made for.
};

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_CONV_KERNEL_H_
