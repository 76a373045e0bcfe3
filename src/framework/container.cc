#include "weft/container.h"

#include <string>
#include <utility>

namespace weft {
namespace {

// What a container handle points at. Never changed once made: handles are
// shared between nodes, Runs and threads.
struct ContainerPayload {
  std::vector<Tensor> items;
};

StatusOr<Tensor> Wrap(DataType dtype, std::vector<Tensor> items) {
  auto* payload = new ContainerPayload{std::move(items)};
  return Tensor::WrapExternal(dtype, Shape{}, payload,
                              [payload] { delete payload; });
}

Status CheckItem(const Tensor& item, DataType expected,
                 const std::string& what) {
  if (!item.IsInitialized()) {
    return InvalidArgumentError(what + " is an uninitialized tensor");
  }
  if (item.dtype() != expected) {
    return InvalidArgumentError(what + " is " + DataTypeName(item.dtype()) +
                                ", expected " + DataTypeName(expected));
  }
  return Status::OK();
}

}  // namespace

StatusOr<Tensor> MakeSequence(DataType element, std::vector<Tensor> items) {
  if (IsContainerType(element)) {
    return InvalidArgumentError(std::string("a sequence holds tensors, not ") +
                                DataTypeName(element) + " values");
  }
  for (size_t i = 0; i < items.size(); ++i) {
    WEFT_RETURN_IF_ERROR(
        CheckItem(items[i], element, "sequence item " + std::to_string(i)));
  }
  return Wrap(SequenceOf(element), std::move(items));
}

StatusOr<Tensor> MakeOptional(DataType type, std::optional<Tensor> value) {
  if (IsOptionalType(type)) {
    return InvalidArgumentError(std::string("an optional cannot hold an ") +
                                DataTypeName(type) + " value");
  }
  std::vector<Tensor> items;
  if (value) {
    WEFT_RETURN_IF_ERROR(CheckItem(*value, type, "the optional's value"));
    items.push_back(*std::move(value));
  }
  return Wrap(OptionalOf(type), std::move(items));
}

const std::vector<Tensor>& ContainerItems(const Tensor& container) {
  WEFT_CHECK(IsContainerType(container.dtype()) && container.IsInitialized(),
             "ContainerItems of a tensor that is not a container value");
  return static_cast<const ContainerPayload*>(container.raw_data())->items;
}

const std::vector<Tensor>& SequenceItems(const Tensor& sequence) {
  WEFT_CHECK(IsSequenceType(sequence.dtype()),
             "SequenceItems of a value that is not a sequence");
  return ContainerItems(sequence);
}

const Tensor* OptionalValue(const Tensor& optional) {
  WEFT_CHECK(IsOptionalType(optional.dtype()),
             "OptionalValue of a value that is not an optional");
  const std::vector<Tensor>& items = ContainerItems(optional);
  return items.empty() ? nullptr : &items.front();
}

}  // namespace weft
