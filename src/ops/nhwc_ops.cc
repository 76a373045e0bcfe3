// NhwcConv, NhwcMaxPool, NhwcGlobalAveragePool, NchwToNhwc, NhwcToNchw
// (src/ops/nhwc_ops.h).
//
// NhwcConv cuts each image's output into pieces whose sizes come from the
// shapes alone: pieces of output rows (each a primitive over the input
// rows its windows read, with the padding of its own edge), or, on small
// planes, blocks of output channels. Each piece is one single-threaded
// oneDNN primitive, so every output element is computed by one primitive
// in an order that depends on the sizes only. Equal pieces share a
// primitive. The constant W is reordered into the primitives' layout once,
// when the kernel is built. 3 x 3 stride-1 layers run as oneDNN's Winograd
// kernels where the CPU rule allows (fewer multiplications; their pieces
// copy rows into 16-channel blocks and back, the layout those kernels take).
#include "ops/nhwc_ops.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <tuple>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "framework/large_buffer.h"
#include "framework/op_registry_impl.h"
#include "kernels/bf16_gemm.h"
#include "kernels/conv_kernels.h"
#include "kernels/int_division.h"
#include "ops/conv_row_pieces.h"
#include "ops/conv_window.h"
#include "ops/dnnl_support.h"
#include "ops/dnnl_winograd_weights.h"
#include "ops/kernel_switches.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

constexpr int64_t kMaxPiecesPerImage = 8;
// Elements of X a thread rounds to bf16 at a time (fixed blocks: the split
// never shows in the bits).
constexpr int64_t kBf16RoundBlock = 16384;
// Each oneDNN call costs a few microseconds: a piece has at least this much
// work (about 10 us on one core), so small layers are not cut into pieces
// that cost more than they compute.
constexpr double kMinPieceFlops = 1e6;
// Grouped (depthwise) layers compute at a fraction of the dense rate (67
// GFLOP/s against 150-280 for MobileNetV2's 1 x 1 layers, one Zen 5 core),
// so their flops count this much more towards a piece's time. MobileNetV2's
// 14 x 14 x 384 depthwise layers (1.35 MFLOP, 17 us) then come in two
// pieces: as one, the thread that ran it read the half of its input the
// other core had written, and took 26-35 us at two threads (17-20 in two
// pieces).
constexpr double kGroupedFlopWeight = 2.5;

// How many row pieces an image's output of out_rows rows (in units of
// `align` rows) worth `flops` is cut into: one per kMinPieceFlops, at most
// kMaxPiecesPerImage and one a unit, an even number past two (even thread
// counts then share them evenly).
int64_t RowPieceCount(int64_t out_rows, int64_t align, double flops) {
  int64_t count = std::clamp<int64_t>(
      static_cast<int64_t>(flops / kMinPieceFlops), 1,
      std::min(CeilDiv(out_rows, align), kMaxPiecesPerImage));
  if (count > 2 && count % 2 == 1) --count;
  return count;
}

// The output's spatial size, as ONNX's Conv computes it.
std::array<int64_t, 2> ConvOutput(const NhwcConvSpec& s) {
  std::array<int64_t, 2> out{};
  for (int d = 0; d < 2; ++d) {
    const int64_t extent = (s.w[2 + d] - 1) * s.dilation[d] + 1;
    out[d] =
        (s.x[2 + d] + s.pads[d] + s.pads[2 + d] - extent) / s.stride[d] + 1;
  }
  return out;
}

dnnl::primitive_attr ConvAttr(const NhwcConvSpec& s, bool* supported) {
  dnnl::post_ops post;
  if (s.residual) post.append_sum(1.f);
  const auto alpha = static_cast<float>(s.activation.alpha);
  const auto beta = static_cast<float>(s.activation.beta);
  switch (s.activation.kind) {
    case FusedActivation::kNone:
      break;
    case FusedActivation::kRelu:
      post.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      break;
    case FusedActivation::kLeakyRelu:
      post.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, alpha, 0.f);
      break;
    case FusedActivation::kClip:
      post.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, alpha, beta);
      break;
    default:  // HardSwish and Gelu stay with FusedConv (their formulas).
      *supported = false;
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(post);
  // Each call gets its own scratch memory (a per-thread buffer), so one
  // primitive can run on several threads at once.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// Planes of fewer output rows stay direct, their tiles mostly padding.
// ResNet's 7 x 7 layers of 512 channels compute 8 x 8 in tiles of 2 and
// read a W 16/9 the size, and still pay: the whole model took 0.93 of its
// time at one thread and 0.88 at two with them as Winograd (AMD EPYC Zen
// 5; 0.96-1.00 on an Intel Xeon, Emerald Rapids).
constexpr int64_t kMinWinogradRows = 7;

// Whether NhwcConv runs this convolution as Winograd where oneDNN has the
// kernels: 3 x 3, stride 1, no dilation, one group, channels in blocks of
// 16, a plane of at least kMinWinogradRows rows.
bool WinogradShape(const NhwcConvSpec& s) {
  return s.group == 1 && s.w[2] == 3 && s.w[3] == 3 && s.stride[0] == 1 &&
         s.stride[1] == 1 && s.dilation[0] == 1 && s.dilation[1] == 1 &&
         s.x[1] % 16 == 0 && s.w[0] % 16 == 0 &&
         ConvOutput(s)[0] >= kMinWinogradRows;
}

constexpr int64_t kChannelBlock16 = 16;
// The output tile of oneDNN's F(4x4, 3x3) kernel, which it takes for row
// pieces: pieces of whole tiles compute no rows twice.
constexpr int64_t kWinogradTileRows = 4;

// `pixels` pixels of `channels` channels, the pixel stride `stride`
// floats (NHWC rows) -> channel blocks of 16 ([channels / 16][pixels][16],
// nChw16c for one image). REQUIRES: channels % 16 == 0.
void NhwcToBlocked16(const float* from, int64_t pixels, int64_t channels,
                     int64_t stride, float* to) {
  for (int64_t q = 0; q < pixels; ++q) {
    for (int64_t cb = 0; cb < channels; cb += kChannelBlock16) {
      std::memcpy(to + cb * pixels + q * kChannelBlock16,
                  from + q * stride + cb, kChannelBlock16 * sizeof(float));
    }
  }
}

// The inverse of NhwcToBlocked16.
void Blocked16ToNhwc(const float* from, int64_t pixels, int64_t channels,
                     int64_t stride, float* to) {
  for (int64_t q = 0; q < pixels; ++q) {
    for (int64_t cb = 0; cb < channels; cb += kChannelBlock16) {
      std::memcpy(to + q * stride + cb,
                  from + cb * pixels + q * kChannelBlock16,
                  kChannelBlock16 * sizeof(float));
    }
  }
}

// Buffers carved from one scratch area start on oneDNN's alignment.
constexpr int64_t kBufferAlignment = 64;

// Everything a Run needs to compute one image's output: pieces of output
// rows (larger planes) or of output channels (small planes, where each row
// piece would read all of a large W again).
struct ConvPlan {
  struct Piece {
    int primitive;
    int64_t src_offset;  // Floats into the image's input.
    int64_t row_begin, rows;
    int64_t channel_begin;  // The piece's block of output channels.
  };
  std::vector<dnnl::convolution_forward> primitives;
  std::vector<memory::desc> src, dst, scratch;
  std::vector<Piece> pieces;
  memory::desc weights;  // One block's packed W (every piece's layout).
  memory::desc bias;     // One block's.
  bool bf16 = false;     // X and W in bf16 (SessionOptions::precision).
  // Winograd primitives, which read and write channel blocks of 16
  // (nChw16c): a piece's rows are copied into that layout and back.
  bool blocked = false;
  int64_t channel_block = 0, channels = 0, out_width = 0;
  int64_t image_in = 0, image_out = 0;  // Floats per image.
  double flops_per_piece = 0;
};

// oneDNN memory handles for each of a plan's primitives, pointed at a
// piece's buffers before it runs.
struct PieceHandles {
  std::vector<memory> src, dst, scratch;
  memory bias;
};

