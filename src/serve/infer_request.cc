#include "serve/infer_request.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "weft/float16.h"
#include "weft/json_depth.h"

namespace weft::serve {
namespace {

using Json = nlohmann::json;

Status Bad(std::string message) {
  return InvalidArgumentError(std::move(message));
}

std::string InputContext(std::string_view name) {
  return "input '" + std::string(name) + "'";
}

// The dimensions "shape" lists, as integers (ShapeForInput checks them).
StatusOr<std::vector<int64_t>> ReadDims(const Json& entry,
                                        const std::string& context) {
  auto it = entry.find("shape");
  if (it == entry.end() || !it->is_array()) {
    return Bad(context + ": \"shape\" must be an array of dimensions");
  }
  std::vector<int64_t> dims;
  for (const Json& dim : *it) {
    if (!dim.is_number_integer() && !dim.is_number_unsigned()) {
      return Bad(context + ": \"shape\" holds " + dim.dump() +
                 ", not an integer");
    }
    if (dim.is_number_unsigned() &&
        dim.get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Bad(context + ": dimension " + dim.dump() + " is too large");
    }
    dims.push_back(dim.get<int64_t>());
  }
  return dims;
}

// Appends every leaf of `data` (nested arrays flattened, row-major) to
// *leaves, refusing more than `limit`.
Status Flatten(const Json& data, int64_t limit,
               std::vector<const Json*>* leaves, const std::string& context) {
  if (!data.is_array()) {
    if (static_cast<int64_t>(leaves->size()) >= limit) {
      return Bad(context + ": \"data\" holds more values than its shape's " +
                 std::to_string(limit));
    }
    leaves->push_back(&data);
    return Status::OK();
  }
  for (const Json& item : data) {
    WEFT_RETURN_IF_ERROR(Flatten(item, limit, leaves, context));
  }
  return Status::OK();
}

template <class T>
Status ReadIntegers(const std::vector<const Json*>& leaves, Tensor* tensor,
                    const std::string& context) {
  T* out = tensor->data<T>();
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Json& v = *leaves[i];
    bool fits = false;
    if (v.is_number_unsigned()) {
      fits = v.get<uint64_t>() <=
             static_cast<uint64_t>(std::numeric_limits<T>::max());
      if (fits) out[i] = static_cast<T>(v.get<uint64_t>());
    } else if (v.is_number_integer()) {
      const int64_t x = v.get<int64_t>();
      fits =
          x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
          (x < 0 || static_cast<uint64_t>(x) <=
                        static_cast<uint64_t>(std::numeric_limits<T>::max()));
      if (fits) out[i] = static_cast<T>(x);
    }
    if (!fits) {
      return Bad(context + ": value " + std::to_string(i) + " (" + v.dump() +
                 ") is not an integer of its datatype's range");
    }
  }
  return Status::OK();
}

template <class T, class Convert>
Status ReadNumbers(const std::vector<const Json*>& leaves, Tensor* tensor,
                   const std::string& context, Convert convert) {
  T* out = tensor->data<T>();
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Json& v = *leaves[i];
    if (!v.is_number()) {
      return Bad(context + ": value " + std::to_string(i) + " (" + v.dump() +
                 ") is not a number");
    }
    out[i] = convert(v.get<double>());
  }
  return Status::OK();
}

