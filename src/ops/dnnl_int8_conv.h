// The sums of a group-1 int8 convolution through oneDNN's int8 convolution
// primitive, for NhwcQLinearConv where the CPU has AMX-INT8
// (DnnlInt8ProductsAvailable(), ops/dnnl_matmul.h): oneDNN runs its AMX
// tile kernels there, which weft's own VNNI tiles do not.
//
// The input is the one the direct tiles read (PadInput in
// quantized_conv_nhwc.cc): channels-last uint8, the padding already filled
// with the input's zero point, each pixel's channels at a stride of whole
// quads. oneDNN sees a convolution without padding over those padded
// pixels, the channels past C multiplied by zero weights, so its sums are
// sum x * w over the window exactly in int32, as the direct tiles' are: the
// zero point's share is the caller's offset, as for them. Integer sums are
// exact, so the outputs keep their bits whichever kernel ran.
//
// Jobs are bands of output rows of one image, each one single-threaded
// primitive call over weft's intra-op pool. A band's primitive depends on
// the image's width, so plans are made per input shape at the first Run
// that has it, and kept.
#ifndef WEFT_SRC_OPS_DNNL_INT8_CONV_H_
#define WEFT_SRC_OPS_DNNL_INT8_CONV_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ops/conv_window.h"
#include "weft/function_ref.h"
#include "weft/kernel.h"
#include "weft/tensor.h"

namespace weft::internal {

class DnnlInt8Conv {
 public:
  // w: int8 [M][C][kh][kw] (ONNX's order, one group), shared, not copied:
  // oneDNN's layout of it is made with each plan. The input's pixels hold
  // channel_stride >= C bytes.
  DnnlInt8Conv(Tensor w, int64_t channel_stride);
  ~DnnlInt8Conv();
  DnnlInt8Conv(const DnnlInt8Conv&) = delete;
  DnnlInt8Conv& operator=(const DnnlInt8Conv&) = delete;

  // emit(first output pixel over all images, pixels, sums): the sums of
  // consecutive output pixels, sums[p * M + oc], on the thread that
  // computed them, in a buffer of its own valid until emit returns.
  using SumsFn = FunctionRef<void(int64_t, int64_t, const int32_t*)>;

  // The sums of `win` over n images of the padded input (padded_h x
  // padded_w pixels each, at `padded`). False where oneDNN has no int8
  // kernel with VNNI or AMX for the shapes, or failed a call: then no
  // pixel or only some were emitted, and the caller computes them all
  // another way.
  bool Run(KernelContext& ctx, const Window& win, const uint8_t* padded,
           int64_t n, int64_t padded_h, int64_t padded_w, SumsFn emit) const;

  // Bytes of the weights reordered so far (one copy per plan).
  int64_t bytes() const;

 private:
  struct Plan;
  // The plan for this window over images padded_w wide, made on first use;
  // null where oneDNN offers no exact int8 kernel.
  const Plan* PlanFor(const Window& win, int64_t padded_w) const;

  // w as [M][channel_stride][kh][kw], 0 past C: what oneDNN reorders.
  std::vector<int8_t> PaddedWeights() const;

  Tensor w_;
  int64_t m_, c_, kh_, kw_, channel_stride_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Plan>> plans_;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_DNNL_INT8_CONV_H_