memory::dims WeightDims(const NhwcConvSpec& s, int64_t channels) {
  if (s.group == 1) return {channels, s.w[1], s.w[2], s.w[3]};
  return {s.group, channels / s.group, s.w[1], s.w[2], s.w[3]};
}

// Output channels per piece: all of them, unless the plane is small (then
// row pieces are few and short, and each would read all of W again: a
// 7 x 7 plane of 512 channels, W 9.4 MB); then blocks of at least 64
// channels (128 from 512 on: 64 measured slower there on an AMD EPYC Zen
// 4), 16-aligned, an even number of them where one fits (two threads
// share them evenly). A plane of 14 rows counts as small where W is past
// 1 MiB (ResNet's 14 x 14 layers of 256 channels, 2.4 MB): its row pieces
// of one or two rows each streamed all of W from L3, and channel blocks
// measured 2-3% faster on the whole of ResNet-18 at two threads on an
// Intel Xeon (Emerald Rapids); where W is small (MobileNetV2's 14 x 14
// 1 x 1 layers) row pieces stay, blocks measured 4% slower there.
// Winograd's blocks are at least 128 channels: each block transforms the
// whole input again, and on ResNet's 14 x 14 layers of 256 channels four
// blocks of 64 took as long as direct (209 us each against 228, one
// thread, AMD EPYC Zen 5), two of 128 half as long (243 us each). From
// the shapes alone.
int64_t ChannelBlock(const NhwcConvSpec& s, int64_t out_rows, bool bf16,
                     bool winograd) {
  constexpr int64_t kSmallPlaneRows = 14;
  constexpr double kRowPieceWeightBytes = 1 << 20;
  const double weight_bytes = static_cast<double>(s.w[0] * s.w[1]) *
                              static_cast<double>(s.w[2] * s.w[3]) *
                              (bf16 ? 2.0 : 4.0);
  const bool small_plane =
      out_rows < kSmallPlaneRows ||
      (out_rows == kSmallPlaneRows && weight_bytes > kRowPieceWeightBytes);
  const int64_t k = s.w[0];
  const int64_t min_block =
      winograd ? std::min<int64_t>(128, k / 2) : (k >= 512 ? 128 : 64);
  if (s.group != 1 || !small_plane) return k;
  const int64_t most = std::min(k / min_block, kMaxPiecesPerImage);
  for (int parity : {0, 1}) {
    for (int64_t blocks = most; blocks >= 2; --blocks) {
      if (blocks % 2 == parity && k % blocks == 0 && (k / blocks) % 16 == 0) {
        return k / blocks;
      }
    }
  }
  return k;
}

// How a plan computes: direct in float32 or bf16, or Winograd in float32
// with row pieces aligned to `row_align` output rows.
struct PlanKind {
  bool bf16 = false;
  bool winograd = false;
  int64_t row_align = 1;
};

// Builds the pieces' primitives: X and W in float32, or in bf16 with
// float32 sums (bias, Z and Y stay float32). Throws dnnl::error where
// oneDNN has no kernel at all; `supported` says whether every piece has an
// optimised one.
ConvPlan BuildPlan(const NhwcConvSpec& s, bool has_bias, PlanKind kind,
                   bool* supported) {
  const bool bf16 = kind.bf16, winograd = kind.winograd;
  OneOpenMpThread one_thread;
  ConvPlan plan;
  plan.bf16 = bf16;
  plan.blocked = winograd;
  const Tag layout = winograd ? Tag::nChw16c : Tag::nhwc;
  const dnnl::algorithm algorithm = winograd
                                        ? dnnl::algorithm::convolution_winograd
                                        : dnnl::algorithm::convolution_direct;
  const Dt operands = bf16 ? Dt::bf16 : Dt::f32;
  const std::array<int64_t, 2> out = ConvOutput(s);
  const int64_t c = s.x[1], w = s.x[3], k = s.w[0];
  plan.channels = k;
  plan.out_width = out[1];
  plan.channel_block = ChannelBlock(s, out[0], bf16, winograd);
  const int64_t kb = plan.channel_block;
  plan.image_in = s.x[1] * s.x[2] * s.x[3];
  plan.image_out = k * out[0] * out[1];
  plan.bias = memory::desc({kb}, Dt::f32, Tag::x);
  const dnnl::primitive_attr attr = ConvAttr(s, supported);
  const memory::desc weights_any(WeightDims(s, kb), operands, Tag::any);
  const double flops = 2.0 * static_cast<double>(plan.image_out) *
                       static_cast<double>(s.w[1] * s.w[2] * s.w[3]);
  std::vector<RowPiece> rows =
      RowPieces(s.x[2], out[0], s.w[2], s.stride[0], s.dilation[0], s.pads[0],
                RowPieceCount(out[0], kind.row_align,
                              s.group > 1 ? kGroupedFlopWeight * flops : flops),
                kind.row_align);
  if (kb < k) {  // Channel blocks over all rows.
    rows = {{0, out[0], 0, s.x[2], s.pads[0], 0}};
    const int64_t extent = (s.w[2] - 1) * s.dilation[0] + 1;
    rows[0].pad_bottom = std::max<int64_t>(
        0, (out[0] - 1) * s.stride[0] - s.pads[0] + extent - s.x[2]);
  }
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, int> made;
  for (const RowPiece& r : rows) {
    auto key = std::make_tuple(r.out_rows, r.in_rows, r.pad_top, r.pad_bottom);
    auto found = made.find(key);
    if (found == made.end()) {
      memory::desc src({1, c, r.in_rows, w}, operands, layout);
      memory::desc dst({1, kb, r.out_rows, out[1]}, Dt::f32, layout);
      const memory::dims strides{s.stride[0], s.stride[1]};
      const memory::dims dilates{s.dilation[0] - 1, s.dilation[1] - 1};
      const memory::dims pad_l{r.pad_top, s.pads[1]};
      const memory::dims pad_r{r.pad_bottom, s.pads[3]};
      auto desc =
          has_bias
              ? dnnl::convolution_forward::desc(
                    dnnl::prop_kind::forward_inference, algorithm, src,
                    weights_any, plan.bias, dst, strides, dilates, pad_l, pad_r)
              : dnnl::convolution_forward::desc(
                    dnnl::prop_kind::forward_inference, algorithm, src,
                    weights_any, dst, strides, dilates, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc pd(desc, attr, DnnlCpuEngine());
      // oneDNN has two Winograd kernels (F(2x2, 3x3) and F(4x4, 3x3)) and
      // may pick either by a piece's height; one packed W serves every
      // piece, so later pieces take the first piece's kind where they can.
      while (winograd && !plan.primitives.empty() &&
             pd.weights_desc() != plan.weights && pd.next_impl()) {
      }
      if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) {
        *supported = false;  // oneDNN's reference loops: not worth it.
      }
      if (plan.primitives.empty()) {
        plan.weights = pd.weights_desc();
      } else if (pd.weights_desc() != plan.weights) {
        *supported = false;  // One packed W serves every piece.
        return plan;
      }
      found = made.emplace(key, static_cast<int>(plan.primitives.size())).first;
      plan.primitives.emplace_back(pd);
      plan.src.push_back(src);
      plan.dst.push_back(dst);
      plan.scratch.push_back(pd.scratchpad_desc());
    }
    for (int64_t k0 = 0; k0 < k; k0 += kb) {
      plan.pieces.push_back(
          {found->second, r.in_begin * w * c, r.out_begin, r.out_rows, k0});
    }
  }
  // Top to bottom, as RowPieces gives them (why there).
  plan.flops_per_piece = flops / static_cast<double>(plan.pieces.size());
  return plan;
}

