// Tensor plumbing of the batching stages: rows cut out of a tensor, and
// tensors stacked (or padded and stacked) into a batch. Bytes are copied as
// they are, strings element by element.
#ifndef WEFT_SRC_DATA_ELEMENT_OPS_H_
#define WEFT_SRC_DATA_ELEMENT_OPS_H_

#include <cstdint>
#include <vector>

#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::data::internal {

// Row `row` of `tensor` (its first dimension removed), copied.
// REQUIRES: rank >= 1 and 0 <= row < dim(0); checked.
Tensor SliceRow(const Tensor& tensor, int64_t row);

// `rows` stacked along a new first dimension. Every row must have the
// first one's dtype and shape; otherwise InvalidArgument names the row (as
// element first_index + its position: its index in the stage's input) and
// both shapes. REQUIRES: rows is not empty.
StatusOr<Tensor> StackRows(const std::vector<const Tensor*>& rows,
                           int64_t first_index = 0);

// As StackRows, each row padded (at the end of each dimension) to `shape`,
// which every row must fit, with zeros or, when given, the scalar `pad` of
// the rows' dtype. Rows must agree in dtype and rank.
StatusOr<Tensor> StackPadded(const std::vector<const Tensor*>& rows,
                             const Shape& shape, int64_t first_index = 0,
                             const Tensor* pad = nullptr);

// `parts` joined along their first dimension. All must agree in dtype and
// in every other dimension (InvalidArgument otherwise). REQUIRES: parts is
// not empty.
StatusOr<Tensor> ConcatRows(const std::vector<const Tensor*>& parts);

}  // namespace weft::data::internal

#endif  // WEFT_SRC_DATA_ELEMENT_OPS_H_
