// Spectral ops (ONNX opset 17 names): DFT, STFT and MelWeightMatrix.
//
// Signals are real (last dim 1) or complex (last dim 2, real then
// imaginary). Each transform of one signal runs on one thread in double
// precision: a radix-2 FFT when its length is a power of two, the direct
// O(n^2) sum with exact twiddles (angles reduced modulo the length)
// otherwise. Either way every output element depends on the sizes and the
// input alone, never on the thread count.
#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

using Complex = std::complex<double>;

// The longest transform accepted: a corrupt length should fail, not
// allocate terabytes.
constexpr int64_t kMaxDftLength = int64_t{1} << 28;

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// out[k] = sum_j in[j] e^(-+2 pi i j k / n), k < out.size(), in.size() == n.
// Scaled by 1/n when inverse.
void Transform(std::vector<Complex>& in, bool inverse,
               std::vector<Complex>& out) {
  const int64_t n = static_cast<int64_t>(in.size());
  const double sign = inverse ? 1.0 : -1.0;
  if (IsPowerOfTwo(n) && n > 1) {
    // Iterative radix-2: bit-reversed order, then butterflies.
    for (int64_t i = 1, j = 0; i < n; ++i) {
      int64_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(in[i], in[j]);
    }
    for (int64_t len = 2; len <= n; len <<= 1) {
      const int64_t half = len / 2;
      for (int64_t k = 0; k < half; ++k) {
        const double angle = sign * 2 * std::numbers::pi *
                             static_cast<double>(k) / static_cast<double>(len);
        const Complex w(std::cos(angle), std::sin(angle));
        for (int64_t start = 0; start < n; start += len) {
          const Complex u = in[start + k];
          const Complex v = in[start + k + half] * w;
          in[start + k] = u + v;
          in[start + k + half] = u - v;
        }
      }
    }
    for (size_t k = 0; k < out.size(); ++k) out[k] = in[k];
  } else {
    std::vector<Complex> twiddle(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) {
      const double angle = sign * 2 * std::numbers::pi *
                           static_cast<double>(t) / static_cast<double>(n);
      twiddle[t] = Complex(std::cos(angle), std::sin(angle));
    }
    for (size_t k = 0; k < out.size(); ++k) {
      Complex acc = 0;
      for (int64_t j = 0; j < n; ++j) {
        acc += in[j] * twiddle[(j * static_cast<int64_t>(k)) % n];
      }
      out[k] = acc;
    }
  }
  if (inverse) {
    for (Complex& v : out) v /= static_cast<double>(n);
  }
}

// A one-element integer input (dft_length, frame_step, frame_length).
StatusOr<int64_t> ScalarLength(const Tensor& t, const char* what) {
  if (t.NumElements() != 1) {
    return InvalidArgumentError(std::string(what) + " must be a scalar, got " +
                                t.shape().ToString());
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> v, IntsFromTensor(t, what));
  if (v[0] < 1 || v[0] > kMaxDftLength) {
    return InvalidArgumentError(std::string(what) + " is " +
                                std::to_string(v[0]) +
                                "; it must be in [1, 2^28]");
  }
  return v[0];
}

