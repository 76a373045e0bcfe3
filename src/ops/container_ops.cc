// ONNX's sequence and optional ops on weft's container values
// (weft/container.h): SequenceEmpty, SequenceConstruct, SequenceInsert,
// SequenceAt, SequenceErase, SequenceLength, SplitToSequence,
// ConcatFromSequence, Optional, EmptyOptional, OptionalHasElement and
// OptionalGetElement. (SequenceMap, which calls a subgraph, is in
// control_flow.cc.) A container is immutable: an op that changes a sequence
// makes a new one whose items share the old items' buffers, so inserting
// into a sequence of n items copies n handles, not n tensors.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/registry.h"
#include "weft/container.h"

namespace weft::internal {
namespace {

const std::vector<DataType> kIndexTypes = {DataType::kInt32, DataType::kInt64};

// The most items SplitToSequence makes: each is a tensor of its own, so a
// tiny piece size over a long axis must not ask for billions of them.
constexpr int64_t kMaxItems = int64_t{1} << 24;

Status CheckItemCount(int64_t items) {
  if (items <= kMaxItems) return Status::OK();
  return InvalidArgumentError("splitting makes " + std::to_string(items) +
                              " items; weft makes at most " +
                              std::to_string(kMaxItems));
}

// Shape functions' dtype checks: input i is a sequence (of `element`, when
// given) or an optional.
Status ExpectSequence(const InferenceContext& ctx, int i, const char* what) {
  if (!IsSequenceType(ctx.input_dtype(i))) {
    return InvalidArgumentError(std::string(what) +
                                " must be a sequence, got " +
                                DataTypeName(ctx.input_dtype(i)));
  }
  return Status::OK();
}

// The container handle itself is a scalar.
Status ScalarHandle(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape(std::vector<int64_t>{}));
  return Status::OK();
}

// The position input (int32 or int64, one element) of the insert, at and
// erase ops, checked against [-size, size - 1], or [-size, size] where
// `past_end` allows the position after the last item; negative counts from
// the end.
StatusOr<int64_t> Position(const Tensor& t, int64_t size, bool past_end) {
  if (t.NumElements() != 1) {
    return InvalidArgumentError("position has " +
                                std::to_string(t.NumElements()) +
                                " elements; it must have one");
  }
  const int64_t p =
      t.dtype() == DataType::kInt32 ? *t.data<int32_t>() : *t.data<int64_t>();
  const int64_t high = past_end ? size : size - 1;
  if (p < -size || p > high) {
    return InvalidArgumentError(
        "position " + std::to_string(p) +
        " is out of range for a sequence of " + std::to_string(size) + " item" +
        (size == 1 ? "" : "s") + " (allowed: " + std::to_string(-size) +
        " to " + std::to_string(high) + ")");
  }
  return p < 0 ? p + size : p;
}

Status CheckPositionInput(const KernelConstruction& c, size_t index) {
  if (c.input_dtypes().size() > index + 1) {
    return InvalidArgumentError("takes at most one position input");
  }
  if (c.input_dtypes().size() == index + 1 &&
      c.input_dtypes()[index] != DataType::kInt32 &&
      c.input_dtypes()[index] != DataType::kInt64) {
    return InvalidArgumentError(std::string("position must be int32 or int64, "
                                            "got ") +
                                DataTypeName(c.input_dtypes()[index]));
  }
  return Status::OK();
}

class SequenceEmptyKernel : public OpKernel {
 public:
  explicit SequenceEmptyKernel(const KernelConstruction& c)
      : dtype_(c.attr<DataType>("dtype")) {}
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(Tensor seq, MakeSequence(dtype_, {}));
    return ctx.SetOutput(0, std::move(seq));
  }

 private:
  DataType dtype_;
};

class SequenceConstructKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    std::vector<Tensor> items;
    items.reserve(ctx.num_inputs());
    for (int i = 0; i < ctx.num_inputs(); ++i) items.push_back(ctx.input(i));
    WEFT_ASSIGN_OR_RETURN(Tensor seq,
                          MakeSequence(ctx.input(0).dtype(), std::move(items)));
    return ctx.SetOutput(0, std::move(seq));
  }
};

class SequenceInsertKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    WEFT_RETURN_IF_ERROR(CheckPositionInput(c, 2));
    return std::unique_ptr<OpKernel>(new SequenceInsertKernel());
  }
  Status Compute(KernelContext& ctx) const override {
    const std::vector<Tensor>& old = SequenceItems(ctx.input(0));
    const int64_t size = static_cast<int64_t>(old.size());
    int64_t at = size;  // Without a position: at the end.
    if (ctx.num_inputs() > 2) {
      WEFT_ASSIGN_OR_RETURN(at, Position(ctx.input(2), size, true));
    }
    std::vector<Tensor> items;
    items.reserve(old.size() + 1);
    items.insert(items.end(), old.begin(), old.begin() + at);
    items.push_back(ctx.input(1));
    items.insert(items.end(), old.begin() + at, old.end());
    WEFT_ASSIGN_OR_RETURN(
        Tensor seq,
        MakeSequence(ContainedType(ctx.input(0).dtype()), std::move(items)));
    return ctx.SetOutput(0, std::move(seq));
  }
};

class SequenceAtKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const std::vector<Tensor>& items = SequenceItems(ctx.input(0));
    WEFT_ASSIGN_OR_RETURN(
        int64_t at,
        Position(ctx.input(1), static_cast<int64_t>(items.size()), false));
    return ctx.SetOutput(0, items[at]);
  }
};

class SequenceEraseKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    WEFT_RETURN_IF_ERROR(CheckPositionInput(c, 1));
    return std::unique_ptr<OpKernel>(new SequenceEraseKernel());
  }
  Status Compute(KernelContext& ctx) const override {
    std::vector<Tensor> items = SequenceItems(ctx.input(0));
    const int64_t size = static_cast<int64_t>(items.size());
    if (size == 0) {
      return InvalidArgumentError("cannot erase from an empty sequence");
    }
    int64_t at = size - 1;  // Without a position: the last item.
    if (ctx.num_inputs() > 1) {
      WEFT_ASSIGN_OR_RETURN(at, Position(ctx.input(1), size, false));
    }
    items.erase(items.begin() + at);
    WEFT_ASSIGN_OR_RETURN(
        Tensor seq,
        MakeSequence(ContainedType(ctx.input(0).dtype()), std::move(items)));
    return ctx.SetOutput(0, std::move(seq));
  }
};

class SequenceLengthKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const int64_t size =
        static_cast<int64_t>(SequenceItems(ctx.input(0)).size());
    WEFT_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, Shape{}));
    *out->data<int64_t>() = size;
    return Status::OK();
  }
};

// A tensor's dims around an axis: outer (before), extent and inner bytes
// (after), for copying slabs along the axis.
struct AxisSplit {
  int64_t outer = 1;
  int64_t extent = 0;
  size_t inner_bytes = 0;
};

AxisSplit SplitAt(const Shape& shape, int axis, size_t element_bytes) {
  AxisSplit s;
  for (int d = 0; d < axis; ++d) s.outer *= shape.dim(d);
  s.extent = shape.dim(axis);
  s.inner_bytes = element_bytes;
  for (int d = axis + 1; d < shape.rank(); ++d) s.inner_bytes *= shape.dim(d);
  return s;
}

