// Batch, PaddedBatch and Unbatch.
#include <limits>
#include <type_traits>

#include "data/dataset_node.h"
#include "data/element_ops.h"
#include "weft/dtype_dispatch.h"

namespace weft::data {
namespace {

using internal::IteratorEnv;
using internal::StageIterator;
using internal::StageOr;
using internal::Stages;

class BatchStage final : public StageIterator {
 public:
  // padded: pad each component to padded_shapes (-1 or absent: the largest
  // in the batch).
  BatchStage(Stages inputs, int64_t batch_size, bool drop_remainder,
             bool padded, std::vector<std::vector<int64_t>> padded_shapes,
             std::vector<Tensor> padding_values)
      : StageIterator(padded ? "PaddedBatch" : "Batch", std::move(inputs)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        padded_(padded),
        padded_shapes_(std::move(padded_shapes)),
        padding_values_(std::move(padding_values)) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    std::vector<Element> rows;
    const int64_t first = consumed_;
    Status first_error;
    while (static_cast<int64_t>(rows.size()) < batch_size_) {
      Element row;
      bool input_end = false;
      Status s = InputNext(0, &row, &input_end);
      if (input_end) break;
      ++consumed_;
      // The batch fails with its first element's error, after taking all
      // of its elements, so the next batch starts where it should.
      if (!s.ok() && first_error.ok()) first_error = s;
      rows.push_back(std::move(row));
    }
    if (rows.empty() ||
        (drop_remainder_ && static_cast<int64_t>(rows.size()) < batch_size_)) {
      *end = true;
      return Status::OK();
    }
    WEFT_RETURN_IF_ERROR(first_error);
    return Stack(rows, first, out);
  }

 private:
  Status Stack(const std::vector<Element>& rows, int64_t first, Element* out) {
    const size_t arity = rows[0].size();
    for (size_t r = 0; r < rows.size(); ++r) {
      if (rows[r].size() != arity) {
        return InvalidArgumentError(
            Name() + ": element " + std::to_string(first + r) + " has " +
            std::to_string(rows[r].size()) + " components, element " +
            std::to_string(first) + " has " + std::to_string(arity));
      }
    }
    out->clear();
    for (size_t c = 0; c < arity; ++c) {
      std::vector<const Tensor*> column;
      for (const Element& row : rows) column.push_back(&row[c]);
      StatusOr<Tensor> stacked = padded_
                                     ? StackPaddedComponent(column, c, first)
                                     : internal::StackRows(column, first);
      if (!stacked.ok()) {
        return InvalidArgumentError(Name() + ": component " +
                                    std::to_string(c) + ": " +
                                    stacked.status().message());
      }
      out->push_back(std::move(stacked).value());
    }
    return Status::OK();
  }

  StatusOr<Tensor> StackPaddedComponent(
      const std::vector<const Tensor*>& column, size_t c, int64_t first) {
    std::vector<int64_t> dims = column[0]->shape().dims();
    for (const Tensor* t : column) {
      if (t->shape().rank() != static_cast<int>(dims.size())) {
        return InvalidArgumentError("elements differ in rank (" +
                                    t->shape().ToString() + " and " +
                                    column[0]->shape().ToString() + ")");
      }
      for (size_t d = 0; d < dims.size(); ++d) {
        dims[d] = std::max(dims[d], t->shape().dim(static_cast<int>(d)));
      }
    }
    if (c < padded_shapes_.size() && !padded_shapes_[c].empty()) {
      const std::vector<int64_t>& want = padded_shapes_[c];
      if (want.size() != dims.size()) {
        return InvalidArgumentError(
            "padded_shapes gives rank " + std::to_string(want.size()) +
            ", the elements have rank " + std::to_string(dims.size()));
      }
      for (size_t d = 0; d < dims.size(); ++d) {
        if (want[d] >= 0) dims[d] = want[d];
      }
    }
    const size_t v = padding_values_.size() == 1 ? 0 : c;
    if (v >= padding_values_.size() || !padding_values_[v].IsInitialized()) {
      return internal::StackPadded(column, Shape(dims), first);
    }
    WEFT_ASSIGN_OR_RETURN(Tensor pad,
                          PadOfDtype(padding_values_[v], column[0]->dtype()));
    return internal::StackPadded(column, Shape(dims), first, &pad);
  }

  template <class T>
  static double AsDouble(T v) {
    if constexpr (std::is_same_v<T, Float16>) {
      return static_cast<double>(static_cast<float>(v));
    } else {
      return static_cast<double>(v);
    }
  }
  template <class T>
  static T FromDouble(double v) {
    if constexpr (std::is_same_v<T, Float16>) {
      return T(static_cast<float>(v));
    } else {
      return static_cast<T>(v);
    }
  }