// The plan NhwcConv runs: in bf16 where asked and oneDNN has optimised
// kernels for it (on AVX-512 BF16, or AMX where the CPU has it); else in
// float32, as Winograd where the rule allows it and oneDNN has a kernel
// for every piece, else direct. Throws dnnl::error where oneDNN has none.
ConvPlan BuildKernelPlan(const NhwcConvSpec& s, bool has_bias, bool bf16) {
  std::vector<PlanKind> kinds;
  if (bf16) kinds.push_back({/*bf16=*/true, /*winograd=*/false, 1});
  if (NhwcConvWinogradAvailable() && WinogradShape(s)) {
    // Row pieces of whole tiles where every piece can share one kernel;
    // else pieces as for direct (a 56-row plane in 7-row pieces: tiles of
    // 4 cut into 8s and 4s take two kinds of kernel, whose packed W differ).
    kinds.push_back({/*bf16=*/false, /*winograd=*/true, kWinogradTileRows});
    kinds.push_back({/*bf16=*/false, /*winograd=*/true, 1});
  }
  for (const PlanKind& kind : kinds) {
    bool supported = true;
    try {
      ConvPlan plan = BuildPlan(s, has_bias, kind, &supported);
      if (supported && !plan.primitives.empty()) return plan;
    } catch (const dnnl::error&) {
      // Not this kind: the next one.
    }
  }
  bool supported = true;
  return BuildPlan(s, has_bias, PlanKind{}, &supported);
}

// W packed in a plan's layout: one memory per block of output channels.
struct PackedConvWeights {
  memory::desc layout;
  // The blocks, each a memory over its part of `storage`: one buffer for
  // all, so that a large convolution's packed weights land in huge pages
  // (framework/large_buffer.h) rather than faulting in 4 KiB at a time.
  std::vector<memory> blocks;
  LargeBuffer storage;

  int64_t bytes() const {
    return static_cast<int64_t>(layout.get_size() * blocks.size());
  }

  // What the packing depends on besides W: the plan's layout, which
  // BuildKernelPlan chooses from everything in the spec but the batch N
  // (pieces are planned per image). The kernel still compares the layout
  // it finds with its plan's.
  static std::string Recipe(const NhwcConvSpec& s, const ConvPlan& plan) {
    std::string recipe = "NhwcConv";
    for (int64_t v :
         {s.x[1], s.x[2], s.x[3], s.group, s.stride[0], s.stride[1],
          s.dilation[0], s.dilation[1], s.pads[0], s.pads[1], s.pads[2],
          s.pads[3], plan.channel_block, static_cast<int64_t>(plan.bf16),
          static_cast<int64_t>(plan.blocked),
          static_cast<int64_t>(plan.weights.get_size())}) {
      recipe += ',' + std::to_string(v);
    }
    return recipe;
  }
};

// Packs W (K, C / group, kh, kw; float32) block by block into `plan`'s
// layout.
std::shared_ptr<const PackedConvWeights> PackConvWeights(const NhwcConvSpec& s,
                                                         const ConvPlan& plan,
                                                         const Tensor& w) {
  auto packed = std::make_shared<PackedConvWeights>();
  packed->layout = plan.weights;
  OneOpenMpThread one_thread;
  dnnl::stream stream(DnnlCpuEngine());
  const int64_t kb = plan.channel_block;
  const int64_t block_floats = kb * s.w[1] * s.w[2] * s.w[3];
  const size_t block_bytes = (plan.weights.get_size() + 63) / 64 * 64;
  const auto count = static_cast<size_t>((s.w[0] + kb - 1) / kb);
  packed->storage = LargeBuffer(block_bytes * count);
  if (packed->storage.data() == nullptr) throw std::bad_alloc();
  for (int64_t k0 = 0; k0 < s.w[0]; k0 += kb) {
    char* to =
        packed->storage.data() + static_cast<size_t>(k0 / kb) * block_bytes;
    const float* from = w.data<float>() + k0 / kb * block_floats;
    memory block(plan.weights, DnnlCpuEngine(), to);
    // A Winograd layout is written here (ops/dnnl_winograd_weights.h: the
    // same bits, some 50x sooner); any other is oneDNN's reorder.
    const bool written =
        s.group == 1 && s.w[2] == 3 && s.w[3] == 3 &&
        PackWinogradWeights(plan.weights, from, kb, s.w[1], to);
    if (!written) {
      memory plain(memory::desc(WeightDims(s, kb), Dt::f32,
                                s.group == 1 ? Tag::oihw : Tag::goihw),
                   DnnlCpuEngine(), const_cast<float*>(from));
      dnnl::reorder(plain, block).execute(stream, plain, block);
    }
    packed->blocks.push_back(block);
  }
  stream.wait();
  return packed;
}

// --- NhwcConv ----------------------------------------------------------------

class NhwcConvKernel : public OpKernel {
 public:
  explicit NhwcConvKernel(const KernelConstruction& c) {
    const WindowAttrs attrs = ReadWindowAttrs(c);
    spec_.group = c.attr<int64_t>("group");
    auto activation = ActivationFromAttrs(c.attrs());
    if (!activation.ok()) {
      status_ = activation.status();
      return;
    }
    spec_.activation = *activation;
    spec_.residual = c.input_dtypes().size() > 3;
    if (attrs.pads.size() != 4 || attrs.strides.size() != 2 ||
        attrs.dilations.size() != 2 || attrs.kernel.size() != 2) {
      status_ = InvalidArgumentError(
          "NhwcConv needs explicit kernel_shape, strides, dilations and pads "
          "for two spatial dims");
      return;
    }
    std::copy(attrs.pads.begin(), attrs.pads.end(), spec_.pads.begin());
    std::copy(attrs.strides.begin(), attrs.strides.end(), spec_.stride.begin());
    std::copy(attrs.dilations.begin(), attrs.dilations.end(),
              spec_.dilation.begin());
    const Tensor* w = c.constant_input(1);
    if (w == nullptr || w->dtype() != DataType::kFloat32 ||
        w->shape().rank() != 4) {
      status_ =
          InvalidArgumentError("NhwcConv needs a constant float32 W of rank 4");
      return;
    }
    weights_source_ = w->raw_data();
    for (int i = 0; i < 4; ++i) spec_.w[i] = w->shape().dim(i);
    const PartialShape& x = c.input_shapes()[0];  // N, H, W, C.
    if (!x.IsFullyDefined() || x.rank() != 4) {
      status_ =
          InvalidArgumentError("NhwcConv needs X's shape at construction");
      return;
    }
    spec_.x = {x.dim(0), x.dim(3), x.dim(1), x.dim(2)};
    has_bias_ = c.input_dtypes().size() > 2;
    try {
      plan_ =
          BuildKernelPlan(spec_, has_bias_, c.bf16() && CpuHasBf16Products());
      if (plan_.primitives.empty()) {
        status_ = InvalidArgumentError("NhwcConv: no oneDNN kernel for " +
                                       c.node_name());
        return;
      }
      const auto pack = [&] { return PackConvWeights(spec_, plan_, *w); };
      packed_w_ = PreparedOrMade<PackedConvWeights>(
          c.prepared_weights(), *w, PackedConvWeights::Recipe(spec_, plan_),
          pack);
      if (packed_w_->layout != plan_.weights) {
        packed_w_ = pack();  // The recipe missed a difference: pack alone.
      }
    } catch (const dnnl::error& e) {
      status_ = InvalidArgumentError("NhwcConv " + c.node_name() +
                                     ": oneDNN refused it: " + e.what());
    }
  }

  int64_t prepared_bytes() const override {
    return status_.ok() ? packed_w_->bytes() : 0;
  }

