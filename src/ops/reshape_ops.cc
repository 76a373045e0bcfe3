// Ops that give a tensor a new shape or rearrange its elements without
// arithmetic (ONNX names): Reshape, Squeeze, Unsqueeze, Flatten,
// ConstantOfShape, Range, Tile, Trilu, EyeLike, DepthToSpace, SpaceToDepth.
// Each output element is a copy of one input element or a value computed
// from its index alone, so none depends on the thread count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// Output elements per unit of ParallelFor work for the copying kernels.
constexpr double kCopyCostNs = 1.0;

std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 1);
  for (int i = shape.rank() - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape.dim(i + 1);
  }
  return strides;
}

// Sets every output to an unknown shape (for inputs known only at Run).
Status AllOutputsUnknown(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    ctx.set_output(i, PartialShape::UnknownRank());
  }
  return Status::OK();
}

// --- Reshape ----------------------------------------------------------------

// ONNX rules: 0 copies the input's dimension (unless allowzero: then it is
// a dimension of size 0), -1 (at most once) is inferred.
StatusOr<Shape> ResolveReshape(const Shape& in, const Tensor& spec,
                               bool allowzero) {
  if (spec.dtype() != DataType::kInt64 || spec.shape().rank() != 1) {
    return InvalidArgumentError("the shape input must be a 1-D int64 tensor");
  }
  std::vector<int64_t> dims(spec.data<int64_t>(),
                            spec.data<int64_t>() + spec.NumElements());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allowzero) {
      if (static_cast<int>(i) >= in.rank()) {
        return InvalidArgumentError("shape entry 0 at " + std::to_string(i) +
                                    " has no input dimension to copy");
      }
      dims[i] = in.dim(static_cast<int>(i));
    }
    if (dims[i] == -1) {
      if (infer >= 0) {
        return InvalidArgumentError("the shape has more than one -1");
      }
      infer = static_cast<int>(i);
      continue;
    }
    if (dims[i] < 0) {
      return InvalidArgumentError("invalid shape entry " +
                                  std::to_string(dims[i]));
    }
    if (dims[i] != 0 && known > std::numeric_limits<int64_t>::max() / dims[i]) {
      return InvalidArgumentError("the shape's size overflows");
    }
    known *= dims[i];
  }
  if (infer >= 0) {
    if (known == 0 || in.NumElements() % known != 0) {
      return InvalidArgumentError(
          "cannot infer -1: " + std::to_string(in.NumElements()) +
          " elements do not divide into " + std::to_string(known));
    }
    dims[infer] = in.NumElements() / known;
    known = in.NumElements();
  }
  if (known != in.NumElements()) {
    return InvalidArgumentError("cannot reshape " + in.ToString() + " (" +
                                std::to_string(in.NumElements()) +
                                " elements) into " + Shape(dims).ToString());
  }
  return Shape(dims);
}

class ReshapeKernel : public OpKernel {
 public:
  explicit ReshapeKernel(const KernelConstruction& c)
      : allowzero_(c.attr<bool>("allowzero")) {}

  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(
        Shape shape,
        ResolveReshape(ctx.input(0).shape(), ctx.input(1), allowzero_));
    return ctx.SetOutput(0, ctx.input(0).WithShape(shape));
  }

 private:
  const bool allowzero_;
};

// --- Squeeze, Unsqueeze, Flatten: new shapes over the same buffer ------------

// The axes of Squeeze / Unsqueeze: input 1 when the node has it (ONNX opset
// 13+), else the attribute. `input` is null when not known yet.
StatusOr<std::optional<std::vector<int64_t>>> AxesOf(
    const std::vector<int64_t>& attr, int num_inputs, const Tensor* input) {
  if (num_inputs > 2) {
    return InvalidArgumentError("takes data and an optional axes input; got " +
                                std::to_string(num_inputs) + " inputs");
  }
  if (num_inputs == 1) return std::optional<std::vector<int64_t>>(attr);
  if (input == nullptr) return std::optional<std::vector<int64_t>>();
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                        IntsFromTensor(*input, "the axes input"));
  return std::optional<std::vector<int64_t>>(std::move(axes));
}

// Each axis normalised against `rank`, none repeated.
StatusOr<std::set<int>> AxisSet(const std::vector<int64_t>& axes, int rank) {
  std::set<int> out;
  for (int64_t a : axes) {
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(a, rank));
    if (!out.insert(axis).second) {
      return InvalidArgumentError("axis " + std::to_string(a) +
                                  " is given twice");
    }
  }
  return out;
}

