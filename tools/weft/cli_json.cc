#include "cli_json.h"

#include <cstdio>
#include <regex>

#include "cli_util.h"
#include "weft/container.h"

namespace weft::cli {
namespace {

bool json_errors = false;

constexpr StatusCode kCodes[] = {
    StatusCode::kCancelled,         StatusCode::kUnknown,
    StatusCode::kInvalidArgument,   StatusCode::kDeadlineExceeded,
    StatusCode::kNotFound,          StatusCode::kAlreadyExists,
    StatusCode::kResourceExhausted, StatusCode::kFailedPrecondition,
    StatusCode::kOutOfRange,        StatusCode::kUnimplemented,
    StatusCode::kInternal,
};

template <class T>
nlohmann::json ValuesAs(const Tensor& tensor) {
  nlohmann::json list = nlohmann::json::array();
  const T* data = tensor.data<T>();
  for (int64_t i = 0; i < tensor.shape().NumElements(); ++i)
    list.push_back(data[i]);
  return list;
}

// Every element, exactly: integers as integers (int64 and uint64 beyond
// 2^53 too), booleans as true/false, floats as numbers (NaN and infinities
// have no JSON form and print as null).
nlohmann::json ValuesJson(const Tensor& tensor) {
  switch (tensor.dtype()) {
    case DataType::kBool:
      return ValuesAs<bool>(tensor);
    case DataType::kInt8:
      return ValuesAs<int8_t>(tensor);
    case DataType::kUInt8:
      return ValuesAs<uint8_t>(tensor);
    case DataType::kInt16:
      return ValuesAs<int16_t>(tensor);
    case DataType::kUInt16:
      return ValuesAs<uint16_t>(tensor);
    case DataType::kInt32:
      return ValuesAs<int32_t>(tensor);
    case DataType::kUInt32:
      return ValuesAs<uint32_t>(tensor);
    case DataType::kInt64:
      return ValuesAs<int64_t>(tensor);
    case DataType::kUInt64:
      return ValuesAs<uint64_t>(tensor);
    case DataType::kFloat64:
      return ValuesAs<double>(tensor);
    case DataType::kFloat32:
      return ValuesAs<float>(tensor);
    case DataType::kString:  // Bytes that are not UTF-8 print as U+FFFD.
      return ValuesAs<std::string>(tensor);
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt4:
    case DataType::kUInt4:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      break;
  }
  nlohmann::json list = nlohmann::json::array();
  for (int64_t i = 0; i < tensor.shape().NumElements(); ++i) {
    list.push_back(tensor.ValueAsDouble(i));
  }
  return list;
}

}  // namespace

void PrintJson(const nlohmann::json& value) {
  std::printf(
      "%s\n",
      value.dump(1, ' ', false, nlohmann::json::error_handler_t::replace)
          .c_str());
}

void AddThreadCounts(nlohmann::json& out, int inter, int intra) {
  out["inter_op_parallelism_threads"] = inter;
  out["intra_op_parallelism_threads"] = intra;
}

nlohmann::json TensorJson(const std::string& name, const Tensor& tensor,
                          bool values) {
  nlohmann::json out = {{"name", name},
                        {"dtype", DataTypeName(tensor.dtype())},
                        {"shape", tensor.shape().dims()},
                        {"hash", ContentHash(tensor)}};
  if (IsContainerType(tensor.dtype())) {
    out.erase("shape");
    out["items"] = nlohmann::json::array();
    const std::vector<Tensor>& items = ContainerItems(tensor);
    for (size_t i = 0; i < items.size(); ++i) {
      out["items"].push_back(
          TensorJson(name + "[" + std::to_string(i) + "]", items[i], values));
    }
    return out;
  }
  if (values) out["values"] = ValuesJson(tensor);
  return out;
}

std::string CompilerName() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "g++ " __VERSION__;
#else
  return "unknown";
#endif
}

void EnableJsonErrors() { json_errors = true; }

bool JsonErrorsEnabled() { return json_errors; }

nlohmann::json ErrorJson(int exit_code, const std::string& message) {
  // An error of the command's own (a flag, a missing feed) names no code:
  // it is the user's input (exit 2) or the run (exit 1).
  std::string code = exit_code == kExitBadInput ? "InvalidArgument" : "Unknown";
  size_t first = std::string::npos;
  for (StatusCode c : kCodes) {
    const std::string name = std::string(StatusCodeName(c)) + ":";
    const size_t at = message.find(name);
    if (at != std::string::npos && at < first) {
      first = at;
      code = StatusCodeName(c);
    }
  }
  nlohmann::json node = nullptr;
  static const std::regex kNode("(?:node|placeholder) '([^']+)'");
  if (std::smatch m; std::regex_search(message, m, kNode)) node = m[1].str();
  return {{"error",
           {{"code", code},
            {"exit_code", exit_code},
            {"message", message},
            {"node", node}}}};
}

}  // namespace weft::cli
