// Ops that read or write elements at computed indices (ONNX names): Gather,
// GatherElements, GatherND, ScatterElements, ScatterND, OneHot, CumSum,
// Compress, Hardmax, TopK. Every index is checked against its dimension
// (negative ones count from the end) before any element moves: an index out
// of range is an error naming it, never a read outside the tensor.
//
// Each output element is written by one thread from a fixed order of reads,
// so results do not depend on the thread count (CumSum adds along each line
// in order; ScatterElements / ScatterND apply updates in index order).
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

constexpr double kCopyCostNs = 1.0;

// Normalises every index into [0, dim); errors name the bad one.
Status NormalizeIndices(std::vector<int64_t>& indices, int64_t dim,
                        const char* what) {
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t& v = indices[i];
    if (v < -dim || v >= dim) {
      return InvalidArgumentError(std::string(what) + " " + std::to_string(i) +
                                  " is " + std::to_string(v) +
                                  ", out of range for a dimension of " +
                                  std::to_string(dim));
    }
    if (v < 0) v += dim;
  }
  return Status::OK();
}

// --- Gather
// -------------------------------------------------------------------

// out[outer, idx..., inner] = data[outer, indices[idx...], inner].
class GatherKernel : public OpKernel {
 public:
  explicit GatherKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Shape& ds = data.shape();
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, ds.rank()));
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> idx,
                          IntegerValues(ctx.input(1), "indices"));
    WEFT_RETURN_IF_ERROR(NormalizeIndices(idx, ds.dim(axis), "index"));
    std::vector<int64_t> dims;
    for (int i = 0; i < axis; ++i) dims.push_back(ds.dim(i));
    for (int64_t d : ctx.input(1).shape().dims()) dims.push_back(d);
    for (int i = axis + 1; i < ds.rank(); ++i) dims.push_back(ds.dim(i));
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape(dims)));
    const int64_t outer = DimProduct(ds, 0, axis);
    const int64_t inner = DimProduct(ds, axis + 1, ds.rank());
    const int64_t n = static_cast<int64_t>(idx.size());
    const int64_t axis_dim = ds.dim(axis);
    const size_t row = static_cast<size_t>(inner) * DataTypeSize(data.dtype());
    const auto* src = static_cast<const char*>(data.raw_data());
    auto* dst = static_cast<char*>(y->raw_data());
    ctx.ParallelFor(outer * n, static_cast<double>(inner),
                    [&](int64_t b, int64_t e) {
                      for (int64_t r = b; r < e; ++r) {
                        const int64_t o = r / n, i = r % n;
                        std::memcpy(dst + r * row,
                                    src + (o * axis_dim + idx[i]) * row, row);
                      }
                    });
    return Status::OK();
  }

 private:
  const int64_t axis_;
};

// Coordinates of element `flat` of `shape`.
void Unravel(int64_t flat, const Shape& shape, std::vector<int64_t>& coord) {
  for (int d = shape.rank() - 1; d >= 0; --d) {
    coord[d] = flat % shape.dim(d);
    flat /= shape.dim(d);
  }
}

int64_t Ravel(const std::vector<int64_t>& coord, const Shape& shape) {
  int64_t flat = 0;
  for (int d = 0; d < shape.rank(); ++d) flat = flat * shape.dim(d) + coord[d];
  return flat;
}

// ScatterElements' and ScatterND's `reduction`: how an update lands (max
// and min from ONNX opset 18).
enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

// The reduction named by the attribute; nullopt for an unknown name.
std::optional<Reduction> ReductionByName(const std::string& name) {
  if (name == "none") return Reduction::kNone;
  if (name == "add") return Reduction::kAdd;
  if (name == "mul") return Reduction::kMul;
  if (name == "max") return Reduction::kMax;
  if (name == "min") return Reduction::kMin;
  return std::nullopt;
}

Status UnknownReduction(const std::string& name) {
  return InvalidArgumentError("reduction \"" + name +
                              "\" is not supported (none, add, mul, max, min)");
}