// Squeeze: removes the listed size-1 dims, or every size-1 dim when none are
// listed. A listed dim that is not 1 is an error naming it.
StatusOr<PartialShape> SqueezedShape(const PartialShape& in,
                                     const std::vector<int64_t>& axes) {
  if (!in.rank_known()) return PartialShape::UnknownRank();
  WEFT_ASSIGN_OR_RETURN(std::set<int> drop, AxisSet(axes, in.rank()));
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    const int64_t d = in.dim(i);
    if (axes.empty()) {
      if (d == -1) return PartialShape::UnknownRank();
      if (d != 1) dims.push_back(d);
    } else if (drop.count(i)) {
      if (d != 1 && d != -1) {
        return InvalidArgumentError("cannot squeeze axis " + std::to_string(i) +
                                    " of size " + std::to_string(d));
      }
    } else {
      dims.push_back(d);
    }
  }
  return PartialShape(std::move(dims));
}

// Unsqueeze: inserts size-1 dims at the listed axes of the output.
StatusOr<PartialShape> UnsqueezedShape(const PartialShape& in,
                                       const std::vector<int64_t>& axes) {
  if (!in.rank_known()) return PartialShape::UnknownRank();
  const int rank = in.rank() + static_cast<int>(axes.size());
  WEFT_ASSIGN_OR_RETURN(std::set<int> add, AxisSet(axes, rank));
  std::vector<int64_t> dims;
  for (int i = 0, j = 0; i < rank; ++i) {
    dims.push_back(add.count(i) ? 1 : in.dim(j++));
  }
  return PartialShape(std::move(dims));
}

using AxesShapeFn = StatusOr<PartialShape> (*)(const PartialShape&,
                                               const std::vector<int64_t>&);

template <AxesShapeFn kShape>
class AxesReshapeKernel : public OpKernel {
 public:
  explicit AxesReshapeKernel(const KernelConstruction& c)
      : axes_(c.attr<std::vector<int64_t>>("axes")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(
        auto axes, AxesOf(axes_, ctx.num_inputs(),
                          ctx.num_inputs() > 1 ? &ctx.input(1) : nullptr));
    WEFT_ASSIGN_OR_RETURN(PartialShape shape, kShape(x.shape(), *axes));
    return ctx.SetOutput(0, x.WithShape(shape.ToShape()));
  }

 private:
  const std::vector<int64_t> axes_;
};

template <AxesShapeFn kShape>
Status AxesReshapeShapeFn(InferenceContext& ctx) {
  WEFT_ASSIGN_OR_RETURN(
      auto axes,
      AxesOf(ctx.attr<std::vector<int64_t>>("axes"), ctx.num_inputs(),
             ctx.num_inputs() > 1 ? ctx.input_constant(1) : nullptr));
  if (!axes) return AllOutputsUnknown(ctx);
  WEFT_ASSIGN_OR_RETURN(PartialShape out, kShape(ctx.input_shape(0), *axes));
  ctx.set_output(0, std::move(out));
  return Status::OK();
}

// Flatten: dims before `axis` into the first, the rest into the second.
StatusOr<PartialShape> FlattenedShape(const PartialShape& in, int64_t axis) {
  if (!in.rank_known()) return PartialShape::UnknownRank();
  const int rank = in.rank();
  if (axis < -rank || axis > rank) {
    return InvalidArgumentError("axis " + std::to_string(axis) +
                                " is out of range for rank " +
                                std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < rank; ++i) {
    int64_t& part = i < axis ? outer : inner;
    if (in.dim(i) == -1 || part == -1) {
      part = -1;
    } else {
      part *= in.dim(i);
    }
  }
  return PartialShape({outer, inner});
}

class FlattenKernel : public OpKernel {
 public:
  explicit FlattenKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(PartialShape shape, FlattenedShape(x.shape(), axis_));
    return ctx.SetOutput(0, x.WithShape(shape.ToShape()));
  }

 private:
  const int64_t axis_;
};

// --- ConstantOfShape, Range, EyeLike: values from indices --------------------

StatusOr<Shape> ShapeFromInput(const Tensor& t) {
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        IntsFromTensor(t, "the shape input"));
  Shape shape(dims);
  if (!shape.IsValid()) {
    return InvalidArgumentError("invalid shape " + shape.ToString());
  }
  return shape;
}

