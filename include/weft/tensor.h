// Tensors: a dtype, a shape and a reference-counted buffer: 64-byte aligned
// when weft allocates it, or memory the caller owns (Tensor::WrapExternal).
//
// Copying a Tensor shares the buffer. The runtime never mutates a tensor
// after the kernel that produced it returned; kernels write only the outputs
// they allocated, before returning.
#ifndef WEFT_TENSOR_H_
#define WEFT_TENSOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/check.h"
#include "weft/float16.h"
#include "weft/float8.h"
#include "weft/int4.h"
#include "weft/status.h"

namespace weft {

enum class DataType {
  kFloat32,
  kFloat64,
  kInt32,
  kInt64,
  kBool,
  kFloat16,  // Stored as binary16 (weft::Float16); kernels compute in float32.
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kUInt32,
  kUInt64,
  // Variable-length byte strings (ONNX's STRING): each element a
  // std::string. Ops take string tensors only where they list kString among
  // their allowed dtypes or declare OpDefBuilder::AcceptsAnyValue; every
  // other op refuses them at compile time, so no kernel copies a string's
  // bytes as if they were numbers.
  kString,
  // bfloat16 (weft::BFloat16), for ONNX models that Cast to and from it:
  // taken, like kString, only by ops that list it (Cast, and the ops that
  // move or view elements: Identity, Reshape, Transpose, ...).
  kBFloat16,
  // 4-bit integers (weft::Int4, weft::UInt4), one per byte, for ONNX's
  // quantized weights: listed-only like kBFloat16.
  kInt4,
  kUInt4,
  // 8-bit floats (weft/float8.h), for ONNX's FLOAT8 types: listed-only.
  kFloat8E4M3FN,
  kFloat8E4M3FNUZ,
  kFloat8E5M2,
  kFloat8E5M2FNUZ,
};
// The last tensor dtype, for readers that check a stored code.
inline constexpr DataType kLastTensorType = DataType::kFloat8E5M2FNUZ;

// Every numeric and bool DataType that kernels compute on, in enum order.
// The listed-only dtypes (kListedOnlyTypes below) are apart: ops see them
// only where they list them.
inline constexpr DataType kAllDataTypes[] = {
    DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
    DataType::kInt64,   DataType::kBool,    DataType::kFloat16,
    DataType::kInt8,    DataType::kUInt8,   DataType::kInt16,
    DataType::kUInt16,  DataType::kUInt32,  DataType::kUInt64};

// Container dtypes, for ONNX's sequence and optional values: a sequence of
// tensors of one tensor dtype, or an optional (possibly absent) tensor or
// sequence. A container dtype is the dtype it contains plus a flag bit, so
// that what a node takes out of a container has a dtype known when the
// graph compiles. Its value is a scalar Tensor handle on an immutable
// payload (weft/container.h). Ops take containers only where they declare
// it (OpDefBuilder::AcceptsAnyValue); every other op refuses them at
// compile time, so no kernel ever reads a container's bytes as numbers.
inline constexpr int kSequenceFlag = 1 << 8;
inline constexpr int kOptionalFlag = 1 << 9;
constexpr bool IsSequenceType(DataType t) {
  return (static_cast<int>(t) & kSequenceFlag) != 0 &&
         (static_cast<int>(t) & kOptionalFlag) == 0;
}
constexpr bool IsOptionalType(DataType t) {
  return (static_cast<int>(t) & kOptionalFlag) != 0;
}
constexpr bool IsContainerType(DataType t) {
  return (static_cast<int>(t) & (kSequenceFlag | kOptionalFlag)) != 0;
}
// sequence(element). REQUIRES: `element` is a tensor dtype; checked.
constexpr DataType SequenceOf(DataType element) {
  WEFT_CHECK(!IsContainerType(element), "SequenceOf a container dtype");
  return static_cast<DataType>(static_cast<int>(element) | kSequenceFlag);
}
// optional(value). REQUIRES: `value` is a tensor or sequence dtype;
// checked.
constexpr DataType OptionalOf(DataType value) {
  WEFT_CHECK(!IsOptionalType(value), "OptionalOf an optional dtype");
  return static_cast<DataType>(static_cast<int>(value) | kOptionalFlag);
}
// What a container holds: an optional's tensor or sequence dtype, a
// sequence's element dtype. A tensor dtype is returned as it is.
constexpr DataType ContainedType(DataType t) {
  const int v = static_cast<int>(t);
  if (v & kOptionalFlag) return static_cast<DataType>(v & ~kOptionalFlag);
  return static_cast<DataType>(v & ~kSequenceFlag);
}

// "float32", "float64", "int32", "int64", "bool", "float16", "int8",
// "uint8", "int16", "uint16", "uint32", "uint64" (NumPy's names), "string",
// "bfloat16", "int4", "uint4", "float8_e4m3fn", "float8_e4m3fnuz",
// "float8_e5m2", "float8_e5m2fnuz" (ml_dtypes' names);
// "sequence(float32)", "optional(float32)", "optional(sequence(float32))".
const char* DataTypeName(DataType dtype);
std::optional<DataType> DataTypeFromName(std::string_view name);
// Bytes per element; a container's handle counts as one 8-byte element, a
// string as sizeof(std::string).
size_t DataTypeSize(DataType dtype);

template <class T>
constexpr DataType DataTypeOf();
template <>
constexpr DataType DataTypeOf<float>() {
  return DataType::kFloat32;
}
template <>
constexpr DataType DataTypeOf<double>() {
  return DataType::kFloat64;
}
template <>
constexpr DataType DataTypeOf<int32_t>() {
  return DataType::kInt32;
}
template <>
constexpr DataType DataTypeOf<int64_t>() {
  return DataType::kInt64;
}
template <>
constexpr DataType DataTypeOf<bool>() {
  return DataType::kBool;
}
template <>
constexpr DataType DataTypeOf<Float16>() {
  return DataType::kFloat16;
}
template <>
constexpr DataType DataTypeOf<int8_t>() {
  return DataType::kInt8;
}
template <>
constexpr DataType DataTypeOf<uint8_t>() {
  return DataType::kUInt8;
}
template <>
constexpr DataType DataTypeOf<int16_t>() {
  return DataType::kInt16;
}
template <>
constexpr DataType DataTypeOf<uint16_t>() {
  return DataType::kUInt16;
}
template <>
constexpr DataType DataTypeOf<uint32_t>() {
  return DataType::kUInt32;
}
template <>
constexpr DataType DataTypeOf<uint64_t>() {
  return DataType::kUInt64;
}
template <>
constexpr DataType DataTypeOf<std::string>() {
  return DataType::kString;
}
template <>
constexpr DataType DataTypeOf<BFloat16>() {
  return DataType::kBFloat16;
}
template <>
constexpr DataType DataTypeOf<Int4>() {
  return DataType::kInt4;
}
template <>
constexpr DataType DataTypeOf<UInt4>() {
  return DataType::kUInt4;
}
template <>
constexpr DataType DataTypeOf<Float8E4M3FN>() {
  return DataType::kFloat8E4M3FN;
}
template <>
constexpr DataType DataTypeOf<Float8E4M3FNUZ>() {
  return DataType::kFloat8E4M3FNUZ;
}
template <>
constexpr DataType DataTypeOf<Float8E5M2>() {
  return DataType::kFloat8E5M2;
}
template <>
constexpr DataType DataTypeOf<Float8E5M2FNUZ>() {
  return DataType::kFloat8E5M2FNUZ;
}
constexpr bool IsFourBitType(DataType t) {
  return t == DataType::kInt4 || t == DataType::kUInt4;
}
constexpr bool IsFloat8Type(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ ||
         t == DataType::kFloat8E5M2 || t == DataType::kFloat8E5M2FNUZ;
}
// kString, kBFloat16, the 4-bit integers and the 8-bit floats: dtypes an op
// takes only where it lists them among its allowed dtypes (or declares
// OpDefBuilder::AcceptsAnyValue).
constexpr bool IsListedOnlyType(DataType t) {
  return t == DataType::kString || t == DataType::kBFloat16 ||
         IsFourBitType(t) || IsFloat8Type(t);
}
// The listed-only dtypes, in enum order.
inline constexpr DataType kListedOnlyTypes[] = {
    DataType::kString,     DataType::kBFloat16,      DataType::kInt4,
    DataType::kUInt4,      DataType::kFloat8E4M3FN,  DataType::kFloat8E4M3FNUZ,
    DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ};
// The listed-only dtypes of fixed size, whose bytes are their values (all
// but kString): ops that only move elements (Reshape, Transpose, Shape, ...)
// list them.
inline constexpr DataType kFixedSizeListedTypes[] = {
    DataType::kBFloat16,      DataType::kInt4,           DataType::kUInt4,
    DataType::kFloat8E4M3FN,  DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
    DataType::kFloat8E5M2FNUZ};

// A fully known shape. Rank 0 is a scalar; a zero dimension makes an empty
// tensor.
class Shape {
 public:
  Shape() = default;  // Scalar.
  Shape(std::initializer_list<int64_t> dims) {
    Assign(dims.begin(), dims.size());
  }
  explicit Shape(const std::vector<int64_t>& dims) {
    Assign(dims.data(), dims.size());
  }

