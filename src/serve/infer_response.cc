#include "serve/infer_response.h"

#include <nlohmann/json.hpp>

#include "weft/float16.h"

namespace weft::serve {
namespace {

using Json = nlohmann::json;

template <class T, class Convert>
Json ValuesOf(const Tensor& tensor, Convert convert) {
  Json values = Json::array();
  const T* data = tensor.data<T>();
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    values.push_back(convert(data[i]));
  }
  return values;
}

template <class T>
Json PlainValuesOf(const Tensor& tensor) {
  return ValuesOf<T>(tensor, [](T x) { return x; });
}

Json JsonValues(const Tensor& tensor) {
  switch (tensor.dtype()) {
    case DataType::kBool:
      return PlainValuesOf<bool>(tensor);
    case DataType::kInt8:
      return PlainValuesOf<int8_t>(tensor);
    case DataType::kInt16:
      return PlainValuesOf<int16_t>(tensor);
    case DataType::kInt32:
      return PlainValuesOf<int32_t>(tensor);
    case DataType::kInt64:
      return PlainValuesOf<int64_t>(tensor);
    case DataType::kUInt8:
      return PlainValuesOf<uint8_t>(tensor);
    case DataType::kUInt16:
      return PlainValuesOf<uint16_t>(tensor);
    case DataType::kUInt32:
      return PlainValuesOf<uint32_t>(tensor);
    case DataType::kUInt64:
      return PlainValuesOf<uint64_t>(tensor);
    case DataType::kFloat32:
      return PlainValuesOf<float>(tensor);
    case DataType::kFloat64:
      return PlainValuesOf<double>(tensor);
    case DataType::kString:
      return PlainValuesOf<std::string>(tensor);
    case DataType::kFloat16:
      return ValuesOf<Float16>(tensor,
                               [](Float16 x) { return static_cast<float>(x); });
    case DataType::kBFloat16:
      return ValuesOf<BFloat16>(
          tensor, [](BFloat16 x) { return static_cast<float>(x); });
    default:
      return Json::array();
  }
}

std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

void AppendTensorBytes(const Tensor& tensor, std::string* out) {
  if (tensor.dtype() != DataType::kString) {
    out->append(static_cast<const char*>(tensor.raw_data()),
                tensor.size_bytes());
    return;
  }
  const std::string* strings = tensor.data<std::string>();
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    const auto length = static_cast<uint32_t>(strings[i].size());
    for (int shift = 0; shift < 32; shift += 8) {
      out->push_back(static_cast<char>((length >> shift) & 0xff));
    }
    out->append(strings[i]);
  }
}

std::vector<RequestedOutput> OutputsToSend(const InferRequest& request,
                                           const ModelSignature& signature) {
  if (!request.outputs.empty()) return request.outputs;
  std::vector<RequestedOutput> all;
  for (const TensorSignature& output : signature.outputs) {
    all.push_back({output.name, request.binary_outputs});
  }
  return all;
}

EncodedResponse EncodeInferResponse(const std::string& model_name,
                                    const std::string& model_version,
                                    const InferRequest& request,
                                    const std::vector<RequestedOutput>& sent,
                                    const std::vector<Tensor>& outputs) {
  Json response = {{"model_name", model_name},
                   {"model_version", model_version}};
  if (request.id) response["id"] = *request.id;
  if (!request.parameters_json.empty()) {
    response["parameters"] = Json::parse(request.parameters_json);
  }
  Json entries = Json::array();
  std::string binary;
  for (size_t i = 0; i < sent.size() && i < outputs.size(); ++i) {
    const Tensor& tensor = outputs[i];
    Json entry = {{"name", sent[i].name},
                  {"datatype",
                   std::string(ProtocolDatatype(tensor.dtype()).value_or(""))},
                  {"shape", tensor.shape().dims()}};
    if (sent[i].binary) {
      const size_t before = binary.size();
      AppendTensorBytes(tensor, &binary);
      entry["parameters"] = {{"binary_data_size", binary.size() - before}};
    } else {
      entry["data"] = JsonValues(tensor);
    }
    entries.push_back(std::move(entry));
  }
  response["outputs"] = std::move(entries);
  EncodedResponse encoded;
  encoded.body = Dump(response);
  bool any_binary = false;
  for (const RequestedOutput& output : sent) any_binary |= output.binary;
  if (any_binary) {
    encoded.json_length = encoded.body.size();
    encoded.body += binary;
  }
  return encoded;
}

std::string ErrorBody(const std::string& message) {
  return Dump(Json{{"error", message}});
}

}  // namespace weft::serve
