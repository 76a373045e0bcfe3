// Placeholder, Const, Identity, CheckInRange, Pad, CenterCropPad and
// Dropout (inference: the data passes through, the mask is all true).
#include <cstring>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// Never runs: a Run must feed every placeholder it needs (ExecutionPlan
// reports a missing feed before anything starts).
class PlaceholderKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    return InvalidArgumentError("you must feed a value for placeholder '" +
                                ctx.node_name() + "'");
  }
};

class ConstKernel : public OpKernel {
 public:
  explicit ConstKernel(const KernelConstruction& c)
      : value_(c.attr<Tensor>("value")) {}
  Status Compute(KernelContext& ctx) const override {
    return ctx.SetOutput(0, value_);  // Shared, never mutated.
  }

 private:
  Tensor value_;
};

class IdentityKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    return ctx.SetOutput(0, ctx.input(0));
  }
};

// An integer tensor passed on when every element lies in [low, high], else
// an error that says what the tensor is (`what`, written by whoever made
// the node: an ONNX expansion names the node and input a user wrote) and
// which element is out. Placed before the nodes that would index with the
// values, so that a bad input is named where it enters.
class CheckInRangeKernel : public OpKernel {
 public:
  explicit CheckInRangeKernel(const KernelConstruction& c)
      : what_(c.attr<std::string>("what")) {}

  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(const int64_t low, Bound(ctx.input(1), "low"));
    WEFT_ASSIGN_OR_RETURN(const int64_t high, Bound(ctx.input(2), "high"));
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> values,
                          IntegerValues(ctx.input(0), "input"));
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] < low || values[i] > high) {
        return InvalidArgumentError(what_ + ": element " + std::to_string(i) +
                                    " is " + std::to_string(values[i]) +
                                    ", outside [" + std::to_string(low) + ", " +
                                    std::to_string(high) + "]");
      }
    }
    return ctx.SetOutput(0, ctx.input(0));
  }

 private:
  static StatusOr<int64_t> Bound(const Tensor& t, const std::string& what) {
    if (t.NumElements() != 1) {
      return InvalidArgumentError(what + " must hold one value, got shape " +
                                  t.shape().ToString());
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> value, IntegerValues(t, what));
    return value[0];
  }

  const std::string what_;
};

// --- Pad ---------------------------------------------------------------------

// Pad (constant, reflect or edge): pads from input 1 when given (ONNX opset
// 11+), else the attribute; the constant value from input 2 or `value`.
// ONNX Pad's pads for the axes its axes input lists (begins, then ends),
// as pads for every axis of a rank-`rank` tensor (0 for the others).
StatusOr<std::vector<int64_t>> PadsOfEveryAxis(const std::vector<int64_t>& pads,
                                               const Tensor& axes_input,
                                               int rank) {
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                        IntsFromTensor(axes_input, "axes"));
  const size_t count = axes.size();
  if (pads.size() != 2 * count) {
    return InvalidArgumentError("pads has " + std::to_string(pads.size()) +
                                " entries for " + std::to_string(count) +
                                " axes");
  }
  std::vector<int64_t> full(2 * static_cast<size_t>(rank), 0);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < count; ++i) {
    WEFT_ASSIGN_OR_RETURN(const int axis, NormalizeAxis(axes[i], rank));
    if (seen[static_cast<size_t>(axis)]) {
      return InvalidArgumentError("axes lists axis " + std::to_string(axis) +
                                  " twice");
    }
    seen[static_cast<size_t>(axis)] = true;
    full[static_cast<size_t>(axis)] = pads[i];
    full[static_cast<size_t>(axis) + static_cast<size_t>(rank)] =
        pads[i + count];
  }
  return full;
}

