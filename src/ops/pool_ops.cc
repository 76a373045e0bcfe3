// Pooling on NC(D)HW tensors with ONNX semantics: MaxPool (with Indices),
// AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool. Each
// output element is computed by one thread in a fixed order, so results do
// not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/op_registry_impl.h"
#include "kernels/conv_kernels.h"
#include "kernels/int_division.h"
#include "kernels/vector_math.h"
#include "ops/conv_window.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// --- Pools
// -----------------------------------------------------------------------

enum class Pool { kMax, kAverage, kLp };

// LpPool's and GlobalLpPool's p: an error unless >= 1.
Status CheckLpOrder(int64_t p) {
  if (p >= 1) return Status::OK();
  return InvalidArgumentError("p must be >= 1, got " + std::to_string(p));
}

// MaxPool takes every numeric type, average and Lp pooling the floats.
template <Pool kPool>
using PoolDtypes = std::conditional_t<kPool == Pool::kMax, AllNumericDtypes,
                                      FloatDtypesWithHalf>;
// GlobalMaxPool the floats and wide signed integers, the others the floats.
template <Pool kPool>
using GlobalPoolDtypes =
    std::conditional_t<kPool == Pool::kMax, NumericDtypesWithHalf,
                       FloatDtypesWithHalf>;

template <Pool kPool>
class PoolKernel : public OpKernel {
 public:
  explicit PoolKernel(const KernelConstruction& c)
      : attrs_(ReadWindowAttrs(c)),
        count_include_pad_(kPool == Pool::kAverage &&
                           c.attr<int64_t>("count_include_pad") != 0),
        column_major_indices_(kPool == Pool::kMax &&
                              c.attr<int64_t>("storage_order") != 0),
        p_(kPool == Pool::kLp ? c.attr<int64_t>("p") : 0) {}

