// ConvKernel's strategies over W packed for the micro-kernel at
// construction (float32 where the tile kernel is BLIS; conv_kernel.h):
// transposed products, or phase panels of X against W's panels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/conv_kernel.h"

namespace weft::internal {

template <class Gather, class Product>
void ConvKernel::RunPanelTiles(KernelContext& ctx, const PanelTiles& t,
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

void ConvKernel::RunTransposed2D(KernelContext& ctx, const Tensor& x,
                                 const std::vector<PackedOperand>& packed_w,
                                 const Tensor* bias, Tensor* y,
                                 const Conv2DGeometry& geo, int64_t n,
                                 int64_t cg, int64_t mg,
                                 const Epilogue& epilogue) const {
  const MicroKernelShape& shape = FloatMicroKernel();
  const int64_t g = group_;
  const int64_t out_size = geo.OutSize(), in_size = geo.InSize();
  const int64_t depth = cg * geo.Taps();
  const PanelTiles t = PanelTiles::Of(
      out_size,
      RoundUp(CeilDiv(out_size, CeilDiv(out_size, shape.mc)), shape.mr), n * g,
      mg, /*channel_width=*/shape.nr, /*pixel_width=*/shape.mr, depth);
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
      0.01 * static_cast<double>(t.channel_tile * depth * t.pixel_tile), gather,
      product);
}

void ConvKernel::RunPhasePanels2D(KernelContext& ctx, const Tensor& x,
                                  const std::vector<PackedOperand>& packed_w,
                                  const Tensor* bias, Tensor* y,
                                  const Conv2DGeometry& geo, int64_t n,
                                  int64_t cg, int64_t mg,
                                  const Epilogue& epilogue) const {
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
              own + channels * layout.ChannelFloats() + kPhaseCopySlack, 0.0f);
    ctx.ParallelFor(channels, static_cast<double>(layout.ChannelFloats()),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t ch = begin; ch < end; ++ch) {
                        CopyIntoPhasePlanes(geo, layout, px + ch * in_size,
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
      out_size, PhaseTilePanels(CeilDiv(out_size, shape.nr)) * shape.nr, n * g,
      mg, /*channel_width=*/shape.mr, /*pixel_width=*/shape.nr, rows);
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
      0.01 * static_cast<double>(t.channel_tile * rows * t.pixel_tile), gather,
      product);
}

}  // namespace weft::internal
