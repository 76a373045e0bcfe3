#include "weft/tensor.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "framework/buffer_cache.h"
#include "framework/large_buffer.h"
#include "weft/container.h"

namespace weft {
namespace {

constexpr size_t kTensorAlignment = 64;

// Large tensor buffers are recycled (framework/buffer_cache.h): a fresh
// multi-megabyte allocation is an mmap whose every page faults on first
// touch (and is zeroed by the kernel), which cost an element-wise op over
// 16M floats 3-6x its memory traffic.
//
// From 128 KiB: glibc's mmap threshold as it stands where the environment
// sets MALLOC_TRIM_THRESHOLD_ or MALLOC_MMAP_THRESHOLD_ (Dask's nanny sets
// the first for every worker), which turns off glibc's adaptive threshold,
// so every allocation from 128 KiB up is a fresh mmap: a model's 512 KiB
// output took 128 page faults each Run. In a Dask worker on the Zen 5
// guest, the two-tower MLP's Runs over 20,000 rows took 0.57 s so against
// 0.45 with glibc's adaptive threshold (2026-12-03). At most 1 GiB in all.
internal::BufferCache& TensorBufferCache() {
  // Lives until exit: tensors may be freed by other statics' destructors.
  static auto* cache = new internal::BufferCache(
      size_t{128} << 10, size_t{1} << 30, &internal::LargeBuffer::FreeBlock);
  return *cache;
}

}  // namespace

namespace {

const char* TensorTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kBool:
      return "bool";
    case DataType::kFloat16:
      return "float16";
    case DataType::kInt8:
      return "int8";
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt16:
      return "int16";
    case DataType::kUInt16:
      return "uint16";
    case DataType::kUInt32:
      return "uint32";
    case DataType::kUInt64:
      return "uint64";
    case DataType::kString:
      return "string";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kInt4:
      return "int4";
    case DataType::kUInt4:
      return "uint4";
    case DataType::kFloat8E4M3FN:
      return "float8_e4m3fn";
    case DataType::kFloat8E4M3FNUZ:
      return "float8_e4m3fnuz";
    case DataType::kFloat8E5M2:
      return "float8_e5m2";
    case DataType::kFloat8E5M2FNUZ:
      return "float8_e5m2fnuz";
  }
  return "invalid";
}

// Every container dtype: sequence, optional and optional-sequence of each
// tensor dtype, in that order.
constexpr int kContainerForms = 3;
DataType ContainerType(int form, DataType element) {
  switch (form) {
    case 0:
      return SequenceOf(element);
    case 1:
      return OptionalOf(element);
    default:
      return OptionalOf(SequenceOf(element));
  }
}

// Names of the container dtypes, made once: DataTypeName returns a
// pointer that stays valid for the process.
const std::vector<std::pair<DataType, std::string>>& ContainerNames() {
  static const auto* names = [] {
    auto* out = new std::vector<std::pair<DataType, std::string>>;
    std::vector<DataType> elements(std::begin(kAllDataTypes),
                                   std::end(kAllDataTypes));
    elements.insert(elements.end(), std::begin(kListedOnlyTypes),
                    std::end(kListedOnlyTypes));
    for (int form = 0; form < kContainerForms; ++form) {
      for (DataType element : elements) {
        const std::string e = TensorTypeName(element);
        const std::string name = form == 0   ? "sequence(" + e + ")"
                                 : form == 1 ? "optional(" + e + ")"
                                             : "optional(sequence(" + e + "))";
        out->emplace_back(ContainerType(form, element), name);
      }
    }
    return out;
  }();
  return *names;
}

}  // namespace

const char* DataTypeName(DataType dtype) {
  if (!IsContainerType(dtype)) return TensorTypeName(dtype);
  for (const auto& [type, name] : ContainerNames()) {
    if (type == dtype) return name.c_str();
  }
  return "invalid";
}

std::optional<DataType> DataTypeFromName(std::string_view name) {
  for (DataType dtype : kAllDataTypes) {
    if (name == DataTypeName(dtype)) return dtype;
  }
  for (DataType dtype : kListedOnlyTypes) {
    if (name == DataTypeName(dtype)) return dtype;
  }
  for (const auto& [type, type_name] : ContainerNames()) {
    if (name == type_name) return type;
  }
  return std::nullopt;
}

