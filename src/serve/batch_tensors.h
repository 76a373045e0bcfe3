// Stacking requests into one batch and splitting the outputs back: tensors
// joined and cut along their first dimension (rows), bytes copied as they
// are, so a request's rows hold the same bits whatever batch they ran in.
#ifndef WEFT_SRC_SERVE_BATCH_TENSORS_H_
#define WEFT_SRC_SERVE_BATCH_TENSORS_H_

#include <cstdint>
#include <vector>

#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::serve {

// Both have a first dimension and agree in dtype and every other dimension.
bool SameRowShape(const Tensor& a, const Tensor& b);

// `parts` joined along the first dimension. REQUIRES: parts is not empty and
// its tensors have SameRowShape; fails (InvalidArgument) otherwise.
StatusOr<Tensor> ConcatRows(const std::vector<const Tensor*>& parts);

// Rows [begin, end) of `tensor`, copied. REQUIRES: rank >= 1 and
// 0 <= begin <= end <= dim(0); checked.
Tensor SliceRows(const Tensor& tensor, int64_t begin, int64_t end);

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_BATCH_TENSORS_H_
