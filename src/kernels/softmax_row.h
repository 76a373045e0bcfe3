// Softmax of one contiguous float32 row, shared by the Softmax op and the
// fused attention kernel so that both give the same bits.
#ifndef WEFT_SRC_KERNELS_SOFTMAX_ROW_H_
#define WEFT_SRC_KERNELS_SOFTMAX_ROW_H_

#include <cmath>
#include <cstdint>

#include "kernels/math_rows.h"
#include "kernels/vector_math.h"

namespace weft::internal {

// The sum of load(0..len-1) in double, in vectorisable fixed-order lanes.
template <class Load>
double RowSum(int64_t len, Load load) {
  return vmath::LaneReduce<double>(len, 0.0, load,
                                   [](double a, double b) { return a + b; });
}

// Softmax of one contiguous float32 row, in passes that each vectorise:
// max, y = exp(x - max) with the sum of y in double lanes, then scale (or,
// for LogSoftmax, y = x - max - log(sum) in double). A NaN in the row makes
// the sum NaN and so the whole row NaN, whatever the maximum. For Softmax
// y may be x (each pass reads an element before it writes it).
template <bool kLog>
void SoftmaxContiguousRow(const float* x, float* y, int64_t len) {
  const float max = vmath::LaneMax(x, len);
  ExpShiftedRow(x, max, y, len);
  const double sum = RowSum(len, [y](int64_t j) { return double{y[j]}; });
  if constexpr (kLog) {  // Reads x again: y must not be x.
    const double log_sum = std::log(sum);
    for (int64_t j = 0; j < len; ++j) {
      y[j] = static_cast<float>(double{x[j] - max} - log_sum);
    }
  } else {
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < len; ++j) y[j] *= inv;
  }
}

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_SOFTMAX_ROW_H_