  int rank() const { return rank_; }
  int64_t dim(int i) const { return data()[i]; }
  // A copy of the dimensions.
  std::vector<int64_t> dims() const {
    return std::vector<int64_t>(data(), data() + rank_);
  }
  // Product of the dimensions (1 for a scalar); -1 when !IsValid().
  int64_t NumElements() const;
  // Every dimension >= 0 and the element count fits in int64.
  bool IsValid() const;
  std::string ToString() const;  // "[2, 3]", "[]" for a scalar.

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.rank_ != b.rank_) return false;
    for (int i = 0; i < a.rank_; ++i) {
      if (a.data()[i] != b.data()[i]) return false;
    }
    return true;
  }

 private:
  // Shapes up to this rank live inline: tensors are created per node per
  // Run, and a heap-allocated shape would cost a malloc and a free each.
  static constexpr int kInlineRank = 6;

  const int64_t* data() const {
    return rank_ <= kInlineRank ? inline_ : heap_.data();
  }
  void Assign(const int64_t* dims, size_t rank) {
    rank_ = static_cast<int>(rank);
    if (rank_ <= kInlineRank) {
      for (int i = 0; i < rank_; ++i) inline_[i] = dims[i];
    } else {
      heap_.assign(dims, dims + rank);
    }
  }

  int rank_ = 0;
  int64_t inline_[kInlineRank] = {};
  std::vector<int64_t> heap_;  // Only for rank > kInlineRank.
};