class PadKernel : public OpKernel {
 public:
  explicit PadKernel(const KernelConstruction& c)
      : mode_(c.attr<std::string>("mode")),
        pads_(c.attr<std::vector<int64_t>>("pads")),
        value_(c.attr<double>("value")),
        has_value_(c.attr<bool>("has_value")),
        has_axes_(c.attr<bool>("has_axes")) {}
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& s = x.shape();
    const int rank = s.rank();
    std::vector<int64_t> pads = pads_;
    if (ctx.num_inputs() > 1) {
      WEFT_ASSIGN_OR_RETURN(pads, IntsFromTensor(ctx.input(1), "pads"));
    }
    if (has_axes_) {
      WEFT_ASSIGN_OR_RETURN(
          pads, PadsOfEveryAxis(pads, ctx.input(ctx.num_inputs() - 1), rank));
    }
    if (static_cast<int>(pads.size()) != 2 * rank) {
      return InvalidArgumentError("pads has " + std::to_string(pads.size()) +
                                  " entries for rank " + std::to_string(rank));
    }
    std::vector<int64_t> dims(rank);
    for (int d = 0; d < rank; ++d) {
      if (__builtin_add_overflow(s.dim(d), pads[d], &dims[d]) ||
          __builtin_add_overflow(dims[d], pads[d + rank], &dims[d])) {
        return InvalidArgumentError("pads make dimension " + std::to_string(d) +
                                    " overflow");
      }
      if (dims[d] < 0) {
        return InvalidArgumentError("pads make dimension " + std::to_string(d) +
                                    " negative");
      }
      if (mode_ != "constant" && s.dim(d) == 0 && dims[d] > 0) {
        return InvalidArgumentError("cannot " + mode_ +
                                    "-pad an empty dimension");
      }
      if (mode_ == "reflect" &&
          (pads[d] >= s.dim(d) || pads[d + rank] >= s.dim(d)) &&
          (pads[d] > 0 || pads[d + rank] > 0)) {
        return InvalidArgumentError(
            "reflect pads must be smaller than the "
            "dimension they pad");
      }
    }
    if (mode_ != "constant" && mode_ != "reflect" && mode_ != "edge" &&
        mode_ != "wrap") {
      return InvalidArgumentError(
          "mode \"" + mode_ + "\" is not one of constant, reflect, edge, wrap");
    }
    Shape out_shape(dims);
    if (!out_shape.IsValid())
      return InvalidArgumentError("padded shape overflows");
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, out_shape));
    // The constant is input 2 unless the node says it has none (an ONNX
    // Pad with axes but no constant_value).
    const bool value_given = has_axes_ ? has_value_ : ctx.num_inputs() > 2;
    const Tensor* constant =
        value_given && ctx.input(2).NumElements() > 0 ? &ctx.input(2) : nullptr;
    return DispatchDtype(x.dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      T fill = static_cast<T>(value_);
      if (constant != nullptr) {
        if (constant->dtype() != x.dtype()) {
          return InvalidArgumentError(
              "constant_value must have the data's dtype");
        }
        fill = *constant->data<T>();
      }
      const T* px = x.data<T>();
      T* py = y->data<T>();
      std::vector<int64_t> strides(rank, 1);
      for (int d = rank - 2; d >= 0; --d)
        strides[d] = strides[d + 1] * s.dim(d + 1);
      const bool reflect = mode_ == "reflect", edge = mode_ == "edge",
                 wrap = mode_ == "wrap";
      ctx.ParallelFor(y->NumElements(), 1.0, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          int64_t rest = o, offset = 0;
          bool inside = true;
          for (int d = rank - 1; d >= 0; --d) {
            int64_t i = rest % dims[d] - pads[d];
            rest /= dims[d];
            const int64_t len = s.dim(d);
            if (i < 0 || i >= len) {
              if (reflect) {
                i = i < 0 ? -i : 2 * (len - 1) - i;
              } else if (wrap) {  // Around, as often as the pads ask.
                i = (i % len + len) % len;
              } else if (edge) {
                i = i < 0 ? 0 : len - 1;
              } else {
                inside = false;
                break;
              }
            }
            offset += i * strides[d];
          }
          py[o] = inside ? px[offset] : fill;
        }
      });
      return Status::OK();
    });
  }

 private:
  const std::string mode_;
  const std::vector<int64_t> pads_;
  const double value_;
  const bool has_value_, has_axes_;
};

