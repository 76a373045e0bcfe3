// NhwcQLinearConv: QLinearConv on channels-last uint8 activations, made by
// the nhwc-layout pass (src/optimize/nhwc_layout.cc) where the int8 kernel
// is VNNI, and internal to a session. Inputs and attributes are
// QLinearConv's, with x [N, H, W, C] and y [N, OH, OW, M]; w is a constant
// int8 [M, C / group, kh, kw] with zero points 0 (symmetric weights, as
// ONNX Runtime's static quantization writes them), and group is 1 or
// depthwise (group = C = M).
//
// The sums are the direct convolution of kernels/int8_direct_conv.h over
// the input padded once with its zero point (so a padded tap adds
// x_zero * w, which the per-channel offset takes back with the rest of
// x_zero's term):
//   y = requantize(sum x w - x_zero sum w + B)
// exact in int32, so bit for bit QLinearConv's result on the same values,
// whatever the kernel, the tiling or the thread count.
//
// With x_layout "NCHW" (group 1, set by the nhwc-layout pass on a network's
// first convolution: an image of at most four channels), x is [N, C, H, W]
// and the padded copy every such layer makes gathers each pixel's channels
// from the planes, in place of an NchwToNhwc node and its pass over memory.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/op_registry_impl.h"
#include "kernels/int8_direct_conv.h"
#include "kernels/int_division.h"
#include "ops/conv_window.h"
#include "ops/dnnl_int8_conv.h"
#include "ops/dnnl_matmul.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// The input copied once into [N, PH, PW, stride] planes, padded with the
// zero point around and past C (stride: C, or C to whole quads for the
// direct products); or the input itself where nothing needs adding. Each
// byte is written once (no fill of the whole buffer first).
struct PaddedInput {
  const uint8_t* data = nullptr;
  int64_t h = 0, w = 0, stride = 0;  // padded height, width, channel stride
  std::unique_ptr<uint8_t[]> storage;
};

// `pixels` RGB pixels into words, the fourth byte `zero`: pixel i's
// channels at r[kStep * i], g[kStep * i] and b[kStep * i] (kStep 3: an
// interleaved row; 1: three planes).
template <int kStep>
void RgbQuads(const uint8_t* r, const uint8_t* g, const uint8_t* b,
              int64_t pixels, uint8_t zero, uint8_t* dst) {
  for (int64_t i = 0; i < pixels; ++i) {
    const uint32_t word = uint32_t{r[kStep * i]} | uint32_t{g[kStep * i]} << 8 |
                          uint32_t{b[kStep * i]} << 16 | uint32_t{zero} << 24;
    std::memcpy(dst + 4 * i, &word, sizeof(word));  // Little-endian x86.
  }
}

// `pixels` pixels of `stride` bytes from c <= stride planes `plane_step`
// bytes apart (channel k of pixel i at plane0[k * plane_step + i]), the
// bytes past c `zero`.
void GatherPlanePixels(const uint8_t* plane0, int64_t plane_step, int64_t c,
                       int64_t stride, int64_t pixels, uint8_t zero,
                       uint8_t* dst) {
  if (c == 3 && (stride == 3 || stride == 4)) {
    const uint8_t* r = plane0;
    const uint8_t* g = plane0 + plane_step;
    const uint8_t* b = plane0 + 2 * plane_step;
    if (stride == 4) {  // An RGB stem's quads.
      RgbQuads<1>(r, g, b, pixels, zero, dst);
      return;
    }
    for (int64_t i = 0; i < pixels; ++i) {  // Folded windows' dense pixels.
      dst[3 * i] = r[i];
      dst[3 * i + 1] = g[i];
      dst[3 * i + 2] = b[i];
    }
    return;
  }
  for (int64_t i = 0; i < pixels; ++i) {
    for (int64_t k = 0; k < stride; ++k) {
      dst[i * stride + k] = k < c ? plane0[k * plane_step + i] : zero;
    }
  }
}