  // The padding value as a scalar of `dtype`: itself, or a number converted
  // where `dtype` holds it exactly (a Python 0 or -1 for any numeric
  // component, as tf.data converts its padding values).
  static StatusOr<Tensor> PadOfDtype(const Tensor& value, DataType dtype) {
    if (value.NumElements() != 1) {
      return InvalidArgumentError(
          "padding_values: a padding value is one "
          "element, not " +
          value.shape().ToString());
    }
    if (value.dtype() == dtype) return value;
    const std::string mismatch =
        "padding value of dtype " + std::string(DataTypeName(value.dtype())) +
        " for a component of dtype " + DataTypeName(dtype);
    if (IsListedOnlyType(value.dtype()) || IsListedOnlyType(dtype)) {
      return InvalidArgumentError(mismatch);
    }
    const double number = DispatchDtype(value.dtype(), [&](auto t) {
      return AsDouble(value.data<decltype(t)>()[0]);
    });
    WEFT_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(dtype, Shape({})));
    const bool exact = DispatchDtype(dtype, [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_integral_v<T>) {
        // Out of range is checked first: the cast would be undefined.
        if (!(number >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
              number <= static_cast<double>(std::numeric_limits<T>::max()))) {
          return false;
        }
      }
      const T converted = FromDouble<T>(number);
      out.data<T>()[0] = converted;
      return AsDouble(converted) == number;
    });
    if (!exact) {
      return InvalidArgumentError(mismatch + ": " + std::to_string(number) +
                                  " does not convert exactly");
    }
    return out;
  }

  std::string Name() const { return padded_ ? "padded_batch" : "batch"; }

  int64_t batch_size_;
  bool drop_remainder_;
  bool padded_;
  std::vector<std::vector<int64_t>> padded_shapes_;
  std::vector<Tensor> padding_values_;
  int64_t consumed_ = 0;
};

class UnbatchStage final : public StageIterator {
 public:
  explicit UnbatchStage(Stages inputs)
      : StageIterator("Unbatch", std::move(inputs)) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    while (row_ == rows_) {
      bool input_end = false;
      WEFT_RETURN_IF_ERROR(InputNext(0, &batch_, &input_end));
      if (input_end) {
        *end = true;
        return Status::OK();
      }
      WEFT_RETURN_IF_ERROR(CheckBatch());
      row_ = 0;
    }
    out->clear();
    for (const Tensor& c : batch_) out->push_back(internal::SliceRow(c, row_));
    ++row_;
    return Status::OK();
  }

 private:
  Status CheckBatch() {
    rows_ = 0;
    for (size_t c = 0; c < batch_.size(); ++c) {
      const Tensor& t = batch_[c];
      if (!t.IsInitialized() || IsContainerType(t.dtype()) ||
          t.shape().rank() == 0) {
        return InvalidArgumentError("unbatch: component " + std::to_string(c) +
                                    " has no first dimension");
      }
      if (c > 0 && t.shape().dim(0) != rows_) {
        return InvalidArgumentError("unbatch: component " + std::to_string(c) +
                                    " has " + std::to_string(t.shape().dim(0)) +
                                    " rows, component 0 has " +
                                    std::to_string(rows_));
      }
      rows_ = t.shape().dim(0);
    }
    return Status::OK();
  }

  Element batch_;
  int64_t row_ = 0, rows_ = 0;
};

Dataset MakeBatch(const Dataset& input, int64_t batch_size, bool drop_remainder,
                  bool padded, std::vector<std::vector<int64_t>> padded_shapes,
                  std::vector<Tensor> padding_values) {
  return Dataset(internal::MakeNode(
      padded ? "PaddedBatch" : "Batch", {input.node()},
      [batch_size, drop_remainder, padded,
       padded_shapes = std::move(padded_shapes),
       padding_values = std::move(padding_values)](const IteratorEnv&,
                                                   Stages in) -> StageOr {
        if (batch_size <= 0) {
          return InvalidArgumentError(
              std::string(padded ? "padded_batch" : "batch") +
              ": batch_size must be positive, not " +
              std::to_string(batch_size));
        }
        return internal::NewStage<BatchStage>(std::move(in), batch_size,
                                              drop_remainder, padded,
                                              padded_shapes, padding_values);
      }));
}

}  // namespace

Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  return MakeBatch(*this, batch_size, drop_remainder, false, {}, {});
}

Dataset Dataset::PaddedBatch(int64_t batch_size,
                             std::vector<std::vector<int64_t>> padded_shapes,
                             bool drop_remainder,
                             std::vector<Tensor> padding_values) const {
  return MakeBatch(*this, batch_size, drop_remainder, true,
                   std::move(padded_shapes), std::move(padding_values));
}

Dataset Dataset::Unbatch() const {
  return Dataset(internal::MakeNode(
      "Unbatch", {node()}, [](const IteratorEnv&, Stages in) -> StageOr {
        return internal::NewStage<UnbatchStage>(std::move(in));
      }));
}

}  // namespace weft::data