StatusOr<int> NormalizeAxis(int64_t axis, int rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    return InvalidArgumentError(std::string(what) + " " + std::to_string(axis) +
                                " is out of range for rank " +
                                std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// SplitToSequence: `input` cut along `axis` into pieces of the lengths
// `split` gives (a 1-D tensor of lengths, or a scalar: equal pieces and a
// shorter last one); without `split`, pieces of length 1, with the axis
// removed unless keepdims.
class SplitToSequenceKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    auto k = std::unique_ptr<SplitToSequenceKernel>(new SplitToSequenceKernel);
    k->axis_ = c.attr<int64_t>("axis");
    k->keepdims_ = c.attr<int64_t>("keepdims") != 0;
    WEFT_RETURN_IF_ERROR(c.status());
    if (c.input_dtypes().size() > 2) {
      return InvalidArgumentError("takes at most one split input");
    }
    if (c.input_dtypes().size() == 2 &&
        c.input_dtypes()[1] != DataType::kInt32 &&
        c.input_dtypes()[1] != DataType::kInt64) {
      return InvalidArgumentError(
          std::string("split must be int32 or int64, got ") +
          DataTypeName(c.input_dtypes()[1]));
    }
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Shape& shape = input.shape();
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, shape.rank(), "axis"));
    const int64_t extent = shape.dim(axis);
    std::vector<int64_t> lengths;
    bool drop_axis = false;
    if (ctx.num_inputs() < 2) {
      WEFT_RETURN_IF_ERROR(CheckItemCount(extent));
      lengths.assign(extent, 1);
      drop_axis = !keepdims_;
    } else {
      WEFT_ASSIGN_OR_RETURN(lengths, Lengths(ctx.input(1), extent));
    }
    const AxisSplit s = SplitAt(shape, axis, DataTypeSize(input.dtype()));
    const size_t row = s.inner_bytes;
    std::vector<Tensor> items;
    items.reserve(lengths.size());
    int64_t start = 0;
    for (int64_t length : lengths) {
      std::vector<int64_t> dims = shape.dims();
      dims[axis] = length;
      if (drop_axis) dims.erase(dims.begin() + axis);
      WEFT_ASSIGN_OR_RETURN(Tensor piece, Tensor::CreateUninitialized(
                                              input.dtype(), Shape(dims)));
      const char* src = static_cast<const char*>(input.raw_data());
      char* dst = static_cast<char*>(piece.raw_data());
      const size_t bytes = static_cast<size_t>(length) * row;
      for (int64_t o = 0; o < s.outer && bytes > 0; ++o) {
        std::memcpy(dst + o * bytes, src + (o * s.extent + start) * row, bytes);
      }
      start += length;
      items.push_back(std::move(piece));
    }
    WEFT_ASSIGN_OR_RETURN(Tensor seq,
                          MakeSequence(input.dtype(), std::move(items)));
    return ctx.SetOutput(0, std::move(seq));
  }

 private:
  SplitToSequenceKernel() = default;

  // The item lengths `split` gives; each check before the vector is made.
  static StatusOr<std::vector<int64_t>> Lengths(const Tensor& split,
                                                int64_t extent) {
    auto length_at = [&split](int64_t i) -> int64_t {
      return split.dtype() == DataType::kInt32 ? split.data<int32_t>()[i]
                                               : split.data<int64_t>()[i];
    };
    if (split.shape().rank() == 0) {
      const int64_t piece = length_at(0);
      if (piece <= 0) {
        return InvalidArgumentError("split " + std::to_string(piece) +
                                    " must be positive");
      }
      const int64_t count = extent / piece + (extent % piece != 0 ? 1 : 0);
      WEFT_RETURN_IF_ERROR(CheckItemCount(count));
      std::vector<int64_t> lengths;
      for (int64_t k = 0; k < count; ++k) {  // k * piece < extent: no overflow.
        lengths.push_back(std::min(piece, extent - k * piece));
      }
      return lengths;
    }
    if (split.shape().rank() != 1) {
      return InvalidArgumentError("split must be a scalar or 1-D, got shape " +
                                  split.shape().ToString());
    }
    WEFT_RETURN_IF_ERROR(CheckItemCount(split.NumElements()));
    std::vector<int64_t> given(static_cast<size_t>(split.NumElements()));
    for (size_t i = 0; i < given.size(); ++i) {
      given[i] = length_at(static_cast<int64_t>(i));
    }
    int64_t total = 0;
    for (int64_t length : given) {
      if (length < 0 || __builtin_add_overflow(total, length, &total)) {
        return InvalidArgumentError("split lengths must be >= 0");
      }
    }
    if (total != extent) {
      return InvalidArgumentError(
          "split lengths sum to " + std::to_string(total) +
          ", but the axis has " + std::to_string(extent) + " elements");
    }
    return given;
  }

  int64_t axis_ = 0;
  bool keepdims_ = true;
};