class PartialShape {
 public:
  PartialShape() = default;  // Unknown rank.
  PartialShape(std::initializer_list<int64_t> dims)
      : dims_(std::vector<int64_t>(dims)) {}
  explicit PartialShape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  PartialShape(const Shape& shape) : dims_(shape.dims()) {}  // NOLINT

  static PartialShape UnknownRank() { return PartialShape(); }

  bool rank_known() const { return dims_.has_value(); }
  int rank() const { return dims_ ? static_cast<int>(dims_->size()) : -1; }
  int64_t dim(int i) const { return (*dims_)[i]; }
  const std::vector<int64_t>& dims() const { return *dims_; }
  bool IsFullyDefined() const;
  // REQUIRES: IsFullyDefined(); checked (WEFT_CHECK).
  Shape ToShape() const {
    WEFT_CHECK(IsFullyDefined(), "PartialShape::ToShape of a partial shape");
    return Shape(*dims_);
  }
  // Could a tensor of `shape` have this partial shape?
  bool IsCompatibleWith(const Shape& shape) const;
  std::string ToString() const;  // "[2, ?]", "<unknown rank>".

  friend bool operator==(const PartialShape& a, const PartialShape& b) {
    return a.dims_ == b.dims_;
  }

 private:
  std::optional<std::vector<int64_t>> dims_;
};

class Tensor {
 public:
  // An empty handle: IsInitialized() is false.
  Tensor() = default;

