// Resampling of images laid out [height, width, channels] in float32: two
// separable passes (rows, then columns), each output sample a normalised
// weighted sum of the input samples its filter covers. With antialias (and
// always for kArea) the filter widens by the shrink factor, as PIL and
// torchvision's antialiased Resize do, so a shrunken image averages every
// input pixel instead of skipping most of them. Sample centres are at
// half-pixel positions (TensorFlow's half_pixel_centers, PyTorch's
// align_corners = False).
#ifndef WEFT_SRC_KERNELS_IMAGE_RESAMPLE_H_
#define WEFT_SRC_KERNELS_IMAGE_RESAMPLE_H_

#include <cstdint>
#include <vector>

namespace weft::internal {

enum class ResampleFilter { kNearest, kBilinear, kArea };

// The taps of one axis: output i reads inputs [first[i], first[i] + count)
// with weights[i * max_taps + k].
struct ResampleTaps {
  std::vector<int64_t> first;
  std::vector<int64_t> count;
  std::vector<float> weights;
  int64_t max_taps = 0;
};

// The taps from in_size samples to out_size over the input span
// [offset, offset + span) (a crop; the whole axis is 0, in_size).
// REQUIRES: in_size >= 1, out_size >= 1, 0 <= offset, span >= 1,
// offset + span <= in_size.
ResampleTaps ComputeResampleTaps(int64_t in_size, int64_t out_size,
                                 double offset, double span,
                                 ResampleFilter filter, bool antialias);

// Rows [row_begin, row_end) of `out` ([rows, out_width, channels]) from
// `in` ([rows, in_width, channels]) along the width; uint8 samples are
// read as they are (no float copy of the whole image first).
void ResampleWidth(const float* in, int64_t in_width, int64_t channels,
                   const ResampleTaps& taps, float* out, int64_t row_begin,
                   int64_t row_end);
void ResampleWidth(const uint8_t* in, int64_t in_width, int64_t channels,
                   const ResampleTaps& taps, float* out, int64_t row_begin,
                   int64_t row_end);

// The input rows [*first, *last) that taps read (for a crop: only those
// need the width pass).
void TapSpan(const ResampleTaps& taps, int64_t* first, int64_t* last);

// taps with every first index moved down by `rows` (to read a buffer that
// starts at input row `rows`).
ResampleTaps ShiftTaps(ResampleTaps taps, int64_t rows);

// Rows [row_begin, row_end) of `out` ([out_height, width, channels]) from
// `in` ([in_height, width, channels]) along the height.
void ResampleHeight(const float* in, int64_t width, int64_t channels,
                    const ResampleTaps& taps, float* out, int64_t row_begin,
                    int64_t row_end);

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_IMAGE_RESAMPLE_H_