// Fills *tensor (allocated with the right count) from JSON leaves.
// NOLINTNEXTLINE(readability-function-size)
Status ReadJsonValues(const std::vector<const Json*>& leaves, Tensor* tensor,
                      const std::string& context) {
  switch (tensor->dtype()) {
    case DataType::kBool: {
      bool* out = tensor->data<bool>();
      for (size_t i = 0; i < leaves.size(); ++i) {
        if (!leaves[i]->is_boolean()) {
          return Bad(context + ": value " + std::to_string(i) + " (" +
                     leaves[i]->dump() + ") is not true or false");
        }
        out[i] = leaves[i]->get<bool>();
      }
      return Status::OK();
    }
    case DataType::kString: {
      std::string* out = tensor->data<std::string>();
      for (size_t i = 0; i < leaves.size(); ++i) {
        if (!leaves[i]->is_string()) {
          return Bad(context + ": value " + std::to_string(i) + " (" +
                     leaves[i]->dump() + ") is not a string");
        }
        out[i] = leaves[i]->get<std::string>();
      }
      return Status::OK();
    }
    case DataType::kInt8:
      return ReadIntegers<int8_t>(leaves, tensor, context);
    case DataType::kInt16:
      return ReadIntegers<int16_t>(leaves, tensor, context);
    case DataType::kInt32:
      return ReadIntegers<int32_t>(leaves, tensor, context);
    case DataType::kInt64:
      return ReadIntegers<int64_t>(leaves, tensor, context);
    case DataType::kUInt8:
      return ReadIntegers<uint8_t>(leaves, tensor, context);
    case DataType::kUInt16:
      return ReadIntegers<uint16_t>(leaves, tensor, context);
    case DataType::kUInt32:
      return ReadIntegers<uint32_t>(leaves, tensor, context);
    case DataType::kUInt64:
      return ReadIntegers<uint64_t>(leaves, tensor, context);
    case DataType::kFloat32:
      return ReadNumbers<float>(leaves, tensor, context,
                                [](double x) { return static_cast<float>(x); });
    case DataType::kFloat64:
      return ReadNumbers<double>(leaves, tensor, context,
                                 [](double x) { return x; });
    case DataType::kFloat16:
      return ReadNumbers<Float16>(leaves, tensor, context, [](double x) {
        return Float16(static_cast<float>(x));
      });
    case DataType::kBFloat16:
      return ReadNumbers<BFloat16>(leaves, tensor, context, [](double x) {
        return BFloat16::FromFloat(static_cast<float>(x));
      });
    default:
      return Bad(context + ": datatype not carried");
  }
}

// BYTES in the binary form: each element a 4-byte little-endian length and
// that many bytes.
Status ReadBinaryStrings(std::string_view bytes, Tensor* tensor,
                         const std::string& context) {
  std::string* out = tensor->data<std::string>();
  size_t at = 0;
  for (int64_t i = 0; i < tensor->NumElements(); ++i) {
    if (bytes.size() - at < 4) {
      return Bad(context + ": BYTES element " + std::to_string(i) +
                 " has no 4-byte length before the end of its data");
    }
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + at);
    const uint32_t length =
        p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
    at += 4;
    if (length > bytes.size() - at) {
      return Bad(context + ": BYTES element " + std::to_string(i) + " says " +
                 std::to_string(length) +
                 " bytes, past the end of "
                 "its binary_data_size");
    }
    out[i].assign(bytes.data() + at, length);
    at += length;
  }
  if (at != bytes.size()) {
    return Bad(context + ": binary_data_size holds " +
               std::to_string(bytes.size() - at) +
               " bytes after its last BYTES element");
  }
  return Status::OK();
}