class ConstantOfShapeKernel : public OpKernel {
 public:
  explicit ConstantOfShapeKernel(const KernelConstruction& c)
      : value_(c.attr<Tensor>("value")) {}
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(Shape shape, ShapeFromInput(ctx.input(0)));
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, shape));
    const size_t esize = DataTypeSize(y->dtype());
    auto* out = static_cast<char*>(y->raw_data());
    const auto* v = static_cast<const char*>(value_.raw_data());
    ctx.ParallelFor(y->NumElements(), kCopyCostNs, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) std::memcpy(out + i * esize, v, esize);
    });
    return Status::OK();
  }

 private:
  const Tensor value_;
};

class RangeKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    for (int i = 0; i < 3; ++i) {
      if (ctx.input(i).NumElements() != 1) {
        return InvalidArgumentError(
            "start, limit and delta must be scalars; input " +
            std::to_string(i) + " has shape " +
            ctx.input(i).shape().ToString());
      }
    }
    return DispatchAmong<NumericDtypes>(ctx.input(0).dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T start = *ctx.input(0).data<T>();
      const T limit = *ctx.input(1).data<T>();
      const T delta = *ctx.input(2).data<T>();
      if (delta == T(0)) return InvalidArgumentError("delta must not be 0");
      const double count_d =
          std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                    static_cast<double>(delta));
      if (!(count_d < static_cast<double>(int64_t{1} << 40))) {
        return InvalidArgumentError("the range has too many elements");
      }
      const int64_t count = std::max<int64_t>(0, static_cast<int64_t>(count_d));
      WEFT_ASSIGN_OR_RETURN(Tensor * y,
                            ctx.AllocateOutputUninitialized(0, Shape{count}));
      T* out = y->data<T>();
      for (int64_t i = 0; i < count; ++i) {
        out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
      }
      return Status::OK();
    });
  }
};

class EyeLikeKernel : public OpKernel {
 public:
  explicit EyeLikeKernel(const KernelConstruction& c)
      : k_(c.attr<int64_t>("k")) {}
  Status Compute(KernelContext& ctx) const override {
    const Shape& shape = ctx.input(0).shape();
    if (shape.rank() != 2) {
      return InvalidArgumentError("needs a 2-D input, got " + shape.ToString());
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, shape));
    DispatchDtype(y->dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* out = y->data<T>();
      // A k past either side sets nothing (and r + k stays in range).
      if (k_ >= shape.dim(1) || k_ <= -shape.dim(0)) return;
      for (int64_t r = 0; r < shape.dim(0); ++r) {
        const int64_t c = r + k_;
        if (c >= 0 && c < shape.dim(1)) out[r * shape.dim(1) + c] = T(1);
      }
    });
    return Status::OK();
  }

 private:
  const int64_t k_;
};

// --- Tile, Trilu, DepthToSpace, SpaceToDepth: copies -------------------------

// Copies out[o] = in[source(o)] for every output element, byte-wise so one
// routine serves every dtype. `source` maps an output index to an input one.
template <class SourceFn>
void CopyGather(KernelContext& ctx, const Tensor& in, Tensor* out,
                SourceFn source) {
  const size_t esize = DataTypeSize(in.dtype());
  const auto* src = static_cast<const char*>(in.raw_data());
  auto* dst = static_cast<char*>(out->raw_data());
  ctx.ParallelFor(out->NumElements(), kCopyCostNs, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      std::memcpy(dst + o * esize, src + source(o) * esize, esize);
    }
  });
}

class TileKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> repeats,
                          IntsFromTensor(ctx.input(1), "repeats"));
    const int rank = x.shape().rank();
    if (static_cast<int>(repeats.size()) != rank) {
      return InvalidArgumentError(
          "repeats has " + std::to_string(repeats.size()) +
          " entries for an input of rank " + std::to_string(rank));
    }
    std::vector<int64_t> dims(rank);
    for (int i = 0; i < rank; ++i) {
      if (repeats[i] < 0) {
        return InvalidArgumentError("repeats must be >= 0, got " +
                                    std::to_string(repeats[i]));
      }
      if (__builtin_mul_overflow(x.shape().dim(i), repeats[i], &dims[i])) {
        return InvalidArgumentError("the tiled shape overflows");
      }
    }
    Shape out_shape(dims);
    if (!out_shape.IsValid()) {
      return InvalidArgumentError("the tiled shape overflows");
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, out_shape));
    const std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
    const Shape& in = x.shape();
    CopyGather(ctx, x, y, [&](int64_t o) {
      int64_t src = 0;
      for (int d = rank - 1; d >= 0; --d) {
        src += (o % dims[d]) % in.dim(d) * in_strides[d];
        o /= dims[d];
      }
      return src;
    });
    return Status::OK();
  }
};