  // Allocates a zero-filled tensor (of empty strings, for kString). Fails,
  // rather than crashing, on a
  // negative dimension, an element count or byte size that overflows, or a
  // failed allocation.
  static StatusOr<Tensor> Create(DataType dtype, const Shape& shape);
  // As Create, but the contents are unspecified: for producers that write
  // every element.
  static StatusOr<Tensor> CreateUninitialized(DataType dtype,
                                              const Shape& shape);

  // Convenience for tests and graph building: as Create, but aborts on error.
  Tensor(DataType dtype, const Shape& shape);

  // A tensor over memory weft did not allocate (a NumPy array, a mapped
  // file), without a copy. `data` must hold shape.NumElements() elements of
  // `dtype`, aligned to the element size, and stay valid and unchanged until
  // `release` is called: once, when the last handle goes, on whichever
  // thread drops it. weft only reads such a tensor (kernels write only the
  // outputs they allocate). Fails, calling `release` at once, on an invalid
  // shape, a null `data` with elements, or a misaligned `data`.
  static StatusOr<Tensor> WrapExternal(DataType dtype, const Shape& shape,
                                       void* data,
                                       std::function<void()> release);

  template <class T>
  static Tensor Scalar(T value) {
    Tensor t(DataTypeOf<T>(), Shape{});
    *t.data<T>() = value;
    return t;
  }
  // A tensor holding a copy of `values`, row-major. Fails, naming both
  // counts, unless values.size() == shape.NumElements(); fails as Create
  // does on an invalid shape.
  template <class T>
  static StatusOr<Tensor> Create(const Shape& shape,
                                 std::span<const T> values) {
    if (!shape.IsValid() ||
        static_cast<uint64_t>(shape.NumElements()) != values.size()) {
      return ValueCountError(shape, values.size());
    }
    WEFT_ASSIGN_OR_RETURN(Tensor t,
                          CreateUninitialized(DataTypeOf<T>(), shape));
    T* out = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return t;
  }
  // As Create(shape, values), but aborts on error (as the constructor
  // above), naming both counts: for tests and literals in code.
  template <class T>
  static Tensor FromVector(const Shape& shape, const std::vector<T>& values) {
    return Create<T>(shape, std::span<const T>(values)).value();
  }

