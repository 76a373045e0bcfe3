#include "weft/tensor_rows.h"

#include <algorithm>
#include <cstring>

#include "weft/check.h"

namespace weft {
namespace {

// Copies `rows` rows starting at `from_row` of `from` to `to_row` of `to`.
void CopyRows(const Tensor& from, int64_t from_row, Tensor* to, int64_t to_row,
              int64_t rows) {
  const int64_t row_elements =
      from.shape().dim(0) == 0 ? 0 : from.NumElements() / from.shape().dim(0);
  if (from.dtype() == DataType::kString) {
    const std::string* src = from.data<std::string>() + from_row * row_elements;
    std::string* dst = to->data<std::string>() + to_row * row_elements;
    std::copy(src, src + rows * row_elements, dst);
    return;
  }
  const size_t row_bytes = row_elements * DataTypeSize(from.dtype());
  if (rows * row_bytes == 0) return;
  std::memcpy(static_cast<char*>(to->raw_data()) + to_row * row_bytes,
              static_cast<const char*>(from.raw_data()) + from_row * row_bytes,
              rows * row_bytes);
}

}  // namespace

bool SameRowShape(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape().rank() != b.shape().rank() ||
      a.shape().rank() == 0) {
    return false;
  }
  for (int i = 1; i < a.shape().rank(); ++i) {
    if (a.shape().dim(i) != b.shape().dim(i)) return false;
  }
  return true;
}

StatusOr<Tensor> ConcatRows(const std::vector<const Tensor*>& parts) {
  if (parts.empty()) return InvalidArgumentError("no tensors to join");
  int64_t rows = 0;
  for (const Tensor* part : parts) {
    if (!SameRowShape(*parts[0], *part)) {
      return InvalidArgumentError(
          "tensors of shapes " + parts[0]->shape().ToString() + " and " +
          part->shape().ToString() + " cannot be joined along their rows");
    }
    rows += part->shape().dim(0);
  }
  std::vector<int64_t> dims = parts[0]->shape().dims();
  dims[0] = rows;
  WEFT_ASSIGN_OR_RETURN(Tensor joined,
                        Tensor::Create(parts[0]->dtype(), Shape(dims)));
  int64_t at = 0;
  for (const Tensor* part : parts) {
    CopyRows(*part, 0, &joined, at, part->shape().dim(0));
    at += part->shape().dim(0);
  }
  return joined;
}

Tensor SliceRows(const Tensor& tensor, int64_t begin, int64_t end) {
  WEFT_CHECK(tensor.shape().rank() >= 1 && begin >= 0 && begin <= end &&
                 end <= tensor.shape().dim(0),
             "SliceRows outside the tensor");
  std::vector<int64_t> dims = tensor.shape().dims();
  dims[0] = end - begin;
  Tensor slice(tensor.dtype(), Shape(dims));
  CopyRows(tensor, begin, &slice, 0, end - begin);
  return slice;
}

}  // namespace weft