// `slack` bytes past the last pixel are readable too (set to the zero
// point): the folded windows' reads past their last column. With
// channels_first, x is [N, C, H, W] and each pixel's channels are gathered
// from the planes.
PaddedInput PadInput(KernelContext& ctx, const Window& win, const uint8_t* x,
                     int64_t n, int64_t c, int64_t stride, uint8_t zero,
                     int64_t slack = 0, bool channels_first = false) {
  PaddedInput p;
  p.h = win.in[0] + win.pad_begin[0] + win.pad_end[0];
  p.w = win.in[1] + win.pad_begin[1] + win.pad_end[1];
  p.stride = stride;
  if (p.h == win.in[0] && p.w == win.in[1] && stride == c && slack == 0 &&
      !channels_first) {
    p.data = x;
    return p;
  }
  const int64_t bytes = n * p.h * p.w * stride;
  p.storage = std::make_unique_for_overwrite<uint8_t[]>(
      static_cast<size_t>(bytes + slack));
  std::memset(p.storage.get() + bytes, zero, static_cast<size_t>(slack));
  const int64_t top = win.pad_begin[0], left = win.pad_begin[1];
  const int64_t ih = win.in[0], iw = win.in[1];
  const int64_t row_bytes = p.w * stride;
  const auto fill = [zero](uint8_t* at, int64_t bytes) {
    std::memset(at, zero, static_cast<size_t>(bytes));
  };
  // Jobs of one padded row each, rows of padding included.
  ctx.ParallelFor(n * p.h, static_cast<double>(row_bytes) * 0.05,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t row = begin; row < end; ++row) {
                      const int64_t image = row / p.h, r = row % p.h - top;
                      uint8_t* dst = p.storage.get() + row * row_bytes;
                      if (r < 0 || r >= ih) {
                        fill(dst, row_bytes);
                        continue;
                      }
                      fill(dst, left * stride);
                      uint8_t* inside = dst + left * stride;
                      if (channels_first) {
                        GatherPlanePixels(x + (image * c * ih + r) * iw,
                                          ih * iw, c, stride, iw, zero, inside);
                        fill(inside + iw * stride, (p.w - left - iw) * stride);
                        continue;
                      }
                      const uint8_t* src = x + (image * ih + r) * iw * c;
                      if (stride == c) {
                        std::memcpy(inside, src, static_cast<size_t>(iw * c));
                      } else if (c == 3 && stride == 4) {
                        // An RGB stem: a word per pixel, not two calls.
                        RgbQuads<3>(src, src + 1, src + 2, iw, zero, inside);
                      } else {
                        for (int64_t i = 0; i < iw; ++i) {
                          std::memcpy(inside + i * stride, src + i * c,
                                      static_cast<size_t>(c));
                          fill(inside + i * stride + c, stride - c);
                        }
                      }
                      fill(inside + iw * stride, (p.w - left - iw) * stride);
                    }
                  });
  p.data = p.storage.get();
  return p;
}

// Where each tap of output pixel 0 reads, from the padded input; with the
// window's columns folded into the channels (DirectConvFoldsColumns), a
// tap per window row, at its first column.
std::vector<int64_t> TapOffsets(const Window& win, const PaddedInput& p,
                                bool folded_columns = false) {
  std::vector<int64_t> offsets;
  const int64_t columns = folded_columns ? 1 : win.kernel[1];
  for (int64_t ky = 0; ky < win.kernel[0]; ++ky) {
    for (int64_t kx = 0; kx < columns; ++kx) {
      offsets.push_back((ky * win.dilation[0] * p.w + kx * win.dilation[1]) *
                        p.stride);
    }
  }
  return offsets;
}

// Output pixels in order, over every image, with where each reads its
// first tap: PixelBase's answers one after the other, with three divisions
// per walk rather than four per pixel (a 1 x 1 tile of 6 pixels over 16
// channels computes in about as many cycles as those divisions took).
class PixelWalk {
 public:
  PixelWalk(const Window& win, const PaddedInput& p, int64_t first)
      : win_(win), p_(p) {
    const int64_t pixels = win.OutSize();
    image_ = first / pixels;
    oy_ = first % pixels / win.out[1];
    ox_ = first % pixels % win.out[1];
  }
  // The current pixel's base; then steps to the next pixel.
  const uint8_t* Next() {
    const uint8_t* base =
        p_.data +
        ((image_ * p_.h + oy_ * win_.stride[0]) * p_.w + ox_ * win_.stride[1]) *
            p_.stride;
    if (++ox_ == win_.out[1]) {
      ox_ = 0;
      if (++oy_ == win_.out[0]) {
        oy_ = 0;
        ++image_;
      }
    }
    return base;
  }

 private:
  const Window& win_;
  const PaddedInput& p_;
  int64_t image_, oy_, ox_;
};

// What a QLinearConv's scalar inputs and B say, per output channel.
struct Requantization {
  std::vector<int32_t> offset;  // B - x_zero * sum w, wrapping
  std::vector<float> multiplier;
  float zero = 0;
  bool finite = true;  // every multiplier (the tiles' shorter form)
};

// Tiles of output pixels per job of NhwcQLinearConvKernel::Direct: at most
// kDirectChunkTiles; for a layer whose packed weights stay in a core's L2
// cache (at most kDirectSmallWeightBytes), few enough that the layer has
// kDirectMinChunks, so that two threads' claims from the two ends of the
// jobs meet between chunks, not inside one chunk's channel blocks: each
// then writes whole pixels, the ones the next layer's rows on the same
// thread read (MobileNetV2's 14 x 14 and 7 x 7 layers, 9 to 33 tiles).
// Larger weights keep whole chunks of 16: reloading 2.4 MB of a 3 x 3
// layer over 512 channels per chunk cost ResNet-18 4% (Zen 5).
constexpr int64_t kDirectChunkTiles = 16;
constexpr int64_t kDirectMinChunks = 4;
constexpr int64_t kDirectSmallWeightBytes = 256 * 1024;

// w [M, C, kh, kw] prepared for the kernels: the direct convolution's
// blocks (group 1) or the depthwise taps (group = C = M). Depends on w, the
// group, whether the window's columns are adjacent and the int8 kernel, not
// on the input's size, so a session's compiles for other batch sizes share
// it (PreparedWeights).
struct NhwcInt8ConvWeights {
  std::optional<DirectConvWeights> direct;
  // direct holds FoldWindowColumns's weights: a tap per window row.
  bool folded_columns = false;
  std::vector<int32_t> depthwise;  // [tap][channel]
  std::vector<int32_t> depthwise_sums;
  // depthwise in the VNNI kernel's byte form (PackDepthwiseQuads); empty
  // on other kernels.
  std::vector<int8_t> depthwise_quads;

