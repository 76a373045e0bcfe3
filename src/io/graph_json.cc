#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <type_traits>

#include "framework/float8_convert.h"
#include "framework/suggest.h"
#include "weft/dtype_dispatch.h"
#include "weft/file_status.h"
#include "weft/graph_io.h"
#include "weft/json_depth.h"
#include "weft/npy.h"
#include "weft/op_registry.h"

namespace weft {
namespace {

using Json = nlohmann::json;
// Serialisation keeps keys in a readable order (format first, name first).
using OJson = nlohmann::ordered_json;

// Deeper nesting than this is refused before parsing: no graph needs it, and
// it bounds the work and stack of everything downstream.
constexpr int kMaxJsonDepth = 64;
constexpr size_t kMaxGraphFileBytes = size_t{1} << 30;

struct Position {
  size_t line = 1, column = 1;
};

Position PositionOf(std::string_view text, size_t byte) {
  Position p;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

std::string At(std::string_view text, size_t byte) {
  const Position p = PositionOf(text, byte);
  return "line " + std::to_string(p.line) + ", column " +
         std::to_string(p.column);
}

Status CheckDepth(std::string_view text) {
  if (const std::optional<size_t> at =
          FindJsonNestingPast(text, kMaxJsonDepth)) {
    return InvalidArgumentError("JSON nested deeper than " +
                                std::to_string(kMaxJsonDepth) + " levels at " +
                                At(text, *at));
  }
  return Status::OK();
}

const char* JsonKind(const Json& j) { return j.type_name(); }

// The JSON value as a T when it is a number of the right kind whose value T
// holds exactly in range; nullopt for anything else (no wrap-around, no
// overflow to infinity). A float32 keeps the nearest float of a decimal, as
// NumPy does; bool takes true/false or 0/1.
template <class T>
std::optional<T> FittingValue(const Json& v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_integer() && (v == 0 || v == 1)) return v != 0;
    return std::nullopt;
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) return std::nullopt;
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        return std::nullopt;
      }
      return static_cast<T>(u);
    }
    const int64_t i = v.get<int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      // A negative value here; a non-negative one is unsigned in the JSON.
      if (i < 0 || static_cast<uint64_t>(i) > std::numeric_limits<T>::max()) {
        return std::nullopt;
      }
    } else if (i < std::numeric_limits<T>::lowest() ||
               i > std::numeric_limits<T>::max()) {
      return std::nullopt;
    }
    return static_cast<T>(i);
  } else {
    if (!v.is_number()) return std::nullopt;
    const double d = v.get<double>();
    if (std::abs(d) > std::numeric_limits<T>::max()) return std::nullopt;
    return static_cast<T>(d);
  }
}

// --- JSON -> attribute values, through the op's schema. --------------------

// Integer attributes that ONNX uses as yes/no flags: a JSON true or false
// is read as 1 or 0 for them (a user writes "keepdims": false).
bool IsIntegerFlag(std::string_view name) {
  static constexpr std::string_view kFlags[] = {
      "keepdims",
      "transA",
      "transB",
      "noop_with_empty_axes",
      "select_last_index",
      "ceil_mode",
      "count_include_pad",
      "center_point_box",
      "exclusive",
      "reverse",
      "detect_negative",
      "detect_positive",
      "training_mode",
      "layout",
      "input_forget",
      "largest",
      "sorted",
      "upper",
      "storage_order",
      "spatial",
  };
  return std::find(std::begin(kFlags), std::end(kFlags), name) !=
         std::end(kFlags);
}

StatusOr<NodeDef> ReadNode(const Json& j, size_t index,
                           const std::string& base_dir);

class AttrReader {
 public:
  AttrReader(std::string context, std::string base_dir, bool int_flag = false)
      : context_(std::move(context)),
        base_dir_(std::move(base_dir)),
        int_flag_(int_flag) {}

