// Placeholder, Const, Identity.
#include "framework/op_registry_impl.h"
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

}  // namespace

void RegisterArrayOps(OpRegistry& registry) {
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
}

}  // namespace weft::internal
