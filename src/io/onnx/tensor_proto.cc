#include "io/onnx/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "framework/large_buffer.h"
#include "weft/container.h"

namespace weft::internal {
namespace {

using onnx::TensorProto;
namespace fs = std::filesystem;

// Checked dims: each >= 0 and the element count within int64.
StatusOr<Shape> ShapeOf(const TensorProto& proto, const std::string& what) {
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  Shape shape(dims);
  if (!shape.IsValid()) {
    return InvalidArgumentError(what + ": invalid dims " + shape.ToString() +
                                " (negative, or more than 2^63 elements)");
  }
  return shape;
}

// The external data's bytes: [offset, offset + length) of the file named by
// "location", which must resolve (symlinks included) inside root.dir.
StatusOr<std::string> ReadExternal(const TensorProto& proto,
                                   const ExternalDataRoot& root,
                                   const std::string& what,
                                   uint64_t expected_bytes) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& entry : proto.external_data()) {
    auto number = [&](uint64_t* out) -> Status {
      const std::string& v = entry.value();
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos ||
          v.size() > 19) {
        return InvalidArgumentError(what + ": external data '" + entry.key() +
                                    "' must be a non-negative integer, got '" +
                                    v + "'");
      }
      *out = std::stoull(v);
      return Status::OK();
    };
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset") {
      WEFT_RETURN_IF_ERROR(number(&offset));
    } else if (entry.key() == "length") {
      uint64_t n = 0;
      WEFT_RETURN_IF_ERROR(number(&n));
      length = n;
    }  // "checksum" and others: not needed to read the bytes.
  }
  if (location.empty()) {
    return InvalidArgumentError(what + ": external data has no 'location'");
  }
  if (root.dir.empty()) {
    return InvalidArgumentError(what +
                                ": external data is not allowed here (no "
                                "model folder to read it from)");
  }
  const fs::path relative(location);
  if (relative.is_absolute()) {
    return InvalidArgumentError(what + ": external data location '" + location +
                                "' is absolute; it must be relative to the "
                                "model's folder");
  }
  for (const auto& part : relative) {
    if (part == "..") {
      return InvalidArgumentError(what + ": external data location '" +
                                  location + "' leaves the model's folder");
    }
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::path(root.dir), ec);
  const fs::path file = fs::weakly_canonical(fs::path(root.dir) / relative, ec);
  if (ec) {
    return InvalidArgumentError(what + ": external data '" + location +
                                "': " + ec.message());
  }
  auto [base_end, file_it] =
      std::mismatch(base.begin(), base.end(), file.begin(), file.end());
  if (base_end != base.end()) {
    return InvalidArgumentError(what + ": external data location '" + location +
                                "' resolves outside the model's folder (a "
                                "symbolic link?)");
  }
  if (length && *length != expected_bytes) {
    return InvalidArgumentError(
        what + ": external data length " + std::to_string(*length) +
        " does not match the " + std::to_string(expected_bytes) +
        " bytes its dims and type need");
  }
  const uintmax_t size = fs::file_size(file, ec);
  if (ec) {
    return InvalidArgumentError(what + ": external data file '" + location +
                                "': " + ec.message());
  }
  if (offset > size || size - offset < expected_bytes) {
    return InvalidArgumentError(
        what + ": external data file '" + location + "' has " +
        std::to_string(size) + " bytes, " + std::to_string(expected_bytes) +
        " are needed from offset " + std::to_string(offset));
  }
  std::ifstream in(file, std::ios::binary);
  std::string bytes(expected_bytes, '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(expected_bytes));
  if (!in) {
    return InvalidArgumentError(what + ": could not read external data '" +
                                location + "'");
  }
  return bytes;
}

// A typed repeated field holds one value per element of `shape`.
template <class Field>
Status CheckFieldLength(const Field& field, const Shape& shape,
                        const std::string& what) {
  if (static_cast<int64_t>(field.size()) != shape.NumElements()) {
    return InvalidArgumentError(what + ": dims " + shape.ToString() + " need " +
                                std::to_string(shape.NumElements()) +
                                " values, the tensor has " +
                                std::to_string(field.size()));
  }
  return Status::OK();
}