  int64_t bytes() const {
    return (direct ? direct->bytes() : 0) +
           static_cast<int64_t>(depthwise.size() + depthwise_sums.size()) * 4 +
           static_cast<int64_t>(depthwise_quads.size());
  }
};

// REQUIRES: w is int8 of rank 4. Neither form where the group is another.
std::shared_ptr<const NhwcInt8ConvWeights> PrepareInt8ConvWeights(
    const Tensor& w, int64_t group, bool adjacent_columns, Int8Kernel kernel) {
  auto made = std::make_shared<NhwcInt8ConvWeights>();
  const Shape& ws = w.shape();
  const int64_t m = ws.dim(0), taps = ws.dim(2) * ws.dim(3);
  if (group == 1) {
    const int64_t c = ws.dim(1), kh = ws.dim(2), kw = ws.dim(3);
    if (adjacent_columns && DirectConvFoldsColumns(c, kw)) {
      made->folded_columns = true;
      const std::vector<int8_t> folded =
          FoldWindowColumns(w.data<int8_t>(), m, c, kh, kw);
      made->direct.emplace(folded.data(), m, kw * c, kh);
    } else {
      made->direct.emplace(w.data<int8_t>(), m, c, taps);
    }
  } else if (ws.dim(1) == 1 && group == m) {
    // Channel c's weight at tap t, at t * M + c: vectors of channels.
    made->depthwise.assign(static_cast<size_t>(taps * m), 0);
    made->depthwise_sums.assign(static_cast<size_t>(m), 0);
    for (int64_t ch = 0; ch < m; ++ch) {
      for (int64_t t = 0; t < taps; ++t) {
        // The weights are signed: their values, not their bit patterns.
        // NOLINTNEXTLINE(bugprone-signed-char-misuse)
        const int32_t v = w.data<int8_t>()[ch * taps + t];
        made->depthwise[static_cast<size_t>(t * m + ch)] = v;
        made->depthwise_sums[static_cast<size_t>(ch)] += v;
      }
    }
    if (kernel == Int8Kernel::kAvx512Vnni) {
      made->depthwise_quads =
          PackDepthwiseQuads(made->depthwise.data(), m, ws.dim(2), ws.dim(3));
    }
  }
  return made;
}

// The least depth (input bytes a window: channels to whole quads times
// taps) of a layer that takes oneDNN's int8 convolution where the CPU has
// AMX-INT8: a shape rule, never a timing. On an Intel Xeon (Emerald
// Rapids, AMX-INT8; docs/kernels.md) oneDNN's AMX kernels ran ResNet-18's
// 3 x 3 layers (depth 576 to 4,608) in 0.36-0.87x the VNNI tiles' time,
// and MobileNetV2's 1 x 1 projections from 576 and 960 channels in
// 0.70-0.89x; the shallower layers ran 1.2-2.3x slower there (the 1 x 1
// expansions from 16 to 160 channels, the strided 1 x 1 downsamples from
// 64 to 256, the stem).
constexpr int64_t kDnnlInt8ConvMinDepth = 512;

class NhwcQLinearConvKernel : public OpKernel {
 public:
  explicit NhwcQLinearConvKernel(const KernelConstruction& c)
      : attrs_(ReadWindowAttrs(c)),
        group_(c.attr<int64_t>("group")),
        kernel_(ActiveInt8Kernel()),
        channels_first_(c.attr<std::string>("x_layout") == "NCHW") {
    const Tensor* w = c.constant_input(3);
    if (w == nullptr || w->dtype() != DataType::kInt8 ||
        w->shape().rank() != 4) {
      return;
    }
    const Shape& ws = w->shape();
    const int64_t m = ws.dim(0);
    taps_ = ws.dim(2) * ws.dim(3);
    const bool adjacent_columns =
        attrs_.dilations.size() < 2 || attrs_.dilations[1] == 1;
    weights_ = PreparedOrMade<NhwcInt8ConvWeights>(
        c.prepared_weights(), *w,
        "NhwcQLinearConv/group=" + std::to_string(group_) +
            "/adjacent=" + std::to_string(adjacent_columns) +
            "/kernel=" + std::to_string(static_cast<int>(kernel_)),
        [&] {
          return PrepareInt8ConvWeights(*w, group_, adjacent_columns, kernel_);
        });
    w_source_ = w->raw_data();
    const int64_t c_in = ws.dim(1);
    if (group_ == 1 && weights_->direct && !weights_->folded_columns &&
        Int8Quads(c_in) * 4 * taps_ >= kDnnlInt8ConvMinDepth &&
        DnnlInt8ProductsAvailable()) {
      // oneDNN's int8 convolution (AMX tiles) over the same padded input.
      dnnl_conv_ =
          std::make_unique<const DnnlInt8Conv>(*w, Int8Quads(c_in) * 4);
    }
    std::array<const Tensor*, 9> in{};
    const int inputs = static_cast<int>(c.input_dtypes().size());
    if (inputs < 8) return;  // the schema's check reports it
    for (int i = 1; i < 9 && i < inputs; ++i) {
      in[i] = c.constant_input(i);
      if (in[i] == nullptr) return;
      rq_sources_[i] = in[i]->raw_data();
    }
    if (weights_->direct || !weights_->depthwise.empty()) {
      auto rq = ReadRequantization(in, m);
      if (rq.ok()) constant_rq_ = *std::move(rq);
    }
  }