// Integers wrap (as NumPy's); max and min keep a NaN from either side (as
// NumPy's maximum and minimum, and ReduceMax here).
template <class T>
void ApplyReduction(Reduction reduction, T& target, T update) {
  switch (reduction) {
    case Reduction::kNone:
      target = update;
      break;
    case Reduction::kAdd:
      target = WrappingAdd<T>(target, update);
      break;
    case Reduction::kMul:
      target = WrappingMul<T>(target, update);
      break;
    case Reduction::kMax:
      if (target < update || update != update) target = update;
      break;
    case Reduction::kMin:
      if (update < target || update != update) target = update;
      break;
  }
}

// GatherElements: out[i...] = data[i... with axis coordinate indices[i...]];
// ScatterElements: a copy of data with data[that] = updates[i...] (applied
// in index order, `reduction` none / add / mul).
class ElementsKernel : public OpKernel {
 public:
  ElementsKernel(const KernelConstruction& c, bool scatter)
      : axis_(c.attr<int64_t>("axis")),
        scatter_(scatter),
        reduction_name_(scatter ? c.attr<std::string>("reduction") : "none"),
        reduction_(ReductionByName(reduction_name_)) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const Shape& ds = data.shape();
    const Shape& is = indices.shape();
    if (is.rank() != ds.rank()) {
      return InvalidArgumentError(
          "indices have rank " + std::to_string(is.rank()) +
          ", data has rank " + std::to_string(ds.rank()));
    }
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, ds.rank()));
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> idx,
                          IntegerValues(indices, "indices"));
    WEFT_RETURN_IF_ERROR(NormalizeIndices(idx, ds.dim(axis), "index"));
    for (int d = 0; d < ds.rank(); ++d) {
      if (d != axis && is.dim(d) > ds.dim(d)) {
        return InvalidArgumentError("indices shape " + is.ToString() +
                                    " exceeds data shape " + ds.ToString() +
                                    " outside the axis");
      }
    }
    const size_t esize = DataTypeSize(data.dtype());
    const auto* src = static_cast<const char*>(data.raw_data());
    if (!scatter_) {
      WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutputUninitialized(0, is));
      auto* dst = static_cast<char*>(y->raw_data());
      ctx.ParallelFor(y->NumElements(), kCopyCostNs, [&](int64_t b, int64_t e) {
        std::vector<int64_t> coord(is.rank());
        for (int64_t i = b; i < e; ++i) {
          Unravel(i, is, coord);
          coord[axis] = idx[i];
          std::memcpy(dst + i * esize, src + Ravel(coord, ds) * esize, esize);
        }
      });
      return Status::OK();
    }
    const Tensor& updates = ctx.input(2);
    if (!(updates.shape() == is)) {
      return InvalidArgumentError(
          "updates shape " + updates.shape().ToString() +
          " differs from indices shape " + is.ToString());
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutputUninitialized(0, ds));
    std::memcpy(y->raw_data(), data.raw_data(), data.size_bytes());
    if (!reduction_ && updates.NumElements() > 0) {
      return UnknownReduction(reduction_name_);
    }
    std::vector<int64_t> coord(is.rank());
    return DispatchDtype(data.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      T* out = y->data<T>();
      const T* up = updates.data<T>();
      for (int64_t i = 0; i < updates.NumElements(); ++i) {
        Unravel(i, is, coord);
        coord[axis] = idx[i];
        T& target = out[Ravel(coord, ds)];
        ApplyReduction(*reduction_, target, up[i]);
      }
      return Status::OK();
    });
  }

 private:
  const int64_t axis_;
  const bool scatter_;
  const std::string reduction_name_;
  const std::optional<Reduction> reduction_;  // Unset: an unknown name.
};