  StatusOr<AttrValue> Read(const Json& j, AttrType type) const {
    switch (type) {
      case AttrType::kInt:
        return ReadInt(j);
      case AttrType::kFloat:
        return ReadFloat(j);
      case AttrType::kBool:
        if (!j.is_boolean()) return Wrong(j, "a boolean");
        return AttrValue(j.get<bool>());
      case AttrType::kString:
        if (!j.is_string()) return Wrong(j, "a string");
        return AttrValue(j.get<std::string>());
      case AttrType::kType:
        return ReadType(j);
      case AttrType::kShape:
        return ReadShape(j);
      case AttrType::kTensor:
        return ReadTensor(j);
      case AttrType::kGraph:
        return ReadSubgraph(j);
      case AttrType::kListInt:
        return ReadList<int64_t>(j, AttrType::kInt);
      case AttrType::kListFloat:
        return ReadList<double>(j, AttrType::kFloat);
      case AttrType::kListBool:
        return ReadList<bool>(j, AttrType::kBool);
      case AttrType::kListString:
        return ReadList<std::string>(j, AttrType::kString);
      case AttrType::kListType:
        return ReadList<DataType>(j, AttrType::kType);
      case AttrType::kListShape:
        return ReadList<PartialShape>(j, AttrType::kShape);
      case AttrType::kListTensor:
        return ReadList<Tensor>(j, AttrType::kTensor);
    }
    return InvalidArgumentError(context_ + ": unsupported attribute type");
  }

 private:
  Status Wrong(const Json& j, const char* expected) const {
    return InvalidArgumentError(context_ + " must be " + expected + ", got " +
                                JsonKind(j) + " " + j.dump());
  }