  Status Compute(KernelContext& ctx) const override {
    if (kPool == Pool::kLp) WEFT_RETURN_IF_ERROR(CheckLpOrder(p_));
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> in, SpatialDims(x.shape(), "X"));
    WEFT_ASSIGN_OR_RETURN(Window win, ForwardWindow(attrs_, in, attrs_.kernel));
    const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
    const Shape out_shape = OutShape(n, c, win.out);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, out_shape));
    Tensor* indices = nullptr;
    if (kPool == Pool::kMax && ctx.num_outputs() > 1) {
      if (ctx.output_required(1)) {
        WEFT_ASSIGN_OR_RETURN(indices,
                              ctx.AllocateOutputUninitialized(1, out_shape));
      } else {
        // Nothing reads it and no Run fetches it: an empty tensor stands in
        // (filling one of Y's size with zeros cost SqueezeNet a tenth of its
        // time), and Y alone is computed.
        WEFT_RETURN_IF_ERROR(
            ctx.AllocateOutputUninitialized(1, Shape{0}).status());
      }
    }
    return DispatchAmong<PoolDtypes<kPool>>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      Run<T>(ctx, x, y, indices, win, n * c);
      return Status::OK();
    });
  }

 private:
  // MaxPoolLanes2D over blocks of kDepthwiseLanes consecutive planes (of
  // any images: planes are independent).
  static void RunMaxPoolLanes(KernelContext& ctx, const Conv2DGeometry& geo,
                              const float* px, float* py, int64_t planes) {
    const int64_t blocks = CeilDiv(planes, kDepthwiseLanes);
    ctx.ParallelFor(
        blocks,
        static_cast<double>(geo.OutSize() * geo.Taps() + 4 * geo.InSize()),
        [&](int64_t begin, int64_t end) {
          thread_local std::vector<float> scratch;  // Kept between calls.
          const float* ins[kDepthwiseLanes];
          float* outs[kDepthwiseLanes];
          for (int64_t block = begin; block < end; ++block) {
            const int64_t first = block * kDepthwiseLanes;
            const int64_t lanes = std::min(kDepthwiseLanes, planes - first);
            for (int64_t c = 0; c < lanes; ++c) {
              ins[c] = px + (first + c) * geo.InSize();
              outs[c] = py + (first + c) * geo.OutSize();
            }
            MaxPoolLanes2D(geo, ins, lanes, outs, scratch);
          }
        });
  }

  template <class T>
  void Run(KernelContext& ctx, const Tensor& x, Tensor* y, Tensor* indices,
           const Window& win, int64_t planes) const {
    const int64_t out_size = win.OutSize(), in_size = win.InSize();
    const T* px = x.data<T>();
    T* py = y->data<T>();
    if constexpr (kPool == Pool::kMax &&
                  (std::is_floating_point_v<T> || std::is_same_v<T, uint8_t> ||
                   std::is_same_v<T, int8_t>)) {
      // Plane by plane, vectorised; windows wider than kMaxPoolTaps take
      // the general loop below.
      if (win.rank == 2 && indices == nullptr &&
          win.kernel[0] <= kMaxPoolTaps && win.kernel[1] <= kMaxPoolTaps) {
        const Conv2DGeometry geo = Geometry2D(win);
        if constexpr (std::is_same_v<T, float>) {
          if (MaxPoolRunsInLanes(geo)) {
            RunMaxPoolLanes(ctx, geo, px, py, planes);
            return;
          }
        }
        ctx.ParallelFor(planes,
                        static_cast<double>(out_size * win.KernelSize()),
                        [&](int64_t begin, int64_t end) {
                          // Per thread, kept between calls: a fresh one per
                          // block was allocated and zeroed each time.
                          thread_local std::vector<T> line;
                          for (int64_t plane = begin; plane < end; ++plane) {
                            MaxPoolPlane2D<T>(geo, px + plane * in_size,
                                              py + plane * out_size, line);
                          }
                        });
        return;
      }
    }
    int64_t* pi = indices ? indices->data<int64_t>() : nullptr;
    ctx.ParallelFor(
        planes * out_size, static_cast<double>(win.KernelSize()),
        [&](int64_t begin, int64_t end) {
          for (int64_t idx = begin; idx < end; ++idx) {
            const int64_t plane = idx / out_size, o = idx % out_size;
            const T* src = px + plane * in_size;
            if constexpr (kPool == Pool::kMax) {
              T best = MaxPoolFloor<T>();
              int64_t best_at = -1;
              ForEachTap(win, o, [&](int64_t offset, int64_t) {
                if (offset >= 0 && (best_at < 0 || src[offset] > best)) {
                  best = src[offset];
                  best_at = offset;
                }
              });
              py[idx] = best;
              if (pi != nullptr) {
                pi[idx] = plane * in_size + IndexInOrder(win, best_at);
              }
            } else if constexpr (kPool == Pool::kLp) {
              // Padding adds |0|^p = 0: only the taps inside count.
              double sum = 0;
              ForEachTap(win, o, [&](int64_t offset, int64_t) {
                if (offset >= 0) {
                  sum += LpPower(static_cast<double>(src[offset]), p_);
                }
              });
              py[idx] = static_cast<T>(LpRoot(sum, p_));
            } else {
              double sum = 0;
              int64_t count = 0;
              ForEachTap(win, o, [&](int64_t offset, int64_t) {
                if (offset >= 0) {
                  sum += static_cast<double>(src[offset]);
                  ++count;
                }
              });
              if (count_include_pad_) count = PaddedCount(win, o);
              py[idx] = static_cast<T>(count == 0 ? 0.0 : sum / count);
            }
          }
        });
  }

  // MaxPool's index of an input offset: row-major, or column-major over the
  // spatial dims when storage_order = 1.
  int64_t IndexInOrder(const Window& win, int64_t offset) const {
    if (!column_major_indices_ || offset < 0) return offset;
    int64_t coord[3], rest = offset;
    for (int d = win.rank - 1; d >= 0; --d) {
      coord[d] = rest % win.in[d];
      rest /= win.in[d];
    }
    int64_t out = 0;
    for (int d = win.rank - 1; d >= 0; --d) out = out * win.in[d] + coord[d];
    return out;
  }

  // The window's size within the padded input (count_include_pad = 1): taps
  // past the end padding (ceil_mode) do not count.
  static int64_t PaddedCount(const Window& win, int64_t o) {
    int64_t count = 1, rest = o;
    for (int d = win.rank - 1; d >= 0; --d) {
      const int64_t start = (rest % win.out[d]) * win.stride[d];
      rest /= win.out[d];
      const int64_t limit = win.in[d] + win.pad_begin[d] + win.pad_end[d];
      int64_t taps = 0;
      for (int64_t k = 0; k < win.kernel[d]; ++k) {
        if (start + k * win.dilation[d] < limit) ++taps;
      }
      count *= taps;
    }
    return count;
  }

  const WindowAttrs attrs_;
  const bool count_include_pad_;
  const bool column_major_indices_;
  const int64_t p_;  // LpPool's.
};