// The tensor a typed repeated field holds: its length is checked against
// the dims before anything is allocated, and each value against the element
// type (bool: 0 or 1).
template <class T, class Field>
StatusOr<Tensor> TensorFromField(const Field& field, const Shape& shape,
                                 const std::string& what) {
  WEFT_RETURN_IF_ERROR(CheckFieldLength(field, shape, what));
  WEFT_ASSIGN_OR_RETURN(Tensor tensor,
                        Tensor::CreateUninitialized(DataTypeOf<T>(), shape));
  T* out = tensor.data<T>();
  for (int i = 0; i < field.size(); ++i) {
    const auto v = field.Get(i);
    if constexpr (std::is_same_v<T, Float16> ||
                  std::is_same_v<T, BFloat16>) {  // Bits in int32_data.
      if (v < 0 || v > 0xffff) {
        return InvalidArgumentError(
            what + ": " + DataTypeName(DataTypeOf<T>()) + " value " +
            std::to_string(i) + " has bits " + std::to_string(v));
      }
      out[i] = T::FromBits(static_cast<uint16_t>(v));
      continue;
    } else if constexpr (std::is_same_v<T, bool>) {
      if (v != 0 && v != 1) {
        return InvalidArgumentError(what + ": bool value " + std::to_string(i) +
                                    " is " + std::to_string(v));
      }
    } else if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(v)) {
      if (v < std::numeric_limits<T>::lowest() ||
          v > std::numeric_limits<T>::max()) {
        return InvalidArgumentError(
            what + ": value " + std::to_string(i) + " (" + std::to_string(v) +
            ") does not fit " + DataTypeName(DataTypeOf<T>()));
      }
    }
    if constexpr (!std::is_same_v<T, BFloat16>) out[i] = static_cast<T>(v);
  }
  return tensor;
}

// count 4-bit values packed two to a byte, the first in the low nibble
// (ONNX's layout), one to a byte in `out`: a signed value sign-extended.
// REQUIRES: packed holds at least ceil(count / 2) bytes.
void UnpackFourBit(std::string_view packed, uint64_t count, bool is_signed,
                   uint8_t* out) {
  for (uint64_t i = 0; i < count; ++i) {
    const auto byte = static_cast<uint8_t>(packed[i / 2]);
    const int nibble = (i % 2 == 0) ? byte & 0xF : byte >> 4;
    out[i] = is_signed ? static_cast<uint8_t>(ValueOf(WrapToInt4(nibble)))
                       : static_cast<uint8_t>(nibble);
  }
}

// An INT4 or UINT4 tensor from int32_data, which holds two values in each
// entry's low byte (ONNX's rule for 4-bit types).
template <class Field>
StatusOr<Tensor> FourBitFromField(const Field& field, const Shape& shape,
                                  DataType dtype, const std::string& what) {
  const uint64_t count = static_cast<uint64_t>(shape.NumElements());
  const uint64_t entries = count / 2 + count % 2;
  if (static_cast<uint64_t>(field.size()) != entries) {
    return InvalidArgumentError(
        what + ": dims " + shape.ToString() + " of " + DataTypeName(dtype) +
        " need " + std::to_string(entries) +
        " int32_data entries (two values each), the tensor has " +
        std::to_string(field.size()));
  }
  std::string packed(entries, '\0');
  for (uint64_t i = 0; i < entries; ++i) {
    const int32_t v = field.Get(static_cast<int>(i));
    if (v < 0 || v > 0xff) {
      return InvalidArgumentError(what + ": int32_data entry " +
                                  std::to_string(i) + " (" + std::to_string(v) +
                                  ") is not two packed 4-bit values");
    }
    packed[i] = static_cast<char>(v);
  }
  WEFT_ASSIGN_OR_RETURN(Tensor tensor,
                        Tensor::CreateUninitialized(dtype, shape));
  UnpackFourBit(packed, count, dtype == DataType::kInt4,
                static_cast<uint8_t*>(tensor.raw_data()));
  return tensor;
}