// ConcatFromSequence: the items joined along `axis`, or stacked along a new
// axis when new_axis is set. Every item must have the same shape but along
// the axis.
class ConcatFromSequenceKernel : public OpKernel {
 public:
  explicit ConcatFromSequenceKernel(const KernelConstruction& c)
      : axis_(c.attr<int64_t>("axis")),
        new_axis_(c.attr<int64_t>("new_axis") != 0) {}

  Status Compute(KernelContext& ctx) const override {
    const std::vector<Tensor>& items = SequenceItems(ctx.input(0));
    if (items.empty()) {
      return InvalidArgumentError("cannot concatenate an empty sequence");
    }
    const Shape& first = items[0].shape();
    const int rank = first.rank() + (new_axis_ ? 1 : 0);
    WEFT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, rank, "axis"));
    std::vector<int64_t> dims = first.dims();
    if (new_axis_) dims.insert(dims.begin() + axis, 1);
    int64_t total = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      std::vector<int64_t> d = items[i].shape().dims();
      if (new_axis_) d.insert(d.begin() + axis, 1);
      bool same = d.size() == dims.size();
      for (size_t k = 0; same && k < d.size(); ++k) {
        same = static_cast<int>(k) == axis || d[k] == dims[k];
      }
      if (!same) {
        return InvalidArgumentError(
            "item " + std::to_string(i) + " has shape " +
            items[i].shape().ToString() + ", which does not fit item 0's " +
            first.ToString() + " along axis " + std::to_string(axis));
      }
      if (__builtin_add_overflow(total, d[axis], &total)) {
        return InvalidArgumentError("the items' extents along axis " +
                                    std::to_string(axis) + " overflow int64");
      }
    }
    dims[axis] = total;
    WEFT_ASSIGN_OR_RETURN(Tensor * out,
                          ctx.AllocateOutputUninitialized(0, Shape(dims)));
    const AxisSplit s = SplitAt(out->shape(), axis, DataTypeSize(out->dtype()));
    char* dst = static_cast<char*>(out->raw_data());
    int64_t start = 0;
    for (const Tensor& item : items) {
      const int64_t extent = new_axis_ ? 1 : item.shape().dim(axis);
      const size_t bytes = static_cast<size_t>(extent) * s.inner_bytes;
      const char* src = static_cast<const char*>(item.raw_data());
      for (int64_t o = 0; o < s.outer && bytes > 0; ++o) {
        std::memcpy(dst + (o * s.extent + start) * s.inner_bytes,
                    src + o * bytes, bytes);
      }
      start += extent;
    }
    return Status::OK();
  }

 private:
  int64_t axis_;
  bool new_axis_;
};

class OptionalKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(Tensor opt,
                          MakeOptional(ctx.input(0).dtype(), ctx.input(0)));
    return ctx.SetOutput(0, std::move(opt));
  }
};

class EmptyOptionalKernel : public OpKernel {
 public:
  explicit EmptyOptionalKernel(const KernelConstruction& c)
      : type_(c.attr<DataType>("V")) {}
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(Tensor opt, MakeOptional(type_, std::nullopt));
    return ctx.SetOutput(0, std::move(opt));
  }

 private:
  DataType type_;
};

// From ONNX opset 18 a tensor or sequence may stand where an optional is
// expected: it holds its value.
class OptionalHasElementKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, Shape{}));
    *out->data<bool>() =
        !IsOptionalType(input.dtype()) || OptionalValue(input) != nullptr;
    return Status::OK();
  }
};

class OptionalGetElementKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    if (!IsOptionalType(input.dtype())) return ctx.SetOutput(0, input);
    const Tensor* value = OptionalValue(input);
    if (value == nullptr) {
      return InvalidArgumentError("the optional is empty");
    }
    return ctx.SetOutput(0, *value);
  }
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"ConcatFromSequence",
     "a sequence's items joined along an axis (or stacked on a new one)"},
    {"EmptyOptional", "an empty optional of the V attribute's dtype"},
    {"Optional", "an optional holding its input"},
    {"OptionalGetElement",
     "the value an optional holds (an error when empty); a tensor or "
     "sequence itself"},
    {"OptionalHasElement",
     "whether an optional holds a value, as bool (a tensor or sequence "
     "does)"},
    {"SequenceAt",
     "the item of a sequence at position (negative: from the end)"},
    {"SequenceConstruct", "a sequence of its inputs, in order"},
    {"SequenceEmpty", "an empty sequence of the dtype attribute"},
    {"SequenceErase",
     "a sequence without the item at position (default: the last)"},
    {"SequenceInsert",
     "a sequence with a tensor inserted at position (default: the end)"},
    {"SequenceLength", "the number of items of a sequence, as int64"},
    {"SplitToSequence", "a tensor cut along an axis into a sequence of pieces"},
};

}  // namespace