// The tensor of one "inputs" entry; binary bytes are taken from *tail.
// NOLINTNEXTLINE(readability-function-size)
StatusOr<Tensor> ReadInput(const Json& entry, const TensorSignature& expected,
                           std::string_view* tail) {
  const std::string context = InputContext(expected.name);
  auto datatype = entry.find("datatype");
  if (datatype == entry.end() || !datatype->is_string()) {
    return Bad(context + ": \"datatype\" must be a string such as \"FP32\"");
  }
  const std::string& type_name = datatype->get_ref<const std::string&>();
  WEFT_ASSIGN_OR_RETURN(const DataType dtype,
                        DtypeForInput(type_name, expected));
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadDims(entry, context));
  WEFT_ASSIGN_OR_RETURN(Shape shape, ShapeForInput(dims, expected));
  const int64_t count = shape.NumElements();

  std::optional<int64_t> binary_size;
  if (auto params = entry.find("parameters"); params != entry.end()) {
    if (!params->is_object()) {
      return Bad(context + ": \"parameters\" must be an object");
    }
    if (auto size = params->find("binary_data_size"); size != params->end()) {
      if (!size->is_number_unsigned() && !size->is_number_integer()) {
        return Bad(context + ": binary_data_size must be an integer");
      }
      if (size->is_number_integer() && size->get<int64_t>() < 0) {
        return Bad(context + ": binary_data_size is negative");
      }
      if (size->get<uint64_t>() > tail->size()) {
        return Bad(context + ": binary_data_size " + size->dump() +
                   " is past the end of the body (" +
                   std::to_string(tail->size()) + " bytes left)");
      }
      binary_size = size->get<int64_t>();
    }
  }
  auto data = entry.find("data");
  if (binary_size && data != entry.end()) {
    return Bad(context + ": has both \"data\" and binary_data_size");
  }
  if (binary_size) {
    const std::string_view bytes = tail->substr(0, *binary_size);
    tail->remove_prefix(*binary_size);
    return TensorFromBytes(dtype, shape, bytes, context);
  }
  if (data == entry.end()) {
    return Bad(context +
               ": has neither \"data\" nor a binary_data_size "
               "parameter");
  }
  std::vector<const Json*> leaves;
  WEFT_RETURN_IF_ERROR(Flatten(*data, count, &leaves, context));
  if (static_cast<int64_t>(leaves.size()) != count) {
    return Bad(context + ": shape " + shape.ToString() + " is " +
               std::to_string(count) + " values, but \"data\" holds " +
               std::to_string(leaves.size()));
  }
  WEFT_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Create(dtype, shape));
  WEFT_RETURN_IF_ERROR(ReadJsonValues(leaves, &tensor, context));
  return tensor;
}

Status ReadInputs(const Json& request, const ModelSignature& signature,
                  std::string_view* tail, InferRequest* out) {
  auto inputs = request.find("inputs");
  if (inputs == request.end() || !inputs->is_array()) {
    return Bad("the request has no \"inputs\" array");
  }
  std::vector<bool> seen(signature.inputs.size(), false);
  out->inputs.assign(signature.inputs.size(), Tensor());
  for (const Json& entry : *inputs) {
    if (!entry.is_object()) return Bad("an \"inputs\" entry is not an object");
    auto name = entry.find("name");
    if (name == entry.end() || !name->is_string()) {
      return Bad("an \"inputs\" entry has no \"name\" string");
    }
    const std::string& input_name = name->get_ref<const std::string&>();
    const TensorSignature* expected = signature.FindInput(input_name);
    if (expected == nullptr) {
      std::string known;
      for (const TensorSignature& s : signature.inputs) {
        known += (known.empty() ? "" : ", ") + s.name;
      }
      return Bad("unknown input '" + input_name +
                 "' (the model's inputs: " + known + ")");
    }
    const size_t index = expected - signature.inputs.data();
    if (seen[index]) return Bad(InputContext(input_name) + " is given twice");
    seen[index] = true;
    WEFT_ASSIGN_OR_RETURN(out->inputs[index],
                          ReadInput(entry, *expected, tail));
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) {
      return Bad("missing " + InputContext(signature.inputs[i].name));
    }
  }
  return Status::OK();
}

StatusOr<bool> BinaryFlag(const Json& holder, const std::string& context) {
  auto params = holder.find("parameters");
  if (params == holder.end()) return false;
  if (!params->is_object()) {
    return Bad(context + ": \"parameters\" must be an object");
  }
  auto flag = params->find("binary_data");
  if (flag == params->end()) flag = params->find("binary_data_output");
  if (flag == params->end()) return false;
  if (!flag->is_boolean()) {
    return Bad(context + ": " + flag.key() + " must be true or false");
  }
  return flag->get<bool>();
}

