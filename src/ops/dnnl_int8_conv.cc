// DnnlInt8Conv (src/ops/dnnl_int8_conv.h).
#include "ops/dnnl_int8_conv.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <string>
#include <utility>

#include "kernels/int_division.h"
#include "ops/dnnl_support.h"

namespace weft::internal {

using dnnl::memory;

namespace {

// Bands an image's output rows are cut into: enough jobs for a few threads
// on one image, each still a whole number of rows.
constexpr int64_t kBandsPerImage = 4;

// Band kinds: a full band, and the last one where it is shorter.
constexpr int kKinds = 2;

using BandHandles = DnnlKindHandles<kKinds>;

}  // namespace

struct DnnlInt8Conv::Plan {
  // The shape it was made for.
  int64_t padded_w = 0, out_h = 0, out_w = 0;
  std::array<int64_t, 2> stride{}, dilation{};
  bool usable = false;               // oneDNN had an exact int8 kernel for it
  int64_t band_rows = 0, bands = 0;  // per image
  int64_t input_rows_per_band = 0;   // padded rows between bands' starts
  std::array<bool, kKinds> present{};
  std::array<dnnl::convolution_forward, kKinds> primitives;
  std::array<memory::desc, kKinds> src, dst, scratch;
  std::array<memory, kKinds> weights;
  int64_t bytes = 0;
  DnnlHandleSets<BandHandles> handle_sets;

  bool Fits(const Window& win, int64_t w) const {
    return padded_w == w && out_h == win.out[0] && out_w == win.out[1] &&
           stride[0] == win.stride[0] && stride[1] == win.stride[1] &&
           dilation[0] == win.dilation[0] && dilation[1] == win.dilation[1];
  }

  std::unique_ptr<BandHandles> MakeHandles() const {
    return BandHandles::Make(present, src, dst, scratch);
  }
};

DnnlInt8Conv::DnnlInt8Conv(Tensor w, int64_t channel_stride)
    : w_(std::move(w)),
      m_(w_.shape().dim(0)),
      c_(w_.shape().dim(1)),
      kh_(w_.shape().dim(2)),
      kw_(w_.shape().dim(3)),
      channel_stride_(channel_stride) {}

std::vector<int8_t> DnnlInt8Conv::PaddedWeights() const {
  const int64_t taps = kh_ * kw_;
  std::vector<int8_t> padded(static_cast<size_t>(m_ * channel_stride_ * taps),
                             0);
  const int8_t* w = w_.data<int8_t>();
  for (int64_t oc = 0; oc < m_; ++oc) {
    for (int64_t ic = 0; ic < c_; ++ic) {
      std::copy_n(w + (oc * c_ + ic) * taps, taps,
                  padded.begin() + (oc * channel_stride_ + ic) * taps);
    }
  }
  return padded;
}

DnnlInt8Conv::~DnnlInt8Conv() = default;

int64_t DnnlInt8Conv::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t total = 0;
  for (const auto& plan : plans_) total += plan->bytes;
  return total;
}

