// ConvKernel's Winograd strategy (conv_kernel.h): 3 x 3 layers with stride
// 1 as F(4 x 4, 3 x 3) or F(2 x 2, 3 x 3) (kernels/winograd.h), the
// products on the BLIS micro-kernel through PackedGemmTile.
#include <algorithm>
#include <vector>

#include "ops/conv_kernel.h"
#include "ops/kernel_switches.h"

namespace weft::internal {

bool NchwWinogradEnabled() {
  static const bool enabled = KernelSwitchOr(KernelSwitch::kNchwWinograd, true);
  return enabled;
}

int64_t NchwWinogradTile(int64_t m, int64_t channels, int64_t group,
                         const Conv2DGeometry& geo) {
  if (group != 1 || !NchwWinogradEnabled() ||
      ActiveGemmKernel() != GemmKernel::kBlis || m < kWinogradMinChannels ||
      channels < kWinogradMinChannels) {
    return 0;
  }
  return WinogradTileFor(geo);
}

bool ConvKernel::TransformWinogradWeights(const KernelConstruction& c) {
  const Tensor* w = c.constant_input(1);
  if (w == nullptr || w->dtype() != DataType::kFloat32 ||
      w->shape().rank() != 4 || c.output_shapes().empty()) {
    return false;
  }
  const PartialShape& y = c.output_shapes()[0];
  if (!y.rank_known() || y.rank() != 4 || y.dim(2) < 0 || y.dim(3) < 0) {
    return false;
  }
  // The geometry as far as the decision needs it; the pads are checked per
  // Run (WinogradFits), which falls back to the products over W as given.
  Conv2DGeometry geo{};
  geo.kernel_h = w->shape().dim(2);
  geo.kernel_w = w->shape().dim(3);
  geo.stride_h = geo.stride_w = geo.dilation_h = geo.dilation_w = 1;
  for (int64_t stride : attrs_.strides) geo.stride_h &= stride == 1;
  for (int64_t dilation : attrs_.dilations) geo.dilation_h &= dilation == 1;
  geo.stride_w = geo.stride_h;
  geo.dilation_w = geo.dilation_h;
  geo.out_h = y.dim(2);
  geo.out_w = y.dim(3);
  const int64_t m = w->shape().dim(0), channels = w->shape().dim(1);
  const int64_t tile = NchwWinogradTile(m, channels, group_, geo);
  if (tile == 0) return false;

  const int64_t points = WinogradPoints(tile);
  std::vector<float> u(points * m * channels);
  WinogradWeights(tile, w->data<float>(), m, channels, u.data());
  winograd_u_.reserve(points);
  for (int64_t point = 0; point < points; ++point) {
    winograd_u_.push_back(PackedOperand::Pack(
        PackedOperand::Side::kLeft, {u.data() + point * m * channels, channels},
        m, channels));
  }
  winograd_tile_ = tile;
  packed_source_ = *w;
  return true;
}

void ConvKernel::RunWinograd2D(KernelContext& ctx, const Tensor& x,
                               const Tensor* bias, Tensor* y,
                               const Conv2DGeometry& geo, int64_t n, int64_t cg,
                               int64_t mg, const Epilogue& epilogue) const {
  const MicroKernelShape& shape = FloatMicroKernel();
  const WinogradPlane plane = WinogradPlane::Of(geo);
  const int64_t chunks = n * plane.blocks;  // (image, block of tile rows)
  // Few chunks (late layers, batch 1): split the output channels too, on
  // the packed weights' panels, so that the pool has work for each thread.
  int64_t channel_blocks = 1;
  if (chunks < kConvMinJobs) {
    channel_blocks =
        std::min(CeilDiv(mg, shape.mr), CeilDiv(kConvMinJobs, chunks));
  }
  const int64_t channel_tile = RoundUp(CeilDiv(mg, channel_blocks), shape.mr);
  channel_blocks = CeilDiv(mg, channel_tile);
  // The products of a block are transformed back in steps of about 32
  // channels, so that the products of a step stay in L2 for it.
  const int64_t channel_step = RoundUp(32, shape.mr);
  const int64_t point_floats = plane.PointFloats(cg);
  const int64_t v_floats = plane.points * point_floats;
  const int64_t ld = plane.MaxColumns();
  const float* px = x.data<float>();
  const float* pb = bias ? bias->data<float>() : nullptr;
  float* py = y->data<float>();

  auto transform_input = [&](int64_t chunk, int64_t c0, int64_t c1, float* v) {
    thread_local std::vector<float> scratch;  // Kept between Runs.
    scratch.resize(plane.ScratchFloats());
    const int64_t image = chunk / plane.blocks;
    WinogradInputBlock(plane, chunk % plane.blocks,
                       px + image * cg * geo.InSize(), c0, c1, cg, v,
                       scratch.data());
  };
  // Shared by a chunk's channel blocks: transformed once, before the
  // products, in groups of input channels so that every thread takes part.
  const bool shared = channel_blocks > 1;
  thread_local PanelBuffer shared_buffer;  // Kept between Runs.
  float* const shared_v =
      shared ? shared_buffer.Get(chunks * v_floats) : nullptr;
  constexpr int64_t kChannelGroup = 16;
  const int64_t channel_groups = CeilDiv(cg, kChannelGroup);
  // About 20 ns per input channel of a column for the transform, padded
  // copy included (perf of ResNet-18's 56 x 56 layer at one thread: 16% of
  // 1.76 ms for 64 channels x 224 columns), and 0.01 ns per multiply-add in
  // the products.
  const double column_transform_cost = 20.0 * static_cast<double>(ld);
  if (shared) {
    ctx.ParallelFor(chunks * channel_groups,
                    column_transform_cost * static_cast<double>(kChannelGroup),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t job = begin; job < end; ++job) {
                        const int64_t chunk = job / channel_groups;
                        const int64_t c0 = job % channel_groups * kChannelGroup;
                        transform_input(chunk, c0,
                                        std::min(cg, c0 + kChannelGroup),
                                        shared_v + chunk * v_floats);
                      }
                    });
  }
  const double product_cost =
      0.01 * static_cast<double>(plane.points * channel_tile * cg * ld) +
      column_transform_cost * static_cast<double>(channel_tile) +
      (shared ? 0.0 : column_transform_cost * static_cast<double>(cg));
  ctx.ParallelFor(
      chunks * channel_blocks, product_cost, [&](int64_t begin, int64_t end) {
        thread_local PanelBuffer own_v, products;  // Kept between Runs.
        for (int64_t job = begin; job < end; ++job) {
          const int64_t chunk = job / channel_blocks;
          const int64_t image = chunk / plane.blocks;
          const int64_t block = chunk % plane.blocks;
          float* v = shared ? shared_v + chunk * v_floats : own_v.Get(v_floats);
          if (!shared) transform_input(chunk, 0, cg, v);
          const int64_t columns = plane.ColumnsOf(block);
          const int64_t first = job % channel_blocks * channel_tile;
          const int64_t last = std::min(mg, first + channel_tile);
          for (int64_t ch0 = first; ch0 < last; ch0 += channel_step) {
            const int64_t channels = std::min(channel_step, last - ch0);
            const int64_t m_point = PointStride(channels * ld);
            float* m = products.Get(plane.points * m_point);
            for (int64_t point = 0; point < plane.points; ++point) {
              PackedGemmTile(
                  channels, columns, cg,
                  GemmInput::Packed(winograd_u_[point], ch0),
                  GemmInput::Panels(
                      {v + point * point_floats, ld, cg, shape.nr}, 0),
                  {m + point * m_point, ld}, /*accumulate=*/false);
            }
            WinogradOutputBlock(plane, block, m, channels, ld,
                                pb != nullptr ? pb + ch0 : nullptr,
                                py + (image * mg + ch0) * geo.OutSize());
            epilogue.Finish<float>(
                y, (image * mg + ch0) * geo.OutSize() + plane.FirstPixel(block),
                channels, plane.PixelsOf(block), geo.OutSize());
          }
        }
      });
}

}  // namespace weft::internal