Status ReadOutputs(const Json& request, const ModelSignature& signature,
                   InferRequest* out) {
  auto outputs = request.find("outputs");
  if (outputs == request.end()) return Status::OK();
  if (!outputs->is_array()) return Bad("\"outputs\" must be an array");
  for (const Json& entry : *outputs) {
    if (!entry.is_object()) return Bad("an \"outputs\" entry is not an object");
    auto name = entry.find("name");
    if (name == entry.end() || !name->is_string()) {
      return Bad("an \"outputs\" entry has no \"name\" string");
    }
    const std::string& output_name = name->get_ref<const std::string&>();
    if (signature.FindOutput(output_name) == nullptr) {
      std::string known;
      for (const TensorSignature& s : signature.outputs) {
        known += (known.empty() ? "" : ", ") + s.name;
      }
      return Bad("unknown output '" + output_name +
                 "' (the model's outputs: " + known + ")");
    }
    for (const RequestedOutput& earlier : out->outputs) {
      if (earlier.name == output_name) {
        return Bad("output '" + output_name + "' is asked for twice");
      }
    }
    WEFT_ASSIGN_OR_RETURN(bool binary,
                          BinaryFlag(entry, "output '" + output_name + "'"));
    out->outputs.push_back({output_name, binary || out->binary_outputs});
  }
  return Status::OK();
}

StatusOr<int64_t> NonNegativeParameter(const Json& params, const char* key) {
  auto it = params.find(key);
  if (it == params.end()) return int64_t{0};
  if (!it->is_number_unsigned() && !it->is_number_integer()) {
    return Bad(std::string("parameters.") + key + " must be an integer");
  }
  if (it->is_number_integer() && it->get<int64_t>() < 0) {
    return Bad(std::string("parameters.") + key + " is negative");
  }
  if (it->get<uint64_t>() >
      static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Bad(std::string("parameters.") + key + " is too large");
  }
  return it->get<int64_t>();
}

Status ReadRequestParameters(const Json& request, InferRequest* out) {
  auto params = request.find("parameters");
  if (params == request.end()) return Status::OK();
  if (!params->is_object()) return Bad("\"parameters\" must be an object");
  out->parameters_json = params->dump();
  WEFT_ASSIGN_OR_RETURN(out->binary_outputs, BinaryFlag(request, "request"));
  WEFT_ASSIGN_OR_RETURN(out->timeout_us,
                        NonNegativeParameter(*params, "timeout"));
  WEFT_ASSIGN_OR_RETURN(int64_t priority,
                        NonNegativeParameter(*params, "priority"));
  if (priority > 1'000'000) return Bad("parameters.priority is too large");
  out->priority = static_cast<int>(priority);
  return Status::OK();
}

}  // namespace

StatusOr<DataType> DtypeForInput(std::string_view datatype,
                                 const TensorSignature& expected) {
  const std::string context = InputContext(expected.name);
  const std::optional<DataType> dtype = DtypeOfProtocolDatatype(datatype);
  if (!dtype) {
    return Bad(context + ": unknown datatype \"" + std::string(datatype) +
               "\" (BOOL, UINT8..UINT64, INT8..INT64, FP16, BF16, FP32, FP64, "
               "BYTES)");
  }
  if (expected.dtype && *dtype != *expected.dtype) {
    return Bad(context + ": datatype " + std::string(datatype) +
               " does not match the model's " +
               std::string(*ProtocolDatatype(*expected.dtype)));
  }
  return *dtype;
}

StatusOr<Shape> ShapeForInput(std::span<const int64_t> dims,
                              const TensorSignature& expected) {
  const std::string context = InputContext(expected.name);
  int64_t elements = 1;
  for (int64_t size : dims) {
    if (size < 0) {
      return Bad(context + ": dimension " + std::to_string(size) +
                 " is negative");
    }
    if (size != 0 && elements > std::numeric_limits<int64_t>::max() / size) {
      return Bad(context + ": its shape has more elements than fit in 64 bits");
    }
    elements *= size;
  }
  const Shape shape(std::vector<int64_t>(dims.begin(), dims.end()));
  if (!expected.shape) return shape;
  const std::vector<int64_t>& want = *expected.shape;
  bool fits = dims.size() == want.size();
  for (size_t i = 0; fits && i < want.size(); ++i) {
    fits = want[i] < 0 || want[i] == dims[i];
  }
  if (fits) return shape;
  return Bad(context + ": shape " + shape.ToString() +
             " does not match the model's " + ShapeText(expected.shape) +
             " (-1: any size)");
}

