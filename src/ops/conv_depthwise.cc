// ConvKernel's depthwise strategy (one input channel per group): each
// output plane computed directly by one thread, or, for small float32
// planes, blocks of planes in vector lanes (conv_kernel.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/conv_kernel.h"

namespace weft::internal {

template <class T>
void ConvKernel::RunDepthwise2D(KernelContext& ctx, const Tensor& x,
                                const Tensor& w, const Tensor* bias, Tensor* y,
                                const Conv2DGeometry& geo, int64_t n,
                                int64_t mg, const Epilogue& epilogue) const {
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

void ConvKernel::RunDepthwiseLanes(KernelContext& ctx, const Tensor& x,
                                   const Tensor& w, const Tensor* bias,
                                   Tensor* y, const Conv2DGeometry& geo,
                                   int64_t n, int64_t mg,
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
      DepthwiseLanes2D(geo, planes, lane_w, bias16, bounds.lower, bounds.upper,
                       lanes, outs, scratch);
      if (!bounds.finished) {
        epilogue.Finish<float>(y, (image * m + oc0) * geo.OutSize(), lanes,
                               geo.OutSize(), geo.OutSize());
      }
    }
  });
}

// The dtypes Run calls it with (float16 is widened to float32 first).
template void ConvKernel::RunDepthwise2D<float>(KernelContext&, const Tensor&,
                                                const Tensor&, const Tensor*,
                                                Tensor*, const Conv2DGeometry&,
                                                int64_t, int64_t,
                                                const Epilogue&) const;
template void ConvKernel::RunDepthwise2D<double>(KernelContext&, const Tensor&,
                                                 const Tensor&, const Tensor*,
                                                 Tensor*, const Conv2DGeometry&,
                                                 int64_t, int64_t,
                                                 const Epilogue&) const;

}  // namespace weft::internal