// GatherND / ScatterND (batch_dims = 0 for ScatterND): the last dimension of
// indices addresses a slice of data.
class NdKernel : public OpKernel {
 public:
  NdKernel(const KernelConstruction& c, bool scatter)
      : batch_dims_(scatter ? 0 : c.attr<int64_t>("batch_dims")),
        scatter_(scatter),
        reduction_name_(scatter ? c.attr<std::string>("reduction") : "none"),
        reduction_(ReductionByName(reduction_name_)) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Shape& ds = data.shape();
    const Shape& is = ctx.input(1).shape();
    const int b = static_cast<int>(batch_dims_);
    if (is.rank() < 1 || b < 0 || b >= is.rank() || b > ds.rank()) {
      return InvalidArgumentError("indices shape " + is.ToString() +
                                  " and batch_dims " + std::to_string(b) +
                                  " do not fit data shape " + ds.ToString());
    }
    const int k = static_cast<int>(is.dim(is.rank() - 1));
    if (k < 0 || b + k > ds.rank()) {
      return InvalidArgumentError("indices address " + std::to_string(k) +
                                  " dims past the batch of data shape " +
                                  ds.ToString());
    }
    for (int i = 0; i < b; ++i) {
      if (is.dim(i) != ds.dim(i)) {
        return InvalidArgumentError("batch dims of indices " + is.ToString() +
                                    " and data " + ds.ToString() + " differ");
      }
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> idx,
                          IntegerValues(ctx.input(1), "indices"));
    for (size_t i = 0; i < idx.size(); ++i) {
      const int64_t dim = ds.dim(b + static_cast<int>(i % k));
      if (idx[i] < -dim || idx[i] >= dim) {
        return InvalidArgumentError("index " + std::to_string(idx[i]) +
                                    " is out of range for a dimension of " +
                                    std::to_string(dim));
      }
      if (idx[i] < 0) idx[i] += dim;
    }
    const int64_t batch = DimProduct(ds, 0, b);
    const int64_t per_batch = DimProduct(is, b, is.rank() - 1);
    const int64_t slice = DimProduct(ds, b + k, ds.rank());
    const int64_t batch_stride = DimProduct(ds, b, ds.rank());
    const size_t esize = DataTypeSize(data.dtype());
    const size_t slice_bytes = static_cast<size_t>(slice) * esize;
    // Offset in data of the slice that tuple t (of batch t / per_batch) names.
    auto offset = [&](int64_t t) {
      int64_t off = 0;
      for (int j = 0; j < k; ++j) off = off * ds.dim(b + j) + idx[t * k + j];
      return (t / per_batch) * batch_stride + off * slice;
    };
    const auto* src = static_cast<const char*>(data.raw_data());
    if (!scatter_) {
      std::vector<int64_t> dims;
      for (int i = 0; i < is.rank() - 1; ++i) dims.push_back(is.dim(i));
      for (int i = b + k; i < ds.rank(); ++i) dims.push_back(ds.dim(i));
      WEFT_ASSIGN_OR_RETURN(Tensor * y,
                            ctx.AllocateOutputUninitialized(0, Shape(dims)));
      auto* dst = static_cast<char*>(y->raw_data());
      ctx.ParallelFor(batch * per_batch, static_cast<double>(slice),
                      [&](int64_t s, int64_t e) {
                        for (int64_t t = s; t < e; ++t) {
                          std::memcpy(dst + t * slice_bytes,
                                      src + offset(t) * esize, slice_bytes);
                        }
                      });
      return Status::OK();
    }
    const Tensor& updates = ctx.input(2);
    if (updates.NumElements() != batch * per_batch * slice) {
      return InvalidArgumentError("updates shape " +
                                  updates.shape().ToString() +
                                  " does not match indices and data");
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutputUninitialized(0, ds));
    std::memcpy(y->raw_data(), data.raw_data(), data.size_bytes());
    if (!reduction_ && updates.NumElements() > 0) {
      return UnknownReduction(reduction_name_);
    }
    return DispatchDtype(data.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      T* out = y->data<T>();
      const T* up = updates.data<T>();
      for (int64_t t = 0; t < batch * per_batch; ++t) {
        T* target = out + offset(t);
        const T* u = up + t * slice;
        for (int64_t j = 0; j < slice; ++j) {
          ApplyReduction(*reduction_, target[j], u[j]);
        }
      }
      return Status::OK();
    });
  }

 private:
  const int64_t batch_dims_;
  const bool scatter_;
  const std::string reduction_name_;
  const std::optional<Reduction> reduction_;  // Unset: an unknown name.
};

