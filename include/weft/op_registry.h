// Op definitions: what an op takes and gives, its attributes, shape
// function, cost estimate and flags. User code registers its own ops (and
// kernels, see kernel.h) without touching weft's sources:
//
//   weft::Status s = weft::RegisterOp(
//       weft::OpDefBuilder("Square")
//           .Input(weft::ArgDef::Typed("x", "T"))
//           .Output(weft::ArgDef::Typed("y", "T"))
//           .Attr("T", weft::AttrType::kType, std::nullopt,
//                 {weft::DataType::kFloat32})
//           .SetShapeFn(weft::shape_fns::SameAsInput0)
//           .Build());
#ifndef WEFT_OP_REGISTRY_H_
#define WEFT_OP_REGISTRY_H_

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weft/attr.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

// One declared input or output of an op.
struct ArgDef {
  enum class Kind {
    kFixed,         // one tensor of a fixed dtype
    kTypeAttr,      // one tensor whose dtype is the type attribute type_attr
    kRepeated,      // number_attr tensors, all of dtype type_attr
    kTypeListAttr,  // one tensor per entry of the list(type) attribute
    kAnyList,       // any number of tensors of any dtype (inputs only)
    // Outputs only, from the type attribute type_attr (weft/tensor.h):
    kSequenceOf,   // sequence(type_attr)
    kOptionalOf,   // optional(type_attr)
    kContainedIn,  // ContainedType(type_attr): what the container holds
    // What type_attr's value holds when it is an optional; any other type
    // is its own value (ONNX's OptionalGetElement from opset 18).
    kOptionalValue,
  };
  std::string name;
  Kind kind = Kind::kFixed;
  DataType fixed_type = DataType::kFloat32;
  std::string type_attr;
  std::string number_attr;
  // kAnyList inputs only: whether string, bfloat16 and container values
  // may come through too (OpDefBuilder::AcceptsAnyValue); off, such an
  // input is refused at compile time.
  bool accepts_any_value = false;

  static ArgDef Fixed(std::string name, DataType dtype);
  static ArgDef Typed(std::string name, std::string type_attr);
  static ArgDef Repeated(std::string name, std::string type_attr,
                         std::string number_attr);
  static ArgDef TypeList(std::string name, std::string list_attr);
  static ArgDef AnyList(std::string name);
  static ArgDef SequenceOf(std::string name, std::string type_attr);
  static ArgDef OptionalOf(std::string name, std::string type_attr);
  static ArgDef ContainedIn(std::string name, std::string type_attr);
  static ArgDef OptionalValue(std::string name, std::string type_attr);
};

struct AttrDef {
  std::string name;
  AttrType type = AttrType::kInt;
  // Used when a node does not set the attribute; none means required.
  std::optional<AttrValue> default_value;
  // For kType / kListType: the tensor dtypes allowed (empty: any).
  std::vector<DataType> allowed_types;
  // For kType / kListType: whether string, bfloat16 and container dtypes
  // (sequences, optionals) are allowed too, whatever allowed_types says:
  // for ops that pass values along without reading their elements
  // (Identity, If, the sequence ops). Off, an op sees strings and bfloat16
  // only where allowed_types lists them, and never a container.
  bool accepts_any_value = false;
};

// What a shape function sees: the node's input dtypes and (partial) shapes,
// its attributes with defaults filled in and already type-checked.
class InferenceContext {
 public:
  // Views what it is given: valid while the arguments are.
  InferenceContext(const std::string& node_name, const AttrMap& attrs,
                   std::span<const DataType> input_dtypes,
                   std::span<const PartialShape> input_shapes,
                   std::span<const Tensor* const> input_constants,
                   int num_outputs);

