// ConvKernel's product strategies over W as given (conv_kernel.h):
// im2col tiles for 2-D windows, and any other window rank.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/conv_kernel.h"

namespace weft::internal {

template <class T>
void ConvKernel::RunProduct2D(KernelContext& ctx, const Tensor& x,
                              const Tensor& w, const Tensor* bias, Tensor* y,
                              const Conv2DGeometry& geo, int64_t n, int64_t cg,
                              int64_t mg, const Epilogue& epilogue) const {
  const int64_t g = group_;
  const int64_t out_size = geo.OutSize(), in_size = geo.InSize();
  const int64_t depth = cg * geo.Taps();
  const bool pointwise = geo.IsPointwise();
  const int64_t pixel_tiles = (out_size + kConvTile - 1) / kConvTile;
  // Few pixel tiles (late layers, batch 1): split the output channels too,
  // so that the pool has work for more than one thread. Under
  // batch_invariant the split is the one image's, whatever the batch: the
  // Eigen tile kernel blocks the inner dimension by the product's shape, so
  // a block of other rows would sum in another order (BLIS's and oneDNN's
  // do not, and took no harm).
  const int64_t base_jobs = n * g * pixel_tiles;
  const int64_t split_jobs = (batch_invariant_ ? 1 : n) * g * pixel_tiles;
  int64_t channel_blocks = 1;
  if (split_jobs < kConvMinJobs) {
    channel_blocks =
        std::min((mg + 15) / 16, (kConvMinJobs + split_jobs - 1) / split_jobs);
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

template <class T>
void ConvKernel::RunAnyRank(KernelContext& ctx, const Tensor& x,
                            const Tensor& w, const Tensor* bias, Tensor* y,
                            const Window& win, int64_t n, int64_t cg,
                            int64_t mg, const Epilogue& epilogue) const {
  const int64_t g = group_;
  const int64_t out_size = win.OutSize(), in_size = win.InSize();
  const int64_t taps = win.KernelSize();
  const int64_t depth = cg * taps;
  const int64_t tiles = (out_size + kConvTile - 1) / kConvTile;
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  const T* pb = bias ? bias->data<T>() : nullptr;
  T* py = y->data<T>();
  const double cost = 2.0 * static_cast<double>(mg * depth * kConvTile) * 0.05;
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
            cols[(ch * taps + k) * pixels + p] = x_group[ch * in_size + offset];
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

// The dtypes Run calls them with (float16 is widened to float32 first).
template void ConvKernel::RunProduct2D<float>(KernelContext&, const Tensor&,
                                              const Tensor&, const Tensor*,
                                              Tensor*, const Conv2DGeometry&,
                                              int64_t, int64_t, int64_t,
                                              const Epilogue&) const;
template void ConvKernel::RunProduct2D<double>(KernelContext&, const Tensor&,
                                               const Tensor&, const Tensor*,
                                               Tensor*, const Conv2DGeometry&,
                                               int64_t, int64_t, int64_t,
                                               const Epilogue&) const;
template void ConvKernel::RunAnyRank<float>(KernelContext&, const Tensor&,
                                            const Tensor&, const Tensor*,
                                            Tensor*, const Window&, int64_t,
                                            int64_t, int64_t,
                                            const Epilogue&) const;
template void ConvKernel::RunAnyRank<double>(KernelContext&, const Tensor&,
                                             const Tensor&, const Tensor*,
                                             Tensor*, const Window&, int64_t,
                                             int64_t, int64_t,
                                             const Epilogue&) const;

}  // namespace weft::internal