  // {"nodes": [...], "inputs": ["x", ...], "outputs": ["y", ...]}.
  StatusOr<AttrValue> ReadSubgraph(const Json& j) const {
    if (!j.is_object()) return Wrong(j, "an object with \"nodes\"");
    auto sub = std::make_shared<Subgraph>();
    for (const auto& [key, value] : j.items()) {
      if (key != "nodes" && key != "inputs" && key != "outputs") {
        return InvalidArgumentError(context_ + ": unknown field \"" + key +
                                    "\"");
      }
    }
    if (!j.contains("nodes") || !j["nodes"].is_array()) {
      return InvalidArgumentError(context_ + ": \"nodes\" must be a list");
    }
    const Json& nodes = j["nodes"];
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto node = ReadNode(nodes[i], i, base_dir_);
      if (!node.ok()) return node.status().WithContext(context_);
      WEFT_RETURN_IF_ERROR(
          sub->graph.AddNode(*std::move(node)).WithContext(context_));
    }
    for (const char* list : {"inputs", "outputs"}) {
      std::vector<std::string>& names =
          list[0] == 'i' ? sub->inputs : sub->outputs;
      if (!j.contains(list)) continue;
      if (!j[list].is_array()) {
        return InvalidArgumentError(context_ + ": \"" + list +
                                    "\" must be a list of strings");
      }
      for (const Json& name : j[list]) {
        if (!name.is_string()) {
          return InvalidArgumentError(context_ + ": \"" + list +
                                      "\" must be a list of strings, got " +
                                      name.dump());
        }
        names.push_back(name.get<std::string>());
      }
    }
    return AttrValue(SubgraphPtr(std::move(sub)));
  }

  StatusOr<AttrValue> ReadInt(const Json& j) const {
    if (int_flag_ && j.is_boolean()) {
      return AttrValue(int64_t{j.get<bool>() ? 1 : 0});
    }
    if (!j.is_number_integer()) return Wrong(j, "an integer");
    const std::optional<int64_t> value = FittingValue<int64_t>(j);
    if (!value) {
      return InvalidArgumentError(context_ + ": " + j.dump() +
                                  " does not fit a 64-bit signed integer");
    }
    return AttrValue(*value);
  }

  StatusOr<AttrValue> ReadFloat(const Json& j) const {
    if (!j.is_number()) return Wrong(j, "a number");
    return AttrValue(j.get<double>());
  }

  StatusOr<AttrValue> ReadType(const Json& j) const {
    if (!j.is_string()) return Wrong(j, "a dtype name");
    auto dtype = DataTypeFromName(j.get<std::string>());
    if (!dtype) {
      return InvalidArgumentError(context_ + ": unknown dtype " + j.dump() +
                                  " (float32, float64, int32, int64, bool)");
    }
    return AttrValue(*dtype);
  }

  StatusOr<AttrValue> ReadShape(const Json& j) const {
    if (j.is_null()) return AttrValue(PartialShape::UnknownRank());
    if (!j.is_array()) return Wrong(j, "a shape (array of integers)");
    std::vector<int64_t> dims;
    for (const Json& d : j) {
      if (!d.is_number_integer() || d.get<int64_t>() < -1) {
        return InvalidArgumentError(
            context_ +
            ": shape dimensions must be integers >= 0 (or -1 for "
            "unknown), got " +
            d.dump());
      }
      dims.push_back(d.get<int64_t>());
    }
    return AttrValue(PartialShape(std::move(dims)));
  }

  StatusOr<AttrValue> ReadTensor(const Json& j) const {
    if (j.is_string()) {
      std::filesystem::path path(j.get<std::string>());
      if (path.is_relative()) path = std::filesystem::path(base_dir_) / path;
      auto tensor = ReadNpy(path.string());
      if (!tensor.ok()) return tensor.status().WithContext(context_);
      return AttrValue(std::move(tensor).value());
    }
    if (!j.is_object()) return Wrong(j, "a tensor (object or .npy path)");
    for (const auto& [key, value] : j.items()) {
      if (key != "dtype" && key != "shape" && key != "values") {
        return InvalidArgumentError(context_ + ": unknown tensor field '" +
                                    key + "'");
      }
    }
    if (!j.contains("dtype") || !j.contains("shape") || !j.contains("values")) {
      return InvalidArgumentError(context_ +
                                  ": a tensor needs dtype, shape and values");
    }
    WEFT_ASSIGN_OR_RETURN(AttrValue dtype_value, ReadType(j["dtype"]));
    WEFT_ASSIGN_OR_RETURN(AttrValue shape_value, ReadShape(j["shape"]));
    const PartialShape& partial = *shape_value.get_if<PartialShape>();
    if (!partial.IsFullyDefined()) {
      return InvalidArgumentError(context_ +
                                  ": a tensor's shape must be known");
    }
    const Shape shape = partial.ToShape();
    const Json& values = j["values"];
    if (!values.is_array()) {
      return InvalidArgumentError(context_ +
                                  ": tensor values must be a flat array");
    }
    if (!shape.IsValid() ||
        static_cast<uint64_t>(shape.NumElements()) != values.size()) {
      return InvalidArgumentError(
          context_ + ": tensor of shape " + shape.ToString() + " needs " +
          (shape.IsValid() ? std::to_string(shape.NumElements()) : "too many") +
          " values, got " + std::to_string(values.size()));
    }
    const DataType dtype = *dtype_value.get_if<DataType>();
    WEFT_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Create(dtype, shape));
    if (dtype == DataType::kString) {
      std::string* out = tensor.data<std::string>();
      for (size_t i = 0; i < values.size(); ++i) {
        if (!values[i].is_string()) {
          return InvalidArgumentError(context_ + ": value " +
                                      std::to_string(i) + " (" +
                                      values[i].dump() + ") is not a string");
        }
        out[i] = values[i].get<std::string>();
      }
      return AttrValue(std::move(tensor));
    }
    if (dtype == DataType::kBFloat16) {  // Numbers, rounded to bfloat16.
      BFloat16* out = tensor.data<BFloat16>();
      for (size_t i = 0; i < values.size(); ++i) {
        const std::optional<float> value = FittingValue<float>(values[i]);
        if (!value) return BadTensorValue(values[i], i, dtype);
        out[i] = BFloat16::FromFloat(*value);
      }
      return AttrValue(std::move(tensor));
    }
    if (IsFloat8Type(dtype)) {  // Numbers, rounded to the nearest float8.
      auto* out = static_cast<uint8_t*>(tensor.raw_data());
      for (size_t i = 0; i < values.size(); ++i) {
        const std::optional<float> value = FittingValue<float>(values[i]);
        if (!value) return BadTensorValue(values[i], i, dtype);
        out[i] = internal::Float8Bits(dtype, *value, /*saturate=*/false);
        // Past the largest finite value: infinity or NaN, not a number
        // the file gave.
        if (!std::isfinite(internal::Float8Value(dtype, out[i]))) {
          return BadTensorValue(values[i], i, dtype);
        }
      }
      return AttrValue(std::move(tensor));
    }
    if (IsFourBitType(dtype)) {
      // Integers in the type's range, one per byte.
      const bool is_signed = dtype == DataType::kInt4;
      for (size_t i = 0; i < values.size(); ++i) {
        const std::optional<int8_t> value = FittingValue<int8_t>(values[i]);
        if (!value || *value < (is_signed ? -8 : 0) ||
            *value > (is_signed ? 7 : 15)) {
          return BadTensorValue(values[i], i, dtype);
        }
        static_cast<int8_t*>(tensor.raw_data())[i] = *value;
      }
      return AttrValue(std::move(tensor));
    }
    WEFT_RETURN_IF_ERROR(DispatchDtype(dtype, [&](auto zero) -> Status {
      using T = decltype(zero);
      T* out = tensor.data<T>();
      for (size_t i = 0; i < values.size(); ++i) {
        const std::optional<T> value = FittingValue<T>(values[i]);
        if (!value) return BadTensorValue(values[i], i, dtype);
        out[i] = *value;
      }
      return Status::OK();
    }));
    return AttrValue(std::move(tensor));
  }

  Status BadTensorValue(const Json& v, size_t index, DataType dtype) const {
    const bool right_kind =
        dtype == DataType::kBool ? v.is_number_integer()
        : (dtype != DataType::kFloat32 && dtype != DataType::kFloat64 &&
           dtype != DataType::kFloat16 && dtype != DataType::kBFloat16 &&
           !IsFloat8Type(dtype))
            ? v.is_number_integer()
            : v.is_number();
    return InvalidArgumentError(
        context_ + ": value " + std::to_string(index) + " (" + v.dump() +
        (right_kind ? ") does not fit " : ") is not a ") + DataTypeName(dtype));
  }

  template <class T>
  StatusOr<AttrValue> ReadList(const Json& j, AttrType element) const {
    if (!j.is_array()) return Wrong(j, "a list");
    std::vector<T> out;
    for (const Json& item : j) {
      WEFT_ASSIGN_OR_RETURN(AttrValue value, Read(item, element));
      out.push_back(*value.get_if<T>());
    }
    return AttrValue(std::move(out));
  }

  std::string context_;
  std::string base_dir_;
  bool int_flag_ = false;  // IsIntegerFlag: true/false read as 1/0.
};