size_t DataTypeSize(DataType dtype) {
  if (IsContainerType(dtype)) return sizeof(void*);
  switch (dtype) {
    case DataType::kFloat32:
    case DataType::kInt32:
    case DataType::kUInt32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
    case DataType::kUInt64:
      return 8;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt16:
    case DataType::kUInt16:
      return 2;
    case DataType::kBool:
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt4:
    case DataType::kUInt4:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      return 1;
    case DataType::kString:
      return sizeof(std::string);
  }
  return 1;
}

bool Shape::IsValid() const { return NumElements() >= 0; }

int64_t Shape::NumElements() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) {
    const int64_t d = data()[i];
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

std::string Shape::ToString() const {
  std::string out = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(data()[i]);
  }
  return out + "]";
}

bool PartialShape::IsFullyDefined() const {
  if (!dims_) return false;
  for (int64_t d : *dims_) {
    if (d < 0) return false;
  }
  return true;
}

bool PartialShape::IsCompatibleWith(const Shape& shape) const {
  if (!dims_) return true;
  if (static_cast<int>(dims_->size()) != shape.rank()) return false;
  for (int i = 0; i < shape.rank(); ++i) {
    if ((*dims_)[i] >= 0 && (*dims_)[i] != shape.dim(i)) return false;
  }
  return true;
}

std::string PartialShape::ToString() const {
  if (!dims_) return "<unknown rank>";
  std::string out = "[";
  for (size_t i = 0; i < dims_->size(); ++i) {
    if (i > 0) out += ", ";
    out += (*dims_)[i] < 0 ? "?" : std::to_string((*dims_)[i]);
  }
  return out + "]";
}

StatusOr<Tensor> Tensor::Create(DataType dtype, const Shape& shape) {
  Tensor t;
  WEFT_RETURN_IF_ERROR(t.Allocate(dtype, shape, /*zero_fill=*/true));
  return t;
}

StatusOr<Tensor> Tensor::CreateUninitialized(DataType dtype,
                                             const Shape& shape) {
  Tensor t;
  WEFT_RETURN_IF_ERROR(t.Allocate(dtype, shape, /*zero_fill=*/false));
  return t;
}

Status Tensor::Allocate(DataType dtype, const Shape& shape, bool zero_fill) {
  if (!shape.IsValid()) {
    return InvalidArgumentError("invalid tensor shape " + shape.ToString() +
                                ": dimensions must be >= 0 and the element "
                                "count must fit in 64 bits");
  }
  if (IsContainerType(dtype)) {
    return InvalidArgumentError(std::string("a ") + DataTypeName(dtype) +
                                " value is made from its contents "
                                "(weft/container.h), not allocated");
  }
  const int64_t n = shape.NumElements();
  if (dtype == DataType::kString) return AllocateStrings(shape);
  const size_t element = DataTypeSize(dtype);
  if (static_cast<uint64_t>(n) >
      (std::numeric_limits<size_t>::max() - 4 * kTensorAlignment) / element) {
    return InvalidArgumentError("tensor of shape " + shape.ToString() + " " +
                                DataTypeName(dtype) + " is too large");
  }
  const size_t bytes = static_cast<size_t>(AllocatedBytes(dtype, shape));
  // Header and data in one block, the header 64-byte aligned (the data then
  // is too); the slack covers a smaller alignment. Rounded up to the
  // cache's size class, so that a freed block serves the nearby sizes too.
  const size_t block_bytes =
      internal::BufferSizeClass(bytes + kHeaderBytes + kTensorAlignment);
  void* block = TensorBufferCache().Take(block_bytes);
  // From 2 MiB a mapping offered to huge pages (framework/large_buffer.h).
  if (block == nullptr)
    block = internal::LargeBuffer::AllocateBlock(block_bytes);
  if (block == nullptr) {
    return ResourceExhaustedError(
        "could not allocate " + std::to_string(bytes) + " bytes for a " +
        DataTypeName(dtype) + shape.ToString() + " tensor");
  }
  const uintptr_t aligned =
      (reinterpret_cast<uintptr_t>(block) + kTensorAlignment - 1) &
      ~uintptr_t{kTensorAlignment - 1};
  Buffer* buffer = new (reinterpret_cast<void*>(aligned)) Buffer;
  buffer->block_bytes = block_bytes;
  buffer->block = block;
  Adopt(buffer, dtype, shape, zero_fill);
  return Status::OK();
}

