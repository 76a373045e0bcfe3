// Values of the container dtypes (weft/tensor.h): ONNX's sequences and
// optionals. A container value is a scalar Tensor handle on an immutable
// payload; copying it shares the payload, and ops that "change" a sequence
// (SequenceInsert, SequenceErase) make a new one that shares the items'
// buffers.
//
//   weft::Tensor seq = weft::MakeSequence(weft::DataType::kFloat32,
//                                         {a, b}).value();
//   for (const weft::Tensor& item : weft::SequenceItems(seq)) ...
#ifndef WEFT_CONTAINER_H_
#define WEFT_CONTAINER_H_

#include <optional>
#include <vector>

#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

// A sequence(element) value holding `items`, in order (none is allowed).
// Fails when `element` is not a tensor dtype, or naming the first item that
// is uninitialized or of another dtype.
StatusOr<Tensor> MakeSequence(DataType element, std::vector<Tensor> items);

// An optional(type) value holding `value`, or empty when `value` is
// nullopt. `type` is a tensor or sequence dtype; fails when it is not, or
// when `value` is uninitialized or of another dtype.
StatusOr<Tensor> MakeOptional(DataType type, std::optional<Tensor> value);

// A sequence's items. REQUIRES: IsSequenceType(sequence.dtype()) and the
// handle is initialized; checked (WEFT_CHECK). The reference lives as long
// as any handle on the value.
const std::vector<Tensor>& SequenceItems(const Tensor& sequence);

// An optional's value, or null when it is empty. REQUIRES:
// IsOptionalType(optional.dtype()) and initialized; checked.
const Tensor* OptionalValue(const Tensor& optional);

// A container's contents: a sequence's items, or an optional's value as
// zero or one item. REQUIRES: IsContainerType(container.dtype()) and
// initialized; checked.
const std::vector<Tensor>& ContainerItems(const Tensor& container);

}  // namespace weft

#endif  // WEFT_CONTAINER_H_
