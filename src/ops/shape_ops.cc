// A tensor's shape and the ops that move data between tensors of other
// shapes (ONNX names): Shape, Size, Transpose, Concat, Split, Slice, Cast,
// Expand, Fill. Each output element is a copy (or conversion) of one input
// element, so none depends on the thread count.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "framework/float8_convert.h"
#include "framework/op_registry_impl.h"
#include "kernels/transpose_rows.h"
#include "ops/broadcast.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 1);
  for (int i = shape.rank() - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape.dim(i + 1);
  }
  return strides;
}

// Copies one output row of n elements of kSize bytes (0: `size`, known at
// run time only), element j from src + j * stride elements: one memcpy when
// the row is contiguous in the input, else fixed-size copies the compiler
// turns into plain moves (a memcpy call per element ran Split and Transpose
// at 1 GB/s).
template <size_t kSize>
void CopyRow(const char* src, int64_t stride, int64_t n, size_t size,
             char* dst) {
  const size_t esize = kSize != 0 ? kSize : size;
  if (stride == 1 || n == 1) {
    // One element needs no stride: a Slice step past the dim (up to 2^62)
    // times the element size would not fit in int64.
    std::memcpy(dst, src, n * esize);
    return;
  }
  // Signed: a negative stride (a reversed Slice) walks backwards, and an
  // offset computed in size_t would wrap around the address space instead.
  const int64_t step = stride * static_cast<int64_t>(esize);
  for (int64_t j = 0; j < n; ++j) {
    std::memcpy(dst + j * esize, src + j * step, esize);
  }
}

// The row movers for one element size: CopyRow, and TransposeRows where
// the size is one the compiler can move in registers (else null).
struct RowMovers {
  void (*copy_row)(const char*, int64_t, int64_t, size_t, char*);
  void (*transpose_rows)(const char*, int64_t, int64_t, int64_t, char*);
};

RowMovers RowMoversFor(size_t esize) {
  switch (esize) {
    case 1:
      return {CopyRow<1>, TransposeRows<1>};
    case 2:
      return {CopyRow<2>, TransposeRows<2>};
    case 4:
      return {CopyRow<4>, TransposeRows<4>};
    case 8:
      return {CopyRow<8>, TransposeRows<8>};
    default:
      return {CopyRow<0>, nullptr};
  }
}

// Copies out[o] = in[offset(o)] for every output element, where offset maps
// an output coordinate through per-dimension input strides and starts.
// Where the output's last two dims swap the input's contiguous one with
// another (a transpose of the last two axes, NCHW -> NHWC), by tiles.
void GatherStrided(KernelContext& ctx, const Tensor& in, Tensor* out,
                   const std::vector<int64_t>& in_strides,  // per out dim
                   int64_t in_start) {
  const size_t esize = DataTypeSize(in.dtype());
  const RowMovers movers = RowMoversFor(esize);
  const auto* src = static_cast<const char*>(in.raw_data());
  auto* dst = static_cast<char*>(out->raw_data());
  const Shape& shape = out->shape();
  const int rank = shape.rank();
  const int64_t inner = rank == 0 ? 1 : shape.dim(rank - 1);
  const int64_t rows = inner == 0 ? 0 : out->NumElements() / inner;
  const int64_t inner_stride = rank == 0 ? 0 : in_strides[rank - 1];
  if (rank >= 2 && movers.transpose_rows != nullptr && inner_stride != 1 &&
      in_strides[rank - 2] == 1 && inner >= kTransposeTile &&
      shape.dim(rank - 2) >= kTransposeTile) {
    // Tasks of kTransposeTile output rows within one matrix of the output.
    const int64_t height = shape.dim(rank - 2);
    const int64_t blocks = (height + kTransposeTile - 1) / kTransposeTile;
    const int64_t matrices = rows / height;
    ctx.ParallelFor(
        matrices * blocks, static_cast<double>(kTransposeTile * inner),
        [&](int64_t begin, int64_t end) {
          for (int64_t t = begin; t < end; ++t) {
            int64_t rest = t / blocks, offset = in_start;
            for (int d = rank - 3; d >= 0; --d) {
              offset += (rest % shape.dim(d)) * in_strides[d];
              rest /= shape.dim(d);
            }
            const int64_t a0 = (t % blocks) * kTransposeTile;
            const int64_t out_row = (t / blocks) * height + a0;
            movers.transpose_rows(src + (offset + a0) * esize, inner_stride,
                                  std::min(kTransposeTile, height - a0), inner,
                                  dst + out_row * inner * esize);
          }
        });
    return;
  }
  ctx.ParallelFor(rows, static_cast<double>(inner),
                  [&](int64_t begin, int64_t end) {
                    for (int64_t r = begin; r < end; ++r) {
                      int64_t rest = r, offset = in_start;
                      for (int d = rank - 2; d >= 0; --d) {
                        offset += (rest % shape.dim(d)) * in_strides[d];
                        rest /= shape.dim(d);
                      }
                      movers.copy_row(src + offset * esize, inner_stride, inner,
                                      esize, dst + r * inner * esize);
                    }
                  });
}

// --- Shape, Size ------------------------------------------------------------

