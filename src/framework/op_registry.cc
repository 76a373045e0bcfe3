#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <utility>

#include "framework/op_registry_impl.h"
#include "weft/check.h"

namespace weft {

ArgDef ArgDef::Fixed(std::string name, DataType dtype) {
  ArgDef arg;
  arg.name = std::move(name);
  arg.kind = Kind::kFixed;
  arg.fixed_type = dtype;
  return arg;
}

ArgDef ArgDef::Typed(std::string name, std::string type_attr) {
  ArgDef arg;
  arg.name = std::move(name);
  arg.kind = Kind::kTypeAttr;
  arg.type_attr = std::move(type_attr);
  return arg;
}

ArgDef ArgDef::Repeated(std::string name, std::string type_attr,
                        std::string number_attr) {
  ArgDef arg;
  arg.name = std::move(name);
  arg.kind = Kind::kRepeated;
  arg.type_attr = std::move(type_attr);
  arg.number_attr = std::move(number_attr);
  return arg;
}

ArgDef ArgDef::TypeList(std::string name, std::string list_attr) {
  ArgDef arg;
  arg.name = std::move(name);
  arg.kind = Kind::kTypeListAttr;
  arg.type_attr = std::move(list_attr);
  return arg;
}

ArgDef ArgDef::AnyList(std::string name) {
  ArgDef arg;
  arg.name = std::move(name);
  arg.kind = Kind::kAnyList;
  return arg;
}

namespace {

ArgDef Derived(std::string name, ArgDef::Kind kind, std::string type_attr) {
  ArgDef arg;
  arg.name = std::move(name);
  arg.kind = kind;
  arg.type_attr = std::move(type_attr);
  return arg;
}

}  // namespace

ArgDef ArgDef::SequenceOf(std::string name, std::string type_attr) {
  return Derived(std::move(name), Kind::kSequenceOf, std::move(type_attr));
}

ArgDef ArgDef::OptionalOf(std::string name, std::string type_attr) {
  return Derived(std::move(name), Kind::kOptionalOf, std::move(type_attr));
}

ArgDef ArgDef::ContainedIn(std::string name, std::string type_attr) {
  return Derived(std::move(name), Kind::kContainedIn, std::move(type_attr));
}

ArgDef ArgDef::OptionalValue(std::string name, std::string type_attr) {
  return Derived(std::move(name), Kind::kOptionalValue, std::move(type_attr));
}

OpDefBuilder& OpDefBuilder::Input(ArgDef arg) {
  def_.inputs.push_back(std::move(arg));
  return *this;
}

OpDefBuilder& OpDefBuilder::Output(ArgDef arg) {
  def_.outputs.push_back(std::move(arg));
  return *this;
}

OpDefBuilder& OpDefBuilder::Attr(std::string name, AttrType type,
                                 std::optional<AttrValue> default_value,
                                 std::vector<DataType> allowed_types) {
  def_.attrs.push_back(AttrDef{std::move(name), type, std::move(default_value),
                               std::move(allowed_types)});
  return *this;
}

OpDefBuilder& OpDefBuilder::AcceptsAnyValue(const std::string& name) {
  for (AttrDef& attr : def_.attrs) {
    if (attr.name == name) attr.accepts_any_value = true;
  }
  for (ArgDef& arg : def_.inputs) {
    if (arg.name == name && arg.kind == ArgDef::Kind::kAnyList) {
      arg.accepts_any_value = true;
    }
  }
  return *this;
}

OpDefBuilder& OpDefBuilder::Summary(std::string summary) {
  def_.summary = std::move(summary);
  return *this;
}

OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) {
  def_.shape_fn = std::move(fn);
  return *this;
}

OpDefBuilder& OpDefBuilder::SetCostFn(CostFn fn) {
  def_.cost_fn = std::move(fn);
  return *this;
}

OpDefBuilder& OpDefBuilder::SetBlocking(bool blocking) {
  def_.blocking = blocking;
  return *this;
}

OpDefBuilder& OpDefBuilder::SetStateful(bool stateful) {
  def_.stateful = stateful;
  return *this;
}

InferenceContext::InferenceContext(
    const std::string& node_name, const AttrMap& attrs,
    std::span<const DataType> input_dtypes,
    std::span<const PartialShape> input_shapes,
    std::span<const Tensor* const> input_constants, int num_outputs)
    : node_name_(node_name),
      attrs_(attrs),
      input_dtypes_(input_dtypes),
      input_shapes_(input_shapes),
      input_constants_(input_constants),
      output_shapes_(num_outputs) {}

