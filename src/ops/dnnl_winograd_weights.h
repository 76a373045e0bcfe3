// W for oneDNN's float32 Winograd convolutions (NhwcConv's 3 x 3 stride-1
// layers on AVX-512), written by weft instead of by a oneDNN reorder.
//
// Why: oneDNN 2.6 makes these layouts with a plain scalar transform into a
// scratch buffer of the whole transformed W, then a second pass that
// scatters it into the layout. ResNet-18's thirteen Winograd layers took
// 280 ms of its first Run that way (docs/kernels.md, "Buffers made once");
// written directly, a few milliseconds.
//
// The bits are oneDNN's: each value is the same float operations in the same
// order as its reorder (no fused multiply-adds: this file is built with
// -ffp-contract=off), so the convolutions' results do not change. A test
// compares every layout the CPU's kernels pick with oneDNN's reorder, bit
// for bit (dnnl_winograd_weights_test.cc).
#ifndef WEFT_SRC_OPS_DNNL_WINOGRAD_WEIGHTS_H_
#define WEFT_SRC_OPS_DNNL_WINOGRAD_WEIGHTS_H_

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

namespace weft::internal {

// Writes W (`k` output channels of `c` input channels, 3 x 3 windows,
// float32 in oihw order) into `out` (layout.get_size() bytes) in the
// Winograd weights layout `layout` describes, and returns true, where that
// layout is one of the float32 ones oneDNN's AVX-512 kernels take
// (wino_wei_aaOio and wino_wei_aaOBiOo for F(2 x 2, 3 x 3),
// wino_wei_OBaaIBOIio for F(4 x 4, 3 x 3)). Returns false, writing nothing,
// for any other layout: the caller reorders with oneDNN then.
bool PackWinogradWeights(const dnnl::memory::desc& layout, const float* w,
                         int64_t k, int64_t c, void* out);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_DNNL_WINOGRAD_WEIGHTS_H_