const DnnlInt8Conv::Plan* DnnlInt8Conv::PlanFor(const Window& win,
                                                int64_t padded_w) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& plan : plans_) {
    if (plan->Fits(win, padded_w)) return plan->usable ? plan.get() : nullptr;
  }
  auto plan = std::make_unique<Plan>();
  Plan& p = *plan;
  p.padded_w = padded_w;
  p.out_h = win.out[0];
  p.out_w = win.out[1];
  p.stride = {win.stride[0], win.stride[1]};
  p.dilation = {win.dilation[0], win.dilation[1]};
  p.band_rows = CeilDiv(p.out_h, kBandsPerImage);
  p.bands = CeilDiv(p.out_h, p.band_rows);
  p.input_rows_per_band = p.band_rows * p.stride[0];
  const int64_t last_rows = p.out_h - (p.bands - 1) * p.band_rows;
  bool exact = true;  // oneDNN's kernels sum the bytes exactly
  try {
    OneOpenMpThread one_thread;
    dnnl::stream stream(DnnlCpuEngine());
    std::vector<int8_t> padded_weights = PaddedWeights();
    memory plain(memory::desc({m_, channel_stride_, kh_, kw_},
                              memory::data_type::s8, memory::format_tag::oihw),
                 DnnlCpuEngine(), padded_weights.data());
    for (int kind = 0; kind < kKinds; ++kind) {
      const int64_t rows = kind == 0 ? p.band_rows : last_rows;
      if (kind == 1 && rows == p.band_rows) continue;
      // The band's padded input rows: what its windows cover.
      const int64_t in_rows =
          (rows - 1) * p.stride[0] + (kh_ - 1) * p.dilation[0] + 1;
      const memory::desc src({1, channel_stride_, in_rows, padded_w},
                             memory::data_type::u8, memory::format_tag::nhwc);
      const memory::desc dst({1, m_, rows, p.out_w}, memory::data_type::s32,
                             memory::format_tag::nhwc);
      const memory::desc weights({m_, channel_stride_, kh_, kw_},
                                 memory::data_type::s8,
                                 memory::format_tag::any);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const dnnl::convolution_forward::primitive_desc pd(
          dnnl::convolution_forward::desc(
              dnnl::prop_kind::forward_inference,
              dnnl::algorithm::convolution_direct, src, weights, dst,
              {p.stride[0], p.stride[1]},
              {p.dilation[0] - 1, p.dilation[1] - 1}, {0, 0}, {0, 0}),
          attr, DnnlCpuEngine());
      // Only kernels that sum bytes exactly (VNNI's and AMX's vpdpbusd and
      // tdpbusd): without them oneDNN sums pairs in saturating int16.
      const std::string impl = pd.impl_info_str();
      if (impl.find("amx") == std::string::npos &&
          impl.find("vnni") == std::string::npos) {
        exact = false;
        break;
      }
      p.present[kind] = true;
      p.primitives[kind] = dnnl::convolution_forward(pd);
      p.src[kind] = src;
      p.dst[kind] = dst;
      p.scratch[kind] = pd.scratchpad_desc();
      p.weights[kind] = memory(pd.weights_desc(), DnnlCpuEngine());
      dnnl::reorder(plain, p.weights[kind])
          .execute(stream, plain, p.weights[kind]);
      p.bytes += static_cast<int64_t>(pd.weights_desc().get_size());
    }
    stream.wait();
    p.usable = exact;
  } catch (const dnnl::error&) {
    p.usable = false;  // oneDNN refused the shapes: the direct tiles.
  }
  if (!p.usable) {  // Kept, so that the shape is not tried again; empty.
    p.present = {};
    p.weights = {};
    p.bytes = 0;
  }
  plans_.push_back(std::move(plan));
  return p.usable ? &p : nullptr;
}

bool DnnlInt8Conv::Run(KernelContext& ctx, const Window& win,
                       const uint8_t* padded, int64_t n, int64_t padded_h,
                       int64_t padded_w, SumsFn emit) const {
  if (win.rank != 2) return false;
  const Plan* plan = PlanFor(win, padded_w);
  if (plan == nullptr) return false;
  const Plan& p = *plan;
  const int64_t jobs = n * p.bands;
  // About 0.002 ns per multiply-add on AMX: only the split's grain.
  const double cost = 0.002 * static_cast<double>(p.band_rows * p.out_w * m_ *
                                                  channel_stride_ * kh_ * kw_);
  const int64_t image_bytes = padded_h * padded_w * channel_stride_;
  const int64_t band_bytes = p.input_rows_per_band * padded_w * channel_stride_;
  std::atomic<bool> failed{false};
  ctx.ParallelFor(jobs, cost, [&](int64_t begin, int64_t end) {
    OneOpenMpThread one_thread;
    const DnnlHandleSets<BandHandles>::Lease handles(
        p.handle_sets, [&p] { return p.MakeHandles(); });
    thread_local std::vector<int32_t> sums;
    sums.resize(static_cast<size_t>(p.band_rows * p.out_w * m_));
    try {
      for (int64_t job = begin; job < end; ++job) {
        const int64_t image = job / p.bands, band = job % p.bands;
        const int64_t row0 = band * p.band_rows;
        const int64_t rows = std::min(p.band_rows, p.out_h - row0);
        const int kind = rows == p.band_rows ? 0 : 1;
        handles->src[kind].set_data_handle(const_cast<uint8_t*>(
            padded + image * image_bytes + band * band_bytes));
        handles->dst[kind].set_data_handle(sums.data());
        handles->scratch[kind].set_data_handle(
            DnnlThreadScratch(p.scratch[kind].get_size()));
        const std::array<dnnl_exec_arg_t, 4> args{
            {{DNNL_ARG_SRC, handles->src[kind].get()},
             {DNNL_ARG_WEIGHTS, p.weights[kind].get()},
             {DNNL_ARG_DST, handles->dst[kind].get()},
             {DNNL_ARG_SCRATCHPAD, handles->scratch[kind].get()}}};
        DnnlExecute(p.primitives[kind], DnnlThreadStream(), args.data(), 4);
        emit((image * p.out_h + row0) * p.out_w, rows * p.out_w, sums.data());
      }
    } catch (const dnnl::error&) {
      failed.store(true, std::memory_order_relaxed);
    }
  });
  return !failed.load();
}

}  // namespace weft::internal