  Status Compute(KernelContext& ctx) const override {
    WEFT_RETURN_IF_ERROR(status_);
    const Tensor& x = ctx.input(0);
    if (ctx.input(1).raw_data() != weights_source_) {
      return InvalidArgumentError(
          "NhwcConv's W must be the constant it was built with");
    }
    const Shape& xs = x.shape();
    if (x.dtype() != DataType::kFloat32 || xs.rank() != 4 ||
        xs.dim(1) != spec_.x[2] || xs.dim(2) != spec_.x[3] ||
        xs.dim(3) != spec_.x[1]) {
      return InvalidArgumentError(
          "NhwcConv was built for X of [N, " + std::to_string(spec_.x[2]) +
          ", " + std::to_string(spec_.x[3]) + ", " +
          std::to_string(spec_.x[1]) + "], got " + xs.ToString());
    }
    const int64_t n = xs.dim(0);
    const std::array<int64_t, 2> out = ConvOutput(spec_);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(
                              0, Shape({n, out[0], out[1], spec_.w[0]})));
    const float* z = nullptr;
    if (spec_.residual) {
      const Tensor& zt = ctx.input(3);
      if (!(zt.shape() == y->shape()) || zt.dtype() != DataType::kFloat32) {
        return InvalidArgumentError("NhwcConv's Z has shape " +
                                    zt.shape().ToString() + ", the output " +
                                    y->shape().ToString());
      }
      z = zt.data<float>();
    }
    const float* bias = has_bias_ ? ctx.input(2).data<float>() : nullptr;
    if (has_bias_ && ctx.input(2).NumElements() != spec_.w[0]) {
      return InvalidArgumentError("NhwcConv's B must have " +
                                  std::to_string(spec_.w[0]) + " elements");
    }
    const float* px = x.data<float>();
    float* py = y->data<float>();
    // In bf16, X rounded once for every piece: the pieces' input rows
    // overlap (their windows' halo), and every block of output channels
    // reads the same rows again. Element by element, so the bits do not
    // depend on the split.
    // Kept between Runs, so that a steady Run allocates nothing; only this
    // thread names it (a lambda run by a helper would name the helper's).
    thread_local std::vector<uint16_t> kept_x_bf16;
    std::vector<uint16_t>& x_bf16 = kept_x_bf16;
    if (plan_.bf16) {
      x_bf16.resize(static_cast<size_t>(x.NumElements()));
      ctx.ParallelForFixedBlocks(
          x.NumElements(), kBf16RoundBlock, [&](int64_t b, int64_t e) {
            RoundToBf16(px + b, e - b, x_bf16.data() + b);
          });
    }
    const auto per_image = static_cast<int64_t>(plan_.pieces.size());
    std::string failure;
    std::mutex failure_mu;
    // ns per piece at about 100 GFLOP/s: only the split's grain.
    ctx.ParallelFor(n * per_image, plan_.flops_per_piece / 100.0,
                    [&](int64_t begin, int64_t end) {
                      try {
                        RunPieces(begin, end, n, px, x_bf16.data(), bias, z,
                                  py);
                      } catch (const dnnl::error& e) {
                        std::lock_guard<std::mutex> lock(failure_mu);
                        failure = e.what();
                      }
                    });
    if (!failure.empty()) {
      return InternalError("NhwcConv: oneDNN failed: " + failure);
    }
    return Status::OK();
  }

 private:
  // Units [begin, end) of the batch's pieces x images, piece-major: a
  // piece runs for every image in turn, so that a block of output channels
  // reads its part of W once for the whole batch rather than once an image
  // (ResNet's 7 x 7 layers: 2.4 MB blocks of a 9.4 MB W, which the
  // image-major order read from L3 for each image). The order changes no
  // bits: each unit is the same primitive on the same data.
  // x_bf16: X rounded to bf16 where the plan is bf16, else unused.
  void RunPieces(int64_t begin, int64_t end, int64_t images, const float* x,
                 const uint16_t* x_bf16, const float* bias, const float* z,
                 float* y) const {
    OneOpenMpThread one_thread;
    // This thread's own buffer (the executing thread's copy: that is what
    // it is for).
    thread_local std::vector<float> block_out;
    const int64_t k = plan_.channels, kb = plan_.channel_block;
    const DnnlHandleSets<PieceHandles>::Lease handles(
        handle_sets_, [this] { return MakeHandles(); });
    for (int64_t i = begin; i < end; ++i) {
      const int64_t image = i % images;
      const ConvPlan::Piece& piece = plan_.pieces[i / images];
      const int64_t pixels = piece.rows * plan_.out_width;
      const int64_t offset = image * plan_.image_out +
                             piece.row_begin * plan_.out_width * k +
                             piece.channel_begin;
      const int p = piece.primitive;
      const int64_t src_offset = image * plan_.image_in + piece.src_offset;
      if (plan_.blocked) {
        RunBlockedPiece(piece, x + src_offset, bias,
                        z == nullptr ? nullptr : z + offset, y + offset,
                        *handles);
        continue;
      }
      // A block of channels is computed densely, then put in place.
      float* dst = y + offset;
      if (kb < k) {
        block_out.resize(static_cast<size_t>(pixels * kb));
        dst = block_out.data();
      }
      if (z != nullptr && kb == k) {  // The sum post-op adds what dst holds.
        std::memcpy(dst, z + offset,
                    static_cast<size_t>(pixels * k) * sizeof(float));
      } else if (z != nullptr) {
        for (int64_t q = 0; q < pixels; ++q) {
          std::memcpy(dst + q * kb, z + offset + q * k,
                      static_cast<size_t>(kb) * sizeof(float));
        }
      }
      void* scratch_start = DnnlThreadScratch(plan_.scratch[p].get_size());
      // The piece's input rows: a contiguous run of the image.
      void* src_data =
          plan_.bf16
              ? static_cast<void*>(const_cast<uint16_t*>(x_bf16 + src_offset))
              : static_cast<void*>(const_cast<float*>(x + src_offset));
      ExecutePiece(piece, src_data, dst, scratch_start, bias, *handles);
      if (kb < k) {
        for (int64_t q = 0; q < pixels; ++q) {
          std::memcpy(y + offset + q * k, dst + q * kb,
                      static_cast<size_t>(kb) * sizeof(float));
        }
      }
    }
  }

  // One piece of a Winograd plan: its input rows (from `x`, NHWC) copied
  // into channel blocks of 16, Z's (where fused) into the output blocks for
  // the sum post-op, and the output blocks copied into Y's rows (`y`, at
  // the piece's first pixel and channel). Every buffer is this thread's.
  void RunBlockedPiece(const ConvPlan::Piece& piece, const float* x,
                       const float* bias, const float* z, float* y,
                       PieceHandles& handles) const {
    const int p = piece.primitive;
    const int64_t c = spec_.x[1], k = plan_.channels, kb = plan_.channel_block;
    const dnnl_dims_t& in_dims = plan_.src[p].data.dims;  // 1, C, rows, W.
    const int64_t in_pixels = in_dims[2] * in_dims[3];
    const int64_t out_pixels = piece.rows * plan_.out_width;
    constexpr auto kFloat = static_cast<int64_t>(sizeof(float));
    const int64_t scratch_bytes = RoundUp(
        static_cast<int64_t>(plan_.scratch[p].get_size()), kBufferAlignment);
    const int64_t src_bytes = RoundUp(in_pixels * c * kFloat, kBufferAlignment);
    char* buffer = static_cast<char*>(DnnlThreadScratch(static_cast<size_t>(
        scratch_bytes + src_bytes + out_pixels * kb * kFloat)));
    auto* src = reinterpret_cast<float*>(buffer + scratch_bytes);
    auto* dst = reinterpret_cast<float*>(buffer + scratch_bytes + src_bytes);
    NhwcToBlocked16(x, in_pixels, c, c, src);
    if (z != nullptr) NhwcToBlocked16(z, out_pixels, kb, k, dst);
    ExecutePiece(piece, src, dst, buffer, bias, handles);
    Blocked16ToNhwc(dst, out_pixels, kb, k, y);
  }

  // Runs a piece's primitive on these buffers, in its layout (the bias
  // from the piece's first channel, where there is one).
  void ExecutePiece(const ConvPlan::Piece& piece, void* src, float* dst,
                    void* scratch, const float* bias,
                    PieceHandles& handles) const {
    const int p = piece.primitive;
    handles.src[p].set_data_handle(src);
    handles.dst[p].set_data_handle(dst);
    handles.scratch[p].set_data_handle(scratch);
    std::array<dnnl_exec_arg_t, 5> args{
        {{DNNL_ARG_SRC, handles.src[p].get()},
         {DNNL_ARG_WEIGHTS,
          packed_w_->blocks[piece.channel_begin / plan_.channel_block].get()},
         {DNNL_ARG_DST, handles.dst[p].get()},
         {DNNL_ARG_SCRATCHPAD, handles.scratch[p].get()},
         {DNNL_ARG_BIAS, nullptr}}};
    int used = 4;
    if (bias != nullptr) {
      handles.bias.set_data_handle(
          const_cast<float*>(bias + piece.channel_begin));
      args[used++].memory = handles.bias.get();
    }
    DnnlExecute(plan_.primitives[p], DnnlThreadStream(), args.data(), used);
  }

  // Handles for every primitive, pointing nowhere until a piece runs.
  std::unique_ptr<PieceHandles> MakeHandles() const {
    auto made = std::make_unique<PieceHandles>();
    for (size_t p = 0; p < plan_.primitives.size(); ++p) {
      made->src.emplace_back(plan_.src[p], DnnlCpuEngine(),
                             static_cast<void*>(DNNL_MEMORY_NONE));
      made->dst.emplace_back(plan_.dst[p], DnnlCpuEngine(),
                             static_cast<void*>(DNNL_MEMORY_NONE));
      made->scratch.emplace_back(plan_.scratch[p], DnnlCpuEngine(),
                                 static_cast<void*>(DNNL_MEMORY_NONE));
    }
    if (has_bias_) {
      made->bias = memory(plan_.bias, DnnlCpuEngine(),
                          static_cast<void*>(DNNL_MEMORY_NONE));
    }
    return made;
  }

  Status status_;
  NhwcConvSpec spec_;
  bool has_bias_ = false;
  const void* weights_source_ = nullptr;
  ConvPlan plan_;
  // Shared with the session's other compiles of this node (other batch
  // sizes): the packing does not depend on N.
  std::shared_ptr<const PackedConvWeights> packed_w_;
  DnnlHandleSets<PieceHandles> handle_sets_;
};