// --- OneHot, CumSum, Compress, Hardmax, TopK ---------------------------------

// OneHot(indices, depth, values[off, on]) with a new axis of size depth.
class OneHotKernel : public OpKernel {
 public:
  explicit OneHotKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& indices = ctx.input(0);
    const Tensor& depth_t = ctx.input(1);
    const Tensor& values = ctx.input(2);
    if (depth_t.NumElements() != 1 || values.NumElements() != 2) {
      return InvalidArgumentError(
          "depth must hold one value and values two (off, on)");
    }
    double depth_d = 0;
    DispatchDtype(depth_t.dtype(), [&](auto zero) {
      depth_d = static_cast<double>(*depth_t.data<decltype(zero)>());
    });
    if (!(depth_d >= 1 && depth_d < static_cast<double>(int64_t{1} << 40))) {
      return InvalidArgumentError("depth must be >= 1, got " +
                                  std::to_string(depth_d));
    }
    const int64_t depth = static_cast<int64_t>(depth_d);
    const Shape& is = indices.shape();
    const int rank = is.rank() + 1;
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank) {
      return InvalidArgumentError("axis " + std::to_string(axis_) +
                                  " is out of range for rank " +
                                  std::to_string(rank));
    }
    std::vector<int64_t> dims = is.dims();
    dims.insert(dims.begin() + axis, depth);
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape(dims)));
    std::vector<double> idx(indices.NumElements());
    DispatchDtype(indices.dtype(), [&](auto zero) {
      const auto* p = indices.data<decltype(zero)>();
      for (size_t i = 0; i < idx.size(); ++i)
        idx[i] = static_cast<double>(p[i]);
    });
    const int64_t outer = DimProduct(is, 0, static_cast<int>(axis));
    const int64_t inner = DimProduct(is, static_cast<int>(axis), is.rank());
    DispatchDtype(values.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T off = values.data<T>()[0], on = values.data<T>()[1];
      T* out = y->data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t d = 0; d < depth; ++d) {
          for (int64_t i = 0; i < inner; ++i) {
            double v = idx[o * inner + i];
            if (v < 0) v += static_cast<double>(depth);  // Negative: from end.
            // In range before the conversion: C++ leaves it undefined for
            // a value past int64 (an index of 2^63 - 1 given as float).
            const bool hot = v >= 0 && v < static_cast<double>(depth) &&
                             static_cast<int64_t>(v) == d;
            out[(o * depth + d) * inner + i] = hot ? on : off;
          }
        }
      }
    });
    return Status::OK();
  }

 private:
  const int64_t axis_;
};

// CumSum along the axis input; `exclusive` and `reverse` as in ONNX.
class CumSumKernel : public OpKernel {
 public:
  explicit CumSumKernel(const KernelConstruction& c)
      : exclusive_(c.attr<int64_t>("exclusive") != 0),
        reverse_(c.attr<int64_t>("reverse") != 0) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> axis_v,
                          IntsFromTensor(ctx.input(1), "axis"));
    if (axis_v.size() != 1)
      return InvalidArgumentError("axis must be a scalar");
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_v[0], x.shape().rank()));
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    const AxisLines lines = LinesAlong(x.shape(), axis);
    const int64_t len = lines.len, inner = lines.inner;
    return DispatchAmong<NumericDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y->data<T>();
      ctx.ParallelFor(
          lines.count, static_cast<double>(len), [&](int64_t b, int64_t e) {
            for (int64_t l = b; l < e; ++l) {
              const int64_t base = lines.Base(l);
              T acc = T(0);
              for (int64_t j = 0; j < len; ++j) {
                const int64_t at = base + (reverse_ ? len - 1 - j : j) * inner;
                if (exclusive_) {
                  py[at] = acc;
                  acc = WrappingAdd<T>(acc, px[at]);
                } else {
                  acc = WrappingAdd<T>(acc, px[at]);
                  py[at] = acc;
                }
              }
            }
          });
      return Status::OK();
    });
  }

 private:
  const bool exclusive_, reverse_;
};

