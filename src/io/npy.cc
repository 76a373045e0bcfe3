#include "weft/npy.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "weft/file_status.h"

namespace weft {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
// Files larger than this are refused before reading: a graph's constants
// and feeds are expected well below it.
constexpr int64_t kMaxNpyBytes = int64_t{8} << 30;

const char* Descr(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "<f4";
    case DataType::kFloat64:
      return "<f8";
    case DataType::kInt32:
      return "<i4";
    case DataType::kInt64:
      return "<i8";
    case DataType::kBool:
      return "|b1";
    case DataType::kFloat16:
      return "<f2";
    case DataType::kInt8:
      return "|i1";
    case DataType::kUInt8:
      return "|u1";
    case DataType::kInt16:
      return "<i2";
    case DataType::kUInt16:
      return "<u2";
    case DataType::kUInt32:
      return "<u4";
    case DataType::kUInt64:
      return "<u8";
    case DataType::kString:
    case DataType::kBFloat16:
    case DataType::kInt4:
    case DataType::kUInt4:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      break;  // No NumPy dtype.
  }
  return "";
}

// "<f4, <f8, ...": every descr Descr gives, for error messages.
std::string SupportedDescrs() {
  std::string list;
  for (DataType dtype : kAllDataTypes) {
    const std::string_view descr = Descr(dtype);
    if (descr.empty()) continue;
    if (!list.empty()) list += ", ";
    list += descr;
  }
  return list;
}

std::optional<DataType> DtypeFromDescr(std::string_view descr) {
  for (DataType dtype : kAllDataTypes) {
    if (descr == Descr(dtype)) return dtype;
  }
  if (descr == "<b1" || descr == "b1" || descr == "?") return DataType::kBool;
  if (descr == "<i1") return DataType::kInt8;
  if (descr == "<u1") return DataType::kUInt8;
  return std::nullopt;
}

// Finds `'key':` in a header dict and returns the text of its value, up to
// the next top-level ',' or '}'.
std::optional<std::string_view> HeaderValue(std::string_view header,
                                            std::string_view key) {
  const std::string quoted = "'" + std::string(key) + "'";
  auto pos = header.find(quoted);
  if (pos == std::string_view::npos) return std::nullopt;
  pos = header.find(':', pos + quoted.size());
  if (pos == std::string_view::npos) return std::nullopt;
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  int depth = 0;
  size_t end = pos;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  return header.substr(pos, end - pos);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\''))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\''))
    s.remove_suffix(1);
  return s;
}

StatusOr<Shape> ParseShapeTuple(std::string_view text) {
  text = Trim(text);
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    return InvalidArgumentError("bad 'shape' in header: " + std::string(text));
  }
  text = text.substr(1, text.size() - 2);
  std::vector<int64_t> dims;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view part = Trim(text.substr(0, comma));
    if (!part.empty()) {
      int64_t d = 0;
      auto [ptr, ec] =
          std::from_chars(part.data(), part.data() + part.size(), d);
      if (ec != std::errc() || ptr != part.data() + part.size() || d < 0) {
        return InvalidArgumentError("bad dimension '" + std::string(part) +
                                    "' in header shape");
      }
      dims.push_back(d);
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (dims.size() > 32) {
    return InvalidArgumentError("header shape has more than 32 dimensions");
  }
  Shape shape(dims);
  if (!shape.IsValid()) {
    return InvalidArgumentError("header shape " + shape.ToString() +
                                " overflows");
  }
  return shape;
}

}  // namespace