// A FLOAT8 tensor from int32_data: each entry one value's 8 bits.
template <class Field>
StatusOr<Tensor> Float8FromField(const Field& field, const Shape& shape,
                                 DataType dtype, const std::string& what) {
  WEFT_RETURN_IF_ERROR(CheckFieldLength(field, shape, what));
  WEFT_ASSIGN_OR_RETURN(Tensor tensor,
                        Tensor::CreateUninitialized(dtype, shape));
  auto* out = static_cast<uint8_t*>(tensor.raw_data());
  for (int i = 0; i < field.size(); ++i) {
    const int32_t v = field.Get(i);
    if (v < 0 || v > 0xff) {
      return InvalidArgumentError(what + ": " + DataTypeName(dtype) +
                                  " value " + std::to_string(i) + " has bits " +
                                  std::to_string(v));
    }
    out[i] = static_cast<uint8_t>(v);
  }
  return tensor;
}

// A STRING tensor: its string_data, one entry per element (ONNX stores
// strings nowhere else). `has_raw_data`: the proto has raw_data, or had it
// before it was lifted out.
StatusOr<Tensor> StringsFromProto(const TensorProto& proto, const Shape& shape,
                                  bool has_raw_data, const std::string& what) {
  if (has_raw_data || proto.data_location() == TensorProto::EXTERNAL) {
    return InvalidArgumentError(
        what + ": a STRING tensor keeps its values in string_data");
  }
  if (static_cast<uint64_t>(proto.string_data_size()) !=
      static_cast<uint64_t>(shape.NumElements())) {
    return InvalidArgumentError(what + ": dims " + shape.ToString() + " need " +
                                std::to_string(shape.NumElements()) +
                                " strings, the tensor has " +
                                std::to_string(proto.string_data_size()));
  }
  WEFT_ASSIGN_OR_RETURN(Tensor tensor,
                        Tensor::Create(DataType::kString, shape));
  std::string* out = tensor.data<std::string>();
  for (int i = 0; i < proto.string_data_size(); ++i) {
    out[i] = proto.string_data(i);
  }
  return tensor;
}

}  // namespace

std::optional<DataType> FromOnnxType(int32_t onnx_type) {
  switch (onnx_type) {
    case TensorProto::FLOAT:
      return DataType::kFloat32;
    case TensorProto::DOUBLE:
      return DataType::kFloat64;
    case TensorProto::INT32:
      return DataType::kInt32;
    case TensorProto::INT64:
      return DataType::kInt64;
    case TensorProto::BOOL:
      return DataType::kBool;
    case TensorProto::FLOAT16:
      return DataType::kFloat16;
    case TensorProto::INT8:
      return DataType::kInt8;
    case TensorProto::UINT8:
      return DataType::kUInt8;
    case TensorProto::INT16:
      return DataType::kInt16;
    case TensorProto::UINT16:
      return DataType::kUInt16;
    case TensorProto::UINT32:
      return DataType::kUInt32;
    case TensorProto::UINT64:
      return DataType::kUInt64;
    case TensorProto::STRING:
      return DataType::kString;
    case TensorProto::BFLOAT16:
      return DataType::kBFloat16;
    case kOnnxUInt4:
      return DataType::kUInt4;
    case kOnnxInt4:
      return DataType::kInt4;
    case kOnnxFloat8E4M3FN:
      return DataType::kFloat8E4M3FN;
    case kOnnxFloat8E4M3FNUZ:
      return DataType::kFloat8E4M3FNUZ;
    case kOnnxFloat8E5M2:
      return DataType::kFloat8E5M2;
    case kOnnxFloat8E5M2FNUZ:
      return DataType::kFloat8E5M2FNUZ;
    default:
      return std::nullopt;
  }
}

std::string OnnxTypeName(int32_t onnx_type) {
  // Codes newer than the onnx.proto weft compiles against (Debian's, from
  // onnx 1.12); a TensorProto's data_type is an int32, so they arrive as
  // numbers and are named here.
  static const char* const kNewerNames[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",
      "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0", "UINT2",          "INT2"};
  constexpr int32_t kFirstNewer = 17;
  if (onnx_type >= kFirstNewer &&
      onnx_type < kFirstNewer + static_cast<int32_t>(std::size(kNewerNames))) {
    return kNewerNames[onnx_type - kFirstNewer];
  }
  if (!TensorProto::DataType_IsValid(onnx_type) ||
      onnx_type == TensorProto::UNDEFINED) {
    return "UNDEFINED(" + std::to_string(onnx_type) + ")";
  }
  return TensorProto::DataType_Name(
      static_cast<TensorProto::DataType>(onnx_type));
}