// The sum of n values in double: element i goes to partial sum i % 8,
// and the eight are added pairwise at the end, a fixed order for a given n.
// One running sum was a chain of dependent additions (4 cycles each, 105 us
// for SqueezeNet's 1000 planes of 13 x 13); eight independent ones fill a
// vector.
template <class T>
double SumInDouble(const T* x, int64_t n) {
  constexpr int64_t kPartials = 8;
  double partial[kPartials] = {};
  int64_t i = 0;
  for (; i + kPartials <= n; i += kPartials) {
    for (int64_t j = 0; j < kPartials; ++j) {
      partial[j] += static_cast<double>(x[i + j]);
    }
  }
  for (int64_t j = 0; i + j < n; ++j)
    partial[j] += static_cast<double>(x[i + j]);
  return ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
         ((partial[4] + partial[5]) + (partial[6] + partial[7]));
}

template <Pool kPool>
class GlobalPoolKernel : public OpKernel {
 public:
  explicit GlobalPoolKernel(const KernelConstruction& c)
      : p_(kPool == Pool::kLp ? c.attr<int64_t>("p") : 0) {}

  Status Compute(KernelContext& ctx) const override {
    if (kPool == Pool::kLp) WEFT_RETURN_IF_ERROR(CheckLpOrder(p_));
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> in, SpatialDims(x.shape(), "X"));
    const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
    const int64_t size = Window::Product(in);
    // The norm of no values is 0; their maximum and average are not defined.
    if (kPool != Pool::kLp && size == 0 && n * c > 0) {
      // As ReduceMax and ArgMax over an empty axis: no value to answer.
      return InvalidArgumentError(
          std::string(kPool == Pool::kMax ? "GlobalMaxPool"
                                          : "GlobalAveragePool") +
          " over an empty spatial extent: X has shape " + x.shape().ToString());
    }
    WEFT_ASSIGN_OR_RETURN(
        Tensor * y, ctx.AllocateOutputUninitialized(
                        0, OutShape(n, c, std::vector<int64_t>(in.size(), 1))));
    return DispatchAmong<GlobalPoolDtypes<kPool>>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y->data<T>();
      ctx.ParallelFor(
          n * c, static_cast<double>(size), [&](int64_t b, int64_t e) {
            for (int64_t p = b; p < e; ++p) {
              const T* src = px + p * size;
              if constexpr (kPool == Pool::kMax) {
                // NaN propagates, as in ReduceMax.
                T best = src[0];
                for (int64_t i = 1; i < size; ++i) {
                  best = vmath::MaxPropagatingNaN(best, src[i]);
                }
                py[p] = best;
              } else if constexpr (kPool == Pool::kLp) {
                double sum = 0;
                for (int64_t i = 0; i < size; ++i) {
                  sum += LpPower(static_cast<double>(src[i]), p_);
                }
                py[p] = static_cast<T>(LpRoot(sum, p_));
              } else {
                py[p] = static_cast<T>(SumInDouble(src, size) / size);
              }
            }
          });
      return Status::OK();
    });
  }

 private:
  const int64_t p_;  // GlobalLpPool's.
};

// --- Registration
// -----------------------------------------------------------------

// MaxPool's and AveragePool's output shape (and Indices') when X's is known.
Status InferPoolShape(InferenceContext& ctx) {
  WEFT_RETURN_IF_ERROR(CheckWindowAttrs(ctx));
  const PartialShape& x = ctx.input_shape(0);
  if (!x.IsFullyDefined() || x.rank() < 3) return Status::OK();
  WindowAttrs attrs = InferredWindowAttrs(ctx);
  attrs.ceil_mode = ctx.attr<int64_t>("ceil_mode") != 0;
  std::vector<int64_t> in(x.dims().begin() + 2, x.dims().end());
  auto window = ForwardWindow(attrs, in, attrs.kernel);
  if (!window.ok()) return Status::OK();
  std::vector<int64_t> out = {x.dim(0), x.dim(1)};
  out.insert(out.end(), window->out.begin(), window->out.end());
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    ctx.set_output(i, PartialShape(out));
  }
  return Status::OK();
}