// ONNX Shape (opset 15): dims [start, end) with negative values counting
// from the end and both clamped to [0, rank].
std::pair<int, int> ShapeRange(int64_t start, int64_t end, int rank) {
  auto clamp = [rank](int64_t v) {
    if (v < 0) v += rank;
    return static_cast<int>(std::clamp<int64_t>(v, 0, rank));
  };
  const int b = clamp(start);
  const int e = clamp(end);
  return {b, std::max(b, e)};
}

class ShapeKernel : public OpKernel {
 public:
  explicit ShapeKernel(const KernelConstruction& c)
      : start_(c.attr<int64_t>("start")), end_(c.attr<int64_t>("end")) {}
  Status Compute(KernelContext& ctx) const override {
    const Shape& in = ctx.input(0).shape();
    const auto [b, e] = ShapeRange(start_, end_, in.rank());
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, Shape{e - b}));
    for (int i = b; i < e; ++i) y->data<int64_t>()[i - b] = in.dim(i);
    return Status::OK();
  }

 private:
  const int64_t start_, end_;
};

class SizeKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, Shape{}));
    *y->data<int64_t>() = ctx.input(0).NumElements();
    return Status::OK();
  }
};

// --- Transpose --------------------------------------------------------------

StatusOr<std::vector<int>> ResolvePerm(const std::vector<int64_t>& perm,
                                       int rank) {
  std::vector<int> out(rank);
  if (perm.empty()) {
    for (int i = 0; i < rank; ++i) out[i] = rank - 1 - i;
    return out;
  }
  if (static_cast<int>(perm.size()) != rank) {
    return InvalidArgumentError("perm has " + std::to_string(perm.size()) +
                                " entries for rank " + std::to_string(rank));
  }
  std::vector<char> seen(rank, 0);
  for (int i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]) {
      return InvalidArgumentError("perm is not a permutation of 0.." +
                                  std::to_string(rank - 1));
    }
    seen[perm[i]] = 1;
    out[i] = static_cast<int>(perm[i]);
  }
  return out;
}

class TransposeKernel : public OpKernel {
 public:
  explicit TransposeKernel(const KernelConstruction& c)
      : perm_(c.attr<std::vector<int64_t>>("perm")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::vector<int> perm,
                          ResolvePerm(perm_, x.shape().rank()));
    std::vector<int64_t> dims, strides;
    const std::vector<int64_t> in_strides = Strides(x.shape());
    for (int p : perm) {
      dims.push_back(x.shape().dim(p));
      strides.push_back(in_strides[p]);
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape(dims)));
    GatherStrided(ctx, x, y, strides, 0);
    return Status::OK();
  }

 private:
  const std::vector<int64_t> perm_;
};

// --- Concat and Split -------------------------------------------------------

// ConcatKernel's copies are cut into pieces of at most this many bytes.
constexpr int64_t kConcatPieceBytes = 64 * 1024;

// A copy of a few hundred bytes (a channels-last Concat copies one per
// pixel and input) in 64-byte moves the compiler inlines, the rest by
// memcpy: a call of memcpy costs about as much as moving 256 bytes.
// SqueezeNet's eight Concats 240 -> 210 us at one thread, 346 -> 314 at
// two (fastest of six traced Runs, alternated, Zen 5).
void CopyShortRow(char* to, const char* from, int64_t bytes) {
  constexpr int64_t kMove = 64;
  for (; bytes >= kMove; bytes -= kMove, to += kMove, from += kMove) {
    std::memcpy(to, from, kMove);
  }
  if (bytes > 0) std::memcpy(to, from, static_cast<size_t>(bytes));
}