std::string OnnxTensorTypeString(int32_t onnx_type) {
  static const char* const kNames[] = {
      "undefined",      "float",      "uint8",
      "int8",           "uint16",     "int16",
      "int32",          "int64",      "string",
      "bool",           "float16",    "double",
      "uint32",         "uint64",     "complex64",
      "complex128",     "bfloat16",   "float8e4m3fn",
      "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
      "uint4",          "int4",       "float4e2m1",
      "float8e8m0",     "uint2",      "int2"};
  if (onnx_type < 0 || onnx_type >= static_cast<int32_t>(std::size(kNames))) {
    return "tensor(" + OnnxTypeName(onnx_type) + ")";
  }
  return std::string("tensor(") + kNames[onnx_type] + ")";
}

StatusOr<int32_t> OnnxValueTypeCode(const onnx::TypeProto& type,
                                    const std::string& what) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      return type.tensor_type().elem_type();
    case onnx::TypeProto::kSequenceType: {
      const onnx::TypeProto& element = type.sequence_type().elem_type();
      if (!element.has_tensor_type()) {
        return UnimplementedError(what +
                                  ": a sequence of anything but tensors is "
                                  "not supported");
      }
      return element.tensor_type().elem_type() | kOnnxSequenceBit;
    }
    case onnx::TypeProto::kOptionalType: {
      const onnx::TypeProto& element = type.optional_type().elem_type();
      if (!element.has_tensor_type() && !element.has_sequence_type()) {
        return UnimplementedError(what +
                                  ": an optional of anything but a tensor "
                                  "or a sequence is not supported");
      }
      WEFT_ASSIGN_OR_RETURN(int32_t inner, OnnxValueTypeCode(element, what));
      return inner | kOnnxOptionalBit;
    }
    case onnx::TypeProto::kMapType:
      return UnimplementedError(what + ": map values are not supported");
    case onnx::TypeProto::kSparseTensorType:
      return UnimplementedError(what + ": sparse tensors are not supported");
    default:
      return InvalidArgumentError(what + ": its type is empty");
  }
}

std::optional<DataType> FromOnnxValueType(int32_t code) {
  const int32_t bits = kOnnxSequenceBit | kOnnxOptionalBit;
  std::optional<DataType> dtype = FromOnnxType(code & ~bits);
  if (!dtype) return std::nullopt;
  if (code & kOnnxSequenceBit) dtype = SequenceOf(*dtype);
  if (code & kOnnxOptionalBit) dtype = OptionalOf(*dtype);
  return dtype;
}

std::string OnnxValueTypeString(int32_t code) {
  std::string out =
      OnnxTensorTypeString(code & ~(kOnnxSequenceBit | kOnnxOptionalBit));
  if (code & kOnnxSequenceBit) out = "seq(" + out + ")";
  if (code & kOnnxOptionalBit) out = "optional(" + out + ")";
  return out;
}

namespace {

// A tensor for a weight's values, to be written once: from 2 MiB in a
// LargeBuffer of its own (huge pages: framework/large_buffer.h), below in
// weft's usual buffers.
StatusOr<Tensor> UninitializedWeight(DataType dtype, const Shape& shape) {
  const size_t bytes =
      static_cast<size_t>(shape.NumElements()) * DataTypeSize(dtype);
  if (!LargeBuffer::Maps(bytes)) {
    return Tensor::CreateUninitialized(dtype, shape);
  }
  LargeBuffer buffer(bytes);
  if (!buffer.mapped()) return Tensor::CreateUninitialized(dtype, shape);
  const size_t size = buffer.size();
  char* data = buffer.Release();
  return Tensor::WrapExternal(dtype, shape, data, [data, size] {
    LargeBuffer::Free(data, size, /*mapped=*/true);
  });
}

}  // namespace

