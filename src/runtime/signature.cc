#include "runtime/signature.h"

#include <algorithm>
#include <string>

#include "framework/suggest.h"

namespace weft::internal {
namespace {

const AttrDef* FindAttr(const OpDef& def, const std::string& name) {
  for (const AttrDef& attr : def.attrs) {
    if (attr.name == name) return &attr;
  }
  return nullptr;
}

std::string TypeList(const std::vector<DataType>& types) {
  std::string out;
  for (DataType t : types) {
    if (!out.empty()) out += ", ";
    out += DataTypeName(t);
  }
  return out;
}

bool IsVariadic(const ArgDef& arg) {
  return arg.kind == ArgDef::Kind::kRepeated ||
         arg.kind == ArgDef::Kind::kTypeListAttr ||
         arg.kind == ArgDef::Kind::kAnyList;
}

// Sets a type attribute from an input's dtype, or checks it against the value
// already there.
Status BindType(AttrMap& attrs, const std::string& attr, DataType dtype,
                const std::string& input_name) {
  auto it = attrs.find(attr);
  if (it == attrs.end()) {
    attrs[attr] = dtype;
    return Status::OK();
  }
  const DataType bound = *it->second.get_if<DataType>();
  if (bound != dtype) {
    return InvalidArgumentError("dtype mismatch: input '" + input_name +
                                "' is " + DataTypeName(dtype) + " but " + attr +
                                " is " + DataTypeName(bound));
  }
  return Status::OK();
}

}  // namespace

std::optional<AttrValue> CoerceAttr(const AttrValue& value, AttrType type) {
  if (value.type() == type) return value;
  if (type == AttrType::kInt) {
    if (const bool* v = value.get_if<bool>()) {
      return AttrValue(static_cast<int64_t>(*v ? 1 : 0));
    }
  }
  if (type == AttrType::kFloat) {
    if (const int64_t* v = value.get_if<int64_t>()) {
      return AttrValue(static_cast<double>(*v));
    }
  }
  if (type == AttrType::kListFloat) {
    if (const auto* v = value.get_if<std::vector<int64_t>>()) {
      return AttrValue(std::vector<double>(v->begin(), v->end()));
    }
  }
  // An empty list literal may be typed as any list.
  auto empty_list = [&]() {
    return std::visit(
        [](const auto& v) {
          if constexpr (requires {
                          v.empty();
                          v.begin();
                        }) {
            return v.empty();
          } else {
            return false;
          }
        },
        value.variant());
  };
  const bool is_list = value.type() >= AttrType::kListInt;
  if (is_list && type >= AttrType::kListInt && empty_list()) {
    switch (type) {
      case AttrType::kListInt:
        return AttrValue(std::vector<int64_t>{});
      case AttrType::kListFloat:
        return AttrValue(std::vector<double>{});
      case AttrType::kListBool:
        return AttrValue(std::vector<bool>{});
      case AttrType::kListString:
        return AttrValue(std::vector<std::string>{});
      case AttrType::kListType:
        return AttrValue(std::vector<DataType>{});
      case AttrType::kListShape:
        return AttrValue(std::vector<PartialShape>{});
      case AttrType::kListTensor:
        return AttrValue(std::vector<Tensor>{});
      default:
        break;
    }
  }
  return std::nullopt;
}

// One piece: the type variables bound by the inputs, then the attributes,
// then the outputs, each step reading what the previous bound; split, the
// partial binding would be passed between the steps as a second copy of
// ResolvedSignature.
// NOLINTNEXTLINE(readability-function-size)
StatusOr<ResolvedSignature> ResolveSignature(
    const OpDef& def, const AttrMap& node_attrs,
    const std::vector<DataType>& input_dtypes) {
  ResolvedSignature out;
  // 1. Attributes the node sets: declared, and of the declared type.
  for (const auto& [name, value] : node_attrs) {
    const AttrDef* attr = FindAttr(def, name);
    if (attr == nullptr) {
      return InvalidArgumentError("unknown attribute '" + name + "' for op " +
                                  def.name + SuggestAttr(name, def));
    }
    auto coerced = CoerceAttr(value, attr->type);
    if (!coerced) {
      return InvalidArgumentError(
          "attribute '" + name + "' must be a " + AttrTypeName(attr->type) +
          ", got " + AttrTypeName(value.type()) + " " + value.DebugString());
    }
    out.attrs[name] = std::move(*coerced);
  }

  // 2. Inputs: arity, dtypes, inferred type attributes and counts.
  int singles = 0, variadics = 0;
  std::string names;
  for (const ArgDef& arg : def.inputs) {
    (IsVariadic(arg) ? variadics : singles)++;
    names += (names.empty() ? "" : ", ") + arg.name;
  }
  const int given = static_cast<int>(input_dtypes.size());
  if ((variadics == 0 && given != singles) || given < singles) {
    return InvalidArgumentError(
        "expects " + std::string(variadics ? "at least " : "") +
        std::to_string(singles) + " input" + (singles == 1 ? "" : "s") +
        (names.empty() ? "" : " (" + names + ")") + ", got " +
        std::to_string(given));
  }
  int next = 0;
  for (const ArgDef& arg : def.inputs) {
    int count = 1;
    if (IsVariadic(arg)) count = given - singles;  // At most one variadic.
    for (int k = 0; k < count; ++k) {
      const DataType dtype = input_dtypes[next + k];
      const std::string input_name =
          arg.name + (IsVariadic(arg) ? "[" + std::to_string(k) + "]" : "");
      switch (arg.kind) {
        case ArgDef::Kind::kFixed:
          if (dtype != arg.fixed_type) {
            return InvalidArgumentError("input '" + input_name + "' must be " +
                                        DataTypeName(arg.fixed_type) +
                                        ", got " + DataTypeName(dtype));
          }
          break;
        case ArgDef::Kind::kTypeAttr:
        case ArgDef::Kind::kRepeated:
          WEFT_RETURN_IF_ERROR(
              BindType(out.attrs, arg.type_attr, dtype, input_name));
          break;
        case ArgDef::Kind::kAnyList:
          // Strings, bfloat16 and containers only where the op says so:
          // kernels read these inputs with DispatchDtype or memcpy.
          if ((IsContainerType(dtype) || IsListedOnlyType(dtype)) &&
              !arg.accepts_any_value) {
            return UnimplementedError("op " + def.name + " does not take " +
                                      DataTypeName(dtype) + " values (for '" +
                                      input_name + "')");
          }
          break;
        case ArgDef::Kind::kTypeListAttr:
        case ArgDef::Kind::kSequenceOf:  // Outputs only (RegisterOp checks).
        case ArgDef::Kind::kOptionalOf:
        case ArgDef::Kind::kContainedIn:
        case ArgDef::Kind::kOptionalValue:
          break;
      }
    }
    if (arg.kind == ArgDef::Kind::kRepeated) {
      auto it = out.attrs.find(arg.number_attr);
      if (it == out.attrs.end()) {
        out.attrs[arg.number_attr] = static_cast<int64_t>(count);
      } else if (*it->second.get_if<int64_t>() != count) {
        return InvalidArgumentError("attribute '" + arg.number_attr + "' is " +
                                    it->second.DebugString() + " but input '" +
                                    arg.name + "' has " +
                                    std::to_string(count) + " tensors");
      }
    } else if (arg.kind == ArgDef::Kind::kTypeListAttr) {
      std::vector<DataType> types(input_dtypes.begin() + next,
                                  input_dtypes.begin() + next + count);
      auto it = out.attrs.find(arg.type_attr);
      if (it == out.attrs.end()) {
        out.attrs[arg.type_attr] = types;
      } else if (*it->second.get_if<std::vector<DataType>>() != types) {
        return InvalidArgumentError("attribute '" + arg.type_attr + "' is " +
                                    it->second.DebugString() + " but input '" +
                                    arg.name + "' has dtypes [" +
                                    TypeList(types) + "]");
      }
    }
    next += count;
  }

  // 3. Defaults, missing attributes, allowed dtypes.
  for (const AttrDef& attr : def.attrs) {
    auto it = out.attrs.find(attr.name);
    if (it == out.attrs.end()) {
      if (!attr.default_value) {
        return InvalidArgumentError("missing required attribute '" + attr.name +
                                    "' (" + AttrTypeName(attr.type) + ")");
      }
      it = out.attrs.emplace(attr.name, *attr.default_value).first;
    }
    std::vector<DataType> used;
    if (const DataType* t = it->second.get_if<DataType>()) used = {*t};
    if (const auto* ts = it->second.get_if<std::vector<DataType>>()) used = *ts;
    for (DataType t : used) {
      if (attr.accepts_any_value &&
          (IsContainerType(t) || IsListedOnlyType(t))) {
        continue;
      }
      if (IsContainerType(t)) {
        return UnimplementedError("op " + def.name + " does not take " +
                                  DataTypeName(t) + " values (for '" +
                                  attr.name + "')");
      }
      const bool listed =
          std::find(attr.allowed_types.begin(), attr.allowed_types.end(), t) !=
          attr.allowed_types.end();
      if (IsListedOnlyType(t) && !listed) {
        return UnimplementedError("op " + def.name + " does not take " +
                                  DataTypeName(t) + " tensors (for '" +
                                  attr.name + "')");
      }
      if (!attr.allowed_types.empty() && !listed) {
        // A valid dtype that this op has no kernel for: weft does not
        // implement it (the ONNX runner reports such a case as unsupported).
        return UnimplementedError(
            "dtype " + std::string(DataTypeName(t)) + " is not allowed for '" +
            attr.name + "' (allowed: " + TypeList(attr.allowed_types) + ")");
      }
    }
  }

  // 4. Output dtypes.
  for (const ArgDef& arg : def.outputs) {
    switch (arg.kind) {
      case ArgDef::Kind::kFixed:
        out.output_dtypes.push_back(arg.fixed_type);
        break;
      case ArgDef::Kind::kTypeAttr:
        out.output_dtypes.push_back(
            *out.attrs.at(arg.type_attr).get_if<DataType>());
        break;
      case ArgDef::Kind::kRepeated: {
        const int64_t count = *out.attrs.at(arg.number_attr).get_if<int64_t>();
        if (count < 0 || count > 100000) {
          return InvalidArgumentError("attribute '" + arg.number_attr +
                                      "' must be in [0, 100000], got " +
                                      std::to_string(count));
        }
        out.output_dtypes.insert(
            out.output_dtypes.end(), count,
            *out.attrs.at(arg.type_attr).get_if<DataType>());
        break;
      }
      case ArgDef::Kind::kTypeListAttr: {
        const auto& types =
            *out.attrs.at(arg.type_attr).get_if<std::vector<DataType>>();
        out.output_dtypes.insert(out.output_dtypes.end(), types.begin(),
                                 types.end());
        break;
      }
      case ArgDef::Kind::kAnyList:
        break;
      case ArgDef::Kind::kSequenceOf:
      case ArgDef::Kind::kOptionalOf:
      case ArgDef::Kind::kContainedIn:
      case ArgDef::Kind::kOptionalValue: {
        const DataType t = *out.attrs.at(arg.type_attr).get_if<DataType>();
        if (arg.kind == ArgDef::Kind::kOptionalValue) {
          out.output_dtypes.push_back(IsOptionalType(t) ? ContainedType(t) : t);
          break;
        }
        if (arg.kind == ArgDef::Kind::kSequenceOf && IsContainerType(t)) {
          return UnimplementedError(std::string("a sequence of ") +
                                    DataTypeName(t) + " values");
        }
        if (arg.kind == ArgDef::Kind::kOptionalOf && IsOptionalType(t)) {
          return UnimplementedError(std::string("an optional of ") +
                                    DataTypeName(t) + " values");
        }
        out.output_dtypes.push_back(
            arg.kind == ArgDef::Kind::kSequenceOf   ? SequenceOf(t)
            : arg.kind == ArgDef::Kind::kOptionalOf ? OptionalOf(t)
                                                    : ContainedType(t));
        break;
      }
    }
  }
  return out;
}

}  // namespace weft::internal
