// The fast sums of a quantized convolution (ConvInteger, QLinearConv, and
// the QDQ groups the qdq-fusion pass turns into QLinearConv): int8 weights,
// packed once, times uint8 or int8 activations on the int8 micro-kernel
// (kernels/int8_gemm.h), and depthwise planes summed directly.
//
// The sums are exact int32, equal bit for bit to the reference loop in
// quantized_conv.cc whatever the kernel, the tiling or the thread count:
//   acc = sum (x - x_zero) (w - w_zero)
//       = sum x w - x_zero sum w - w_zero sum x + depth x_zero w_zero
// where x is taken as unsigned (an int8 x plus 128, its zero point too) and
// a padded tap holds x_zero, so it adds nothing.
#ifndef WEFT_SRC_OPS_QUANTIZED_CONV_PACKED_H_
#define WEFT_SRC_OPS_QUANTIZED_CONV_PACKED_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/int8_gemm.h"
#include "ops/conv_window.h"
#include "weft/kernel.h"

namespace weft::internal {

// The checked sizes of one quantized convolution.
struct QuantizedConv {
  Window win;
  int64_t n = 0, c = 0, m = 0, group = 1;
  int64_t rows_per_group = 0;  // (C / group) x taps.
  Shape out;

  // One input and one output channel per group.
  bool depthwise() const { return group == c && group == m; }
};

// int8 weights [M, C/group, taps...] ready for the fast sums: one packed
// matrix per group, or (depthwise) each channel's taps as int32.
struct Int8ConvWeights {
  std::vector<PackedInt8Weights> groups;
  std::vector<int32_t> depthwise_taps;
  int64_t m = 0, rows_per_group = 0, group = 1;

  // w holds M x (C/group) x taps weights; depthwise when C/group = 1 and
  // group = M.
  static Int8ConvWeights Prepare(const int8_t* w, int64_t m,
                                 int64_t c_per_group, int64_t taps,
                                 int64_t group);
  bool Fits(const QuantizedConv& q) const {
    return m == q.m && rows_per_group == q.rows_per_group && group == q.group;
  }
  int64_t bytes() const;
};

// emit(image, output channel, first pixel, pixels, sums): a run of one
// channel's output pixels, each run once, from any intra-op thread.
using ConvSumsFn =
    std::function<void(int64_t, int64_t, int64_t, int64_t, const int32_t*)>;

// The sums of the convolution of x (uint8 when x_signed is false, else
// int8) with prepared weights whose zero point is w_zero (one entry, or one
// per output channel when w_zero_per_m; nullptr: 0).
void ConvolveInt8(KernelContext& ctx, const QuantizedConv& q, const void* x,
                  bool x_signed, int32_t x_zero, const Int8ConvWeights& w,
                  const int8_t* w_zero, bool w_zero_per_m,
                  const ConvSumsFn& emit);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_QUANTIZED_CONV_PACKED_H_
