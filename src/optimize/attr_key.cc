#include "optimize/attr_key.h"

#include <cstring>
#include <functional>
#include <string_view>
#include <variant>

namespace weft::internal {
namespace {

// Constants past this size are left alone: each round would hash a
// model's weights again, and equal large weights are rare.
constexpr size_t kMaxHashedBytes = 64 * 1024;

// A tensor's dtype, shape and a hash of its bytes; nullopt for one whose
// bytes are not its value (strings, containers) or too large to hash.
std::optional<std::string> TensorKey(const Tensor& t) {
  if (t.dtype() == DataType::kString || IsContainerType(t.dtype()) ||
      t.size_bytes() > kMaxHashedBytes) {
    return std::nullopt;
  }
  const std::string_view bytes(static_cast<const char*>(t.raw_data()),
                               t.size_bytes());
  return std::string(DataTypeName(t.dtype())) + t.shape().ToString() + "#" +
         std::to_string(std::hash<std::string_view>{}(bytes));
}

}  // namespace

std::optional<std::string> AttrKey(const AttrMap& attrs, TensorAttrs tensors) {
  std::string key;
  for (const auto& [name, value] : attrs) {
    key += name;
    key += '\1';
    key += std::to_string(value.variant().index());
    key += '\1';
    if (const Tensor* t = value.get_if<Tensor>()) {
      std::optional<std::string> tensor = TensorKey(*t);
      if (!tensor || tensors == TensorAttrs::kRefused) return std::nullopt;
      key += *tensor;
    } else if (const auto* list = value.get_if<std::vector<Tensor>>()) {
      if (tensors == TensorAttrs::kRefused && !list->empty()) {
        return std::nullopt;
      }
      for (const Tensor& each : *list) {
        std::optional<std::string> tensor = TensorKey(each);
        if (!tensor) return std::nullopt;
        key += *tensor + ',';
      }
    } else if (value.type() == AttrType::kGraph) {
      return std::nullopt;
    } else if (const double* d = value.get_if<double>()) {
      uint64_t bits = 0;  // Exact: 0.1 and its neighbour differ.
      std::memcpy(&bits, d, sizeof(bits));
      key += std::to_string(bits);
    } else if (const auto* ds = value.get_if<std::vector<double>>()) {
      for (double each : *ds) {
        uint64_t bits = 0;
        std::memcpy(&bits, &each, sizeof(bits));
        key += std::to_string(bits) + ',';
      }
    } else if (const std::string* s = value.get_if<std::string>()) {
      key += std::to_string(s->size()) + ':' + *s;
    } else if (const auto* ss = value.get_if<std::vector<std::string>>()) {
      for (const std::string& each : *ss) {
        key += std::to_string(each.size()) + ':' + each;
      }
    } else {
      // Integers, bools, dtypes and shapes print exactly.
      key += value.DebugString();
    }
    key += '\2';
  }
  return key;
}

}  // namespace weft::internal