// CenterCropPad (ONNX 18): each listed axis (all when `axes` is empty)
// cropped or zero-padded to its target length, centred: of an odd
// difference, the extra element goes at the end.
class CenterCropPadKernel : public OpKernel {
 public:
  explicit CenterCropPadKernel(const KernelConstruction& c)
      : axes_(c.attr<std::vector<int64_t>>("axes")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int rank = x.shape().rank();
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> target,
                          IntsFromTensor(ctx.input(1), "shape"));
    std::vector<int64_t> axes = axes_;
    if (axes.empty()) {
      for (int d = 0; d < rank; ++d) axes.push_back(d);
    }
    if (target.size() != axes.size()) {
      return InvalidArgumentError("shape has " + std::to_string(target.size()) +
                                  " values for " + std::to_string(axes.size()) +
                                  " axes");
    }
    std::vector<int64_t> dims = x.shape().dims();
    // Per axis: where the output's index 0 reads the input (negative: in
    // the padding before it).
    std::vector<int64_t> shift(static_cast<size_t>(rank), 0);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t i = 0; i < axes.size(); ++i) {
      WEFT_ASSIGN_OR_RETURN(const int d, NormalizeAxis(axes[i], rank));
      if (seen[d]) {
        return InvalidArgumentError("axes lists axis " + std::to_string(d) +
                                    " twice");
      }
      seen[d] = true;
      if (target[i] < 0) {
        return InvalidArgumentError("shape[" + std::to_string(i) + "] is " +
                                    std::to_string(target[i]) +
                                    ": it must be >= 0");
      }
      shift[d] = target[i] <= dims[d] ? (dims[d] - target[i]) / 2
                                      : -((target[i] - dims[d]) / 2);
      dims[d] = target[i];
    }
    const Shape out_shape(dims);
    if (!out_shape.IsValid()) {
      return InvalidArgumentError("the output shape " + out_shape.ToString() +
                                  " is too large");
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, out_shape));
    const Shape& in = x.shape();
    std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
    for (int d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * in.dim(d + 1);
    const size_t width = DataTypeSize(x.dtype());
    const auto* px = static_cast<const uint8_t*>(x.raw_data());
    auto* py = static_cast<uint8_t*>(y->raw_data());
    // Element by element: a crop or pad of an image-sized tensor, once.
    ctx.ParallelFor(y->NumElements(), 1.0, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        int64_t rest = o, offset = 0;
        bool inside = true;
        for (int d = rank - 1; d >= 0 && inside; --d) {
          const int64_t i = rest % dims[d] + shift[d];
          rest /= dims[d];
          inside = i >= 0 && i < in.dim(d);
          offset += i * strides[d];
        }
        if (inside) {
          std::memcpy(py + o * width, px + offset * width, width);
        }
      }
    });
    return Status::OK();
  }

 private:
  const std::vector<int64_t> axes_;
};

// Dropout in inference: the input, and a mask of all true.
class DropoutKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_RETURN_IF_ERROR(ctx.SetOutput(0, x));
    if (ctx.num_outputs() > 1) {
      WEFT_ASSIGN_OR_RETURN(Tensor * mask,
                            ctx.AllocateOutputUninitialized(1, x.shape()));
      std::fill(mask->data<bool>(), mask->data<bool>() + mask->NumElements(),
                true);
    }
    return Status::OK();
  }
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"CenterCropPad", "crop or zero-pad each axis to a length, centred"},
    {"CheckInRange",
     "its integer input, unchanged, when every element lies in [low, high]; "
     "else an error naming the input (`what`) and the element"},
    {"Const", "a constant tensor given as an attribute"},
    {"Dropout", "identity at inference; optional mask of ones"},
    {"Identity", "its input, unchanged"},
    {"Pad", "pad with a constant, reflection or edge values"},
    {"Placeholder", "an input that each Run feeds"},
};

}  // namespace

void RegisterArrayOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("CenterCropPad")
          .Input(ArgDef::Typed("input_data", "T"))
          .Input(ArgDef::Typed("shape", "Tind"))
          .Output(ArgDef::Typed("output_data", "T"))
          .Attr("T", AttrType::kType, std::nullopt,
                {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                 DataType::kInt8, DataType::kInt16, DataType::kInt32,
                 DataType::kInt64, DataType::kUInt8, DataType::kUInt16,
                 DataType::kUInt32, DataType::kUInt64, DataType::kBool})
          .Attr("Tind", AttrType::kType, std::nullopt,
                {DataType::kInt32, DataType::kInt64})
          .Attr("axes", AttrType::kListInt, std::vector<int64_t>{})
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "CenterCropPad", KernelFactoryFor<CenterCropPadKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Pad")
          .Input(ArgDef::Typed("data", "T"))
          .Input(ArgDef::AnyList("pads_and_value"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType)
          .Attr("mode", AttrType::kString, std::string("constant"))
          .Attr("pads", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("value", AttrType::kFloat, 0.0)
          // Which optional inputs follow the pads, when the last is axes
          // (ONNX 18): the constant (if has_value), then the axes.
          .Attr("has_value", AttrType::kBool, false)
          .Attr("has_axes", AttrType::kBool, false)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Pad", KernelFactoryFor<PadKernel>()));
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("Dropout")
                              .Input(ArgDef::Typed("data", "T"))
                              .Input(ArgDef::AnyList("ratio_and_training_mode"))
                              .Output(ArgDef::Typed("output", "T"))
                              .Output(ArgDef::Fixed("mask", DataType::kBool))
                              .Attr("T", AttrType::kType)
                              .SetShapeFn([](InferenceContext& ctx) -> Status {
                                ctx.set_output(0, ctx.input_shape(0));
                                ctx.set_output(1, ctx.input_shape(0));
                                return Status::OK();
                              })
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("Dropout", KernelFactoryFor<DropoutKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Placeholder")
          .Output(ArgDef::Typed("output", "dtype"))
          .Attr("dtype", AttrType::kType)
          .Attr("shape", AttrType::kShape, PartialShape::UnknownRank())
          .AcceptsAnyValue("dtype")
          .SetShapeFn([](InferenceContext& ctx) {
            ctx.set_output(0, ctx.attr<PartialShape>("shape"));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "Placeholder", KernelFactoryFor<PlaceholderKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Const")
          .Output(ArgDef::Typed("output", "dtype"))
          .Attr("value", AttrType::kTensor)
          .Attr("dtype", AttrType::kType)
          .AcceptsAnyValue("dtype")
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const Tensor& value = ctx.attr<Tensor>("value");
            if (!value.IsInitialized()) {
              return InvalidArgumentError("attribute 'value' is empty");
            }
            if (value.dtype() != ctx.attr<DataType>("dtype")) {
              return InvalidArgumentError(
                  std::string("attribute 'value' is ") +
                  DataTypeName(value.dtype()) + " but 'dtype' is " +
                  DataTypeName(ctx.attr<DataType>("dtype")));
            }
            ctx.set_output(0, value.shape());
            return Status::OK();
          })
          .SetCostFn([](const InferenceContext&) { return 10.0; })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Const", KernelFactoryFor<ConstKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Identity")
          .Input(ArgDef::Typed("input", "T"))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType)
          .AcceptsAnyValue("T")
          .SetShapeFn(shape_fns::SameAsInput0)
          .SetCostFn([](const InferenceContext&) { return 10.0; })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("Identity", KernelFactoryFor<IdentityKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("CheckInRange")
          .Input(ArgDef::Typed("input", "T"))
          .Input(ArgDef::Fixed("low", DataType::kInt64))
          .Input(ArgDef::Fixed("high", DataType::kInt64))
          .Output(ArgDef::Typed("output", "T"))
          .Attr("T", AttrType::kType, std::nullopt,
                {DataType::kInt32, DataType::kInt64})
          .Attr("what", AttrType::kString, std::string("input"))
          .SetShapeFn(shape_fns::SameAsInput0)
          .SetCostFn([](const InferenceContext&) { return 10.0; })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "CheckInRange", KernelFactoryFor<CheckInRangeKernel>()));
}

}  // namespace weft::internal