Status InferNhwcConvShape(InferenceContext& ctx) {
  WEFT_RETURN_IF_ERROR(CheckWindowAttrs(ctx));
  const PartialShape& x = ctx.input_shape(0);
  const PartialShape& w = ctx.input_shape(1);
  if (!x.IsFullyDefined() || !w.IsFullyDefined() || x.rank() != 4 ||
      w.rank() != 4) {
    return Status::OK();
  }
  NhwcConvSpec s;
  s.x = {x.dim(0), x.dim(3), x.dim(1), x.dim(2)};
  for (int i = 0; i < 4; ++i) s.w[i] = w.dim(i);
  const auto& strides = ctx.attr<std::vector<int64_t>>("strides");
  const auto& dilations = ctx.attr<std::vector<int64_t>>("dilations");
  const auto& pads = ctx.attr<std::vector<int64_t>>("pads");
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4) {
    return Status::OK();  // The kernel reports it.
  }
  std::copy(strides.begin(), strides.end(), s.stride.begin());
  std::copy(dilations.begin(), dilations.end(), s.dilation.begin());
  std::copy(pads.begin(), pads.end(), s.pads.begin());
  const std::array<int64_t, 2> out = ConvOutput(s);
  if (out[0] < 1 || out[1] < 1) return Status::OK();
  ctx.set_output(0, PartialShape(std::vector<int64_t>{x.dim(0), out[0], out[1],
                                                      w.dim(0)}));
  return Status::OK();
}

// --- NhwcMaxPool
// ---------------------------------------------------------------

// 64 bytes of T as one vector (GCC's and clang's vector extension; the
// attribute must name a concrete type, hence one specialisation each).
template <class T>
struct Vector64;
template <>
struct Vector64<float> {
  typedef float type __attribute__((vector_size(64)));
};
template <>
struct Vector64<uint8_t> {
  typedef uint8_t type __attribute__((vector_size(64)));
};
template <>
struct Vector64<int8_t> {
  typedef int8_t type __attribute__((vector_size(64)));
};

// The maximum of `count` channel blocks (tap(t) + first, kVectors vectors
// of 64 bytes each) into out, taken in tap order as max(in, running) = in >
// running ? in : running, so a NaN input leaves the running value as it
// was. The running maximum is held in vector variables: accumulated in the
// output instead, each tap would wait for the last tap's store. `tap(t)`
// gives tap t's first channel.
template <class T, int kVectors, class TapAt>
void MaxOfTaps(TapAt tap, int64_t count, int64_t first, T* out) {
  using Vector = typename Vector64<T>::type;
  static_assert(sizeof(Vector) == 64);
  constexpr int64_t kLanes = 64 / sizeof(T);
  Vector running[kVectors];
  for (Vector& r : running) r = Vector{} + MaxPoolFloor<T>();
  for (int64_t t = 0; t < count; ++t) {
    const T* in_tap = tap(t) + first;
    for (int v = 0; v < kVectors; ++v) {
      Vector in;
      std::memcpy(&in, in_tap + v * kLanes, sizeof(in));
      running[v] = in > running[v] ? in : running[v];
    }
  }
  std::memcpy(out + first, running, sizeof(running));
}

// Every channel of one output pixel: blocks of four vectors, then of one,
// then the channels past the last whole vector one at a time.
template <class T, class TapAt>
void MaxOfTapsAllChannels(TapAt tap, int64_t count, int64_t c, T* out) {
  constexpr int64_t kLanes = 64 / sizeof(T);
  int64_t first = 0;
  for (; first + 4 * kLanes <= c; first += 4 * kLanes) {
    MaxOfTaps<T, 4>(tap, count, first, out);
  }
  for (; first + kLanes <= c; first += kLanes) {
    MaxOfTaps<T, 1>(tap, count, first, out);
  }
  for (; first < c; ++first) {
    T running = MaxPoolFloor<T>();
    for (int64_t t = 0; t < count; ++t) {
      const T in = tap(t)[first];
      running = in > running ? in : running;
    }
    out[first] = running;
  }
}

// Each output pixel is the maximum over its window of whole channel vectors
// (the channels are contiguous), taken in row-major window order; padding
// is skipped. One output row per job.
class NhwcMaxPoolKernel : public OpKernel {
 public:
  explicit NhwcMaxPoolKernel(const KernelConstruction& c)
      : attrs_(ReadWindowAttrs(c)) {
    attrs_.ceil_mode = c.attr<int64_t>("ceil_mode") != 0;
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    if (xs.rank() != 4) {
      return InvalidArgumentError("NhwcMaxPool takes [N, H, W, C], got " +
                                  xs.ToString());
    }
    switch (x.dtype()) {
      case DataType::kFloat32:
        return Pool<float>(ctx, x);
      case DataType::kUInt8:
        return Pool<uint8_t>(ctx, x);
      case DataType::kInt8:
        return Pool<int8_t>(ctx, x);
      default:
        return InvalidArgumentError(
            std::string("NhwcMaxPool takes float32, uint8 or int8, got ") +
            DataTypeName(x.dtype()));
    }
  }

