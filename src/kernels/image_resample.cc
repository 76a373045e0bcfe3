#include "kernels/image_resample.h"

#include <algorithm>
#include <cmath>

namespace weft::internal {
namespace {

// Filter value at distance x (in input samples, scaled by the widening).
double FilterAt(ResampleFilter filter, double x) {
  x = std::fabs(x);
  switch (filter) {
    case ResampleFilter::kBilinear:
      return x < 1.0 ? 1.0 - x : 0.0;
    case ResampleFilter::kArea:
      return x < 0.5 ? 1.0 : 0.0;
    case ResampleFilter::kNearest:
      break;
  }
  return 0.0;
}

double FilterRadius(ResampleFilter filter) {
  return filter == ResampleFilter::kBilinear ? 1.0 : 0.5;
}

}  // namespace

ResampleTaps ComputeResampleTaps(int64_t in_size, int64_t out_size,
                                 double offset, double span,
                                 ResampleFilter filter, bool antialias) {
  ResampleTaps taps;
  taps.first.resize(out_size);
  taps.count.resize(out_size);
  const double scale = span / static_cast<double>(out_size);
  if (filter == ResampleFilter::kNearest) {
    taps.max_taps = 1;
    taps.weights.assign(out_size, 1.0f);
    for (int64_t i = 0; i < out_size; ++i) {
      const auto src = static_cast<int64_t>(
          std::floor(offset + (static_cast<double>(i) + 0.5) * scale));
      taps.first[i] = std::clamp<int64_t>(src, 0, in_size - 1);
      taps.count[i] = 1;
    }
    return taps;
  }
  const double widen = (antialias || filter == ResampleFilter::kArea)
                           ? std::max(scale, 1.0)
                           : 1.0;
  const double support = FilterRadius(filter) * widen;
  taps.max_taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  taps.weights.assign(out_size * taps.max_taps, 0.0f);
  for (int64_t i = 0; i < out_size; ++i) {
    const double center = offset + (static_cast<double>(i) + 0.5) * scale;
    int64_t lo = static_cast<int64_t>(std::floor(center - support + 0.5));
    int64_t hi = static_cast<int64_t>(std::floor(center + support + 0.5));
    lo = std::clamp<int64_t>(lo, 0, in_size - 1);
    hi = std::clamp<int64_t>(hi, lo + 1, in_size);
    hi = std::min(hi, lo + taps.max_taps);
    double total = 0;
    std::vector<double> w(hi - lo);
    for (int64_t j = lo; j < hi; ++j) {
      w[j - lo] =
          FilterAt(filter, (static_cast<double>(j) + 0.5 - center) / widen);
      total += w[j - lo];
    }
    if (total <= 0) {  // Centre between samples at an edge: nearest one.
      std::fill(w.begin(), w.end(), 0.0);
      w[std::clamp<int64_t>(static_cast<int64_t>(center), lo, hi - 1) - lo] =
          1.0;
      total = 1.0;
    }
    taps.first[i] = lo;
    taps.count[i] = hi - lo;
    for (int64_t k = 0; k < hi - lo; ++k) {
      taps.weights[i * taps.max_taps + k] = static_cast<float>(w[k] / total);
    }
  }
  return taps;
}

namespace {

// One output row: each output pixel a weighted sum of its taps, the sums
// of its C channels kept in registers (C known at compile time; the output
// may alias nothing the compiler can see, so writing through `out` per tap
// would reload it).
template <int C, class T>
void WidthRow(const T* src, const ResampleTaps& taps, float* dst,
              int64_t out_width) {
  for (int64_t x = 0; x < out_width; ++x) {
    const float* w = &taps.weights[x * taps.max_taps];
    const T* first = src + taps.first[x] * C;
    float sum[C] = {};
    for (int64_t k = 0; k < taps.count[x]; ++k) {
      for (int c = 0; c < C; ++c) {
        sum[c] += w[k] * static_cast<float>(first[k * C + c]);
      }
    }
    for (int c = 0; c < C; ++c) dst[x * C + c] = sum[c];
  }
}

template <class T>
void ResampleWidthOf(const T* in, int64_t in_width, int64_t channels,
                     const ResampleTaps& taps, float* out, int64_t row_begin,
                     int64_t row_end) {
  const auto out_width = static_cast<int64_t>(taps.first.size());
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* src = in + r * in_width * channels;
    float* dst = out + r * out_width * channels;
    switch (channels) {
      case 1:
        WidthRow<1>(src, taps, dst, out_width);
        continue;
      case 3:
        WidthRow<3>(src, taps, dst, out_width);
        continue;
      case 4:
        WidthRow<4>(src, taps, dst, out_width);
        continue;
      default:
        break;
    }
    for (int64_t x = 0; x < out_width; ++x) {
      const float* w = &taps.weights[x * taps.max_taps];
      const T* first = src + taps.first[x] * channels;
      float* o = dst + x * channels;
      for (int64_t c = 0; c < channels; ++c) o[c] = 0.0f;
      for (int64_t k = 0; k < taps.count[x]; ++k) {
        for (int64_t c = 0; c < channels; ++c) {
          o[c] += w[k] * static_cast<float>(first[k * channels + c]);
        }
      }
    }
  }
}

}  // namespace

void ResampleWidth(const float* in, int64_t in_width, int64_t channels,
                   const ResampleTaps& taps, float* out, int64_t row_begin,
                   int64_t row_end) {
  ResampleWidthOf(in, in_width, channels, taps, out, row_begin, row_end);
}

void ResampleWidth(const uint8_t* in, int64_t in_width, int64_t channels,
                   const ResampleTaps& taps, float* out, int64_t row_begin,
                   int64_t row_end) {
  ResampleWidthOf(in, in_width, channels, taps, out, row_begin, row_end);
}

void TapSpan(const ResampleTaps& taps, int64_t* first, int64_t* last) {
  *first = taps.first.empty() ? 0 : taps.first[0];
  *last = *first;
  for (size_t i = 0; i < taps.first.size(); ++i) {
    *first = std::min(*first, taps.first[i]);
    *last = std::max(*last, taps.first[i] + taps.count[i]);
  }
}

ResampleTaps ShiftTaps(ResampleTaps taps, int64_t rows) {
  for (int64_t& f : taps.first) f -= rows;
  return taps;
}

void ResampleHeight(const float* in, int64_t width, int64_t channels,
                    const ResampleTaps& taps, float* out, int64_t row_begin,
                    int64_t row_end) {
  const int64_t row = width * channels;
  for (int64_t y = row_begin; y < row_end; ++y) {
    const float* w = &taps.weights[y * taps.max_taps];
    float* dst = out + y * row;
    std::fill(dst, dst + row, 0.0f);
    for (int64_t k = 0; k < taps.count[y]; ++k) {
      const float* src = in + (taps.first[y] + k) * row;
      const float weight = w[k];
      for (int64_t i = 0; i < row; ++i) dst[i] += weight * src[i];
    }
  }
}

}  // namespace weft::internal