const AttrDef* FindAttrDef(const OpDef& def, const std::string& name) {
  for (const AttrDef& attr : def.attrs) {
    if (attr.name == name) return &attr;
  }
  return nullptr;
}

StatusOr<NodeDef> ReadNode(const Json& j, size_t index,
                           const std::string& base_dir) {
  const std::string where = "nodes[" + std::to_string(index) + "]";
  if (!j.is_object()) {
    return InvalidArgumentError(where + " must be an object, got " +
                                JsonKind(j));
  }
  if (!j.contains("name") || !j["name"].is_string()) {
    return InvalidArgumentError(where + ": \"name\" must be a string");
  }
  NodeDef node;
  node.name = j["name"].get<std::string>();
  const std::string context = "node '" + node.name + "'";
  for (const auto& [key, value] : j.items()) {
    if (key != "name" && key != "op" && key != "inputs" && key != "attrs" &&
        key != "device") {
      return InvalidArgumentError(context + ": unknown field \"" + key + "\"");
    }
  }
  if (!j.contains("op") || !j["op"].is_string()) {
    return InvalidArgumentError(context + ": \"op\" must be a string");
  }
  node.op = j["op"].get<std::string>();
  if (j.contains("inputs")) {
    if (!j["inputs"].is_array()) {
      return InvalidArgumentError(context + ": \"inputs\" must be a list");
    }
    for (const Json& input : j["inputs"]) {
      if (!input.is_string()) {
        return InvalidArgumentError(
            context + ": every input must be a string, got " + input.dump());
      }
      node.inputs.push_back(input.get<std::string>());
    }
  }
  if (j.contains("device")) {
    if (!j["device"].is_string()) {
      return InvalidArgumentError(context + ": \"device\" must be a string");
    }
    node.device = j["device"].get<std::string>();
  }
  const OpDef* def = FindOpDef(node.op);
  if (def == nullptr) {
    return NotFoundError(context + ": unknown op '" + node.op + "'" +
                         internal::SuggestOp(node.op));
  }
  if (j.contains("attrs")) {
    if (!j["attrs"].is_object()) {
      return InvalidArgumentError(context + ": \"attrs\" must be an object");
    }
    for (const auto& [name, value] : j["attrs"].items()) {
      const AttrDef* attr = FindAttrDef(*def, name);
      if (attr == nullptr) {
        return InvalidArgumentError(context + ": unknown attribute '" + name +
                                    "' for op " + node.op +
                                    internal::SuggestAttr(name, *def));
      }
      AttrReader reader(context + ", attribute '" + name + "'", base_dir,
                        IsIntegerFlag(name));
      WEFT_ASSIGN_OR_RETURN(AttrValue parsed, reader.Read(value, attr->type));
      node.attrs[name] = std::move(parsed);
    }
  }
  // A Const's dtype follows from its value when not given.
  if (node.op == "Const" && node.attrs.count("dtype") == 0) {
    if (auto it = node.attrs.find("value"); it != node.attrs.end()) {
      node.attrs["dtype"] = it->second.get_if<Tensor>()->dtype();
    }
  }
  return node;
}

