// CustomOp: a node backed by a registered C++ callable (weft's
// tf.py_function). Attributes: function (its registered name), Tout (output
// dtypes), output_shapes (optional), blocking (it waits rather than
// computes), inter_op_bound (with blocking: it also computes, so a Run runs
// at most as many such nodes at once as it has inter-op threads — Python's
// py_function, whose body holds the GIL or releases it).
#include "framework/op_registry_impl.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

class CustomOpKernel : public OpKernel {
 public:
  explicit CustomOpKernel(const CustomFunction* fn) : fn_(fn) {}
  Status Compute(KernelContext& ctx) const override { return (*fn_)(ctx); }

 private:
  const CustomFunction* fn_;  // Registered functions are never removed.
};

StatusOr<std::unique_ptr<OpKernel>> MakeCustomOpKernel(
    const KernelConstruction& c) {
  const std::string& name = c.attr<std::string>("function");
  const CustomFunction* fn = OpRegistry::Global().FindCustomFunction(name);
  if (fn == nullptr) {
    return NotFoundError("custom function '" + name +
                         "' is not registered (weft::RegisterCustomFunction)");
  }
  return std::unique_ptr<OpKernel>(std::make_unique<CustomOpKernel>(fn));
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"CustomOp", "calls a C++ function registered by name"},
};

}  // namespace

void RegisterCustomOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("CustomOp")
          .Input(ArgDef::AnyList("inputs"))
          .Output(ArgDef::TypeList("outputs", "Tout"))
          .Attr("function", AttrType::kString)
          .Attr("Tout", AttrType::kListType, std::vector<DataType>{})
          .Attr("output_shapes", AttrType::kListShape,
                std::vector<PartialShape>{})
          .Attr("blocking", AttrType::kBool, false)
          .Attr("inter_op_bound", AttrType::kBool, false)
          .SetStateful()
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const auto& shapes =
                ctx.attr<std::vector<PartialShape>>("output_shapes");
            if (!shapes.empty() &&
                static_cast<int>(shapes.size()) != ctx.num_outputs()) {
              return InvalidArgumentError("attribute 'output_shapes' has " +
                                          std::to_string(shapes.size()) +
                                          " entries but 'Tout' has " +
                                          std::to_string(ctx.num_outputs()));
            }
            for (size_t i = 0; i < shapes.size(); ++i) {
              ctx.set_output(static_cast<int>(i), shapes[i]);
            }
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel("CustomOp", MakeCustomOpKernel));
}

}  // namespace weft::internal