// DFT (input[, dft_length]): along `axis`, zero-padded or cut to
// dft_length; onesided keeps the first length / 2 + 1 bins of a real
// signal's transform.
class DftKernel : public OpKernel {
 public:
  explicit DftKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")),
        inverse_(c.attr<int64_t>("inverse") != 0),
        onesided_(c.attr<int64_t>("onesided") != 0) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& s = x.shape();
    const int rank = s.rank();
    if (rank < 2 || (s.dim(rank - 1) != 1 && s.dim(rank - 1) != 2)) {
      return InvalidArgumentError(
          "input must end in a dimension of 1 (real) or 2 (complex), got " +
          s.ToString());
    }
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank - 1) {
      return InvalidArgumentError("axis " + std::to_string(axis_) +
                                  " is out of range for shape " + s.ToString() +
                                  " (the last dim is not one)");
    }
    const bool complex_in = s.dim(rank - 1) == 2;
    if (onesided_ && (complex_in || inverse_)) {
      return InvalidArgumentError(
          "onesided needs a real input and a forward transform");
    }
    const int64_t n = s.dim(static_cast<int>(axis));
    int64_t length = n;
    if (ctx.num_inputs() > 1) {
      WEFT_ASSIGN_OR_RETURN(length, ScalarLength(ctx.input(1), "dft_length"));
    }
    if (length < 1) {
      return InvalidArgumentError("the signal along axis " +
                                  std::to_string(axis) + " is empty");
    }
    const int64_t bins = onesided_ ? length / 2 + 1 : length;
    std::vector<int64_t> dims = s.dims();
    dims[axis] = bins;
    dims[rank - 1] = 2;
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape(dims)));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= s.dim(d);
    for (int d = static_cast<int>(axis) + 1; d < rank - 1; ++d) {
      inner *= s.dim(d);
    }
    const int64_t comp = s.dim(rank - 1);
    DispatchFloat32Or64(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* in = x.data<T>();
      T* out = y->data<T>();
      const double cost =
          static_cast<double>(length) *
          static_cast<double>(IsPowerOfTwo(length) ? std::log2(length) + 1
                                                   : static_cast<double>(bins));
      ctx.ParallelFor(outer * inner, cost, [&](int64_t begin, int64_t end) {
        std::vector<Complex> signal(static_cast<size_t>(length));
        std::vector<Complex> spectrum(static_cast<size_t>(bins));
        for (int64_t line = begin; line < end; ++line) {
          const int64_t o = line / inner, i = line % inner;
          for (int64_t j = 0; j < length; ++j) {
            if (j >= n) {
              signal[j] = 0;
              continue;
            }
            const T* e = in + ((o * n + j) * inner + i) * comp;
            signal[j] = Complex(static_cast<double>(e[0]),
                                complex_in ? static_cast<double>(e[1]) : 0.0);
          }
          Transform(signal, inverse_, spectrum);
          for (int64_t k = 0; k < bins; ++k) {
            T* e = out + ((o * bins + k) * inner + i) * 2;
            e[0] = static_cast<T>(spectrum[k].real());
            e[1] = static_cast<T>(spectrum[k].imag());
          }
        }
      });
    });
    return Status::OK();
  }

 private:
  const int64_t axis_;
  const bool inverse_;
  const bool onesided_;
};

// STFT (signal, frame_step[, window][, frame_length]): signal is
// [batch, length, 1 or 2]; each frame of frame_length samples, frame_step
// apart, times the window, transformed. Output [batch, frames, bins, 2].
class StftKernel : public OpKernel {
 public:
  explicit StftKernel(const KernelConstruction& c)
      : onesided_(c.attr<int64_t>("onesided") != 0),
        has_window_(c.attr<bool>("has_window")),
        has_frame_length_(c.attr<bool>("has_frame_length")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& s = x.shape();
    if (s.rank() != 3 || (s.dim(2) != 1 && s.dim(2) != 2)) {
      return InvalidArgumentError(
          "signal must be [batch, length, 1 or 2], got " + s.ToString());
    }
    const bool complex_in = s.dim(2) == 2;
    if (onesided_ && complex_in) {
      return InvalidArgumentError("onesided needs a real signal");
    }
    WEFT_ASSIGN_OR_RETURN(int64_t step,
                          ScalarLength(ctx.input(1), "frame_step"));
    int next = 2;
    const Tensor* window = has_window_ ? &ctx.input(next++) : nullptr;
    int64_t frame = 0;
    if (has_frame_length_) {
      WEFT_ASSIGN_OR_RETURN(frame,
                            ScalarLength(ctx.input(next), "frame_length"));
    }
    if (window != nullptr) {
      if (window->shape().rank() != 1 || window->dtype() != x.dtype()) {
        return InvalidArgumentError(
            "window must be 1-D of the signal's dtype, got " +
            std::string(DataTypeName(window->dtype())) + " " +
            window->shape().ToString());
      }
      if (frame == 0) frame = window->NumElements();
      if (window->NumElements() != frame) {
        return InvalidArgumentError(
            "the window has " + std::to_string(window->NumElements()) +
            " samples, frame_length is " + std::to_string(frame));
      }
    }
    if (frame == 0) {
      return InvalidArgumentError("STFT needs a window or a frame_length");
    }
    const int64_t batch = s.dim(0), length = s.dim(1), comp = s.dim(2);
    if (frame > length) {
      return InvalidArgumentError("frame_length " + std::to_string(frame) +
                                  " is longer than the signal (" +
                                  std::to_string(length) + ")");
    }
    const int64_t frames = (length - frame) / step + 1;
    const int64_t bins = onesided_ ? frame / 2 + 1 : frame;
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutputUninitialized(
                                          0, Shape{batch, frames, bins, 2}));
    DispatchFloat32Or64(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* in = x.data<T>();
      const T* win = window ? window->data<T>() : nullptr;
      T* out = y->data<T>();
      ctx.ParallelFor(
          batch * frames, static_cast<double>(frame * bins),
          [&](int64_t begin, int64_t end) {
            std::vector<Complex> signal(static_cast<size_t>(frame));
            std::vector<Complex> spectrum(static_cast<size_t>(bins));
            for (int64_t bf = begin; bf < end; ++bf) {
              const int64_t b = bf / frames, f = bf % frames;
              for (int64_t j = 0; j < frame; ++j) {
                const T* e = in + (b * length + f * step + j) * comp;
                const double w = win ? static_cast<double>(win[j]) : 1.0;
                signal[j] =
                    Complex(static_cast<double>(e[0]) * w,
                            complex_in ? static_cast<double>(e[1]) * w : 0.0);
              }
              Transform(signal, false, spectrum);
              T* o = out + bf * bins * 2;
              for (int64_t k = 0; k < bins; ++k) {
                o[2 * k] = static_cast<T>(spectrum[k].real());
                o[2 * k + 1] = static_cast<T>(spectrum[k].imag());
              }
            }
          });
    });
    return Status::OK();
  }

 private:
  const bool onesided_;
  const bool has_window_;
  const bool has_frame_length_;
};