class ConcatKernel : public OpKernel {
 public:
  explicit ConcatKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")) {}
  Status Compute(KernelContext& ctx) const override {
    const Shape& first = ctx.input(0).shape();
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, first.rank()));
    std::vector<int64_t> dims = first.dims();
    dims[axis] = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Shape& s = ctx.input(i).shape();
      bool ok = s.rank() == first.rank();
      for (int d = 0; ok && d < s.rank(); ++d) {
        ok = d == axis || s.dim(d) == first.dim(d);
      }
      if (!ok) {
        return InvalidArgumentError("input " + std::to_string(i) + " shape " +
                                    s.ToString() + " does not match " +
                                    first.ToString() + " outside axis " +
                                    std::to_string(axis));
      }
      dims[axis] += s.dim(axis);
    }
    // Every byte is copied from an input: no zero fill first (it took
    // SqueezeNet's Concats more time than the copies).
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape(dims)));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= dims[d];
    for (int d = axis + 1; d < first.rank(); ++d) inner *= dims[d];
    const int64_t esize = static_cast<int64_t>(DataTypeSize(y->dtype()));
    // Many short copies (a channels-last Concat: one per pixel and input)
    // split by outer index, without a list of them.
    int64_t outer_bytes = 0;
    bool short_rows = outer > 1;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const int64_t bytes = ctx.input(i).shape().dim(axis) * inner * esize;
      outer_bytes += bytes;
      short_rows = short_rows && bytes <= kConcatPieceBytes;
    }
    if (short_rows) {
      char* out = static_cast<char*>(y->raw_data());
      ctx.ParallelFor(
          outer, static_cast<double>(outer_bytes) / 8,
          [&](int64_t begin, int64_t end) {
            for (int64_t o = begin; o < end; ++o) {
              char* to = out + o * outer_bytes;
              for (int i = 0; i < ctx.num_inputs(); ++i) {
                const Tensor& t = ctx.input(i);
                const int64_t bytes = t.shape().dim(axis) * inner * esize;
                CopyShortRow(to,
                             static_cast<const char*>(t.raw_data()) + o * bytes,
                             bytes);
                to += bytes;
              }
            }
          });
      return Status::OK();
    }
    // The copies, one per (outer index, input), cut into pieces of at most
    // kConcatPieceBytes so that a Concat of one image (outer = 1) splits
    // over the pool too.
    struct Piece {
      const char* from;
      char* to;
      int64_t bytes;
    };
    std::vector<Piece> pieces;
    auto* dst = static_cast<char*>(y->raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        const Tensor& t = ctx.input(i);
        const int64_t bytes = t.shape().dim(axis) * inner * esize;
        const char* from = static_cast<const char*>(t.raw_data()) + o * bytes;
        for (int64_t at = 0; at < bytes; at += kConcatPieceBytes) {
          const int64_t size = std::min(kConcatPieceBytes, bytes - at);
          pieces.push_back({from + at, dst + at, size});
        }
        dst += bytes;
      }
    }
    ctx.ParallelFor(static_cast<int64_t>(pieces.size()),
                    static_cast<double>(kConcatPieceBytes) / 8,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t p = begin; p < end; ++p) {
                        std::memcpy(pieces[p].to, pieces[p].from,
                                    pieces[p].bytes);
                      }
                    });
    return Status::OK();
  }

 private:
  const int64_t axis_;
};

// ONNX 18: explicit `split` sizes, or `num_outputs` chunks of ceil(dim / n)
// with a smaller last one.
StatusOr<std::vector<int64_t>> SplitSizes(int64_t dim,
                                          const std::vector<int64_t>& split,
                                          int64_t num_outputs) {
  if (num_outputs < 1) {
    return InvalidArgumentError("num_outputs must be >= 1");
  }
  if (!split.empty()) {
    if (static_cast<int64_t>(split.size()) != num_outputs) {
      return InvalidArgumentError("split has " + std::to_string(split.size()) +
                                  " entries but num_outputs is " +
                                  std::to_string(num_outputs));
    }
    int64_t total = 0;
    for (int64_t s : split) {
      if (s < 0) return InvalidArgumentError("split sizes must be >= 0");
      if (__builtin_add_overflow(total, s, &total)) {
        return InvalidArgumentError("split sizes add up past 2^63");
      }
    }
    if (total != dim) {
      return InvalidArgumentError("split sizes add up to " +
                                  std::to_string(total) + ", the axis has " +
                                  std::to_string(dim));
    }
    return split;
  }
  const int64_t chunk = (dim + num_outputs - 1) / num_outputs;
  std::vector<int64_t> sizes;
  for (int64_t i = 0, left = dim; i < num_outputs; ++i) {
    sizes.push_back(std::min(chunk, left));
    left -= sizes.back();
  }
  return sizes;
}

class SplitKernel : public OpKernel {
 public:
  explicit SplitKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")),
        split_(c.attr<std::vector<int64_t>>("split")),
        num_outputs_(c.attr<int64_t>("num_outputs")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x.shape().rank()));
    std::vector<int64_t> split = split_;
    if (ctx.num_inputs() > 1) {
      WEFT_ASSIGN_OR_RETURN(split,
                            IntsFromTensor(ctx.input(1), "the split input"));
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                          SplitSizes(x.shape().dim(axis), split, num_outputs_));
    const std::vector<int64_t> strides = Strides(x.shape());
    int64_t start = 0;
    for (int i = 0; i < num_outputs_; ++i) {
      std::vector<int64_t> dims = x.shape().dims();
      dims[axis] = sizes[i];
      WEFT_ASSIGN_OR_RETURN(Tensor * y,
                            ctx.AllocateOutputUninitialized(i, Shape(dims)));
      GatherStrided(ctx, x, y, strides, start * strides[axis]);
      start += sizes[i];
    }
    return Status::OK();
  }

 private:
  const int64_t axis_;
  const std::vector<int64_t> split_;
  const int64_t num_outputs_;
};

// --- Slice ------------------------------------------------------------------

struct SliceDims {
  std::vector<int64_t> dims, starts, steps;
};