  int64_t prepared_bytes() const override {
    return weights_->bytes() + (dnnl_conv_ ? dnnl_conv_->bytes() : 0);
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(3);
    const Shape& xs = x.shape();
    if (x.dtype() != DataType::kUInt8 || xs.rank() != 4) {
      return InvalidArgumentError(
          std::string("NhwcQLinearConv takes uint8 x ") +
          (channels_first_ ? "[N, C, H, W]" : "[N, H, W, C]") + ", got " +
          DataTypeName(x.dtype()) + " " + xs.ToString());
    }
    if (!weights_->direct && weights_->depthwise.empty()) {
      return InvalidArgumentError(
          "NhwcQLinearConv needs a constant int8 w [M, C, kh, kw] with group "
          "1, or a depthwise one (group = C = M)");
    }
    if (w.raw_data() != w_source_) {
      // A Run fed the Const's output: the packing is of the constant.
      return InvalidArgumentError(
          "NhwcQLinearConv runs with the constant w it was built with; a fed "
          "w takes QLinearConv");
    }
    if (channels_first_ && !weights_->direct) {
      return InvalidArgumentError(
          "NhwcQLinearConv with x_layout NCHW takes group 1 only");
    }
    const Shape& ws = w.shape();
    // Where x's channels and rows are.
    const int channel_dim = channels_first_ ? 1 : 3;
    const int row_dim = channels_first_ ? 2 : 1;
    const int64_t n = xs.dim(0), c = xs.dim(channel_dim), m = ws.dim(0);
    if (ws.dim(1) * group_ != c) {
      return InvalidArgumentError(
          "x " + xs.ToString() + " has " + std::to_string(c) + " channels; w " +
          ws.ToString() + " with group " + std::to_string(group_) +
          " expects " + std::to_string(ws.dim(1) * group_));
    }
    WEFT_ASSIGN_OR_RETURN(
        Window win,
        ForwardWindow(attrs_, {xs.dim(row_dim), xs.dim(row_dim + 1)},
                      {ws.dim(2), ws.dim(3)}));
    std::optional<Requantization> fed;
    if (!constant_rq_ ||
        constant_rq_->multiplier.size() != static_cast<size_t>(m) ||
        !ReadsTheConstants(ctx)) {
      std::array<const Tensor*, 9> in{};
      for (int i = 1; i < 9 && i < ctx.num_inputs(); ++i) in[i] = &ctx.input(i);
      WEFT_ASSIGN_OR_RETURN(fed, ReadRequantization(in, m));
    }
    const Requantization& rq = fed ? *fed : *constant_rq_;
    const Tensor& y_zero = ctx.input(7);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(
                              0, Shape({n, win.out[0], win.out[1], m})));
    const uint8_t x_zero = *ctx.input(2).data<uint8_t>();
    RequantizedOutput out;
    out.offset = rq.offset.data();
    out.multiplier = rq.multiplier.data();
    out.zero = rq.zero;
    out.m = m;
    out.y = y->raw_data();
    out.y_signed = y_zero.dtype() == DataType::kInt8;
    out.finite = rq.finite;
    if (!weights_->direct) {
      Depthwise(ctx, win, x.data<uint8_t>(), x_zero, n, out);
      return Status::OK();
    }
    if (weights_->folded_columns) {
      // Pixels of c bytes, as the folded channels read them; the last
      // window's row reads weights_->direct->quads() * 4 bytes from its first
      // column.
      const int64_t window_row = weights_->direct->c();
      const PaddedInput padded =
          PadInput(ctx, win, x.data<uint8_t>(), n, c, c, x_zero,
                   weights_->direct->quads() * 4 - window_row, channels_first_);
      Direct(ctx, win, padded, TapOffsets(win, padded, true), n, out);
      return Status::OK();
    }
    const PaddedInput padded =
        PadInput(ctx, win, x.data<uint8_t>(), n, c, Int8Quads(c) * 4, x_zero,
                 /*slack=*/0, channels_first_);
    if (dnnl_conv_ && OnDnnl(ctx, win, padded, n, out)) return Status::OK();
    Direct(ctx, win, padded, TapOffsets(win, padded), n, out);
    return Status::OK();
  }

 private:
  // Scales, zero points and B, checked as QLinearConv checks them; w's
  // zero point must be 0 (the pass converts only such nodes).
  // in[i] is input i (in[8], B, nullptr when absent).
  StatusOr<Requantization> ReadRequantization(
      const std::array<const Tensor*, 9>& in, int64_t m) const {
    const Tensor& x_scale = *in[1];
    const Tensor& x_zero = *in[2];
    const Tensor& w_scale = *in[4];
    const Tensor& w_zero = *in[5];
    const Tensor& y_scale = *in[6];
    const Tensor& y_zero = *in[7];
    if (x_scale.NumElements() != 1 || y_scale.NumElements() != 1 ||
        y_zero.NumElements() != 1 || x_zero.NumElements() != 1 ||
        x_zero.dtype() != DataType::kUInt8) {
      return InvalidArgumentError(
          "x_scale, x_zero_point (uint8), y_scale and y_zero_point must be "
          "scalars");
    }
    if (w_scale.NumElements() != 1 && w_scale.NumElements() != m) {
      return InvalidArgumentError("w_scale has shape " +
                                  w_scale.shape().ToString() +
                                  "; expected one entry or one per output "
                                  "channel (" +
                                  std::to_string(m) + ")");
    }
    if (w_zero.dtype() != DataType::kInt8) {
      return InvalidArgumentError("w_zero_point must be int8");
    }
    for (int64_t i = 0; i < w_zero.NumElements(); ++i) {
      if (w_zero.data<int8_t>()[i] != 0) {
        return InvalidArgumentError(
            "NhwcQLinearConv takes w_zero_point 0 only");
      }
    }
    const float xs = *x_scale.data<float>();
    const float ys = *y_scale.data<float>();
    for (float s : {xs, ys}) {
      if (!(s != 0) || !std::isfinite(s)) {
        return InvalidArgumentError(
            "x_scale and y_scale must be finite and non-zero");
      }
    }
    const int32_t* bias = nullptr;
    if (in[8] != nullptr) {
      const Tensor& b = *in[8];
      if (b.dtype() != DataType::kInt32 || b.shape().rank() != 1 ||
          b.NumElements() != m) {
        return InvalidArgumentError(
            "B must be int32 of shape [" + std::to_string(m) + "], got " +
            DataTypeName(b.dtype()) + " " + b.shape().ToString());
      }
      bias = b.data<int32_t>();
    }
    Requantization rq;
    rq.zero = y_zero.dtype() == DataType::kUInt8
                  ? static_cast<float>(*y_zero.data<uint8_t>())
                  : static_cast<float>(*y_zero.data<int8_t>());
    const auto xz = static_cast<uint32_t>(*x_zero.data<uint8_t>());
    const std::vector<int32_t>& sums = weights_->direct
                                           ? weights_->direct->row_sums()
                                           : weights_->depthwise_sums;
    for (int64_t oc = 0; oc < m; ++oc) {
      // QLinearConv's float expression, in its order.
      rq.multiplier.push_back(
          xs * w_scale.data<float>()[w_scale.NumElements() == 1 ? 0 : oc] / ys);
      rq.finite = rq.finite && std::isfinite(rq.multiplier.back());
      const uint32_t b = bias ? static_cast<uint32_t>(bias[oc]) : 0u;
      rq.offset.push_back(static_cast<int32_t>(
          b - xz * static_cast<uint32_t>(sums[static_cast<size_t>(oc)])));
    }
    return rq;
  }

  // The sums on oneDNN's int8 convolution, requantized as the direct tiles
  // requantize theirs (the same bits: the sums are exact). False where
  // oneDNN has no plan for the shapes or failed a call: Direct then
  // computes every output.
  bool OnDnnl(KernelContext& ctx, const Window& win, const PaddedInput& padded,
              int64_t n, const RequantizedOutput& out) const {
    return dnnl_conv_->Run(
        ctx, win, padded.data, n, padded.h, padded.w,
        [&](int64_t p0, int64_t count, const int32_t* sums) {
          RequantizedOutput at = out;
          at.y = static_cast<uint8_t*>(out.y) + p0 * out.m;  // a byte each
          DirectSumsInto(DirectOutputForm::kRequantized, sums, out.m, count,
                         /*oc0=*/0, out.m, at);
        });
  }

  // Jobs of (chunk of tiles of w.tile_pixels() pixels, block of output
  // channels), chunk-major, the chunks sized as kDirectChunkTiles says:
  // threads claiming from the two ends of the jobs share at most the chunk
  // where they meet, where block-major jobs had them write every pixel's
  // output together (a pixel's bytes of two blocks share cache lines
  // unless m is a multiple of 64: at m = 96, int8 MobileNetV2 gained
  // nothing from a second thread). Within a job a block's tiles run
  // together so that its weights stay in cache. The tiles run over the
  // pixels of all images (so that a batch has no partial tile but its
  // last).
  void Direct(KernelContext& ctx, const Window& win, const PaddedInput& padded,
              const std::vector<int64_t>& tap_offsets, int64_t n,
              const RequantizedOutput& out) const {
    const DirectConvWeights& w = *weights_->direct;
    const int64_t pixels = win.OutSize(), total = n * pixels, m = w.m();
    const int64_t tile = w.tile_pixels();
    const int64_t tiles = CeilDiv(total, tile);
    const int64_t chunk_tiles =
        w.bytes() > kDirectSmallWeightBytes
            ? kDirectChunkTiles
            : std::clamp<int64_t>(CeilDiv(tiles, kDirectMinChunks), 1,
                                  kDirectChunkTiles);
    const int64_t chunks = CeilDiv(tiles, chunk_tiles);
    const double cost = static_cast<double>(tile * chunk_tiles * kDirectBlock *
                                            w.taps() * w.quads() * 4) /
                        64.0;
    ctx.ParallelFor(chunks * w.blocks(), cost, [&](int64_t begin, int64_t end) {
      const uint8_t* bases[kDirectWidePixels];
      RequantizedOutput tile_out = out;
      for (int64_t job = begin; job < end; ++job) {
        const int64_t chunk = job / w.blocks(), block = job % w.blocks();
        const int64_t end_tile = std::min(tiles, (chunk + 1) * chunk_tiles);
        for (int64_t t = chunk * chunk_tiles; t < end_tile; ++t) {
          const int64_t p0 = t * tile;
          const int64_t count = std::min(tile, total - p0);
          PixelWalk walk(win, padded, p0);
          for (int64_t i = 0; i < count; ++i) bases[i] = walk.Next();
          tile_out.y = static_cast<uint8_t*>(out.y) + p0 * m;  // a byte each
          DirectConvTileRequantized(kernel_, w, block, bases, count,
                                    tap_offsets.data(), tile_out);
        }
      }
    });
  }

  // One job per output row of an image. The input is read where it lies
  // (a padded copy cost MobileNetV2 more than its depthwise sums saved):
  // the pixels whose window lies inside it run as a row from there. Those
  // whose windows reach into the padding run from a copy of just the band
  // of input they cover (DepthwiseBand), the padding as the zero point; or,
  // when the window is dilated along rows, each first gathers its window
  // into a buffer of its own.
  void Depthwise(KernelContext& ctx, const Window& win, const uint8_t* x,
                 uint8_t x_zero, int64_t n,
                 const RequantizedOutput& out) const {
    const int64_t oh = win.out[0], ow = win.out[1], m = out.m;
    const PaddedInput in_place{x, win.in[0], win.in[1], m, nullptr};
    const std::vector<int64_t> tap_offsets = TapOffsets(win, in_place);
    // Output columns [first, last) and rows whose windows lie inside.
    const auto inside = [&win](int d) {
      const int64_t extent = (win.kernel[d] - 1) * win.dilation[d] + 1;
      const int64_t first =
          std::min(win.out[d], CeilDiv(win.pad_begin[d], win.stride[d]));
      int64_t last = win.out[d];
      while (last > first &&
             (last - 1) * win.stride[d] - win.pad_begin[d] + extent >
                 win.in[d]) {
        --last;
      }
      return std::pair<int64_t, int64_t>(first, last);
    };
    // Plain variables, not structured bindings: the lambda below reads
    // them (clang 14 cannot capture a binding).
    const std::pair<int64_t, int64_t> rows_inside = inside(0);
    const std::pair<int64_t, int64_t> cols_inside = inside(1);
    const DepthwiseGrid grid{win.kernel[0], win.kernel[1],
                             win.dilation[0] * win.in[1] * m, win.stride[1]};
    ctx.ParallelFor(
        n * oh, static_cast<double>(ow * m * taps_) / 8.0,
        [&](int64_t begin, int64_t end) {
          // Kept by each thread between calls: a block allocates nothing.
          thread_local std::vector<uint8_t> window;
          thread_local std::vector<int64_t> window_taps;
          window_taps.resize(static_cast<size_t>(taps_));
          for (int64_t t = 0; t < taps_; ++t) window_taps[t] = t * m;
          RequantizedOutput pixel_out = out;
          for (int64_t row = begin; row < end; ++row) {
            const int64_t image = row / oh, oy = row % oh;
            uint8_t* y = static_cast<uint8_t*>(out.y) + row * ow * m;
            const bool row_inside =
                oy >= rows_inside.first && oy < rows_inside.second;
            const int64_t first = row_inside ? cols_inside.first : ow;
            const int64_t last = row_inside ? cols_inside.second : ow;
            if (first < last) {
              pixel_out.y = y + first * m;
              const int64_t iy = oy * win.stride[0] - win.pad_begin[0];
              const int64_t ix = first * win.stride[1] - win.pad_begin[1];
              const uint8_t* at =
                  x + ((image * win.in[0] + iy) * win.in[1] + ix) * m;
              if (win.dilation[1] == 1) {
                DepthwiseGridRowRequantized(kernel_, at, grid, last - first,
                                            weights_->depthwise.data(), Quads(),
                                            pixel_out);
              } else {
                DepthwiseRowRequantized(kernel_, at, win.stride[1] * m,
                                        last - first, tap_offsets.data(), taps_,
                                        weights_->depthwise.data(), pixel_out);
              }
            }
            if (win.dilation[1] == 1) {  // The borders from bands.
              pixel_out.y = y;
              DepthwiseBand(win, x, x_zero, image, oy, 0, first, &window,
                            pixel_out);
              pixel_out.y = y + last * m;
              DepthwiseBand(win, x, x_zero, image, oy, last, ow, &window,
                            pixel_out);
              continue;
            }
            for (int64_t ox = 0; ox < ow; ++ox) {
              if (ox == first && first < last) ox = last;
              if (ox >= ow) break;
              GatherWindow(win, x, x_zero, image, oy, ox, m, &window);
              pixel_out.y = y + ox * m;
              DepthwiseRowRequantized(kernel_, window.data(), 0, 1,
                                      window_taps.data(), taps_,
                                      weights_->depthwise.data(), pixel_out);
            }
          }
        });
  }

  // Output pixels [begin, end) of row oy of image `image` (out.y at pixel
  // begin) from a copy of the input their windows cover, the padding as
  // the zero point: kh rows, a dilation apart, of the columns from begin's
  // window to end - 1's, run as a DepthwiseGrid (no dilation along rows).
  void DepthwiseBand(const Window& win, const uint8_t* x, uint8_t x_zero,
                     int64_t image, int64_t oy, int64_t begin, int64_t end,
                     std::vector<uint8_t>* band,
                     const RequantizedOutput& out) const {
    if (begin >= end) return;
    const int64_t m = out.m, kh = win.kernel[0], kw = win.kernel[1];
    const int64_t columns = (end - begin - 1) * win.stride[1] + kw;
    const int64_t ix0 = begin * win.stride[1] - win.pad_begin[1];
    // The band's columns [lo, hi) lie inside the input.
    const int64_t lo = std::clamp<int64_t>(-ix0, 0, columns);
    const int64_t hi = std::clamp<int64_t>(win.in[1] - ix0, lo, columns);
    band->resize(static_cast<size_t>(kh * columns * m));
    for (int64_t ky = 0; ky < kh; ++ky) {
      uint8_t* row = band->data() + ky * columns * m;
      const int64_t iy =
          oy * win.stride[0] - win.pad_begin[0] + ky * win.dilation[0];
      if (iy < 0 || iy >= win.in[0]) {
        std::memset(row, x_zero, static_cast<size_t>(columns * m));
        continue;
      }
      std::memset(row, x_zero, static_cast<size_t>(lo * m));
      if (hi > lo) {  // else ix0 + lo may lie past the input's row
        std::memcpy(row + lo * m,
                    x + ((image * win.in[0] + iy) * win.in[1] + ix0 + lo) * m,
                    static_cast<size_t>((hi - lo) * m));
      }
      std::memset(row + hi * m, x_zero,
                  static_cast<size_t>((columns - hi) * m));
    }
    DepthwiseGridRowRequantized(
        kernel_, band->data(),
        DepthwiseGrid{kh, kw, columns * m, win.stride[1]}, end - begin,
        weights_->depthwise.data(), Quads(), out);
  }

  // Output pixel (oy, ox)'s window of image `image`, tap by tap, each tap's
  // m channels: the input's, or the zero point in the padding.
  static void GatherWindow(const Window& win, const uint8_t* x, uint8_t x_zero,
                           int64_t image, int64_t oy, int64_t ox, int64_t m,
                           std::vector<uint8_t>* window) {
    window->resize(static_cast<size_t>(win.kernel[0] * win.kernel[1] * m));
    uint8_t* at = window->data();
    for (int64_t ky = 0; ky < win.kernel[0]; ++ky) {
      const int64_t iy =
          oy * win.stride[0] - win.pad_begin[0] + ky * win.dilation[0];
      for (int64_t kx = 0; kx < win.kernel[1]; ++kx, at += m) {
        const int64_t ix =
            ox * win.stride[1] - win.pad_begin[1] + kx * win.dilation[1];
        if (iy < 0 || iy >= win.in[0] || ix < 0 || ix >= win.in[1]) {
          std::memset(at, x_zero, static_cast<size_t>(m));
        } else {
          std::memcpy(at, x + ((image * win.in[0] + iy) * win.in[1] + ix) * m,
                      static_cast<size_t>(m));
        }
      }
    }
  }

  const int8_t* Quads() const {
    return weights_->depthwise_quads.empty() ? nullptr
                                             : weights_->depthwise_quads.data();
  }

  // Whether this Run reads the constants constant_rq_ was worked out from
  // (a Run may feed a Const's output instead).
  bool ReadsTheConstants(const KernelContext& ctx) const {
    for (int i = 1; i < 9 && i < ctx.num_inputs(); ++i) {
      if (ctx.input(i).raw_data() != rq_sources_[i]) return false;
    }
    return true;
  }

  WindowAttrs attrs_;
  int64_t group_;
  Int8Kernel kernel_;
  bool channels_first_;  // x_layout "NCHW": x is [N, C, H, W]
  // The requantization, worked out once where its inputs are constants,
  // and the buffers of those constants and of w.
  std::optional<Requantization> constant_rq_;
  std::array<const void*, 9> rq_sources_{};
  const void* w_source_ = nullptr;
  int64_t taps_ = 0;
  // w prepared; shared with the session's other compiles of this node
  // (other input sizes). Empty where w is not a constant int8 [M, C, kh, kw].
  std::shared_ptr<const NhwcInt8ConvWeights> weights_ =
      std::make_shared<const NhwcInt8ConvWeights>();
  // Where DnnlInt8ProductsAvailable() (the CPU has AMX-INT8) and w takes
  // the direct tiles unfolded: oneDNN's int8 convolution of w, whose plans
  // are made per input shape at its first Run.
  std::unique_ptr<const DnnlInt8Conv> dnnl_conv_;
};

