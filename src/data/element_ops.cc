#include "data/element_ops.h"

#include <cstring>
#include <string>

#include "weft/check.h"
#include "weft/tensor_rows.h"

namespace weft::data::internal {
namespace {

Shape RowShape(const Shape& shape) {
  std::vector<int64_t> dims = shape.dims();
  dims.erase(dims.begin());
  return Shape(dims);
}

Shape WithLeading(int64_t n, const Shape& shape) {
  std::vector<int64_t> dims = shape.dims();
  dims.insert(dims.begin(), n);
  return Shape(dims);
}

// Copies `count` elements from src[src_at] to dst[dst_at].
void CopyElements(const Tensor& src, int64_t src_at, Tensor& dst,
                  int64_t dst_at, int64_t count) {
  if (src.dtype() == DataType::kString) {
    const std::string* from = src.data<std::string>() + src_at;
    std::string* to = dst.data<std::string>() + dst_at;
    for (int64_t i = 0; i < count; ++i) to[i] = from[i];
    return;
  }
  const size_t size = DataTypeSize(src.dtype());
  if (count == 0) return;
  std::memcpy(static_cast<char*>(dst.raw_data()) + dst_at * size,
              static_cast<const char*>(src.raw_data()) + src_at * size,
              count * size);
}

Status CheckBatchable(const Tensor& t, int64_t position) {
  if (!t.IsInitialized() || IsContainerType(t.dtype())) {
    return InvalidArgumentError(
        "element " + std::to_string(position) + " holds a " +
        (t.IsInitialized() ? DataTypeName(t.dtype()) : std::string("null")) +
        " value, which cannot be batched");
  }
  return Status::OK();
}

// Copies `row` (any shape that fits) into the block of `out` that starts at
// element `base`, laid out with `out_row`'s dimensions.
void CopyPadded(const Tensor& row, const Shape& out_row, Tensor& out,
                int64_t base) {
  const int rank = row.shape().rank();
  if (row.NumElements() == 0) return;
  if (rank == 0) {
    CopyElements(row, 0, out, base, 1);
    return;
  }
  // Walk every index of the row's leading dimensions; copy its last
  // dimension as one run.
  std::vector<int64_t> index(rank - 1, 0);
  const int64_t run = row.shape().dim(rank - 1);
  int64_t src = 0;
  while (true) {
    int64_t dst = 0;
    for (int d = 0; d < rank - 1; ++d) dst = dst * out_row.dim(d) + index[d];
    dst = dst * out_row.dim(rank - 1);
    CopyElements(row, src, out, base + dst, run);
    src += run;
    int d = rank - 2;
    while (d >= 0 && ++index[d] == row.shape().dim(d)) index[d--] = 0;
    if (d < 0) break;
  }
}

}  // namespace

Tensor SliceRow(const Tensor& tensor, int64_t row) {
  WEFT_CHECK(
      tensor.shape().rank() >= 1 && row >= 0 && row < tensor.shape().dim(0),
      "SliceRow out of range");
  Tensor out(tensor.dtype(), RowShape(tensor.shape()));
  const int64_t n = out.NumElements();
  CopyElements(tensor, row * n, out, 0, n);
  return out;
}

StatusOr<Tensor> StackRows(const std::vector<const Tensor*>& rows,
                           int64_t first_index) {
  WEFT_CHECK(!rows.empty(), "StackRows of no rows");
  const Tensor& first = *rows[0];
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t index = first_index + static_cast<int64_t>(i);
    WEFT_RETURN_IF_ERROR(CheckBatchable(*rows[i], index));
    if (rows[i]->dtype() != first.dtype() ||
        !(rows[i]->shape() == first.shape())) {
      return InvalidArgumentError(
          "element " + std::to_string(index) + " is " +
          DataTypeName(rows[i]->dtype()) + rows[i]->shape().ToString() +
          ", its batch's first element " + DataTypeName(first.dtype()) +
          first.shape().ToString() +
          " (batch needs equal shapes; padded_batch pads them)");
    }
  }
  WEFT_ASSIGN_OR_RETURN(
      Tensor out,
      first.dtype() == DataType::kString
          ? Tensor::Create(
                first.dtype(),
                WithLeading(static_cast<int64_t>(rows.size()), first.shape()))
          : Tensor::CreateUninitialized(
                first.dtype(),
                WithLeading(static_cast<int64_t>(rows.size()), first.shape())));
  const int64_t n = first.NumElements();
  for (size_t i = 0; i < rows.size(); ++i) {
    CopyElements(*rows[i], 0, out, static_cast<int64_t>(i) * n, n);
  }
  return out;
}

StatusOr<Tensor> StackPadded(const std::vector<const Tensor*>& rows,
                             const Shape& shape, int64_t first_index,
                             const Tensor* pad) {
  WEFT_CHECK(!rows.empty(), "StackPadded of no rows");
  const Tensor& first = *rows[0];
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t index = first_index + static_cast<int64_t>(i);
    WEFT_RETURN_IF_ERROR(CheckBatchable(*rows[i], index));
    const Shape& s = rows[i]->shape();
    bool fits = rows[i]->dtype() == first.dtype() && s.rank() == shape.rank();
    for (int d = 0; fits && d < s.rank(); ++d) fits = s.dim(d) <= shape.dim(d);
    if (!fits) {
      return InvalidArgumentError(
          "element " + std::to_string(index) + " is " +
          DataTypeName(rows[i]->dtype()) + s.ToString() +
          ", which does not fit the padded shape " +
          DataTypeName(first.dtype()) + shape.ToString());
    }
  }
  WEFT_ASSIGN_OR_RETURN(
      Tensor out,
      Tensor::Create(first.dtype(),
                     WithLeading(static_cast<int64_t>(rows.size()), shape)));
  const int64_t n = shape.NumElements();
  if (pad != nullptr) {
    WEFT_CHECK(pad->dtype() == first.dtype() && pad->NumElements() == 1,
               "StackPadded's pad is one element of the rows' dtype");
    // The first block element by element, then block by block.
    for (int64_t k = 0; k < n; ++k) CopyElements(*pad, 0, out, k, 1);
    for (size_t i = 1; i < rows.size(); ++i) {
      CopyElements(out, 0, out, static_cast<int64_t>(i) * n, n);
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    CopyPadded(*rows[i], shape, out, static_cast<int64_t>(i) * n);
  }
  return out;
}

StatusOr<Tensor> ConcatRows(const std::vector<const Tensor*>& parts) {
  WEFT_CHECK(!parts.empty(), "ConcatRows of no parts");
  const Tensor& first = *parts[0];
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = *parts[i];
    WEFT_RETURN_IF_ERROR(CheckBatchable(t, static_cast<int64_t>(i)));
    if (t.dtype() != first.dtype() || t.shape().rank() < 1 ||
        first.shape().rank() < 1 ||
        !(RowShape(t.shape()) == RowShape(first.shape()))) {
      return InvalidArgumentError(
          "part " + std::to_string(i) + " is " + DataTypeName(t.dtype()) +
          t.shape().ToString() + ", part 0 " + DataTypeName(first.dtype()) +
          first.shape().ToString() + ": they must differ only in rows");
    }
  }
  return weft::ConcatRows(parts);  // checked above, each part by name
}

}  // namespace weft::data::internal