// NumPy slicing per axis: negative indices count from the end, bounds clamp.
StatusOr<SliceDims> ResolveSlice(const Shape& in,
                                 const std::vector<int64_t>& starts,
                                 const std::vector<int64_t>& ends,
                                 const std::vector<int64_t>& axes_attr,
                                 const std::vector<int64_t>& steps_attr) {
  const int rank = in.rank();
  if (starts.size() != ends.size()) {
    return InvalidArgumentError("starts and ends differ in length");
  }
  std::vector<int64_t> axes = axes_attr;
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> steps = steps_attr;
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    return InvalidArgumentError(
        "starts, ends, axes and steps differ in length");
  }
  SliceDims out;
  out.dims = in.dims();
  out.starts.assign(rank, 0);
  out.steps.assign(rank, 1);
  std::vector<char> seen(rank, 0);
  for (size_t i = 0; i < starts.size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axes[i], rank));
    if (seen[axis]) return InvalidArgumentError("axis repeated in axes");
    seen[axis] = 1;
    const int64_t dim = in.dim(axis), step = steps[i];
    if (step == 0 || step > (int64_t{1} << 62) || step < -(int64_t{1} << 62)) {
      return InvalidArgumentError("steps must be non-zero and within +-2^62");
    }
    // ONNX: negative indices count from the end; starts clamp to [0, dim]
    // (stepping forward) or [0, dim - 1] (backward), ends to [0, dim] or
    // [-1, dim - 1].
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (dim == 0) {
      s = e = 0;
      out.dims[axis] = 0;
    } else if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      out.dims[axis] = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      out.dims[axis] = s > e ? (s - e - step - 1) / (-step) : 0;
    }
    out.starts[axis] = s;
    out.steps[axis] = step;
  }
  return out;
}

// Slice's starts, ends, axes and steps: from inputs 1-4 when the node has
// them (ONNX opset 10+), else from the attributes. `input(i)` is null when
// input i is not known (at compile time).
struct SliceBounds {
  std::vector<int64_t> starts, ends, axes, steps;
};
constexpr const char* kSliceBoundNames[] = {"starts", "ends", "axes", "steps"};

template <class InputFn>
StatusOr<std::optional<SliceBounds>> SliceBoundsOf(const AttrMap& attrs,
                                                   int num_inputs,
                                                   InputFn input) {
  SliceBounds b;
  std::vector<int64_t>* fields[] = {&b.starts, &b.ends, &b.axes, &b.steps};
  if (num_inputs == 1) {
    for (int i = 0; i < 4; ++i) {
      *fields[i] =
          *attrs.at(kSliceBoundNames[i]).get_if<std::vector<int64_t>>();
    }
    return std::optional<SliceBounds>(std::move(b));
  }
  if (num_inputs < 3 || num_inputs > 5) {
    return InvalidArgumentError(
        "takes data alone or data, starts, ends and optional axes, steps; "
        "got " +
        std::to_string(num_inputs) + " inputs");
  }
  for (int i = 1; i < num_inputs; ++i) {
    const Tensor* t = input(i);
    if (t == nullptr) return std::optional<SliceBounds>();
    WEFT_ASSIGN_OR_RETURN(
        *fields[i - 1],
        IntsFromTensor(
            *t, std::string("the ") + kSliceBoundNames[i - 1] + " input"));
  }
  return std::optional<SliceBounds>(std::move(b));
}

class SliceKernel : public OpKernel {
 public:
  explicit SliceKernel(const KernelConstruction& c) : attrs_(c.attrs()) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::optional<SliceBounds> b,
                          SliceBoundsOf(attrs_, ctx.num_inputs(),
                                        [&](int i) { return &ctx.input(i); }));
    WEFT_ASSIGN_OR_RETURN(
        SliceDims s,
        ResolveSlice(x.shape(), b->starts, b->ends, b->axes, b->steps));
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, Shape(s.dims)));
    if (y->NumElements() == 0) return Status::OK();
    const std::vector<int64_t> in_strides = Strides(x.shape());
    std::vector<int64_t> strides(x.shape().rank());
    int64_t start = 0;
    for (int d = 0; d < x.shape().rank(); ++d) {
      strides[d] = in_strides[d] * s.steps[d];
      start += s.starts[d] * in_strides[d];
    }
    GatherStrided(ctx, x, y, strides, start);
    return Status::OK();
  }

 private:
  const AttrMap attrs_;
};

// --- Cast, Expand, Fill -----------------------------------------------------

// A number as text: floats in the shortest form that reads back to the
// same value (as NumPy's str() of a float32 or float64: "0.039187793",
// "1e-05", "nan", "inf"), integers in decimal, bool as "1" or "0".
template <class T>
std::string ToText(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "1" : "0";
  } else if constexpr (std::is_same_v<T, Float16>) {
    return ToText(static_cast<float>(v));
  } else {
    char buf[64];
    const auto result = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, result.ptr);
  }
}

// Text as a number: the whole string must be one (leading and trailing
// white space allowed); floats take "nan", "inf" and "-INF" as strtod
// does, integers must fit. bool reads as a number, non-zero true.
template <class T>
Status FromText(const std::string& text, T* out) {
  const char* begin = text.c_str();
  const char* end = begin + text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(*begin))) {
    ++begin;
  }
  while (end > begin && std::isspace(static_cast<unsigned char>(end[-1]))) {
    --end;
  }
  const std::string trimmed(begin, end);
  bool ok = !trimmed.empty();
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, Float16> ||
                std::is_floating_point_v<T>) {
    char* stop = nullptr;
    const double v = ok ? std::strtod(trimmed.c_str(), &stop) : 0;
    ok = ok && stop == trimmed.c_str() + trimmed.size();
    if constexpr (std::is_same_v<T, bool>) {
      *out = v != 0;
    } else if constexpr (std::is_same_v<T, float>) {
      // strtof, not a rounded double: the nearest float32 to the text.
      *out = std::strtof(trimmed.c_str(), nullptr);
    } else {
      *out = static_cast<T>(v);
    }
  } else {
    const char* first = trimmed.c_str();
    if (!trimmed.empty() && *first == '+') ++first;
    const auto [ptr, ec] =
        std::from_chars(first, trimmed.c_str() + trimmed.size(), *out);
    ok = ok && ec == std::errc() && ptr == trimmed.c_str() + trimmed.size();
  }
  if (!ok) {
    return InvalidArgumentError("'" + text + "' is not a " +
                                DataTypeName(DataTypeOf<T>()));
  }
  return Status::OK();
}

