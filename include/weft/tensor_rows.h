// Tensors joined and cut along their first dimension (rows), bytes copied
// as they are (strings element by element), so a row holds the same bits
// whatever batch it was joined into or cut from: how `weft serve` stacks
// requests into a batch and splits the outputs back, and how the input
// pipelines join batches (weft/data.h).
#ifndef WEFT_TENSOR_ROWS_H_
#define WEFT_TENSOR_ROWS_H_

#include <cstdint>
#include <vector>

#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

// Both have a first dimension and agree in dtype and every other dimension.
bool SameRowShape(const Tensor& a, const Tensor& b);

// `parts` joined along the first dimension. REQUIRES: parts is not empty and
// its tensors have SameRowShape; fails (InvalidArgument) otherwise.
StatusOr<Tensor> ConcatRows(const std::vector<const Tensor*>& parts);

// Rows [begin, end) of `tensor`, copied. REQUIRES: rank >= 1 and
// 0 <= begin <= end <= dim(0); checked.
Tensor SliceRows(const Tensor& tensor, int64_t begin, int64_t end);

}  // namespace weft

#endif  // WEFT_TENSOR_ROWS_H_