class TriluKernel : public OpKernel {
 public:
  explicit TriluKernel(const KernelConstruction& c)
      : upper_(c.attr<int64_t>("upper") != 0) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.shape().rank() < 2) {
      return InvalidArgumentError("needs rank >= 2, got " +
                                  x.shape().ToString());
    }
    int64_t k = 0;
    if (ctx.num_inputs() > 1) {
      WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> ks,
                            IntsFromTensor(ctx.input(1), "k"));
      if (ks.size() != 1) return InvalidArgumentError("k must be a scalar");
      k = ks[0];
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    const int rank = x.shape().rank();
    const int64_t rows = x.shape().dim(rank - 2),
                  cols = x.shape().dim(rank - 1);
    const size_t esize = DataTypeSize(x.dtype());
    const auto* src = static_cast<const char*>(x.raw_data());
    auto* dst = static_cast<char*>(y->raw_data());
    const bool upper = upper_;
    ctx.ParallelFor(x.NumElements(), kCopyCostNs, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t c = i % cols, r = (i / cols) % rows;
        // Kept: j - i >= k (upper) or j - i <= k (lower); the rest stay 0.
        if (upper ? c - r >= k : c - r <= k) {
          std::memcpy(dst + i * esize, src + i * esize, esize);
        }
      }
    });
    return Status::OK();
  }

 private:
  const bool upper_;
};

// DepthToSpace (mode DCR or CRD) and SpaceToDepth on NCHW tensors.
class DepthSpaceKernel : public OpKernel {
 public:
  DepthSpaceKernel(const KernelConstruction& c, bool to_space)
      : block_(c.attr<int64_t>("blocksize")),
        crd_(to_space && c.attr<std::string>("mode") == "CRD"),
        to_space_(to_space) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& s = x.shape();
    const int64_t b = block_;
    if (s.rank() != 4) {
      return InvalidArgumentError("needs a 4-D NCHW input, got " +
                                  s.ToString());
    }
    const int64_t n = s.dim(0), c = s.dim(1), h = s.dim(2), w = s.dim(3);
    // b * b, and the output's c * b * b, h * b, w * b, must fit in int64:
    // a blocksize of 2^32 squared wraps to 0, and c % 0 traps.
    int64_t square = 0, unused = 0;
    if (b <= 0 || __builtin_mul_overflow(b, b, &square) ||
        (!to_space_ && __builtin_mul_overflow(c, square, &unused)) ||
        (to_space_ && (__builtin_mul_overflow(h, b, &unused) ||
                       __builtin_mul_overflow(w, b, &unused)))) {
      return InvalidArgumentError("blocksize " + std::to_string(b) +
                                  " is out of range for shape " + s.ToString());
    }
    if ((to_space_ && c % square != 0) ||
        (!to_space_ && (h % b != 0 || w % b != 0))) {
      return InvalidArgumentError("blocksize " + std::to_string(b) +
                                  " does not divide shape " + s.ToString());
    }
    // Both directions are the same 6-D transpose read one way or the other.
    // DepthToSpace DCR: x as [n, b, b, c', h, w] -> [n, c', h, b, w, b];
    // CRD: x as [n, c', b, b, h, w]. SpaceToDepth reverses DCR.
    const Shape out_shape = to_space_ ? Shape{n, c / (b * b), h * b, w * b}
                                      : Shape{n, c * b * b, h / b, w / b};
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, out_shape));
    const int64_t oc = out_shape.dim(1), oh = out_shape.dim(2),
                  ow = out_shape.dim(3);
    const bool crd = crd_, to_space = to_space_;
    CopyGather(ctx, x, y, [=](int64_t o) {
      const int64_t ox = o % ow, oy = (o / ow) % oh, ch = (o / (ow * oh)) % oc,
                    batch = o / (ow * oh * oc);
      if (to_space) {
        const int64_t by = oy % b, bx = ox % b, iy = oy / b, ix = ox / b;
        const int64_t ic =
            crd ? ch * b * b + by * b + bx : (by * b + bx) * oc + ch;
        return ((batch * c + ic) * h + iy) * w + ix;
      }
      // SpaceToDepth: output channel = (by * b + bx) * c + ic.
      const int64_t ic = ch % c, blk = ch / c, by = blk / b, bx = blk % b;
      return ((batch * c + ic) * h + oy * b + by) * w + ox * b + bx;
    });
    return Status::OK();
  }

 private:
  const int64_t block_;
  const bool crd_;
  const bool to_space_;
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"ConstantOfShape", "a tensor of a given shape filled with one value"},
    {"DepthToSpace", "move depth blocks into spatial blocks (DCR or CRD)"},
    {"EyeLike", "a 2-D tensor with ones on a diagonal"},
    {"Flatten", "reshape to 2-D at an axis"},
    {"Range", "start, start + delta, ... below limit"},
    {"Reshape", "the same elements in another shape (0 copies, -1 infers)"},
    {"SpaceToDepth", "move spatial blocks into depth"},
    {"Squeeze", "drop axes of size 1"},
    {"Tile", "repeat along each axis"},
    {"Trilu", "keep the upper or lower triangle of the last two axes"},
    {"Unsqueeze", "insert axes of size 1"},
};

}  // namespace