// Compress: the slices along `axis` (or of the flattened input when the
// node has no axis) whose condition is true.
class CompressKernel : public OpKernel {
 public:
  explicit CompressKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")),
        has_axis_(c.attr<int64_t>("has_axis") != 0) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    const Tensor& cond = ctx.input(1);
    if (cond.shape().rank() != 1) {
      return InvalidArgumentError("condition must be 1-D, got " +
                                  cond.shape().ToString());
    }
    const Tensor x = has_axis_ ? in : in.WithShape(Shape{in.NumElements()});
    WEFT_ASSIGN_OR_RETURN(
        int axis, NormalizeAxis(has_axis_ ? axis_ : 0, x.shape().rank()));
    const int64_t len = x.shape().dim(axis);
    if (cond.NumElements() > len) {
      return InvalidArgumentError(
          "condition has " + std::to_string(cond.NumElements()) +
          " entries for an axis of " + std::to_string(len));
    }
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < cond.NumElements(); ++i) {
      if (cond.data<bool>()[i]) kept.push_back(i);
    }
    std::vector<int64_t> dims = x.shape().dims();
    dims[axis] = static_cast<int64_t>(kept.size());
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape(dims)));
    const int64_t outer = DimProduct(x.shape(), 0, axis);
    const size_t row =
        static_cast<size_t>(DimProduct(x.shape(), axis + 1, x.shape().rank()) *
                            static_cast<int64_t>(DataTypeSize(x.dtype())));
    const auto* src = static_cast<const char*>(x.raw_data());
    auto* dst = static_cast<char*>(y->raw_data());
    const int64_t n = static_cast<int64_t>(kept.size());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < n; ++j) {
        std::memcpy(dst + (o * n + j) * row, src + (o * len + kept[j]) * row,
                    row);
      }
    }
    return Status::OK();
  }

 private:
  const int64_t axis_;
  const bool has_axis_;
};

// Hardmax: 1 at the first maximum along `axis`, 0 elsewhere (opset 13).
class HardmaxKernel : public OpKernel {
 public:
  explicit HardmaxKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")), coerce_2d_(c.attr<bool>("coerce_2d")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x.shape().rank()));
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    const AxisLines lines = LinesAlong(x.shape(), axis, coerce_2d_);
    const int64_t len = lines.len, inner = lines.inner;
    return DispatchAmong<NumericDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y->data<T>();
      ctx.ParallelFor(lines.count, static_cast<double>(len),
                      [&](int64_t b, int64_t e) {
                        for (int64_t l = b; l < e; ++l) {
                          const int64_t base = lines.Base(l);
                          int64_t best = 0;
                          for (int64_t j = 1; j < len; ++j) {
                            if (px[base + j * inner] > px[base + best * inner])
                              best = j;
                          }
                          py[base + best * inner] = T(1);
                        }
                      });
      return Status::OK();
    });
  }

 private:
  const int64_t axis_;
  const bool coerce_2d_;  // As Softmax's (normalization.cc).
};

// Whether value a (at index p) comes before value c (at index q) in TopK's
// order: larger first when `largest`, else smaller first; equal values by
// index (as ONNX specifies). NaN ranks above every number (numpy's sort,
// torch.topk), NaNs among themselves by index: without that rule the
// comparison is no strict weak order, which std::partial_sort requires.
template <class T>
bool RanksBefore(T a, int64_t p, T c, int64_t q, bool largest) {
  const bool before = largest ? LessNaNLast(c, a) : LessNaNLast(a, c);
  const bool after = largest ? LessNaNLast(a, c) : LessNaNLast(c, a);
  return before || (!after && p < q);
}

