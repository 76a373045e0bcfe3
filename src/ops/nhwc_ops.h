// Convolution and pooling on channels-last (NHWC) float32 tensors, made by
// the nhwc-layout graph pass (src/optimize/nhwc_layout.cc) and internal to
// a session: NhwcConv, NhwcMaxPool, NhwcGlobalAveragePool.
//
// NhwcConv runs oneDNN's convolution primitives (docs/kernels.md, "Convolution
// in NHWC through oneDNN"), each single-threaded, over row pieces of the
// output that weft's intra-op pool shares out. The pieces' shapes come from
// the sizes alone, so results never depend on the thread count.
#ifndef WEFT_SRC_OPS_NHWC_OPS_H_
#define WEFT_SRC_OPS_NHWC_OPS_H_

#include <array>
#include <cstdint>

#include "ops/fused_activation.h"

namespace weft::internal {

// A 2-D convolution as the pass would hand it to NhwcConv, in the NCHW
// terms of the graph it came from.
struct NhwcConvSpec {
  std::array<int64_t, 4> x{};  // N, C, H, W.
  std::array<int64_t, 4> w{};  // K, C / group, kernel height, kernel width.
  int64_t group = 1;
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> dilation{1, 1};
  std::array<int64_t, 4> pads{};  // Top, left, bottom, right.
  bool residual = false;          // FusedConv's Z.
  ActivationSpec activation;
};

// Whether this CPU runs channels-last convolutions through oneDNN: where
// oneDNN's AVX-512 or AVX2 kernels run (the rule and its measurements are
// in docs/kernels.md). Never decided by timing. WEFT_NHWC_CONV=0 turns it
// off, =1 on for every graph (for side-by-side measurements on a new CPU).
bool NhwcConvAvailable();

// Whether, by the CPU's rule, channels-last pays only in graphs with a
// depthwise convolution: where oneDNN's AVX2 kernels run but not its
// AVX-512 ones, and WEFT_NHWC_CONV is unset. Measured on an EPYC Zen 3:
// MobileNetV2 2x faster channels-last, ResNet-18 even, SqueezeNet and
// ResNet-18 batch 8 1.1-1.2x slower.
bool NhwcConvOnlyWithDepthwise();

// Whether NhwcConv runs 3 x 3 stride-1 float32 convolutions as oneDNN's
// Winograd kernels (fewer multiplications; each piece's rows copied into
// and out of 16-channel blocks): where oneDNN's AVX-512 kernels run.
// WEFT_CONV_WINOGRAD=0 turns it off, =1 on.
bool NhwcConvWinogradAvailable();

// Whether NhwcConv's float32 plan for `spec` is Winograd.
bool NhwcConvRunsWinograd(const NhwcConvSpec& spec);

// Whether oneDNN has an optimised kernel (not its reference loops) for every
// row piece NhwcConv would cut `spec` into, with this activation.
bool NhwcConvSupported(const NhwcConvSpec& spec);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_NHWC_OPS_H_