// One schema block per op, read top to bottom as the family's table:
// split, the family's registration would live in several places.
// NOLINTNEXTLINE(readability-function-size)
void RegisterReshapeOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Reshape")
          .Input(ArgDef::Typed("data", "T"))
          .Input(ArgDef::Fixed("shape", DataType::kInt64))
          .Output(ArgDef::Typed("reshaped", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kMovableTypes)
          .Attr("allowzero", AttrType::kBool, false)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const Tensor* spec = ctx.input_constant(1);
            const PartialShape& in = ctx.input_shape(0);
            const bool allowzero = ctx.attr<bool>("allowzero");
            if (spec != nullptr && in.IsFullyDefined()) {
              WEFT_ASSIGN_OR_RETURN(
                  Shape out, ResolveReshape(in.ToShape(), *spec, allowzero));
              ctx.set_output(0, out);
            } else if (spec != nullptr && spec->shape().rank() == 1) {
              // The rank, and each dimension the spec gives outright or
              // copies (0) from a known input dimension.
              std::vector<int64_t> dims;
              for (int64_t i = 0; i < spec->NumElements(); ++i) {
                const int64_t d = spec->data<int64_t>()[i];
                const bool copied =
                    d == 0 && !allowzero && in.rank_known() && i < in.rank();
                dims.push_back(d > 0 || (d == 0 && allowzero)
                                   ? d
                                   : (copied ? in.dim(i) : -1));
              }
              ctx.set_output(0, PartialShape(dims));
            } else if (const PartialShape& given = ctx.input_shape(1);
                       given.rank_known() && given.rank() == 1 &&
                       given.dim(0) >= 0) {
              // A computed spec of known length: the rank alone.
              ctx.set_output(0, PartialShape(std::vector<int64_t>(
                                    given.dim(0), int64_t{-1})));
            } else {
              ctx.set_output(0, PartialShape::UnknownRank());
            }
            return Status::OK();
          })
          .SetCostFn([](const InferenceContext&) { return 10.0; })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Reshape", KernelFactoryFor<ReshapeKernel>()));

  for (const char* name : {"Squeeze", "Unsqueeze"}) {
    const bool squeeze = name[0] == 'S';
    CheckRegistered(registry.RegisterOp(
        OpDefBuilder(name)
            .Input(ArgDef::Typed("data", "T"))
            .Input(ArgDef::AnyList("axes_input"))
            .Output(ArgDef::Typed("output", "T"))
            .Attr("T", AttrType::kType, std::nullopt, kMovableTypes)
            .Attr("axes", AttrType::kListInt, std::vector<int64_t>{})
            .SetShapeFn(squeeze ? AxesReshapeShapeFn<SqueezedShape>
                                : AxesReshapeShapeFn<UnsqueezedShape>)
            .SetCostFn([](const InferenceContext&) { return 10.0; })
            .Build()));
    CheckRegistered(registry.RegisterKernel(
        name, squeeze
                  ? KernelFactoryFor<AxesReshapeKernel<SqueezedShape>>()
                  : KernelFactoryFor<AxesReshapeKernel<UnsqueezedShape>>()));
  }

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Flatten")
          .Input(ArgDef::Typed("input", "T"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kMovableTypes)
          .Attr("axis", AttrType::kInt, int64_t{1})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            WEFT_ASSIGN_OR_RETURN(
                PartialShape out,
                FlattenedShape(ctx.input_shape(0), ctx.attr<int64_t>("axis")));
            ctx.set_output(0, std::move(out));
            return Status::OK();
          })
          .SetCostFn([](const InferenceContext&) { return 10.0; })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Flatten", KernelFactoryFor<FlattenKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("ConstantOfShape")
          .Input(ArgDef::Typed("input", "Tshape"))
          .Output(ArgDef::Typed("output", "dtype"))
          .Attr("Tshape", AttrType::kType, std::nullopt,
                {DataType::kInt32, DataType::kInt64})
          .Attr("dtype", AttrType::kType)
          .Attr("value", AttrType::kTensor)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const Tensor& value = ctx.attr<Tensor>("value");
            if (value.NumElements() != 1 ||
                value.dtype() != ctx.attr<DataType>("dtype")) {
              return InvalidArgumentError(
                  "attribute 'value' must hold one element of dtype " +
                  std::string(DataTypeName(ctx.attr<DataType>("dtype"))));
            }
            const Tensor* spec = ctx.input_constant(0);
            if (spec == nullptr) {
              ctx.set_output(0, PartialShape::UnknownRank());
              return Status::OK();
            }
            WEFT_ASSIGN_OR_RETURN(Shape shape, ShapeFromInput(*spec));
            ctx.set_output(0, shape);
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "ConstantOfShape", KernelFactoryFor<ConstantOfShapeKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Range")
          .Input(ArgDef::Typed("start", "T"))
          .Input(ArgDef::Typed("limit", "T"))
          .Input(ArgDef::Typed("delta", "T"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType, std::nullopt, kNumericTypes)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, PartialShape({-1}));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Range", KernelFactoryFor<RangeKernel>()));

  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("EyeLike")
                              .Input(ArgDef::Typed("input", "T"))
                              .Output(ArgDef::Typed("output", "dtype"))
                              .Attr("T", AttrType::kType)
                              .Attr("dtype", AttrType::kType)
                              .Attr("k", AttrType::kInt, int64_t{0})
                              .SetShapeFn(shape_fns::SameAsInput0)
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("EyeLike", KernelFactoryFor<EyeLikeKernel>()));

  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("Tile")
                              .Input(ArgDef::Typed("input", "T"))
                              .Input(ArgDef::Fixed("repeats", DataType::kInt64))
                              .Output(ArgDef::Typed("output", "T"))
                              .Attr("T", AttrType::kType)
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("Tile", KernelFactoryFor<TileKernel>()));

  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("Trilu")
                              .Input(ArgDef::Typed("input", "T"))
                              .Input(ArgDef::AnyList("k"))
                              .Output(ArgDef::Typed("output", "T"))
                              .Attr("T", AttrType::kType)
                              .Attr("upper", AttrType::kInt, int64_t{1})
                              .SetShapeFn(shape_fns::SameAsInput0)
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("Trilu", KernelFactoryFor<TriluKernel>()));

  for (const char* name : {"DepthToSpace", "SpaceToDepth"}) {
    const bool to_space = name[0] == 'D';
    OpDefBuilder builder(name);
    builder.Input(ArgDef::Typed("input", "T"))
        .Output(ArgDef::Typed("output", "T"))
        .Attr("T", AttrType::kType)
        .Attr("blocksize", AttrType::kInt);
    if (to_space) builder.Attr("mode", AttrType::kString, std::string("DCR"));
    CheckRegistered(registry.RegisterOp(builder.Build()));
    CheckRegistered(registry.RegisterKernel(
        name,
        [to_space](const KernelConstruction& c)
            -> StatusOr<std::unique_ptr<OpKernel>> {
          if (to_space) {
            const std::string& mode = c.attr<std::string>("mode");
            if (mode != "DCR" && mode != "CRD") {
              return InvalidArgumentError(
                  "attribute 'mode' must be \"DCR\" or \"CRD\", got \"" + mode +
                  "\"");
            }
          }
          return std::unique_ptr<OpKernel>(
              std::make_unique<DepthSpaceKernel>(c, to_space));
        }));
  }
}

}  // namespace weft::internal