Status InferNhwcQLinearConvShape(InferenceContext& ctx) {
  WEFT_RETURN_IF_ERROR(CheckWindowAttrs(ctx));
  const std::string& layout = ctx.attr<std::string>("x_layout");
  if (layout != "NHWC" && layout != "NCHW") {
    return InvalidArgumentError("x_layout is '" + layout +
                                "'; expected NHWC or NCHW");
  }
  const PartialShape& x = ctx.input_shape(0);
  const PartialShape& w = ctx.input_shape(3);
  if (!x.IsFullyDefined() || !w.IsFullyDefined() || x.rank() != 4 ||
      w.rank() != 4) {
    return Status::OK();
  }
  const WindowAttrs attrs = InferredWindowAttrs(ctx);
  const int row_dim = layout == "NCHW" ? 2 : 1;
  auto win = ForwardWindow(attrs, {x.dim(row_dim), x.dim(row_dim + 1)},
                           {w.dim(2), w.dim(3)});
  if (!win.ok()) return Status::OK();
  ctx.set_output(0, PartialShape(std::vector<int64_t>{x.dim(0), win->out[0],
                                                      win->out[1], w.dim(0)}));
  return Status::OK();
}

}  // namespace

// The nhwc-layout pass's question for QLinearConv
// (OpRegistry::FindChannelsLastConv): NhwcQLinearConv's attributes where
// it computes `node` (group 1 or depthwise, 2-D), else nullopt. The pass
// checks the dtypes and the constant weights.
std::optional<AttrMap> ChannelsLastQLinearConvAttrs(const NodeDef& node,
                                                    const Shape& x,
                                                    const Shape& w) {
  if (x.rank() != 4 || w.rank() != 4) return std::nullopt;
  const auto attr_or = [&node](const char* name, auto fallback) {
    auto found = FindAttr<decltype(fallback)>(node.attrs, name);
    return found.ok() ? **found : fallback;
  };
  const int64_t group = attr_or("group", int64_t{1});
  const bool depthwise =
      group == x.dim(1) && group == w.dim(0) && w.dim(1) == 1;
  if (group != 1 && !depthwise) return std::nullopt;
  if (group == 1 && w.dim(1) != x.dim(1)) return std::nullopt;
  WindowAttrs window_attrs;
  window_attrs.kernel = attr_or("kernel_shape", std::vector<int64_t>{});
  window_attrs.strides = attr_or("strides", std::vector<int64_t>{});
  window_attrs.dilations = attr_or("dilations", std::vector<int64_t>{});
  window_attrs.pads = attr_or("pads", std::vector<int64_t>{});
  window_attrs.auto_pad = attr_or("auto_pad", std::string("NOTSET"));
  auto window =
      ForwardWindow(window_attrs, {x.dim(2), x.dim(3)}, {w.dim(2), w.dim(3)});
  if (!window.ok()) return std::nullopt;
  AttrMap attrs;
  attrs["kernel_shape"] = std::vector<int64_t>{w.dim(2), w.dim(3)};
  attrs["strides"] = window->stride;
  attrs["dilations"] = window->dilation;
  std::vector<int64_t> pads = window->pad_begin;
  pads.insert(pads.end(), window->pad_end.begin(), window->pad_end.end());
  attrs["pads"] = pads;
  attrs["group"] = group;
  return attrs;
}