// String elements are std::string objects, which need constructing and
// destroying: they live in a std::vector that the buffer points into, and
// the buffer's release deletes it.
Status Tensor::AllocateStrings(const Shape& shape) {
  const int64_t n = shape.NumElements();
  if (static_cast<uint64_t>(n) >
      std::numeric_limits<size_t>::max() / sizeof(std::string)) {
    return InvalidArgumentError("string tensor of shape " + shape.ToString() +
                                " is too large");
  }
  std::vector<std::string>* strings = nullptr;
  try {
    strings = new std::vector<std::string>(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(
        "could not allocate a string tensor of "
        "shape " +
        shape.ToString());
  }
  auto* buffer = new Buffer;
  buffer->bytes = strings->data();
  buffer->release = new std::function<void()>([strings] { delete strings; });
  Unref();
  dtype_ = DataType::kString;
  shape_ = shape;
  num_elements_ = n;
  buffer_ = buffer;
  return Status::OK();
}

int64_t Tensor::AllocatedBytes(DataType dtype, const Shape& shape) {
  if (!shape.IsValid() || IsContainerType(dtype) ||
      dtype == DataType::kString) {
    return -1;
  }
  const int64_t n = shape.NumElements();
  const size_t element = DataTypeSize(dtype);
  if (static_cast<uint64_t>(n) >
      (std::numeric_limits<size_t>::max() - 4 * kTensorAlignment) / element) {
    return -1;
  }
  // Round up so that SIMD loops may read whole vectors at the end, and never
  // ask for zero bytes.
  return static_cast<int64_t>(
      (static_cast<size_t>(n) * element + kTensorAlignment - 1) /
          kTensorAlignment * kTensorAlignment +
      (n == 0 ? kTensorAlignment : 0));
}

void Tensor::AllocateIn(DataType dtype, const Shape& shape, bool zero_fill,
                        void* header,
                        void (*return_slot)(void* arena, int slot), void* arena,
                        int slot) {
  // MemoryPlan (src/runtime/memory_plan.h) reserves 64 bytes per header.
  static_assert(kHeaderBytes == 64 && sizeof(Buffer) <= kHeaderBytes);
  Buffer* buffer = new (header) Buffer;
  buffer->return_slot = return_slot;
  buffer->arena = arena;
  buffer->arena_slot = slot;
  Adopt(buffer, dtype, shape, zero_fill);
}

void Tensor::Adopt(Buffer* buffer, DataType dtype, const Shape& shape,
                   bool zero_fill) {
  buffer->bytes = reinterpret_cast<char*>(buffer) + kHeaderBytes;
  Unref();
  dtype_ = dtype;
  shape_ = shape;
  num_elements_ = shape.NumElements();
  buffer_ = buffer;
  if (zero_fill) std::memset(buffer->data(), 0, size_bytes());
}

void Tensor::Free(Buffer* buffer) {
  if (buffer->return_slot != nullptr) {
    auto* const return_slot = buffer->return_slot;
    void* const arena = buffer->arena;
    const int slot = buffer->arena_slot;
    buffer->~Buffer();
    return_slot(arena, slot);
    return;
  }
  if (buffer->release != nullptr) {
    std::unique_ptr<std::function<void()>> release(buffer->release);
    delete buffer;
    (*release)();
    return;
  }
  void* block = buffer->block;
  const size_t block_bytes = buffer->block_bytes;
  buffer->~Buffer();
  TensorBufferCache().Give(block, block_bytes);
}

Tensor::Tensor(DataType dtype, const Shape& shape) {
  *this = Create(dtype, shape).value();
}

StatusOr<Tensor> Tensor::WrapExternal(DataType dtype, const Shape& shape,
                                      void* data,
                                      std::function<void()> release) {
  auto refuse = [&](const std::string& why) -> Status {
    if (release) release();
    return InvalidArgumentError(
        std::string("cannot wrap external memory as a ") + DataTypeName(dtype) +
        shape.ToString() + " tensor: " + why);
  };
  if (!shape.IsValid()) return refuse("invalid shape");
  const int64_t n = shape.NumElements();
  const size_t element = DataTypeSize(dtype);
  if (static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / element) {
    return refuse("too large");
  }
  if (data == nullptr && n > 0) return refuse("the data pointer is null");
  if (reinterpret_cast<uintptr_t>(data) % element != 0) {
    return refuse("the data is not aligned to its " + std::to_string(element) +
                  "-byte elements");
  }
  auto* buffer = new Buffer;
  buffer->bytes = data;
  buffer->release = new std::function<void()>(
      release ? std::move(release) : std::function<void()>([] {}));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = n;
  t.buffer_ = buffer;
  return t;
}

Status Tensor::ValueCountError(const Shape& shape, size_t count) {
  if (!shape.IsValid()) {
    return InvalidArgumentError("invalid tensor shape " + shape.ToString() +
                                " for " + std::to_string(count) + " values");
  }
  return InvalidArgumentError("a tensor of shape " + shape.ToString() +
                              " needs " + std::to_string(shape.NumElements()) +
                              " values, got " + std::to_string(count));
}

double Tensor::ValueAsDouble(int64_t i) const {
  WEFT_CHECK(i >= 0 && i < num_elements_, "Tensor::ValueAsDouble out of range");
  WEFT_CHECK(!IsContainerType(dtype_) && dtype_ != DataType::kString,
             "Tensor::ValueAsDouble of a container or string tensor");
  switch (dtype_) {
    case DataType::kFloat32:
      return data<float>()[i];
    case DataType::kFloat64:
      return data<double>()[i];
    case DataType::kInt32:
      return data<int32_t>()[i];
    case DataType::kInt64:
      return static_cast<double>(data<int64_t>()[i]);
    case DataType::kBool:
      return data<bool>()[i] ? 1.0 : 0.0;
    case DataType::kFloat16:
      return data<Float16>()[i];
    case DataType::kInt8:
      return data<int8_t>()[i];
    case DataType::kUInt8:
      return data<uint8_t>()[i];
    case DataType::kInt16:
      return data<int16_t>()[i];
    case DataType::kUInt16:
      return data<uint16_t>()[i];
    case DataType::kUInt32:
      return data<uint32_t>()[i];
    case DataType::kUInt64:
      return static_cast<double>(data<uint64_t>()[i]);
    case DataType::kBFloat16:
      return static_cast<float>(data<BFloat16>()[i]);
    case DataType::kInt4:
      return ValueOf(data<Int4>()[i]);
    case DataType::kUInt4:
      return ValueOf(data<UInt4>()[i]);
    case DataType::kFloat8E4M3FN:
      return Float8ToFloat(data<Float8E4M3FN>()[i]);
    case DataType::kFloat8E4M3FNUZ:
      return Float8ToFloat(data<Float8E4M3FNUZ>()[i]);
    case DataType::kFloat8E5M2:
      return Float8ToFloat(data<Float8E5M2>()[i]);
    case DataType::kFloat8E5M2FNUZ:
      return Float8ToFloat(data<Float8E5M2FNUZ>()[i]);
    case DataType::kString:
      break;
  }
  return 0;
}

std::string Tensor::TypedViewMismatch(DataType requested) const {
  return std::string("Tensor::data<") + DataTypeName(requested) + ">() of a " +
         DataTypeName(dtype_) + " tensor";
}

bool Tensor::BitwiseEqual(const Tensor& other) const {
  if (IsInitialized() != other.IsInitialized()) return false;
  if (!IsInitialized()) return true;
  if (IsContainerType(dtype_)) {
    if (dtype_ != other.dtype_) return false;
    const std::vector<Tensor>& a = ContainerItems(*this);
    const std::vector<Tensor>& b = ContainerItems(other);
    return std::equal(
        a.begin(), a.end(), b.begin(), b.end(),
        [](const Tensor& x, const Tensor& y) { return x.BitwiseEqual(y); });
  }
  if (dtype_ == DataType::kString) {
    return other.dtype_ == dtype_ && shape_ == other.shape_ &&
           std::equal(data<std::string>(), data<std::string>() + num_elements_,
                      other.data<std::string>());
  }
  return dtype_ == other.dtype_ && shape_ == other.shape_ &&
         std::memcmp(raw_data(), other.raw_data(), size_bytes()) == 0;
}

std::string Tensor::DebugString() const {
  if (!IsInitialized()) return "<uninitialized tensor>";
  if (IsContainerType(dtype_)) {
    return std::string(DataTypeName(dtype_)) + " of " +
           std::to_string(ContainerItems(*this).size()) + " item" +
           (ContainerItems(*this).size() == 1 ? "" : "s");
  }
  return std::string(DataTypeName(dtype_)) + shape_.ToString();
}

}  // namespace weft