// MelWeightMatrix (num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
// upper_edge_hertz): [dft_length / 2 + 1, num_mel_bins] triangular filters,
// equally spaced in mel (2595 log10(1 + f / 700)), as ONNX defines them.
class MelWeightMatrixKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(int64_t mel_bins,
                          ScalarLength(ctx.input(0), "num_mel_bins"));
    WEFT_ASSIGN_OR_RETURN(int64_t dft_length,
                          ScalarLength(ctx.input(1), "dft_length"));
    WEFT_ASSIGN_OR_RETURN(int64_t sample_rate,
                          ScalarLength(ctx.input(2), "sample_rate"));
    WEFT_ASSIGN_OR_RETURN(double lower, ScalarFloat(ctx.input(3), "lower"));
    WEFT_ASSIGN_OR_RETURN(double upper, ScalarFloat(ctx.input(4), "upper"));
    if (!(lower >= 0) || !(upper > lower) || !std::isfinite(upper)) {
      return InvalidArgumentError(
          "the edges must satisfy 0 <= lower_edge_hertz < upper_edge_hertz, "
          "got " +
          std::to_string(lower) + " and " + std::to_string(upper));
    }
    const int64_t spectrogram_bins = dft_length / 2 + 1;
    if (mel_bins > kMaxDftLength / spectrogram_bins) {
      return InvalidArgumentError("num_mel_bins x bins is too large");
    }
    // The filter edges in spectrogram bins, computed as ONNX's reference
    // does: mel in float32, the rest in double, floored.
    const float low_mel =
        2595.0f * std::log10(1.0f + static_cast<float>(lower) / 700.0f);
    const float high_mel =
        2595.0f * std::log10(1.0f + static_cast<float>(upper) / 700.0f);
    const float mel_step =
        (high_mel - low_mel) / static_cast<float>(mel_bins + 2);
    std::vector<int64_t> edge(static_cast<size_t>(mel_bins + 2));
    for (int64_t i = 0; i < mel_bins + 2; ++i) {
      const double mel =
          static_cast<double>(i) * static_cast<double>(mel_step) +
          static_cast<double>(low_mel);
      const double hz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
      const double bin = std::floor(static_cast<double>(dft_length + 1) * hz /
                                    static_cast<double>(sample_rate));
      // Checked before the conversion: a huge edge would not fit int64.
      if (!(bin >= 0 && bin < static_cast<double>(spectrogram_bins))) {
        return InvalidArgumentError(
            "upper_edge_hertz " + std::to_string(upper) +
            " lies beyond the Nyquist frequency of sample_rate " +
            std::to_string(sample_rate));
      }
      edge[i] = static_cast<int64_t>(bin);
    }
    std::vector<double> w(static_cast<size_t>(spectrogram_bins * mel_bins), 0);
    for (int64_t i = 0; i < mel_bins; ++i) {
      const int64_t lo = edge[i], mid = edge[i + 1], hi = edge[i + 2];
      if (mid == lo) {
        w[mid * mel_bins + i] = 1;
      } else {
        for (int64_t j = lo; j <= mid; ++j) {
          w[j * mel_bins + i] =
              static_cast<double>(j - lo) / static_cast<double>(mid - lo);
        }
      }
      for (int64_t j = mid; j < hi; ++j) {
        w[j * mel_bins + i] =
            static_cast<double>(hi - j) / static_cast<double>(hi - mid);
      }
    }
    WEFT_ASSIGN_OR_RETURN(
        Tensor * y,
        ctx.AllocateOutputUninitialized(0, Shape{spectrogram_bins, mel_bins}));
    return DispatchNumeric(y->dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      T* out = y->data<T>();
      for (size_t k = 0; k < w.size(); ++k) out[k] = static_cast<T>(w[k]);
      return Status::OK();
    });
  }

 private:
  static StatusOr<double> ScalarFloat(const Tensor& t, const char* what) {
    if (t.NumElements() != 1) {
      return InvalidArgumentError(std::string(what) +
                                  "_edge_hertz must be a scalar, got " +
                                  t.shape().ToString());
    }
    double v = 0;
    DispatchFloat32Or64(t.dtype(), [&](auto zero) {
      v = static_cast<double>(*t.data<decltype(zero)>());
    });
    return v;
  }
};