StatusOr<Tensor> TensorFromProto(
    const TensorProto& proto, const ExternalDataRoot& root,
    const std::string& what, std::optional<std::string_view> lifted_raw_data) {
  const bool has_raw_data = proto.has_raw_data() || lifted_raw_data.has_value();
  if (proto.has_segment()) {
    return UnimplementedError(what + ": segmented tensors are not supported");
  }
  const std::optional<DataType> dtype = FromOnnxType(proto.data_type());
  if (!dtype) {
    return UnimplementedError(what + ": dtype " +
                              OnnxTypeName(proto.data_type()) +
                              " is not supported");
  }
  WEFT_ASSIGN_OR_RETURN(Shape shape, ShapeOf(proto, what));
  if (*dtype == DataType::kString) {
    return StringsFromProto(proto, shape, has_raw_data, what);
  }
  const uint64_t count = static_cast<uint64_t>(shape.NumElements());
  const size_t element = DataTypeSize(*dtype);
  if (count > std::numeric_limits<uint64_t>::max() / element) {
    return InvalidArgumentError(what + ": dims " + shape.ToString() +
                                " are too large");
  }
  const bool four_bit = IsFourBitType(*dtype);
  // 4-bit values are packed two to a byte in a file, one to a byte in weft.
  const uint64_t bytes = four_bit ? count / 2 + count % 2 : count * element;

  const bool external = proto.data_location() == TensorProto::EXTERNAL;
  if (external || has_raw_data) {
    std::string external_bytes;
    if (external) {
      WEFT_ASSIGN_OR_RETURN(external_bytes,
                            ReadExternal(proto, root, what, bytes));
    }
    const std::string_view raw = external          ? external_bytes
                                 : lifted_raw_data ? *lifted_raw_data
                                                   : proto.raw_data();
    if (raw.size() != bytes) {
      return InvalidArgumentError(
          what + ": dims " + shape.ToString() + " of " +
          OnnxTypeName(proto.data_type()) + " need " + std::to_string(bytes) +
          " bytes of raw data, the tensor has " + std::to_string(raw.size()));
    }
    WEFT_ASSIGN_OR_RETURN(Tensor tensor, UninitializedWeight(*dtype, shape));
    if (four_bit) {
      UnpackFourBit(raw, count, *dtype == DataType::kInt4,
                    static_cast<uint8_t*>(tensor.raw_data()));
      return tensor;
    }
    if (bytes > 0) std::memcpy(tensor.raw_data(), raw.data(), bytes);
    if (*dtype == DataType::kBool) {
      const auto* b = static_cast<const uint8_t*>(tensor.raw_data());
      for (uint64_t i = 0; i < count; ++i) {
        if (b[i] > 1) {
          return InvalidArgumentError(what + ": bool value " +
                                      std::to_string(i) + " is " +
                                      std::to_string(b[i]));
        }
      }
    }
    return tensor;
  }

  switch (*dtype) {
    case DataType::kFloat32:
      return TensorFromField<float>(proto.float_data(), shape, what);
    case DataType::kFloat64:
      return TensorFromField<double>(proto.double_data(), shape, what);
    case DataType::kInt32:
      return TensorFromField<int32_t>(proto.int32_data(), shape, what);
    case DataType::kInt64:
      return TensorFromField<int64_t>(proto.int64_data(), shape, what);
    case DataType::kBool:
      return TensorFromField<bool>(proto.int32_data(), shape, what);
    case DataType::kFloat16:
      return TensorFromField<Float16>(proto.int32_data(), shape, what);
    case DataType::kInt8:
      return TensorFromField<int8_t>(proto.int32_data(), shape, what);
    case DataType::kUInt8:
      return TensorFromField<uint8_t>(proto.int32_data(), shape, what);
    case DataType::kInt16:
      return TensorFromField<int16_t>(proto.int32_data(), shape, what);
    case DataType::kUInt16:
      return TensorFromField<uint16_t>(proto.int32_data(), shape, what);
    case DataType::kUInt32:
      return TensorFromField<uint32_t>(proto.uint64_data(), shape, what);
    case DataType::kUInt64:
      return TensorFromField<uint64_t>(proto.uint64_data(), shape, what);
    case DataType::kBFloat16:
      return TensorFromField<BFloat16>(proto.int32_data(), shape, what);
    case DataType::kInt4:
    case DataType::kUInt4:
      return FourBitFromField(proto.int32_data(), shape, *dtype, what);
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      return Float8FromField(proto.int32_data(), shape, *dtype, what);
    case DataType::kString:
      break;  // Read above.
  }
  return InternalError(what + ": unhandled dtype");
}