template <class K>
KernelFactory Factory() {
  return KernelFactoryFor<K>();
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"AveragePool", "average over sliding windows (N, C, spatial...)"},
    {"GlobalAveragePool", "average over all spatial positions"},
    {"GlobalLpPool", "p-norm over all spatial positions"},
    {"GlobalMaxPool", "maximum over all spatial positions"},
    {"LpPool", "p-norm over sliding windows (N, C, spatial...)"},
    {"MaxPool", "maximum over sliding windows; optional argmax indices"},
};

}  // namespace

void RegisterPoolOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  {
    OpDefBuilder b("MaxPool");
    b.Input(ArgDef::Typed("X", "T"))
        .Output(ArgDef::Typed("Y", "T"))
        .Output(ArgDef::Fixed("Indices", DataType::kInt64))
        .Attr("T", AttrType::kType, std::nullopt,
              PoolDtypes<Pool::kMax>::Vector())
        .Attr("ceil_mode", AttrType::kInt, int64_t{0})
        .Attr("storage_order", AttrType::kInt, int64_t{0});
    CheckRegistered(registry.RegisterOp(
        WindowAttrsOn(b).SetShapeFn(InferPoolShape).Build()));
    CheckRegistered(
        registry.RegisterKernel("MaxPool", Factory<PoolKernel<Pool::kMax>>()));
  }
  {
    OpDefBuilder b("AveragePool");
    b.Input(ArgDef::Typed("X", "T"))
        .Output(ArgDef::Typed("Y", "T"))
        .Attr("T", AttrType::kType, std::nullopt,
              PoolDtypes<Pool::kAverage>::Vector())
        .Attr("ceil_mode", AttrType::kInt, int64_t{0})
        .Attr("count_include_pad", AttrType::kInt, int64_t{0});
    CheckRegistered(registry.RegisterOp(
        WindowAttrsOn(b).SetShapeFn(InferPoolShape).Build()));
    CheckRegistered(registry.RegisterKernel(
        "AveragePool", Factory<PoolKernel<Pool::kAverage>>()));
  }
  {
    // ONNX's LpPool to opset 17: no ceil_mode or dilations in the file, so
    // their defaults.
    OpDefBuilder b("LpPool");
    b.Input(ArgDef::Typed("X", "T"))
        .Output(ArgDef::Typed("Y", "T"))
        .Attr("T", AttrType::kType, std::nullopt,
              PoolDtypes<Pool::kLp>::Vector())
        .Attr("ceil_mode", AttrType::kInt, int64_t{0})
        .Attr("p", AttrType::kInt, int64_t{2});
    CheckRegistered(registry.RegisterOp(
        WindowAttrsOn(b).SetShapeFn(InferPoolShape).Build()));
    CheckRegistered(
        registry.RegisterKernel("LpPool", Factory<PoolKernel<Pool::kLp>>()));
  }
  for (const char* name :
       {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    const std::string_view op = name;
    const bool max = op == "GlobalMaxPool", lp = op == "GlobalLpPool";
    OpDefBuilder b(name);
    if (lp) b.Attr("p", AttrType::kInt, int64_t{2});
    CheckRegistered(registry.RegisterOp(
        b.Input(ArgDef::Typed("X", "T"))
            .Output(ArgDef::Typed("Y", "T"))
            .Attr("T", AttrType::kType, std::nullopt,
                  max ? GlobalPoolDtypes<Pool::kMax>::Vector()
                      : GlobalPoolDtypes<Pool::kAverage>::Vector())
            .SetShapeFn([](InferenceContext& ctx) -> Status {
              PartialShape in = ctx.input_shape(0);
              if (!in.rank_known()) {
                ctx.set_output(0, in);
                return Status::OK();
              }
              std::vector<int64_t> dims = in.dims();
              for (size_t i = 2; i < dims.size(); ++i) dims[i] = 1;
              ctx.set_output(0, PartialShape(dims));
              return Status::OK();
            })
            .Build()));
    CheckRegistered(registry.RegisterKernel(
        name, max  ? Factory<GlobalPoolKernel<Pool::kMax>>()
              : lp ? Factory<GlobalPoolKernel<Pool::kLp>>()
                   : Factory<GlobalPoolKernel<Pool::kAverage>>()));
  }
}

}  // namespace weft::internal