namespace internal {
namespace {

const AttrDef* FindAttrDef(const OpDef& def, const std::string& name) {
  for (const AttrDef& attr : def.attrs) {
    if (attr.name == name) return &attr;
  }
  return nullptr;
}

// Every attribute an argument refers to is declared with the right type.
Status ValidateOpDef(const OpDef& def) {
  if (def.name.empty()) return InvalidArgumentError("an op has no name");
  std::set<std::string> names;
  for (const AttrDef& attr : def.attrs) {
    if (!names.insert(attr.name).second) {
      return InvalidArgumentError("op '" + def.name + "' declares attribute '" +
                                  attr.name + "' twice");
    }
    if (attr.default_value && attr.default_value->type() != attr.type) {
      return InvalidArgumentError(
          "op '" + def.name + "': default of attribute '" + attr.name +
          "' is a " + AttrTypeName(attr.default_value->type()) + ", declared " +
          AttrTypeName(attr.type));
    }
  }
  auto check_arg = [&](const ArgDef& arg, bool is_output) -> Status {
    auto need = [&](const std::string& attr_name, AttrType type) -> Status {
      const AttrDef* attr = FindAttrDef(def, attr_name);
      if (attr == nullptr || attr->type != type) {
        return InvalidArgumentError(
            "op '" + def.name + "': argument '" + arg.name +
            "' refers to attribute '" + attr_name + "', which is not a " +
            AttrTypeName(type) + " attribute of the op");
      }
      return Status::OK();
    };
    switch (arg.kind) {
      case ArgDef::Kind::kFixed:
        return Status::OK();
      case ArgDef::Kind::kTypeAttr:
        return need(arg.type_attr, AttrType::kType);
      case ArgDef::Kind::kRepeated:
        WEFT_RETURN_IF_ERROR(need(arg.type_attr, AttrType::kType));
        return need(arg.number_attr, AttrType::kInt);
      case ArgDef::Kind::kTypeListAttr:
        return need(arg.type_attr, AttrType::kListType);
      case ArgDef::Kind::kAnyList:
        if (is_output) {
          return InvalidArgumentError("op '" + def.name + "': output '" +
                                      arg.name +
                                      "' cannot be an any-type list");
        }
        return Status::OK();
      case ArgDef::Kind::kSequenceOf:
      case ArgDef::Kind::kOptionalOf:
      case ArgDef::Kind::kContainedIn:
      case ArgDef::Kind::kOptionalValue:
        if (!is_output) {
          return InvalidArgumentError("op '" + def.name + "': input '" +
                                      arg.name +
                                      "' cannot have a derived dtype");
        }
        return need(arg.type_attr, AttrType::kType);
    }
    return Status::OK();
  };
  for (const ArgDef& arg : def.inputs) {
    WEFT_RETURN_IF_ERROR(check_arg(arg, false));
  }
  for (const ArgDef& arg : def.outputs) {
    WEFT_RETURN_IF_ERROR(check_arg(arg, true));
  }
  return Status::OK();
}

}  // namespace

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();  // Never destroyed: used until exit.
    RegisterBuiltinOps(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::MarkFusableActivation(const std::string& op) {
  WriterLock lock(mu_);
  fusable_activations_.insert(op);
}

bool OpRegistry::IsFusableActivation(std::string_view op) const {
  ReaderLock lock(mu_);
  return fusable_activations_.find(op) != fusable_activations_.end();
}

void OpRegistry::SetChannelsLastConv(const std::string& op,
                                     ChannelsLastConvFn fn) {
  WriterLock lock(mu_);
  channels_last_convs_[op] =
      std::make_unique<ChannelsLastConvFn>(std::move(fn));
}

const ChannelsLastConvFn* OpRegistry::FindChannelsLastConv(
    std::string_view op) const {
  ReaderLock lock(mu_);
  auto it = channels_last_convs_.find(op);
  return it == channels_last_convs_.end() ? nullptr : it->second.get();
}

void OpRegistry::SetChannelsLastOnlyWithDepthwise(bool only) {
  WriterLock lock(mu_);
  channels_last_only_with_depthwise_ = only;
}

bool OpRegistry::ChannelsLastOnlyWithDepthwise() const {
  ReaderLock lock(mu_);
  return channels_last_only_with_depthwise_;
}

void OpRegistry::AddSummaries(std::span<const OpSummary> summaries) {
  WriterLock lock(mu_);
  for (const OpSummary& summary : summaries) {
    summaries_.emplace(std::string(summary.op), std::string(summary.text));
  }
}

std::vector<std::string> OpRegistry::OpsWithSummary() const {
  ReaderLock lock(mu_);
  std::vector<std::string> ops;
  ops.reserve(summaries_.size());
  for (const auto& entry : summaries_) ops.push_back(entry.first);
  return ops;
}

Status OpRegistry::RegisterOp(OpDef def) {
  WEFT_RETURN_IF_ERROR(ValidateOpDef(def));
  WriterLock lock(mu_);
  if (ops_.count(def.name) != 0) {
    return AlreadyExistsError("op '" + def.name + "' is already registered");
  }
  if (def.summary.empty()) {
    if (auto it = summaries_.find(def.name); it != summaries_.end()) {
      def.summary = it->second;
    }
  }
  std::string name = def.name;
  ops_.emplace(std::move(name), std::make_unique<OpDef>(std::move(def)));
  return Status::OK();
}

Status OpRegistry::RegisterKernel(const std::string& op,
                                  KernelFactory factory) {
  WriterLock lock(mu_);
  if (ops_.count(op) == 0) {
    return NotFoundError("cannot register a kernel for op '" + op +
                         "': no such op is registered");
  }
  if (kernels_.count(op) != 0) {
    return AlreadyExistsError("op '" + op + "' already has a kernel");
  }
  kernels_.emplace(op, std::make_unique<KernelFactory>(std::move(factory)));
  return Status::OK();
}

Status OpRegistry::RegisterCustomFunction(const std::string& name,
                                          CustomFunction fn) {
  if (name.empty()) {
    return InvalidArgumentError("a custom function needs a name");
  }
  WriterLock lock(mu_);
  if (functions_.count(name) != 0) {
    return AlreadyExistsError("custom function '" + name +
                              "' is already registered");
  }
  functions_.emplace(name, std::make_unique<CustomFunction>(std::move(fn)));
  return Status::OK();
}

const OpDef* OpRegistry::FindOp(std::string_view name) const {
  ReaderLock lock(mu_);
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<const OpDef*> OpRegistry::AllOps() const {
  ReaderLock lock(mu_);
  std::vector<const OpDef*> out;
  out.reserve(ops_.size());
  for (const auto& [name, def] : ops_) out.push_back(def.get());
  return out;  // By name: ops_ is ordered.
}

const KernelFactory* OpRegistry::FindKernel(const std::string& op) const {
  ReaderLock lock(mu_);
  auto it = kernels_.find(op);
  return it == kernels_.end() ? nullptr : it->second.get();
}

const CustomFunction* OpRegistry::FindCustomFunction(
    const std::string& name) const {
  ReaderLock lock(mu_);
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second.get();
}

void CheckRegistered(const Status& status) {
  WEFT_CHECK(status.ok(),
             "registering a built-in op failed: " + status.ToString());
}

}  // namespace internal

Status RegisterOp(OpDef def) {
  return internal::OpRegistry::Global().RegisterOp(std::move(def));
}

const OpDef* FindOpDef(std::string_view name) {
  return internal::OpRegistry::Global().FindOp(name);
}

std::vector<const OpDef*> RegisteredOps() {
  return internal::OpRegistry::Global().AllOps();
}

Status RegisterKernel(const std::string& op, KernelFactory factory) {
  return internal::OpRegistry::Global().RegisterKernel(op, std::move(factory));
}

const KernelFactory* FindKernelFactory(const std::string& op) {
  return internal::OpRegistry::Global().FindKernel(op);
}

Status RegisterCustomFunction(const std::string& name, CustomFunction fn) {
  return internal::OpRegistry::Global().RegisterCustomFunction(name,
                                                               std::move(fn));
}

StatusOr<PartialShape> BroadcastShapes(const PartialShape& a,
                                       const PartialShape& b) {
  if (!a.rank_known() || !b.rank_known()) return PartialShape::UnknownRank();
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i;
    const int ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a.dim(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim(ib) : 1;
    if (da == 1) {
      out[i] = db;
    } else if (db == 1 || da == db) {
      out[i] = da;
    } else if (da < 0 || db < 0) {
      out[i] = da < 0 ? db : da;  // Unknown matches anything.
    } else {
      return InvalidArgumentError("shapes " + a.ToString() + " and " +
                                  b.ToString() +
                                  " cannot be broadcast together");
    }
  }
  return PartialShape(std::move(out));
}

namespace shape_fns {

// Both read inputs that an op with only optional (AnyList) inputs may not
// have been given: a node without them is refused, not read past its end.
Status SameAsInput0(InferenceContext& ctx) {
  if (ctx.num_inputs() < 1) {
    return InvalidArgumentError("needs at least one input, got none");
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    ctx.set_output(i, ctx.input_shape(0));
  }
  return Status::OK();
}

Status Scalar(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, Shape{});
  return Status::OK();
}

Status Broadcast(InferenceContext& ctx) {
  if (ctx.num_inputs() < 2) {
    return InvalidArgumentError("needs two inputs, got " +
                                std::to_string(ctx.num_inputs()));
  }
  WEFT_ASSIGN_OR_RETURN(
      PartialShape shape,
      BroadcastShapes(ctx.input_shape(0), ctx.input_shape(1)));
  ctx.set_output(0, std::move(shape));
  return Status::OK();
}

}  // namespace shape_fns
}  // namespace weft