  const std::string& node_name() const { return node_name_; }
  int num_inputs() const { return static_cast<int>(input_shapes_.size()); }
  DataType input_dtype(int i) const { return input_dtypes_[i]; }
  const PartialShape& input_shape(int i) const { return input_shapes_[i]; }
  // The value of input i when it comes straight from a Const, else null.
  const Tensor* input_constant(int i) const { return input_constants_[i]; }
  const AttrMap& attrs() const { return attrs_; }
  // Attribute `name`, which the op declares with C++ type T. Asking for one
  // it does not declare, or as another type, returns an empty T and makes
  // status() (and so compiling the graph) an error naming the attribute.
  template <class T>
  const T& attr(const std::string& name) const {
    return AttrOrRecordError<T>(attrs_, name, &status_);
  }
  // The first error attr() met.
  const Status& status() const { return status_; }

  int num_outputs() const { return static_cast<int>(output_shapes_.size()); }
  void set_output(int i, PartialShape shape) {
    output_shapes_[i] = std::move(shape);
  }
  const std::vector<PartialShape>& output_shapes() const {
    return output_shapes_;
  }

 private:
  const std::string& node_name_;
  const AttrMap& attrs_;
  std::span<const DataType> input_dtypes_;
  std::span<const PartialShape> input_shapes_;
  std::span<const Tensor* const> input_constants_;
  std::vector<PartialShape> output_shapes_;
  mutable Status status_;
};

using ShapeFn = std::function<Status(InferenceContext&)>;
// Estimated nanoseconds for one execution, from what is known at compile
// time. The runtime refines it by measurement.
using CostFn = std::function<double(const InferenceContext&)>;

struct OpDef {
  std::string name;
  // One line for `weft ops` and docs/ops.md. weft's own ops take theirs
  // from their family's table (kSummaries in each src/ops/ file) when they
  // leave it empty.
  std::string summary;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  ShapeFn shape_fn;  // Empty: every output has unknown shape.
  CostFn cost_fn;    // Empty: about 1 ns per output element.
  // Waits rather than computes (a queue, a sleep, I/O): the runtime must not
  // let it hold an inter-op worker.
  bool blocking = false;
  // Has effects or state beyond its outputs: never pruned or merged.
  bool stateful = false;
};

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name) { def_.name = std::move(name); }
  OpDefBuilder& Input(ArgDef arg);
  OpDefBuilder& Output(ArgDef arg);
  OpDefBuilder& Attr(std::string name, AttrType type,
                     std::optional<AttrValue> default_value = std::nullopt,
                     std::vector<DataType> allowed_types = {});
  // Lets the type attribute or any-type list input `name`, declared
  // before, take string, bfloat16 and container dtypes
  // (AttrDef::accepts_any_value, ArgDef::accepts_any_value).
  OpDefBuilder& AcceptsAnyValue(const std::string& name);
  OpDefBuilder& SetShapeFn(ShapeFn fn);
  OpDefBuilder& SetCostFn(CostFn fn);
  OpDefBuilder& SetBlocking(bool blocking = true);
  OpDefBuilder& SetStateful(bool stateful = true);
  OpDefBuilder& Summary(std::string summary);
  OpDef Build() { return std::move(def_); }

 private:
  OpDef def_;
};

// Registers an op for the whole process. AlreadyExists if the name is taken;
// InvalidArgument if the definition refers to attributes it does not declare.
Status RegisterOp(OpDef def);

// The registered op, or null. The pointer stays valid for the process.
const OpDef* FindOpDef(std::string_view name);

// Every registered op, by name. The pointers stay valid for the process.
std::vector<const OpDef*> RegisteredOps();

// Shape functions shared by many ops.
namespace shape_fns {
Status SameAsInput0(InferenceContext& ctx);
Status Scalar(InferenceContext& ctx);
// NumPy broadcasting of inputs 0 and 1.
Status Broadcast(InferenceContext& ctx);
}  // namespace shape_fns

// NumPy broadcasting of two partial shapes; fails naming both shapes.
StatusOr<PartialShape> BroadcastShapes(const PartialShape& a,
                                       const PartialShape& b);

}  // namespace weft

#endif  // WEFT_OP_REGISTRY_H_