// TopK: the k largest (or smallest) along `axis`, sorted when asked; ties
// keep the lower index first (as ONNX specifies).
class TopKKernel : public OpKernel {
 public:
  explicit TopKKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")),
        largest_(c.attr<int64_t>("largest") != 0) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> kv,
                          IntsFromTensor(ctx.input(1), "K"));
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x.shape().rank()));
    const int64_t len = x.shape().dim(axis);
    if (kv.size() != 1 || kv[0] < 0 || kv[0] > len) {
      return InvalidArgumentError("K must be one value in [0, " +
                                  std::to_string(len) + "]");
    }
    const int64_t k = kv[0];
    std::vector<int64_t> dims = x.shape().dims();
    dims[axis] = k;
    WEFT_ASSIGN_OR_RETURN(Tensor * values,
                          ctx.AllocateOutputUninitialized(0, Shape(dims)));
    WEFT_ASSIGN_OR_RETURN(Tensor * indices,
                          ctx.AllocateOutputUninitialized(1, Shape(dims)));
    const int64_t inner = DimProduct(x.shape(), axis + 1, x.shape().rank());
    const int64_t lines = len == 0 ? 0 : x.NumElements() / len;
    return DispatchAmong<NumericDtypesWithHalf>(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* pv = values->data<T>();
      int64_t* pi = indices->data<int64_t>();
      const bool largest = largest_;
      ctx.ParallelFor(
          lines, static_cast<double>(len) * 4, [&](int64_t b, int64_t e) {
            std::vector<int64_t> order(len);
            for (int64_t l = b; l < e; ++l) {
              const int64_t outer = l / inner, in = l % inner;
              const T* line = px + outer * len * inner + in;
              std::iota(order.begin(), order.end(), 0);
              std::partial_sort(order.begin(), order.begin() + k, order.end(),
                                [&](int64_t p, int64_t q) {
                                  return RanksBefore(line[p * inner], p,
                                                     line[q * inner], q,
                                                     largest);
                                });
              for (int64_t j = 0; j < k; ++j) {
                const int64_t at = outer * k * inner + j * inner + in;
                pv[at] = line[order[j] * inner];
                pi[at] = order[j];
              }
            }
          });
      return Status::OK();
    });
  }

 private:
  const int64_t axis_;
  const bool largest_;
};

const std::vector<DataType> kIndexTypes = {DataType::kInt32, DataType::kInt64};

template <class K>
KernelFactory WithFlag(bool flag) {
  return
      [flag](
          const KernelConstruction& c) -> StatusOr<std::unique_ptr<OpKernel>> {
        return std::unique_ptr<OpKernel>(std::make_unique<K>(c, flag));
      };
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Compress", "keep the slices a boolean condition selects"},
    {"CumSum", "cumulative sum along an axis (exclusive, reverse)"},
    {"Gather", "take slices along an axis by index"},
    {"GatherElements", "take elements along an axis by an index tensor"},
    {"GatherND", "take slices by N-d index tuples"},
    {"Hardmax", "one at the largest element along an axis, zero elsewhere"},
    {"OneHot", "one-hot vectors from indices, depth and on/off values"},
    {"ScatterElements", "write updates at indices along an axis"},
    {"ScatterND", "write updates at N-d index tuples"},
    {"TopK", "the k largest or smallest along an axis, with indices"},
};

}  // namespace