StatusOr<Tensor> TensorFromBytes(DataType dtype, const Shape& shape,
                                 std::string_view bytes,
                                 const std::string& context) {
  const int64_t count = shape.NumElements();
  if (dtype == DataType::kString) {
    if (count > static_cast<int64_t>(bytes.size() / 4)) {
      return Bad(context + ": shape " + shape.ToString() + " needs " +
                 std::to_string(count) + " BYTES elements; its " +
                 std::to_string(bytes.size()) + " bytes cannot hold them");
    }
    WEFT_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Create(dtype, shape));
    WEFT_RETURN_IF_ERROR(ReadBinaryStrings(bytes, &tensor, context));
    return tensor;
  }
  const uint64_t element = DataTypeSize(dtype);
  if (static_cast<uint64_t>(count) != bytes.size() / element ||
      bytes.size() % element != 0) {
    return Bad(context + ": shape " + shape.ToString() + " of " +
               std::string(ProtocolDatatype(dtype).value_or("?")) + " is " +
               std::to_string(count) + " elements, but its data is " +
               std::to_string(bytes.size()) + " bytes");
  }
  WEFT_ASSIGN_OR_RETURN(Tensor tensor,
                        Tensor::CreateUninitialized(dtype, shape));
  if (!bytes.empty()) {
    std::memcpy(tensor.raw_data(), bytes.data(), bytes.size());
  }
  return tensor;
}

StatusOr<InferRequest> ParseInferRequest(std::string_view body,
                                         std::optional<int64_t> header_length,
                                         const ModelSignature& signature,
                                         int max_json_depth) {
  std::string_view json_text = body;
  std::string_view tail;
  if (header_length) {
    if (*header_length < 0 ||
        static_cast<uint64_t>(*header_length) > body.size()) {
      return Bad("Inference-Header-Content-Length " +
                 std::to_string(*header_length) +
                 " is past the end of the body (" +
                 std::to_string(body.size()) + " bytes)");
    }
    json_text = body.substr(0, *header_length);
    tail = body.substr(*header_length);
  }
  if (const std::optional<size_t> at =
          FindJsonNestingPast(json_text, max_json_depth)) {
    return Bad("the request's JSON nests deeper than " +
               std::to_string(max_json_depth) + " levels (at byte " +
               std::to_string(*at) + ")");
  }
  Json request;
  try {
    request = Json::parse(json_text);
  } catch (const Json::exception& error) {
    // "[json.exception.parse_error.101] parse error at line 1, ...": the
    // sentence after the bracketed tag.
    const std::string what = error.what();
    const size_t tag_end = what.find("] ");
    return Bad(
        "the request is not valid JSON: " +
        (tag_end == std::string::npos ? what : what.substr(tag_end + 2)));
  }
  if (!request.is_object()) return Bad("the request is not a JSON object");
  InferRequest out;
  if (auto id = request.find("id"); id != request.end()) {
    if (!id->is_string()) return Bad("\"id\" must be a string");
    out.id = id->get<std::string>();
  }
  WEFT_RETURN_IF_ERROR(ReadRequestParameters(request, &out));
  WEFT_RETURN_IF_ERROR(ReadInputs(request, signature, &tail, &out));
  if (!tail.empty()) {
    return Bad(std::to_string(tail.size()) +
               " bytes of binary data follow the header that no input's "
               "binary_data_size claims");
  }
  WEFT_RETURN_IF_ERROR(ReadOutputs(request, signature, &out));
  return out;
}

}  // namespace weft::serve