// Cast to or from strings (ONNX allows each numeric dtype both ways).
Status CastStrings(KernelContext& ctx, const Tensor& x, Tensor* y) {
  if (x.dtype() == DataType::kString && y->dtype() == DataType::kString) {
    std::copy(x.data<std::string>(), x.data<std::string>() + x.NumElements(),
              y->data<std::string>());
    return Status::OK();
  }
  if (y->dtype() == DataType::kString) {
    std::string* out = y->data<std::string>();
    DispatchDtype(x.dtype(), [&](auto zero) {
      using From = decltype(zero);
      const From* in = x.data<From>();
      ctx.ParallelForFixedBlocks(x.NumElements(), 4096,
                                 [&](int64_t b, int64_t e) {
                                   for (int64_t i = b; i < e; ++i) {
                                     out[i] = ToText(in[i]);
                                   }
                                 });
    });
    return Status::OK();
  }
  const std::string* in = x.data<std::string>();
  return DispatchDtype(y->dtype(), [&](auto zero) -> Status {
    using To = decltype(zero);
    To* out = y->data<To>();
    // Serial: a parse error must name the first bad element whatever the
    // thread count.
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      Status s = FromText(in[i], &out[i]);
      if (!s.ok()) {
        return InvalidArgumentError("element " + std::to_string(i) + ": " +
                                    s.message());
      }
    }
    return Status::OK();
  });
}

// Elements of any dtype but bfloat16 as float32 (text parsed).
StatusOr<Tensor> AsFloat32(KernelContext& ctx, const Tensor& x) {
  WEFT_ASSIGN_OR_RETURN(
      Tensor f, Tensor::CreateUninitialized(DataType::kFloat32, x.shape()));
  if (x.dtype() == DataType::kString) {
    WEFT_RETURN_IF_ERROR(CastStrings(ctx, x, &f));
    return f;
  }
  DispatchDtype(x.dtype(), [&](auto zero) {
    using From = decltype(zero);
    const From* in = x.data<From>();
    float* out = f.data<float>();
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      out[i] = ConvertValue<float>(in[i]);
    }
  });
  return f;
}

// Cast to or from bfloat16, through float32 (exact from bfloat16).
Status CastBFloat16(KernelContext& ctx, const Tensor& x, Tensor* y,
                    bool truncate) {
  if (x.dtype() == DataType::kBFloat16 && y->dtype() == DataType::kBFloat16) {
    std::memcpy(y->raw_data(), x.raw_data(), x.size_bytes());
    return Status::OK();
  }
  if (y->dtype() == DataType::kBFloat16) {
    WEFT_ASSIGN_OR_RETURN(Tensor f, AsFloat32(ctx, x));
    const float* in = f.data<float>();
    BFloat16* out = y->data<BFloat16>();
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      out[i] = truncate ? BFloat16::FromFloatTruncated(in[i])
                        : BFloat16::FromFloat(in[i]);
    }
    return Status::OK();
  }
  WEFT_ASSIGN_OR_RETURN(
      Tensor f, Tensor::CreateUninitialized(DataType::kFloat32, x.shape()));
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    f.data<float>()[i] = static_cast<float>(x.data<BFloat16>()[i]);
  }
  if (y->dtype() == DataType::kString) return CastStrings(ctx, f, y);
  DispatchDtype(y->dtype(), [&](auto zero) {
    using To = decltype(zero);
    To* out = y->data<To>();
    for (int64_t i = 0; i < f.NumElements(); ++i) {
      out[i] = ConvertValue<To>(f.data<float>()[i]);
    }
  });
  return Status::OK();
}

// A 4-bit tensor as int8 (from int4) or uint8 (from uint4): the same
// values, which every other cast reads.
StatusOr<Tensor> WidenFourBit(const Tensor& x) {
  const DataType wide_type =
      x.dtype() == DataType::kInt4 ? DataType::kInt8 : DataType::kUInt8;
  WEFT_ASSIGN_OR_RETURN(Tensor wide,
                        Tensor::CreateUninitialized(wide_type, x.shape()));
  std::memcpy(wide.raw_data(), x.raw_data(), x.size_bytes());
  return wide;
}