// --- Attribute values -> JSON. ----------------------------------------------

OJson TensorOJson(const Tensor& t) {
  OJson values = OJson::array();
  if (IsListedOnlyType(t.dtype())) {
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      if (t.dtype() == DataType::kString) {
        values.push_back(t.data<std::string>()[i]);
      } else if (t.dtype() == DataType::kBFloat16 ||
                 IsFloat8Type(t.dtype())) {  // Exact as floats.
        values.push_back(static_cast<float>(t.ValueAsDouble(i)));
      } else {  // int4, uint4: the integer each byte holds.
        values.push_back(static_cast<int64_t>(t.ValueAsDouble(i)));
      }
    }
    return OJson{{"dtype", DataTypeName(t.dtype())},
                 {"shape", t.shape().dims()},
                 {"values", values}};
  }
  DispatchDtype(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      if constexpr (std::is_same_v<T, Float16>) {
        values.push_back(static_cast<float>(t.data<T>()[i]));
      } else {
        values.push_back(t.data<T>()[i]);
      }
    }
  });
  return OJson{{"dtype", DataTypeName(t.dtype())},
               {"shape", t.shape().dims()},
               {"values", values}};
}

OJson ShapeOJson(const PartialShape& s) {
  return s.rank_known() ? OJson(s.dims()) : OJson(nullptr);
}

OJson NodesOJson(const Graph& graph);

OJson ToOJson(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> OJson {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, DataType>) {
          return DataTypeName(v);
        } else if constexpr (std::is_same_v<T, PartialShape>) {
          return ShapeOJson(v);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return TensorOJson(v);
        } else if constexpr (std::is_same_v<T, SubgraphPtr>) {
          if (v == nullptr) return nullptr;
          return OJson{{"nodes", NodesOJson(v->graph)},
                       {"inputs", v->inputs},
                       {"outputs", v->outputs}};
        } else if constexpr (std::is_same_v<T, std::vector<DataType>>) {
          OJson out = OJson::array();
          for (DataType d : v) out.push_back(DataTypeName(d));
          return out;
        } else if constexpr (std::is_same_v<T, std::vector<PartialShape>>) {
          OJson out = OJson::array();
          for (const auto& s : v) out.push_back(ShapeOJson(s));
          return out;
        } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
          OJson out = OJson::array();
          for (const auto& t : v) out.push_back(TensorOJson(t));
          return out;
        } else {
          return OJson(v);
        }
      },
      value.variant());
}

}  // namespace