 private:
  template <class T>
  Status Pool(KernelContext& ctx, const Tensor& x) const {
    const Shape& xs = x.shape();
    const int64_t n = xs.dim(0), h = xs.dim(1), w = xs.dim(2), c = xs.dim(3);
    WEFT_ASSIGN_OR_RETURN(Window win,
                          ForwardWindow(attrs_, {h, w}, attrs_.kernel));
    const int64_t oh = win.out[0], ow = win.out[1];
    WEFT_ASSIGN_OR_RETURN(
        Tensor * y, ctx.AllocateOutputUninitialized(0, Shape({n, oh, ow, c})));
    const T* px = x.data<T>();
    T* py = y->data<T>();
    // A window wholly inside the plane (all but the edge pixels of a large
    // one) has its taps at fixed offsets from its first: the same taps in
    // the same order as the general path, found without a bound checked or
    // a pointer stored: int8 ResNet-18's pool at batch 8 ([8, 112, 112, 64]
    // uint8) 674 -> 370 us, SqueezeNet's three float pools 154 -> 108 us
    // (fastest of six traced Runs, one Zen 5 core).
    const int64_t taps_in_window = win.KernelSize();
    const int64_t extent_y = (win.kernel[0] - 1) * win.dilation[0] + 1;
    const int64_t extent_x = (win.kernel[1] - 1) * win.dilation[1] + 1;
    // Only where a window fits (then every offset is inside the plane, and
    // none of the products can overflow, whatever the attributes say).
    const bool window_fits = extent_y <= h && extent_x <= w;
    std::vector<int64_t> window_offsets;
    if (window_fits) {
      window_offsets.reserve(static_cast<size_t>(taps_in_window));
      for (int64_t ky = 0; ky < win.kernel[0]; ++ky) {
        for (int64_t kx = 0; kx < win.kernel[1]; ++kx) {
          window_offsets.push_back(
              (ky * win.dilation[0] * w + kx * win.dilation[1]) * c);
        }
      }
    }
    const double cost = static_cast<double>(ow * c * taps_in_window) * 0.1;
    ctx.ParallelFor(n * oh, cost, [&](int64_t begin, int64_t end) {
      // The window's taps inside the input, for one output pixel: distinct
      // pixels, so no more than the plane holds.
      std::vector<const T*> taps(
          static_cast<size_t>(std::min(taps_in_window, h * w)));
      const int64_t* offsets = window_offsets.data();
      for (int64_t row = begin; row < end; ++row) {
        const int64_t image = row / oh, oy = row % oh;
        const int64_t iy0 = oy * win.stride[0] - win.pad_begin[0];
        const bool rows_inside = window_fits && iy0 >= 0 && iy0 + extent_y <= h;
        for (int64_t ox = 0; ox < ow; ++ox) {
          const int64_t ix0 = ox * win.stride[1] - win.pad_begin[1];
          T* out = py + (row * ow + ox) * c;
          if (rows_inside && ix0 >= 0 && ix0 + extent_x <= w) {
            const T* corner = px + ((image * h + iy0) * w + ix0) * c;
            MaxOfTapsAllChannels(
                [corner, offsets](int64_t t) { return corner + offsets[t]; },
                taps_in_window, c, out);
            continue;
          }
          int64_t count = 0;
          for (int64_t ky = 0; ky < win.kernel[0]; ++ky) {
            const int64_t iy =
                oy * win.stride[0] - win.pad_begin[0] + ky * win.dilation[0];
            if (iy < 0 || iy >= h) continue;
            for (int64_t kx = 0; kx < win.kernel[1]; ++kx) {
              const int64_t ix =
                  ox * win.stride[1] - win.pad_begin[1] + kx * win.dilation[1];
              if (ix < 0 || ix >= w) continue;
              taps[count++] = px + ((image * h + iy) * w + ix) * c;
            }
          }
          MaxOfTapsAllChannels(
              [&taps](int64_t t) { return taps[static_cast<size_t>(t)]; },
              count, c, out);
        }
      }
    });
    return Status::OK();
  }

  WindowAttrs attrs_;
};

Status InferNhwcMaxPoolShape(InferenceContext& ctx) {
  WEFT_RETURN_IF_ERROR(CheckWindowAttrs(ctx));
  const PartialShape& x = ctx.input_shape(0);
  if (!x.IsFullyDefined() || x.rank() != 4) return Status::OK();
  WindowAttrs attrs;
  attrs.kernel = ctx.attr<std::vector<int64_t>>("kernel_shape");
  attrs.strides = ctx.attr<std::vector<int64_t>>("strides");
  attrs.dilations = ctx.attr<std::vector<int64_t>>("dilations");
  attrs.pads = ctx.attr<std::vector<int64_t>>("pads");
  attrs.auto_pad = ctx.attr<std::string>("auto_pad");
  attrs.ceil_mode = ctx.attr<int64_t>("ceil_mode") != 0;
  auto win = ForwardWindow(attrs, {x.dim(1), x.dim(2)}, attrs.kernel);
  if (!win.ok()) return Status::OK();
  ctx.set_output(0, PartialShape(std::vector<int64_t>{x.dim(0), win->out[0],
                                                      win->out[1], x.dim(3)}));
  return Status::OK();
}

// --- NhwcGlobalAveragePool
// -----------------------------------------------------

// [N, H, W, C] in, [N, C, 1, 1] out (the same bytes as [N, 1, 1, C]): each
// channel's mean, summed in double in pixel order.
class NhwcGlobalAveragePoolKernel : public OpKernel {
 public:
  explicit NhwcGlobalAveragePoolKernel(const KernelConstruction&) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    if (x.dtype() != DataType::kFloat32 || xs.rank() != 4) {
      return InvalidArgumentError(
          "NhwcGlobalAveragePool takes float32 [N, H, W, C], got " +
          xs.ToString());
    }
    const int64_t n = xs.dim(0), pixels = xs.dim(1) * xs.dim(2), c = xs.dim(3);
    WEFT_ASSIGN_OR_RETURN(
        Tensor * y, ctx.AllocateOutputUninitialized(0, Shape({n, c, 1, 1})));
    const float* px = x.data<float>();
    float* py = y->data<float>();
    // Jobs of (image, block of kBlock channels): a block's sums stay in
    // registers and the pool has work at batch 1.
    constexpr int64_t kBlock = 64;
    const int64_t blocks = (c + kBlock - 1) / kBlock;
    ctx.ParallelFor(
        n * blocks, static_cast<double>(pixels * kBlock),
        [&](int64_t begin, int64_t end) {
          double sum[kBlock];
          for (int64_t job = begin; job < end; ++job) {
            const int64_t image = job / blocks;
            const int64_t c0 = job % blocks * kBlock;
            const int64_t width = std::min(kBlock, c - c0);
            std::fill(sum, sum + kBlock, 0.0);
            const float* in = px + image * pixels * c + c0;
            for (int64_t p = 0; p < pixels; ++p) {
              for (int64_t ch = 0; ch < width; ++ch) {
                sum[ch] += static_cast<double>(in[p * c + ch]);
              }
            }
            for (int64_t ch = 0; ch < width; ++ch) {
              py[image * c + c0 + ch] = static_cast<float>(
                  pixels > 0 ? sum[ch] / static_cast<double>(pixels) : 0.0);
            }
          }
        });
    return Status::OK();
  }
};

Status InferNhwcGlobalAveragePoolShape(InferenceContext& ctx) {
  const PartialShape& x = ctx.input_shape(0);
  if (!x.rank_known() || x.rank() != 4) return Status::OK();
  ctx.set_output(0,
                 PartialShape(std::vector<int64_t>{x.dim(0), x.dim(3), 1, 1}));
  return Status::OK();
}

// --- NchwToNhwc, NhwcToNchw
// ----------------------------------------------------

// The 16 x 16 bytes at `from` (rows `from_stride` bytes apart) written
// transposed at `to` (rows `to_stride` apart): to[j][i] = from[i][j].
// Four rounds of interleaving, bytes, then pairs, quads and eights of them,
// each pairing rows that hold the same columns, so that after the last a
// register holds one column of all 16 rows. Where a channel-last row of
// bytes was read a byte per load, 16 x 16 of them move in 64 unpacks.
constexpr int64_t kByteTile = 16;
void TransposeByteTile(const uint8_t* from, int64_t from_stride, uint8_t* to,
                       int64_t to_stride) {
#if defined(__SSE2__)
  __m128i row[16], t[16];
  for (int i = 0; i < 16; ++i) {
    row[i] = _mm_loadu_si128(
        reinterpret_cast<const __m128i*>(from + i * from_stride));
  }
  // t[i], i < 8: rows 2i, 2i+1 interleaved over columns 0-7; t[i + 8] over
  // columns 8-15.
  for (int i = 0; i < 8; ++i) {
    t[i] = _mm_unpacklo_epi8(row[2 * i], row[2 * i + 1]);
    t[i + 8] = _mm_unpackhi_epi8(row[2 * i], row[2 * i + 1]);
  }
  // row[4g + i]: rows 4i to 4i+3 over columns 4g to 4g+3.
  for (int i = 0; i < 4; ++i) {
    row[i] = _mm_unpacklo_epi16(t[2 * i], t[2 * i + 1]);
    row[i + 4] = _mm_unpackhi_epi16(t[2 * i], t[2 * i + 1]);
    row[i + 8] = _mm_unpacklo_epi16(t[8 + 2 * i], t[8 + 2 * i + 1]);
    row[i + 12] = _mm_unpackhi_epi16(t[8 + 2 * i], t[8 + 2 * i + 1]);
  }
  // t[4g], t[4g + 1]: rows 0-7 over columns 4g, 4g+1 and 4g+2, 4g+3;
  // t[4g + 2], t[4g + 3]: the same for rows 8-15.
  for (int g = 0; g < 4; ++g) {
    t[4 * g] = _mm_unpacklo_epi32(row[4 * g], row[4 * g + 1]);
    t[4 * g + 1] = _mm_unpackhi_epi32(row[4 * g], row[4 * g + 1]);
    t[4 * g + 2] = _mm_unpacklo_epi32(row[4 * g + 2], row[4 * g + 3]);
    t[4 * g + 3] = _mm_unpackhi_epi32(row[4 * g + 2], row[4 * g + 3]);
  }
  for (int g = 0; g < 4; ++g) {
    const __m128i column[4] = {_mm_unpacklo_epi64(t[4 * g], t[4 * g + 2]),
                               _mm_unpackhi_epi64(t[4 * g], t[4 * g + 2]),
                               _mm_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]),
                               _mm_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3])};
    for (int j = 0; j < 4; ++j) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(to + (4 * g + j) * to_stride),
                       column[j]);
    }
  }