// y (int4 or uint4) = the low four bits of each int64 of `wide`.
void NarrowToFourBit(const Tensor& wide, Tensor* y) {
  const int64_t* in = wide.data<int64_t>();
  const int64_t n = wide.NumElements();
  if (y->dtype() == DataType::kInt4) {
    for (int64_t i = 0; i < n; ++i) y->data<Int4>()[i] = WrapToInt4(in[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y->data<UInt4>()[i] = WrapToUInt4(in[i]);
  }
}

// A float8 tensor as float32 (exact).
StatusOr<Tensor> Float8ToFloat32(const Tensor& x) {
  WEFT_ASSIGN_OR_RETURN(
      Tensor f, Tensor::CreateUninitialized(DataType::kFloat32, x.shape()));
  const auto* bits = static_cast<const uint8_t*>(x.raw_data());
  float* out = f.data<float>();
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    out[i] = Float8Value(x.dtype(), bits[i]);
  }
  return f;
}

class CastKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    auto k = std::unique_ptr<CastKernel>(new CastKernel());
    const std::string& rounding = c.attr<std::string>("bfloat16_rounding");
    WEFT_RETURN_IF_ERROR(c.status());
    if (rounding != "nearest_even" && rounding != "truncate") {
      return InvalidArgumentError("bfloat16_rounding \"" + rounding +
                                  "\" is not nearest_even or truncate");
    }
    k->truncate_bfloat16_ = rounding == "truncate";
    k->saturate_ = c.attr<int64_t>("saturate") != 0;
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    if (IsFourBitType(x.dtype())) {
      // Through the byte type holding the same values.
      WEFT_ASSIGN_OR_RETURN(Tensor wide, WidenFourBit(x));
      return CastInto(ctx, wide, y);
    }
    if (IsFloat8Type(x.dtype())) {  // Through float32, which holds it exactly.
      WEFT_ASSIGN_OR_RETURN(Tensor f, Float8ToFloat32(x));
      return CastInto(ctx, f, y);
    }
    return CastInto(ctx, x, y);
  }

 private:
  CastKernel() = default;

  // y = x in y's dtype; x is neither 4-bit nor float8.
  Status CastInto(KernelContext& ctx, const Tensor& x, Tensor* y) const {
    if (IsFloat8Type(y->dtype())) {
      // Through float32 (as ONNX Runtime: a float64 is rounded twice).
      const Tensor* f = &x;
      Tensor converted;
      if (x.dtype() != DataType::kFloat32) {
        WEFT_ASSIGN_OR_RETURN(converted, Tensor::CreateUninitialized(
                                             DataType::kFloat32, x.shape()));
        WEFT_RETURN_IF_ERROR(CastInto(ctx, x, &converted));
        f = &converted;
      }
      const float* in = f->data<float>();
      auto* out = static_cast<uint8_t*>(y->raw_data());
      ctx.ParallelForFixedBlocks(
          x.NumElements(), 16384, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
              out[i] = Float8Bits(y->dtype(), in[i], saturate_);
            }
          });
      return Status::OK();
    }
    if (IsFourBitType(y->dtype())) {
      // ONNX's rule for integers out of range, "discard higher bits":
      // through int64, then its low four bits.
      WEFT_ASSIGN_OR_RETURN(Tensor wide, Tensor::CreateUninitialized(
                                             DataType::kInt64, x.shape()));
      WEFT_RETURN_IF_ERROR(CastInto(ctx, x, &wide));
      NarrowToFourBit(wide, y);
      return Status::OK();
    }
    if (x.dtype() == DataType::kBFloat16 || y->dtype() == DataType::kBFloat16) {
      return CastBFloat16(ctx, x, y, truncate_bfloat16_);
    }
    if (x.dtype() == DataType::kString || y->dtype() == DataType::kString) {
      return CastStrings(ctx, x, y);
    }
    DispatchDtype(x.dtype(), [&](auto from_zero) {
      using From = decltype(from_zero);
      DispatchDtype(y->dtype(), [&](auto to_zero) {
        using To = decltype(to_zero);
        const From* px = x.data<From>();
        To* py = y->data<To>();
        ctx.ParallelForFixedBlocks(x.NumElements(), 16384,
                                   [&](int64_t b, int64_t e) {
                                     for (int64_t i = b; i < e; ++i) {
                                       py[i] = ConvertValue<To>(px[i]);
                                     }
                                   });
      });
    });
    return Status::OK();
  }

  bool truncate_bfloat16_ = false;
  // ONNX's `saturate` (19), for float8 outputs: out-of-range values become
  // the largest finite value instead of infinity or NaN.
  bool saturate_ = true;
};

StatusOr<Shape> ShapeFromTensor(const Tensor& t) {
  if (t.dtype() != DataType::kInt64 || t.shape().rank() != 1) {
    return InvalidArgumentError("the shape input must be a 1-D int64 tensor");
  }
  Shape shape(std::vector<int64_t>(t.data<int64_t>(),
                                   t.data<int64_t>() + t.NumElements()));
  if (!shape.IsValid()) {
    return InvalidArgumentError("invalid shape " + shape.ToString());
  }
  return shape;
}

class ExpandKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Shape target, ShapeFromTensor(ctx.input(1)));
    WEFT_ASSIGN_OR_RETURN(PartialShape out, BroadcastShapes(x.shape(), target));
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, out.ToShape()));
    if (y->NumElements() == 0) return Status::OK();
    // Input strides aligned to the output, 0 where broadcast.
    const Shape& os = y->shape();
    const std::vector<int64_t> in_strides = Strides(x.shape());
    std::vector<int64_t> strides(os.rank(), 0);
    for (int i = 0; i < x.shape().rank(); ++i) {
      const int o = os.rank() - x.shape().rank() + i;
      strides[o] = x.shape().dim(i) == 1 ? 0 : in_strides[i];
    }
    GatherStrided(ctx, x, y, strides, 0);
    return Status::OK();
  }
};

class FillKernel : public OpKernel {
 public:
  explicit FillKernel(const KernelConstruction& c)
      : shape_(c.attr<PartialShape>("shape").ToShape()),
        value_(c.attr<double>("value")) {}
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, shape_));
    DispatchDtype(y->dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T v = ConvertValue<T>(value_);
      std::fill(y->data<T>(), y->data<T>() + y->NumElements(), v);
    });
    return Status::OK();
  }

 private:
  const Shape shape_;
  const double value_;
};

const std::vector<DataType> kAllTypes(std::begin(kAllDataTypes),
                                      std::end(kAllDataTypes));
// Cast converts between all of these, strings, bfloat16 and the 4-bit
// integers included.
const std::vector<DataType> kCastTypes = [] {
  std::vector<DataType> types = kAllTypes;
  types.insert(types.end(), std::begin(kListedOnlyTypes),
               std::end(kListedOnlyTypes));
  return types;
}();

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Cast",
     "convert to another dtype (strings too: shortest round-trip text)"},
    {"Concat", "join tensors along an axis"},
    {"Expand", "broadcast to a shape"},
    {"Fill", "a tensor of the `shape` attribute, every element `value`"},
    {"Shape", "the shape of its input as int64 (optionally a slice of it)"},
    {"Size", "the number of elements of its input"},
    {"Slice", "a strided slice along axes"},
    {"Split", "cut into parts along an axis"},
    {"Transpose", "permute axes"},
};

}  // namespace