Status UnknownShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape::UnknownRank());
  return Status::OK();
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"DFT", "discrete Fourier transform along an axis (real or complex input)"},
    {"MelWeightMatrix", "triangular mel filter bank for a spectrogram"},
    {"STFT", "short-time Fourier transform of windowed frames"},
};

}  // namespace

void RegisterSpectralOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  const std::vector<DataType> kLengths = {DataType::kInt32, DataType::kInt64};
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("DFT")
          .Input(ArgDef::Typed("input", "T"))
          .Input(ArgDef::AnyList("dft_length"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Attr("axis", AttrType::kInt, int64_t{1})
          .Attr("inverse", AttrType::kInt, int64_t{0})
          .Attr("onesided", AttrType::kInt, int64_t{0})
          .SetShapeFn(UnknownShape)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("DFT", KernelFactoryFor<DftKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("STFT")
          .Input(ArgDef::Typed("signal", "T"))
          .Input(ArgDef::Typed("frame_step", "Tint"))
          .Input(ArgDef::AnyList("window_and_frame_length"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kFloatTypes)
          .Attr("Tint", AttrType::kType, std::nullopt, kLengths)
          .Attr("onesided", AttrType::kInt, int64_t{1})
          .Attr("has_window", AttrType::kBool, false)
          .Attr("has_frame_length", AttrType::kBool, false)
          .SetShapeFn(UnknownShape)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("STFT", KernelFactoryFor<StftKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("MelWeightMatrix")
          .Input(ArgDef::Typed("num_mel_bins", "T1"))
          .Input(ArgDef::Typed("dft_length", "T1"))
          .Input(ArgDef::Typed("sample_rate", "T1"))
          .Input(ArgDef::Typed("lower_edge_hertz", "T2"))
          .Input(ArgDef::Typed("upper_edge_hertz", "T2"))
          .Output(ArgDef::Typed("output", "output_datatype"))
          .Attr("T1", AttrType::kType, std::nullopt, kLengths)
          .Attr("T2", AttrType::kType, std::nullopt, kFloatTypes)
          .Attr("output_datatype", AttrType::kType, DataType::kFloat32,
                kNumericTypes)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, PartialShape({-1, -1}));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "MelWeightMatrix", KernelFactoryFor<MelWeightMatrixKernel>()));
}

}  // namespace weft::internal