  Tensor(const Tensor& other)
      : dtype_(other.dtype_),
        shape_(other.shape_),
        num_elements_(other.num_elements_),
        buffer_(other.buffer_) {
    if (buffer_ != nullptr)
      buffer_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Tensor(Tensor&& other) noexcept
      : dtype_(other.dtype_),
        shape_(std::move(other.shape_)),
        num_elements_(other.num_elements_),
        buffer_(std::exchange(other.buffer_, nullptr)) {}
  Tensor& operator=(const Tensor& other) {
    if (this != &other) *this = Tensor(other);
    return *this;
  }
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) {
      Unref();
      dtype_ = other.dtype_;
      shape_ = std::move(other.shape_);
      num_elements_ = other.num_elements_;
      buffer_ = std::exchange(other.buffer_, nullptr);
    }
    return *this;
  }
  ~Tensor() { Unref(); }

  bool IsInitialized() const { return buffer_ != nullptr; }
  // True when this is the only handle on its buffer (TensorFlow's
  // RefCountIsOne): writing through it then changes no other tensor.
  bool RefCountIsOne() const {
    return buffer_ != nullptr &&
           buffer_->refs.load(std::memory_order_acquire) == 1;
  }
  // Element i (row-major) converted to double, whatever the dtype: for
  // printing and comparing. REQUIRES: 0 <= i < NumElements(); checked.
  double ValueAsDouble(int64_t i) const;
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t NumElements() const { return num_elements_; }
  size_t size_bytes() const {
    return static_cast<size_t>(num_elements_) * DataTypeSize(dtype_);
  }

  // Typed views. REQUIRES: DataTypeOf<T>() == dtype(); checked
  // (WEFT_CHECK: a view of the wrong width would read past the buffer).
  template <class T>
  T* data() {
    WEFT_CHECK(DataTypeOf<T>() == dtype_, TypedViewMismatch(DataTypeOf<T>()));
    return static_cast<T*>(raw_data());
  }
  template <class T>
  const T* data() const {
    WEFT_CHECK(DataTypeOf<T>() == dtype_, TypedViewMismatch(DataTypeOf<T>()));
    return static_cast<const T*>(raw_data());
  }
  void* raw_data() { return buffer_ != nullptr ? buffer_->data() : nullptr; }
  const void* raw_data() const {
    return buffer_ != nullptr ? buffer_->data() : nullptr;
  }

  // The same buffer under another shape with as many elements (a reshape
  // without a copy). REQUIRES: shape.NumElements() == NumElements();
  // checked (WEFT_CHECK).
  Tensor WithShape(const Shape& shape) const {
    WEFT_CHECK(shape.NumElements() == num_elements_,
               "Tensor::WithShape to a shape of another element count");
    Tensor t = *this;
    t.shape_ = shape;
    return t;
  }

  // Same dtype, shape and bytes.
  bool BitwiseEqual(const Tensor& other) const;

  // "float32[2, 3]".
  std::string DebugString() const;

 private:
  // One allocation per buffer: this header, then the data at the next
  // 64-byte boundary. Intrusive, so a tensor costs one malloc, not three
  // (aligned block, shared_ptr control block), which matters for the small
  // tensors of executor-bound graphs. An external buffer's header is
  // allocated alone and points at the caller's memory.
  struct Buffer {
    std::atomic<int64_t> refs{1};
    size_t block_bytes = 0;  // Its size, for the recycling cache.
    void* block = nullptr;   // What was allocated, for the free.
    void* bytes = nullptr;   // The data: inside the block, or external.
    // External memory only: called when the last handle goes.
    std::function<void()>* release = nullptr;
    // A buffer the runtime placed in a Run's arena: return_slot(arena,
    // arena_slot) is called, from any thread, instead of freeing a block.
    void (*return_slot)(void* arena, int slot) = nullptr;
    void* arena = nullptr;
    int arena_slot = -1;
    void* data() { return bytes; }
  };
  static constexpr size_t kHeaderBytes = 64;
  void Unref() {
    // A count of 1 is ours alone (no other holder exists to copy it), so
    // the common last release skips the atomic read-modify-write.
    if (buffer_ != nullptr &&
        (buffer_->refs.load(std::memory_order_acquire) == 1 ||
         buffer_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)) {
      Free(buffer_);
    }
    buffer_ = nullptr;
  }
  static void Free(Buffer* buffer);
  static Status ValueCountError(const Shape& shape, size_t count);
  std::string TypedViewMismatch(DataType requested) const;
  // Replaces this tensor with a new buffer; on error it is unchanged. For
  // KernelContext, which allocates outputs in place.
  Status Allocate(DataType dtype, const Shape& shape, bool zero_fill);
  // As Allocate, with the header at `header` (64-byte aligned, followed by
  // the data) in `slot` of `arena`, which Free hands back through
  // return_slot. For KernelContext: the caller has checked that the slot
  // holds the data.
  void AllocateIn(DataType dtype, const Shape& shape, bool zero_fill,
                  void* header, void (*return_slot)(void* arena, int slot),
                  void* arena, int slot);
  // Makes `buffer` (a header with its data after it) this tensor's.
  void Adopt(Buffer* buffer, DataType dtype, const Shape& shape,
             bool zero_fill);
  // Data bytes Allocate takes for `shape` of `dtype` (rounded up to whole
  // 64-byte lines), or -1 when it cannot be allocated.
  static int64_t AllocatedBytes(DataType dtype, const Shape& shape);
  Status AllocateStrings(const Shape& shape);
  friend class KernelContext;

  DataType dtype_ = DataType::kFloat32;
  Shape shape_;
  int64_t num_elements_ = 0;
  Buffer* buffer_ = nullptr;
};

// Named tensors in order: a Run's feeds ("x", value), a model's outputs.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

}  // namespace weft

#endif  // WEFT_TENSOR_H_