StatusOr<Tensor> ParseNpy(std::string_view bytes) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) {
    return InvalidArgumentError("not a .npy file (bad magic bytes)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return InvalidArgumentError("truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) {
      header_len |=
          static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i]))
          << (8 * i);
    }
    offset = 12;
  } else {
    return InvalidArgumentError("unsupported .npy version " +
                                std::to_string(major));
  }
  if (header_len > bytes.size() - offset) {
    return InvalidArgumentError("truncated .npy header");
  }
  const std::string_view header = bytes.substr(offset, header_len);
  const auto descr = HeaderValue(header, "descr");
  const auto fortran = HeaderValue(header, "fortran_order");
  const auto shape_text = HeaderValue(header, "shape");
  if (!descr || !fortran || !shape_text) {
    return InvalidArgumentError(
        "bad .npy header: needs 'descr', 'fortran_order' and 'shape'");
  }
  const auto dtype = DtypeFromDescr(Trim(*descr));
  if (!dtype) {
    return InvalidArgumentError("unsupported .npy dtype '" +
                                std::string(Trim(*descr)) +
                                "' (supported: " + SupportedDescrs() + ")");
  }
  if (Trim(*fortran) != "False") {
    return InvalidArgumentError(".npy data in Fortran order is not supported");
  }
  WEFT_ASSIGN_OR_RETURN(Shape shape, ParseShapeTuple(*shape_text));
  const std::string_view data = bytes.substr(offset + header_len);
  const uint64_t elements = static_cast<uint64_t>(shape.NumElements());
  const uint64_t element_size = DataTypeSize(*dtype);
  if (elements > static_cast<uint64_t>(kMaxNpyBytes) / element_size) {
    return InvalidArgumentError(".npy shape " + shape.ToString() +
                                " is too large");
  }
  if (data.size() != elements * element_size) {
    return InvalidArgumentError(".npy data has " + std::to_string(data.size()) +
                                " bytes; shape " + shape.ToString() + " " +
                                DataTypeName(*dtype) + " needs " +
                                std::to_string(elements * element_size));
  }
  WEFT_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Create(*dtype, shape));
  std::memcpy(tensor.raw_data(), data.data(), data.size());
  if (*dtype == DataType::kBool) {
    for (int64_t i = 0; i < tensor.NumElements(); ++i) {
      auto* b = static_cast<unsigned char*>(tensor.raw_data()) + i;
      if (*b > 1) {
        return InvalidArgumentError(
            ".npy bool data holds a byte other than "
            "0 or 1");
      }
    }
  }
  return tensor;
}

StatusOr<Tensor> ReadNpy(const std::string& path) {
  WEFT_RETURN_IF_ERROR(CheckReadableFile(path, path + ": cannot open"));
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return ErrnoToStatus(errno, path + ": cannot open");
  const std::streamoff size = in.tellg();
  if (size < 0 || size > kMaxNpyBytes) {
    return InvalidArgumentError(path + ": file is too large");
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  if (!in) return InvalidArgumentError(path + ": read failed");
  auto tensor = ParseNpy(bytes);
  if (!tensor.ok()) return tensor.status().WithContext(path);
  return tensor;
}

std::string SerializeNpy(const Tensor& tensor) {
  WEFT_CHECK(
      !IsContainerType(tensor.dtype()) && tensor.dtype() != DataType::kString,
      "SerializeNpy of a container or string value");
  std::string shape = "(";
  for (int i = 0; i < tensor.shape().rank(); ++i) {
    shape += std::to_string(tensor.shape().dim(i)) + ",";
    if (i + 1 < tensor.shape().rank()) shape += " ";
  }
  if (tensor.shape().rank() > 1) shape.pop_back();  // "(2, 3)" not "(2, 3,)"
  shape += ")";
  std::string header = std::string("{'descr': '") + Descr(tensor.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that magic + version + length + header + '\n' is a
  // multiple of 64 bytes, as NumPy writes it.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.size_bytes());
  return out;
}

Status WriteNpy(const std::string& path, const Tensor& tensor) {
  if (IsContainerType(tensor.dtype()) || IsListedOnlyType(tensor.dtype())) {
    return InvalidArgumentError(path + ": a " + DataTypeName(tensor.dtype()) +
                                " value has no .npy form (NumPy has no such "
                                "dtype)");
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) return ErrnoToStatus(errno, path + ": cannot open for writing");
  const std::string bytes = SerializeNpy(tensor);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return InvalidArgumentError(path + ": write failed");
  return Status::OK();
}

}  // namespace weft