StatusOr<GraphFile> ParseGraph(std::string_view text,
                               const std::string& base_dir) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return InvalidArgumentError("the graph file is empty");
  }
  WEFT_RETURN_IF_ERROR(CheckDepth(text));
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    const auto colon = what.find(": ");
    const std::string detail =
        colon == std::string::npos ? what : what.substr(colon + 2);
    return InvalidArgumentError("JSON syntax error at " +
                                At(text, e.byte > 0 ? e.byte - 1 : 0) + ": " +
                                detail);
  } catch (const Json::exception& e) {
    // The parser's other complaints, e.g. a number too large for a double
    // ("number overflow parsing '1e400'").
    std::string what = e.what();
    const auto bracket = what.find("] ");
    return InvalidArgumentError(
        "bad JSON: " +
        (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  if (!root.is_object()) {
    return InvalidArgumentError("the top level must be an object, got " +
                                std::string(JsonKind(root)));
  }
  for (const auto& [key, value] : root.items()) {
    if (key != "format" && key != "version" && key != "nodes" &&
        key != "outputs") {
      return InvalidArgumentError("unknown top-level field \"" + key + "\"");
    }
  }
  if (!root.contains("format") || root["format"] != "weft-graph") {
    return InvalidArgumentError("\"format\" must be \"weft-graph\"");
  }
  if (!root.contains("version") || root["version"] != 1) {
    return InvalidArgumentError("\"version\" must be 1 (got " +
                                (root.contains("version")
                                     ? root["version"].dump()
                                     : std::string("none")) +
                                ")");
  }
  if (!root.contains("nodes") || !root["nodes"].is_array()) {
    return InvalidArgumentError("\"nodes\" must be a list");
  }
  GraphFile file;
  const Json& nodes = root["nodes"];
  for (size_t i = 0; i < nodes.size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(NodeDef node, ReadNode(nodes[i], i, base_dir));
    WEFT_RETURN_IF_ERROR(file.graph.AddNode(std::move(node)));
  }
  if (root.contains("outputs")) {
    if (!root["outputs"].is_array()) {
      return InvalidArgumentError("\"outputs\" must be a list of strings");
    }
    for (const Json& output : root["outputs"]) {
      if (!output.is_string()) {
        return InvalidArgumentError(
            "\"outputs\" must be a list of strings, got " + output.dump());
      }
      const std::string name = output.get<std::string>();
      const std::string node = name.substr(0, name.find(':'));
      if (file.graph.FindNode(node) == nullptr) {
        return InvalidArgumentError("output '" + name +
                                    "' names no node of the graph");
      }
      file.outputs.push_back(name);
    }
  }
  return file;
}

StatusOr<GraphFile> LoadGraph(const std::string& path) {
  WEFT_RETURN_IF_ERROR(
      CheckReadableFile(path, path + ": cannot open the graph file"));
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return ErrnoToStatus(errno, path + ": cannot open the graph file");
  }
  const std::streamoff size = in.tellg();
  if (size < 0 || static_cast<size_t>(size) > kMaxGraphFileBytes) {
    return InvalidArgumentError(path + ": the graph file is too large");
  }
  std::string text(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(text.data(), size);
  const std::string base_dir =
      std::filesystem::path(path).parent_path().string();
  auto file = ParseGraph(text, base_dir.empty() ? "." : base_dir);
  if (!file.ok()) return file.status().WithContext(path);
  return file;
}

namespace {

OJson NodesOJson(const Graph& graph) {
  OJson nodes = OJson::array();
  for (const NodeDef& node : graph.nodes()) {
    OJson j = {{"name", node.name}, {"op", node.op}};
    if (!node.inputs.empty()) j["inputs"] = node.inputs;
    if (!node.attrs.empty()) {
      OJson attrs = OJson::object();
      for (const auto& [name, value] : node.attrs) attrs[name] = ToOJson(value);
      j["attrs"] = attrs;
    }
    if (!node.device.empty()) j["device"] = node.device;
    nodes.push_back(j);
  }
  return nodes;
}

}  // namespace

std::string SerializeGraph(const GraphFile& file) {
  OJson root = {{"format", "weft-graph"},
                {"version", 1},
                {"nodes", NodesOJson(file.graph)},
                {"outputs", file.outputs}};
  // JSON text is UTF-8: a string constant's bytes that are not print as
  // U+FFFD (weft's graph format holds text, not arbitrary bytes).
  return root.dump(1, ' ', false, OJson::error_handler_t::replace) + "\n";
}

}  // namespace weft