// One schema block per op, read top to bottom as the family's table:
// split, the family's registration would live in several places.
// NOLINTNEXTLINE(readability-function-size)
void RegisterShapeOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Shape")
          .Input(ArgDef::Typed("data", "T"))
          .Output(ArgDef::Fixed("shape", DataType::kInt64))
          .Attr("T", AttrType::kType, std::nullopt, kMovableTypes)
          .Attr("start", AttrType::kInt, int64_t{0})
          .Attr("end", AttrType::kInt, std::numeric_limits<int64_t>::max())
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const PartialShape& in = ctx.input_shape(0);
            if (!in.rank_known()) {
              ctx.set_output(0, PartialShape({-1}));
              return Status::OK();
            }
            const auto [b, e] = ShapeRange(ctx.attr<int64_t>("start"),
                                           ctx.attr<int64_t>("end"), in.rank());
            ctx.set_output(0, PartialShape({e - b}));
            return Status::OK();
          })
          .SetCostFn([](const InferenceContext&) { return 10.0; })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Shape", KernelFactoryFor<ShapeKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Size")
          .Input(ArgDef::Typed("data", "T"))
          .Output(ArgDef::Fixed("size", DataType::kInt64))
          .Attr("T", AttrType::kType, std::nullopt, kMovableTypes)
          .SetShapeFn(shape_fns::Scalar)
          .SetCostFn([](const InferenceContext&) { return 10.0; })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Size", KernelFactoryFor<SizeKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Transpose")
          .Input(ArgDef::Typed("data", "T"))
          .Output(ArgDef::Typed("transposed", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kMovableTypes)
          .Attr("perm", AttrType::kListInt, std::vector<int64_t>{})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const PartialShape& in = ctx.input_shape(0);
            if (!in.rank_known()) {
              ctx.set_output(0, PartialShape::UnknownRank());
              return Status::OK();
            }
            WEFT_ASSIGN_OR_RETURN(
                std::vector<int> perm,
                ResolvePerm(ctx.attr<std::vector<int64_t>>("perm"), in.rank()));
            std::vector<int64_t> dims;
            for (int p : perm) dims.push_back(in.dim(p));
            ctx.set_output(0, PartialShape(dims));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel("Transpose",
                                          KernelFactoryFor<TransposeKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Concat")
          .Input(ArgDef::Repeated("inputs", "T", "N"))
          .Output(ArgDef::Typed("concat_result", "T"))
          .Attr("T", AttrType::kType)
          .Attr("N", AttrType::kInt)
          .Attr("axis", AttrType::kInt)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            if (ctx.num_inputs() == 0) {
              return InvalidArgumentError("needs at least one input");
            }
            ctx.set_output(0, PartialShape::UnknownRank());
            for (int i = 0; i < ctx.num_inputs(); ++i) {
              if (!ctx.input_shape(i).IsFullyDefined()) return Status::OK();
            }
            const Shape first = ctx.input_shape(0).ToShape();
            WEFT_ASSIGN_OR_RETURN(
                int axis,
                NormalizeAxis(ctx.attr<int64_t>("axis"), first.rank()));
            std::vector<int64_t> dims = first.dims();
            dims[axis] = 0;
            for (int i = 0; i < ctx.num_inputs(); ++i) {
              const Shape s = ctx.input_shape(i).ToShape();
              bool ok = s.rank() == first.rank();
              for (int d = 0; ok && d < s.rank(); ++d) {
                ok = d == axis || s.dim(d) == first.dim(d);
              }
              if (!ok) {
                return InvalidArgumentError(
                    "input " + std::to_string(i) + " shape " + s.ToString() +
                    " does not match " + first.ToString() + " outside axis " +
                    std::to_string(axis));
              }
              dims[axis] += s.dim(axis);
            }
            ctx.set_output(0, PartialShape(dims));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Concat", KernelFactoryFor<ConcatKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Split")
          .Input(ArgDef::Typed("input", "T"))
          .Input(ArgDef::AnyList("split_input"))
          .Output(ArgDef::Repeated("outputs", "T", "num_outputs"))
          .Attr("T", AttrType::kType)
          .Attr("num_outputs", AttrType::kInt)
          .Attr("axis", AttrType::kInt, int64_t{0})
          .Attr("split", AttrType::kListInt, std::vector<int64_t>{})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const PartialShape& in = ctx.input_shape(0);
            const int64_t n = ctx.attr<int64_t>("num_outputs");
            if (!in.IsFullyDefined()) {
              for (int i = 0; i < ctx.num_outputs(); ++i) {
                ctx.set_output(i, PartialShape::UnknownRank());
              }
              return Status::OK();
            }
            WEFT_ASSIGN_OR_RETURN(
                int axis, NormalizeAxis(ctx.attr<int64_t>("axis"), in.rank()));
            std::vector<int64_t> split =
                ctx.attr<std::vector<int64_t>>("split");
            if (ctx.num_inputs() > 1) {
              const Tensor* given = ctx.input_constant(1);
              if (given == nullptr) {  // Known only at Run.
                for (int i = 0; i < ctx.num_outputs(); ++i) {
                  ctx.set_output(i, PartialShape::UnknownRank());
                }
                return Status::OK();
              }
              WEFT_ASSIGN_OR_RETURN(split,
                                    IntsFromTensor(*given, "the split input"));
            }
            WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                                  SplitSizes(in.dim(axis), split, n));
            for (int i = 0; i < ctx.num_outputs(); ++i) {
              std::vector<int64_t> dims = in.dims();
              dims[axis] = sizes[i];
              ctx.set_output(i, PartialShape(dims));
            }
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Split", KernelFactoryFor<SplitKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Slice")
          .Input(ArgDef::Typed("data", "T"))
          .Input(ArgDef::AnyList("bounds"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType)
          .Attr("starts", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("ends", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("axes", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("steps", AttrType::kListInt, std::vector<int64_t>{})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const PartialShape& in = ctx.input_shape(0);
            WEFT_ASSIGN_OR_RETURN(
                std::optional<SliceBounds> b,
                SliceBoundsOf(ctx.attrs(), ctx.num_inputs(),
                              [&](int i) { return ctx.input_constant(i); }));
            if (!in.IsFullyDefined() || !b) {
              ctx.set_output(0, PartialShape::UnknownRank());
              return Status::OK();
            }
            WEFT_ASSIGN_OR_RETURN(SliceDims s,
                                  ResolveSlice(in.ToShape(), b->starts, b->ends,
                                               b->axes, b->steps));
            ctx.set_output(0, PartialShape(s.dims));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Slice", KernelFactoryFor<SliceKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Cast")
          .Input(ArgDef::Typed("input", "T1"))
          .Output(ArgDef::Typed("output", "to"))
          .Attr("T1", AttrType::kType, std::nullopt, kCastTypes)
          .Attr("to", AttrType::kType, std::nullopt, kCastTypes)
          // How a value between two bfloat16 ones rounds.
          .Attr("bfloat16_rounding", AttrType::kString,
                std::string("nearest_even"))
          // ONNX's `saturate`: float8 outputs only.
          .Attr("saturate", AttrType::kInt, int64_t{1})
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel("Cast", &CastKernel::Create));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Expand")
          .Input(ArgDef::Typed("input", "T"))
          .Input(ArgDef::Fixed("shape", DataType::kInt64))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const Tensor* spec = ctx.input_constant(1);
            if (spec == nullptr) {
              ctx.set_output(0, PartialShape::UnknownRank());
              return Status::OK();
            }
            WEFT_ASSIGN_OR_RETURN(Shape target, ShapeFromTensor(*spec));
            WEFT_ASSIGN_OR_RETURN(PartialShape out,
                                  BroadcastShapes(ctx.input_shape(0), target));
            ctx.set_output(0, out);
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Expand", KernelFactoryFor<ExpandKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Fill")
          .Output(ArgDef::Typed("output", "dtype"))
          .Attr("dtype", AttrType::kType, DataType::kFloat32, kAllTypes)
          .Attr("shape", AttrType::kShape)
          .Attr("value", AttrType::kFloat, 0.0)
          .SetShapeFn(ShapeFromShapeAttr)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Fill", KernelFactoryFor<FillKernel>()));
}

}  // namespace weft::internal