// One schema block per op, read top to bottom as the family's table:
// split, the family's registration would live in several places.
// NOLINTNEXTLINE(readability-function-size)
void RegisterContainerOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  auto op = [&](OpDefBuilder builder, KernelFactory factory) {
    OpDef def = builder.Build();
    const std::string name = def.name;
    CheckRegistered(registry.RegisterOp(std::move(def)));
    CheckRegistered(registry.RegisterKernel(name, std::move(factory)));
  };
  op(OpDefBuilder("SequenceEmpty")
         .Output(ArgDef::SequenceOf("output", "dtype"))
         .Attr("dtype", AttrType::kType, DataType::kFloat32)
         .SetShapeFn(ScalarHandle),
     KernelFactoryFor<SequenceEmptyKernel>());
  op(OpDefBuilder("SequenceConstruct")
         .Input(ArgDef::Repeated("inputs", "T", "N"))
         .Output(ArgDef::SequenceOf("output_sequence", "T"))
         .Attr("T", AttrType::kType)
         .Attr("N", AttrType::kInt)
         .SetShapeFn([](InferenceContext& ctx) -> Status {
           if (ctx.num_inputs() == 0) {
             return InvalidArgumentError("needs at least one input");
           }
           return ScalarHandle(ctx);
         }),
     KernelFactoryFor<SequenceConstructKernel>());
  op(OpDefBuilder("SequenceInsert")
         .Input(ArgDef::Typed("input_sequence", "S"))
         .Input(ArgDef::Typed("tensor", "T"))
         .Input(ArgDef::AnyList("position"))
         .Output(ArgDef::Typed("output_sequence", "S"))
         .Attr("S", AttrType::kType)
         .Attr("T", AttrType::kType)
         .AcceptsAnyValue("S")
         .SetShapeFn([](InferenceContext& ctx) -> Status {
           WEFT_RETURN_IF_ERROR(ExpectSequence(ctx, 0, "input_sequence"));
           if (ContainedType(ctx.input_dtype(0)) != ctx.input_dtype(1)) {
             return InvalidArgumentError(std::string("cannot insert a ") +
                                         DataTypeName(ctx.input_dtype(1)) +
                                         " tensor into a " +
                                         DataTypeName(ctx.input_dtype(0)));
           }
           return ScalarHandle(ctx);
         }),
     &SequenceInsertKernel::Create);
  op(OpDefBuilder("SequenceAt")
         .Input(ArgDef::Typed("input_sequence", "S"))
         .Input(ArgDef::Typed("position", "I"))
         .Output(ArgDef::ContainedIn("tensor", "S"))
         .Attr("S", AttrType::kType)
         .Attr("I", AttrType::kType, std::nullopt, kIndexTypes)
         .AcceptsAnyValue("S")
         .SetShapeFn([](InferenceContext& ctx) {
           return ExpectSequence(ctx, 0, "input_sequence");
         }),
     KernelFactoryFor<SequenceAtKernel>());
  op(OpDefBuilder("SequenceErase")
         .Input(ArgDef::Typed("input_sequence", "S"))
         .Input(ArgDef::AnyList("position"))
         .Output(ArgDef::Typed("output_sequence", "S"))
         .Attr("S", AttrType::kType)
         .AcceptsAnyValue("S")
         .SetShapeFn([](InferenceContext& ctx) -> Status {
           WEFT_RETURN_IF_ERROR(ExpectSequence(ctx, 0, "input_sequence"));
           return ScalarHandle(ctx);
         }),
     &SequenceEraseKernel::Create);
  op(OpDefBuilder("SequenceLength")
         .Input(ArgDef::Typed("input_sequence", "S"))
         .Output(ArgDef::Fixed("length", DataType::kInt64))
         .Attr("S", AttrType::kType)
         .AcceptsAnyValue("S")
         .SetShapeFn([](InferenceContext& ctx) -> Status {
           WEFT_RETURN_IF_ERROR(ExpectSequence(ctx, 0, "input_sequence"));
           return ScalarHandle(ctx);
         }),
     KernelFactoryFor<SequenceLengthKernel>());
  op(OpDefBuilder("SplitToSequence")
         .Input(ArgDef::Typed("input", "T"))
         .Input(ArgDef::AnyList("split"))
         .Output(ArgDef::SequenceOf("output_sequence", "T"))
         .Attr("T", AttrType::kType)
         .Attr("axis", AttrType::kInt, int64_t{0})
         .Attr("keepdims", AttrType::kInt, int64_t{1})
         .SetShapeFn(ScalarHandle),
     &SplitToSequenceKernel::Create);
  op(OpDefBuilder("ConcatFromSequence")
         .Input(ArgDef::Typed("input_sequence", "S"))
         .Output(ArgDef::ContainedIn("concat_result", "S"))
         .Attr("S", AttrType::kType)
         .Attr("axis", AttrType::kInt)
         .Attr("new_axis", AttrType::kInt, int64_t{0})
         .AcceptsAnyValue("S")
         .SetShapeFn([](InferenceContext& ctx) -> Status {
           WEFT_RETURN_IF_ERROR(ExpectSequence(ctx, 0, "input_sequence"));
           // The kernel copies elements byte by byte.
           if (ContainedType(ctx.input_dtype(0)) == DataType::kString) {
             return UnimplementedError(
                 "ConcatFromSequence of strings is not supported");
           }
           return Status::OK();
         }),
     KernelFactoryFor<ConcatFromSequenceKernel>());
  op(OpDefBuilder("Optional")
         .Input(ArgDef::Typed("input", "V"))
         .Output(ArgDef::OptionalOf("output", "V"))
         .Attr("V", AttrType::kType)
         .AcceptsAnyValue("V")
         .SetShapeFn(ScalarHandle),
     KernelFactoryFor<OptionalKernel>());
  op(OpDefBuilder("EmptyOptional")
         .Output(ArgDef::OptionalOf("output", "V"))
         .Attr("V", AttrType::kType)
         .AcceptsAnyValue("V")
         .SetShapeFn(ScalarHandle),
     KernelFactoryFor<EmptyOptionalKernel>());
  op(OpDefBuilder("OptionalHasElement")
         .Input(ArgDef::Typed("input", "O"))
         .Output(ArgDef::Fixed("output", DataType::kBool))
         .Attr("O", AttrType::kType)
         .AcceptsAnyValue("O")
         .SetShapeFn(ScalarHandle),
     KernelFactoryFor<OptionalHasElementKernel>());
  op(OpDefBuilder("OptionalGetElement")
         .Input(ArgDef::Typed("input", "O"))
         .Output(ArgDef::OptionalValue("output", "O"))
         .Attr("O", AttrType::kType)
         .AcceptsAnyValue("O")
         .SetShapeFn([](InferenceContext& ctx) -> Status {
           // A plain tensor passes through with its shape.
           if (!IsOptionalType(ctx.input_dtype(0))) {
             ctx.set_output(0, ctx.input_shape(0));
           }
           return Status::OK();
         }),
     KernelFactoryFor<OptionalGetElementKernel>());
}

}  // namespace weft::internal