namespace {

constexpr OpSummary kSummaries[] = {
    {"NhwcQLinearConv",
     "QLinearConv on channels-last uint8 tensors, direct int8 products (made "
     "by the nhwc-layout pass)"},
};

const std::vector<DataType> kQuantized = {DataType::kUInt8, DataType::kInt8};

}  // namespace

void RegisterQuantizedConvNhwcOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  // Channels-last int8 convolutions where the int8 kernel is VNNI: the
  // generic kernel has no broadcast to gain from the layout.
  if (ActiveInt8Kernel() == Int8Kernel::kAvx512Vnni) {
    registry.SetChannelsLastConv("QLinearConv", ChannelsLastQLinearConvAttrs);
  }
  OpDefBuilder b("NhwcQLinearConv");
  b.Input(ArgDef::Fixed("x", DataType::kUInt8))
      .Input(ArgDef::Fixed("x_scale", DataType::kFloat32))
      .Input(ArgDef::Fixed("x_zero_point", DataType::kUInt8))
      .Input(ArgDef::Fixed("w", DataType::kInt8))
      .Input(ArgDef::Fixed("w_scale", DataType::kFloat32))
      .Input(ArgDef::Fixed("w_zero_point", DataType::kInt8))
      .Input(ArgDef::Fixed("y_scale", DataType::kFloat32))
      .Input(ArgDef::Typed("y_zero_point", "TY"))
      .Input(ArgDef::AnyList("B"))
      .Output(ArgDef::Typed("y", "TY"))
      .Attr("TY", AttrType::kType, std::nullopt, kQuantized)
      .Attr("group", AttrType::kInt, int64_t{1})
      .Attr("x_layout", AttrType::kString, std::string("NHWC"));
  CheckRegistered(registry.RegisterOp(
      WindowAttrsOn(b).SetShapeFn(InferNhwcQLinearConvShape).Build()));
  CheckRegistered(registry.RegisterKernel(
      "NhwcQLinearConv", KernelFactoryFor<NhwcQLinearConvKernel>()));
}

}  // namespace weft::internal