// One schema block per op, read top to bottom as the family's table:
// split, the family's registration would live in several places.
// NOLINTNEXTLINE(readability-function-size)
void RegisterIndexOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Gather")
          .Input(ArgDef::Typed("data", "T"))
          .Input(ArgDef::Typed("indices", "Tind"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType)
          .Attr("Tind", AttrType::kType, std::nullopt, kIndexTypes)
          .Attr("axis", AttrType::kInt, int64_t{0})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const PartialShape& d = ctx.input_shape(0);
            const PartialShape& i = ctx.input_shape(1);
            if (!d.rank_known() || !i.rank_known()) {
              ctx.set_output(0, PartialShape::UnknownRank());
              return Status::OK();
            }
            WEFT_ASSIGN_OR_RETURN(
                int axis, NormalizeAxis(ctx.attr<int64_t>("axis"), d.rank()));
            std::vector<int64_t> dims;
            for (int k = 0; k < axis; ++k) dims.push_back(d.dim(k));
            for (int64_t v : i.dims()) dims.push_back(v);
            for (int k = axis + 1; k < d.rank(); ++k) dims.push_back(d.dim(k));
            ctx.set_output(0, PartialShape(std::move(dims)));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Gather", KernelFactoryFor<GatherKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("GatherElements")
          .Input(ArgDef::Typed("data", "T"))
          .Input(ArgDef::Typed("indices", "Tind"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType)
          .Attr("Tind", AttrType::kType, std::nullopt, kIndexTypes)
          .Attr("axis", AttrType::kInt, int64_t{0})
          .Build()));
  CheckRegistered(registry.RegisterKernel("GatherElements",
                                          WithFlag<ElementsKernel>(false)));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("ScatterElements")
          .Input(ArgDef::Typed("data", "T"))
          .Input(ArgDef::Typed("indices", "Tind"))
          .Input(ArgDef::Typed("updates", "T"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType)
          .Attr("Tind", AttrType::kType, std::nullopt, kIndexTypes)
          .Attr("axis", AttrType::kInt, int64_t{0})
          .Attr("reduction", AttrType::kString, std::string("none"))
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel("ScatterElements",
                                          WithFlag<ElementsKernel>(true)));

  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("GatherND")
                              .Input(ArgDef::Typed("data", "T"))
                              .Input(ArgDef::Fixed("indices", DataType::kInt64))
                              .Output(ArgDef::Typed("output", "T"))
                              .Attr("T", AttrType::kType)
                              .Attr("batch_dims", AttrType::kInt, int64_t{0})
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("GatherND", WithFlag<NdKernel>(false)));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("ScatterND")
          .Input(ArgDef::Typed("data", "T"))
          .Input(ArgDef::Fixed("indices", DataType::kInt64))
          .Input(ArgDef::Typed("updates", "T"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType)
          .Attr("reduction", AttrType::kString, std::string("none"))
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("ScatterND", WithFlag<NdKernel>(true)));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("OneHot")
          .Input(ArgDef::Typed("indices", "T1"))
          .Input(ArgDef::Typed("depth", "T2"))
          .Input(ArgDef::Typed("values", "T3"))
          .Output(ArgDef::Typed("output", "T3"))
          .Attr("T1", AttrType::kType, std::nullopt, kNumericTypes)
          .Attr("T2", AttrType::kType, std::nullopt, kNumericTypes)
          .Attr("T3", AttrType::kType)
          .Attr("axis", AttrType::kInt, int64_t{-1})
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("OneHot", KernelFactoryFor<OneHotKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("CumSum")
          .Input(ArgDef::Typed("x", "T"))
          .Input(ArgDef::Typed("axis", "Tind"))
          .Output(ArgDef::Typed("y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kNumericTypesWithHalf)
          .Attr("Tind", AttrType::kType, std::nullopt, kIndexTypes)
          .Attr("exclusive", AttrType::kInt, int64_t{0})
          .Attr("reverse", AttrType::kInt, int64_t{0})
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("CumSum", KernelFactoryFor<CumSumKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Compress")
          .Input(ArgDef::Typed("input", "T"))
          .Input(ArgDef::Fixed("condition", DataType::kBool))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType)
          .Attr("axis", AttrType::kInt, int64_t{0})
          // ONNX tells "no axis" (flatten first) by the attribute's absence;
          // weft's attributes have defaults, so the importer sets this.
          .Attr("has_axis", AttrType::kInt, int64_t{1})
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Compress", KernelFactoryFor<CompressKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Hardmax")
          .Input(ArgDef::Typed("input", "T"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kNumericTypesWithHalf)
          .Attr("axis", AttrType::kInt, int64_t{-1})
          .Attr("coerce_2d", AttrType::kBool, false)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Hardmax", KernelFactoryFor<HardmaxKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("TopK")
          .Input(ArgDef::Typed("X", "T"))
          .Input(ArgDef::Fixed("K", DataType::kInt64))
          .Output(ArgDef::Typed("Values", "T"))
          .Output(ArgDef::Fixed("Indices", DataType::kInt64))
          .Attr("T", AttrType::kType, std::nullopt, kNumericTypesWithHalf)
          .Attr("axis", AttrType::kInt, int64_t{-1})
          .Attr("largest", AttrType::kInt, int64_t{1})
          .Attr("sorted", AttrType::kInt, int64_t{1})
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("TopK", KernelFactoryFor<TopKKernel>()));
}

}  // namespace weft::internal