namespace {

StatusOr<Tensor> SequenceFromProto(const onnx::SequenceProto& proto,
                                   DataType expected, const std::string& what) {
  if (proto.elem_type() != onnx::SequenceProto::TENSOR &&
      !(proto.elem_type() == onnx::SequenceProto::UNDEFINED &&
        proto.tensor_values_size() == 0)) {
    return InvalidArgumentError(what +
                                ": not a SequenceProto of tensors (elem_type " +
                                std::to_string(proto.elem_type()) +
                                "); weft reads sequences of tensors only");
  }
  std::vector<Tensor> items;
  for (int i = 0; i < proto.tensor_values_size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(
        Tensor item, TensorFromProto(proto.tensor_values(i), ExternalDataRoot{},
                                     what + ", item " + std::to_string(i)));
    items.push_back(std::move(item));
  }
  return MakeSequence(ContainedType(expected), std::move(items));
}

StatusOr<Tensor> OptionalFromProto(const onnx::OptionalProto& proto,
                                   DataType expected, const std::string& what) {
  const DataType inner = ContainedType(expected);
  switch (proto.elem_type()) {
    case onnx::OptionalProto::UNDEFINED:
      return MakeOptional(inner, std::nullopt);
    case onnx::OptionalProto::TENSOR:
      if (!IsContainerType(inner)) {
        WEFT_ASSIGN_OR_RETURN(
            Tensor value,
            TensorFromProto(proto.tensor_value(), ExternalDataRoot{}, what));
        return MakeOptional(inner, std::move(value));
      }
      break;
    case onnx::OptionalProto::SEQUENCE:
      if (IsSequenceType(inner)) {
        WEFT_ASSIGN_OR_RETURN(
            Tensor value,
            SequenceFromProto(proto.sequence_value(), inner, what));
        return MakeOptional(inner, std::move(value));
      }
      break;
    default:
      break;
  }
  return InvalidArgumentError(what + ": the optional's element type " +
                              std::to_string(proto.elem_type()) +
                              " does not match " + DataTypeName(expected));
}

template <class Proto>
StatusOr<Proto> ParseProto(std::string_view bytes, const char* kind) {
  Proto proto;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidArgumentError(std::string("not an ONNX ") + kind);
  }
  return proto;
}

}  // namespace

StatusOr<Tensor> ValueFromBytes(std::string_view bytes, DataType expected,
                                const std::string& what, std::string* name) {
  StatusOr<Tensor> value = InvalidArgumentError("");
  if (IsSequenceType(expected)) {
    WEFT_ASSIGN_OR_RETURN(
        auto proto, ParseProto<onnx::SequenceProto>(bytes, "SequenceProto"));
    if (name != nullptr) *name = proto.name();
    value = SequenceFromProto(proto, expected, what);
  } else if (IsOptionalType(expected)) {
    WEFT_ASSIGN_OR_RETURN(
        auto proto, ParseProto<onnx::OptionalProto>(bytes, "OptionalProto"));
    if (name != nullptr) *name = proto.name();
    value = OptionalFromProto(proto, expected, what);
  } else {
    WEFT_ASSIGN_OR_RETURN(auto proto,
                          ParseProto<onnx::TensorProto>(bytes, "TensorProto"));
    if (name != nullptr) *name = proto.name();
    // ONNX's test data holds bfloat16 values as UINT16 bit patterns (NumPy
    // has no bfloat16): read them as the bfloat16 they stand for.
    if (expected == DataType::kBFloat16 &&
        proto.data_type() == TensorProto::UINT16) {
      proto.set_data_type(TensorProto::BFLOAT16);
    }
    value = TensorFromProto(proto, ExternalDataRoot{}, what);
  }
  if (value.ok() && value->dtype() != expected) {
    return InvalidArgumentError(what + " is " + DataTypeName(value->dtype()) +
                                ", expected " + DataTypeName(expected));
  }
  return value;
}

}  // namespace weft::internal