#else
  for (int64_t i = 0; i < kByteTile; ++i) {
    for (int64_t j = 0; j < kByteTile; ++j) {
      to[j * to_stride + i] = from[i * from_stride + j];
    }
  }
#endif
}

// Moves a 4-D tensor between channel-first and channel-last order: [N, C,
// P] <-> [N, P, C] over the P = H * W pixels, in blocks of pixels whose
// channel-last rows stay in the L1 cache. Every element is a copy.
template <bool kToNhwc>
class LayoutKernel : public OpKernel {
 public:
  explicit LayoutKernel(const KernelConstruction&) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    if (xs.rank() != 4) {
      return InvalidArgumentError(
          std::string(kToNhwc ? "NchwToNhwc" : "NhwcToNchw") +
          " takes a tensor of rank 4, got " + xs.ToString());
    }
    switch (x.dtype()) {
      case DataType::kFloat32:
        return Move<float>(ctx, x);
      case DataType::kUInt8:
      case DataType::kInt8:
        return Move<uint8_t>(ctx, x);
      default:
        return InvalidArgumentError(
            std::string(kToNhwc ? "NchwToNhwc" : "NhwcToNchw") +
            " takes float32, uint8 or int8, got " + DataTypeName(x.dtype()));
    }
  }

 private:
  // T: the element, or a type of its size (the bytes are copied).
  template <class T>
  Status Move(KernelContext& ctx, const Tensor& x) const {
    const Shape& xs = x.shape();
    const int64_t n = xs.dim(0);
    const int64_t c = kToNhwc ? xs.dim(1) : xs.dim(3);
    const int64_t h = kToNhwc ? xs.dim(2) : xs.dim(1);
    const int64_t w = kToNhwc ? xs.dim(3) : xs.dim(2);
    const int64_t pixels = h * w;
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutputUninitialized(
                                          0, kToNhwc ? Shape({n, h, w, c})
                                                     : Shape({n, c, h, w})));
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(y->raw_data());
    switch (c) {  // An image's 1 to 4 channels, known when compiled.
      case 1:
        return MovePixelBlocks<T, 1>(ctx, px, py, n, c, pixels);
      case 2:
        return MovePixelBlocks<T, 2>(ctx, px, py, n, c, pixels);
      case 3:
        return MovePixelBlocks<T, 3>(ctx, px, py, n, c, pixels);
      case 4:
        return MovePixelBlocks<T, 4>(ctx, px, py, n, c, pixels);
      default:
        return MovePixelBlocks<T, 0>(ctx, px, py, n, c, pixels);
    }
  }

  // The move in blocks of pixels of one image, split over the pool.
  // kC = 0: the c channels one at a time over blocks of 64 pixels, whose
  // channel-last rows stay in L1; bytes in 16 x 16 tiles (TransposeByteTile)
  // where whole ones fit (64 channels of uint8 at 112 x 112, batch 8, back
  // to NCHW: 4.3 -> 0.66 ms, one Zen 5 core).
  // kC > 0: kC channels known when compiled, moved pixel by pixel, a pixel's
  // kC elements one group the compiler interleaves with shuffles, where the
  // loop over channels stored one element every kC (the [8, 3, 224, 224]
  // image of an int8 ResNet-18 at batch 8: 905 -> 465 us, one Zen 4 core).
  template <class T, int kC>
  Status MovePixelBlocks(KernelContext& ctx, const T* px, T* py, int64_t n,
                         int64_t c, int64_t pixels) const {
    const int64_t channels = kC > 0 ? kC : c;
    const int64_t block = kC > 0 ? 4096 : 64;
    // The split's grain only: bytes in tiles move at about the few-channel
    // rate (6.4 MB in 0.66 ms, one Zen 5 core).
    const double ns_per_element = kC > 0 || sizeof(T) == 1 ? 0.1 : 0.5;
    const int64_t blocks = (pixels + block - 1) / block;
    ctx.ParallelFor(
        n * blocks, static_cast<double>(block * channels) * ns_per_element,
        [&](int64_t begin, int64_t end) {
          for (int64_t j = begin; j < end; ++j) {
            const int64_t image = j / blocks;
            const int64_t p0 = j % blocks * block;
            const int64_t p1 = std::min(pixels, p0 + block);
            const T* in = px + image * pixels * channels;
            T* out = py + image * pixels * channels;
            // Channel ch of pixel p, in whichever direction.
            auto move = [&](int64_t p, int64_t ch) {
              if constexpr (kToNhwc) {
                out[p * channels + ch] = in[ch * pixels + p];
              } else {
                out[ch * pixels + p] = in[p * channels + ch];
              }
            };
            if constexpr (kC > 0) {
              for (int64_t p = p0; p < p1; ++p) {
                for (int64_t ch = 0; ch < kC; ++ch) move(p, ch);
              }
            } else {
              // Bytes in 16 x 16 tiles where whole ones fit, the rest (and
              // wider elements) one at a time.
              int64_t tiled_channels = 0, tiled_end = p0;
              if constexpr (sizeof(T) == 1) {
                tiled_channels = channels / kByteTile * kByteTile;
                tiled_end = p0 + (p1 - p0) / kByteTile * kByteTile;
                MoveByteTiles(in, out, channels, pixels, p0, tiled_end,
                              tiled_channels);
              }
              for (int64_t ch = 0; ch < channels; ++ch) {
                const int64_t from = ch < tiled_channels ? tiled_end : p0;
                for (int64_t p = from; p < p1; ++p) move(p, ch);
              }
            }
          }
        });
    return Status::OK();
  }

  // Pixels [p0, p1) x channels [0, tiled_channels) of one image's bytes,
  // moved a tile at a time. REQUIRES: p1 - p0 and tiled_channels are
  // multiples of kByteTile.
  static void MoveByteTiles(const uint8_t* from, uint8_t* to, int64_t channels,
                            int64_t pixels, int64_t p0, int64_t p1,
                            int64_t tiled_channels) {
    for (int64_t ch = 0; ch < tiled_channels; ch += kByteTile) {
      for (int64_t p = p0; p < p1; p += kByteTile) {
        if constexpr (kToNhwc) {  // [C][P] rows of pixels -> [P][C].
          TransposeByteTile(from + ch * pixels + p, pixels,
                            to + p * channels + ch, channels);
        } else {  // [P][C] rows of channels -> [C][P].
          TransposeByteTile(from + p * channels + ch, channels,
                            to + ch * pixels + p, pixels);
        }
      }
    }
  }
};

template <bool kToNhwc>
Status InferLayoutShape(InferenceContext& ctx) {
  const PartialShape& x = ctx.input_shape(0);
  if (!x.IsFullyDefined() || x.rank() != 4) return Status::OK();
  ctx.set_output(
      0, PartialShape(kToNhwc ? std::vector<int64_t>{x.dim(0), x.dim(2),
                                                     x.dim(3), x.dim(1)}
                              : std::vector<int64_t>{x.dim(0), x.dim(3),
                                                     x.dim(1), x.dim(2)}));
  return Status::OK();
}

// The dtypes the layout moves and NhwcMaxPool take: float32, and the
// quantized tensors between NhwcQLinearConvs.
const std::vector<DataType> kLayoutTypes = {DataType::kFloat32,
                                            DataType::kUInt8, DataType::kInt8};

// Registers an op of one input X and one output Y of a dtype in `types`.
template <class ShapeFunction>
void RegisterOneInOp(OpRegistry& registry, const char* name,
                     const std::vector<DataType>& types, ShapeFunction shape_fn,
                     KernelFactory factory) {
  OpDefBuilder b(name);
  b.Input(ArgDef::Typed("X", "T"))
      .Output(ArgDef::Typed("Y", "T"))
      .Attr("T", AttrType::kType, std::nullopt, types)
      .SetShapeFn(shape_fn);
  CheckRegistered(registry.RegisterOp(b.Build()));
  CheckRegistered(registry.RegisterKernel(name, std::move(factory)));
}

}  // namespace

bool NhwcConvWinogradAvailable() {
  static const bool available = [] {
    return KernelSwitchOr(KernelSwitch::kConvWinograd, DnnlHasAvx512Core());
  }();
  return available;
}

bool NhwcConvAvailable() {
  static const bool available = [] {
    return KernelSwitchOr(KernelSwitch::kNhwcConv,
                          DnnlHasAvx512Core() || DnnlHasAvx2());
  }();
  return available;
}

bool NhwcConvOnlyWithDepthwise() {
  // The CPU's rule only: WEFT_NHWC_CONV=1 takes every graph.
  return NhwcConvAvailable() && !DnnlHasAvx512Core() &&
         !KernelSwitchSetting(KernelSwitch::kNhwcConv).has_value();
}

bool NhwcConvSupported(const NhwcConvSpec& spec) {
  const std::array<int64_t, 2> out = ConvOutput(spec);
  if (spec.group < 1 || spec.x[1] != spec.w[1] * spec.group ||
      spec.w[0] % spec.group != 0 || out[0] < 1 || out[1] < 1) {
    return false;
  }
  try {
    bool supported = true;
    ConvPlan plan = BuildPlan(spec, /*has_bias=*/true, PlanKind{}, &supported);
    return supported && !plan.primitives.empty();
  } catch (const dnnl::error&) {
    return false;
  }
}

bool NhwcConvRunsWinograd(const NhwcConvSpec& spec) {
  try {
    return BuildKernelPlan(spec, /*has_bias=*/true, /*bf16=*/false).blocked;
  } catch (const dnnl::error&) {
    return false;
  }
}

// The nhwc-layout pass's question for Conv and FusedConv
// (OpRegistry::FindChannelsLastConv): NhwcConv's attributes for `node`,
// where NhwcConv runs it with an optimised oneDNN kernel.
std::optional<AttrMap> ChannelsLastConvAttrs(const NodeDef& node,
                                             const Shape& x, const Shape& w) {
  if (x.rank() != 4 || w.rank() != 4) return std::nullopt;
  const auto attr_or = [&node](const char* name, auto fallback) {
    auto found = FindAttr<decltype(fallback)>(node.attrs, name);
    return found.ok() ? **found : fallback;
  };
  auto activation = ActivationFromAttrs(node.attrs);
  if (!activation.ok()) return std::nullopt;
  NhwcConvSpec spec;
  for (int d = 0; d < 4; ++d) {
    spec.x[d] = x.dim(d);
    spec.w[d] = w.dim(d);
  }
  spec.group = attr_or("group", int64_t{1});
  spec.residual = node.op == "FusedConv" && node.inputs.size() > 3;
  spec.activation = *activation;
  WindowAttrs window_attrs;
  window_attrs.kernel = attr_or("kernel_shape", std::vector<int64_t>{});
  window_attrs.strides = attr_or("strides", std::vector<int64_t>{});
  window_attrs.dilations = attr_or("dilations", std::vector<int64_t>{});
  window_attrs.pads = attr_or("pads", std::vector<int64_t>{});
  window_attrs.auto_pad = attr_or("auto_pad", std::string("NOTSET"));
  window_attrs.ceil_mode = attr_or("ceil_mode", int64_t{0}) != 0;
  auto window = ForwardWindow(window_attrs, {spec.x[2], spec.x[3]},
                              {spec.w[2], spec.w[3]});
  if (!window.ok()) return std::nullopt;
  for (int d = 0; d < 2; ++d) {
    spec.stride[d] = window->stride[d];
    spec.dilation[d] = window->dilation[d];
    spec.pads[d] = window->pad_begin[d];
    spec.pads[2 + d] = window->pad_end[d];
  }
  if (!NhwcConvSupported(spec)) return std::nullopt;
  AttrMap attrs;
  attrs["kernel_shape"] = std::vector<int64_t>{spec.w[2], spec.w[3]};
  attrs["strides"] = std::vector<int64_t>{spec.stride[0], spec.stride[1]};
  attrs["dilations"] = std::vector<int64_t>{spec.dilation[0], spec.dilation[1]};
  attrs["pads"] = std::vector<int64_t>(spec.pads.begin(), spec.pads.end());
  attrs["group"] = spec.group;
  for (const char* name : {"activation", "activation_params"}) {
    auto it = node.attrs.find(name);
    if (it != node.attrs.end()) attrs[name] = it->second;
  }
  return attrs;
}

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"NchwToNhwc",
     "a 4-D tensor from channels-first to channels-last order (made by the "
     "nhwc-layout pass)"},
    {"NhwcConv",
     "2-D Conv + bias + residual Z + activation on channels-last tensors, "
     "through oneDNN (made by the nhwc-layout pass)"},
    {"NhwcGlobalAveragePool",
     "GlobalAveragePool of a channels-last tensor, [N, C, 1, 1] out (made by "
     "the nhwc-layout pass)"},
    {"NhwcMaxPool",
     "2-D MaxPool of a channels-last tensor (made by the nhwc-layout pass)"},
    {"NhwcToNchw",
     "a 4-D tensor from channels-last to channels-first order (made by the "
     "nhwc-layout pass)"},
};

}  // namespace

void RegisterNhwcOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  if (NhwcConvAvailable()) {
    registry.SetChannelsLastConv("Conv", ChannelsLastConvAttrs);
    registry.SetChannelsLastConv("FusedConv", ChannelsLastConvAttrs);
    registry.SetChannelsLastOnlyWithDepthwise(NhwcConvOnlyWithDepthwise());
  }
  {
    // X [N, H, W, C], W [K, C / group, kh, kw] (a constant), B [K], then Z
    // (the output's shape) when given; Y = activation(conv + B + Z).
    OpDefBuilder b("NhwcConv");
    b.Input(ArgDef::Typed("X", "T"))
        .Input(ArgDef::Typed("W", "T"))
        .Input(ArgDef::AnyList("B"))
        .Output(ArgDef::Typed("Y", "T"))
        .Attr("T", AttrType::kType, std::nullopt, {DataType::kFloat32})
        .Attr("group", AttrType::kInt, int64_t{1})
        .Attr("activation", AttrType::kString, std::string())
        .Attr("activation_params", AttrType::kListFloat, std::vector<double>{});
    CheckRegistered(registry.RegisterOp(
        WindowAttrsOn(b).SetShapeFn(InferNhwcConvShape).Build()));
    CheckRegistered(registry.RegisterKernel(
        "NhwcConv", KernelFactoryFor<NhwcConvKernel>()));
  }
  {
    OpDefBuilder b("NhwcMaxPool");
    b.Input(ArgDef::Typed("X", "T"))
        .Output(ArgDef::Typed("Y", "T"))
        .Attr("T", AttrType::kType, std::nullopt, kLayoutTypes)
        .Attr("ceil_mode", AttrType::kInt, int64_t{0});
    CheckRegistered(registry.RegisterOp(
        WindowAttrsOn(b).SetShapeFn(InferNhwcMaxPoolShape).Build()));
    CheckRegistered(registry.RegisterKernel(
        "NhwcMaxPool", KernelFactoryFor<NhwcMaxPoolKernel>()));
  }
  RegisterOneInOp(registry, "NchwToNhwc", kLayoutTypes, InferLayoutShape<true>,
                  KernelFactoryFor<LayoutKernel<true>>());
  RegisterOneInOp(registry, "NhwcToNchw", kLayoutTypes, InferLayoutShape<false>,
                  KernelFactoryFor<LayoutKernel<false>>());
  RegisterOneInOp(registry, "NhwcGlobalAveragePool", {DataType::kFloat32},
                  InferNhwcGlobalAveragePoolShape,
                  KernelFactoryFor<NhwcGlobalAveragePoolKernel>());
}

}  // namespace weft::internal
