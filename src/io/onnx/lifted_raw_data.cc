#include "io/onnx/lifted_raw_data.h"

#include <cstdint>

namespace weft::internal {
namespace {

// Field numbers in onnx.proto.
constexpr uint64_t kModelGraphField = 7;        // ModelProto.graph
constexpr uint64_t kGraphInitializerField = 5;  // GraphProto.initializer
constexpr uint64_t kTensorRawDataField = 9;     // TensorProto.raw_data

// Protobuf's wire types (groups, 3 and 4, are not walked).
constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLengthDelimited = 2;
constexpr int kFixed32 = 5;

// One field of a message, as offsets into the bytes walked.
struct Field {
  uint64_t number = 0;
  int wire_type = 0;
  size_t begin = 0;    // Its tag's first byte.
  size_t payload = 0;  // A length-delimited field's first byte after the
                       // length; else where its value starts.
  size_t end = 0;      // One past its last byte.
};

// The fields of one serialized message, in order. Stops, with failed(), at
// bytes that are not protobuf's wire format: the walk then leaves them to
// protobuf's parser, which reports them.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}

  std::optional<Field> Next() {
    if (failed_ || pos_ == bytes_.size()) return std::nullopt;
    Field field;
    field.begin = pos_;
    uint64_t tag = 0;
    if (!ReadVarint(&tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX) {
      return Fail();
    }
    field.number = tag >> 3;
    field.wire_type = static_cast<int>(tag & 7);
    uint64_t value = 0;
    size_t skip = 0;
    switch (field.wire_type) {
      case kVarint:
        if (!ReadVarint(&value)) return Fail();
        break;
      case kFixed64:
        skip = 8;
        break;
      case kFixed32:
        skip = 4;
        break;
      case kLengthDelimited:
        if (!ReadVarint(&value)) return Fail();
        skip = static_cast<size_t>(value);
        if (value > bytes_.size() - pos_) return Fail();
        break;
      default:  // Groups and the wire types protobuf does not define.
        return Fail();
    }
    if (skip > bytes_.size() - pos_) return Fail();
    field.payload = pos_;
    pos_ += skip;
    field.end = pos_;
    return field;
  }

  bool failed() const { return failed_; }

 private:
  std::optional<Field> Fail() {
    failed_ = true;
    return std::nullopt;
  }

  // A varint of at most ten bytes, as protobuf reads them.
  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (pos_ == bytes_.size()) return false;
      const auto byte = static_cast<uint8_t>(bytes_[pos_++]);
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  std::string_view bytes_;
  size_t pos_ = 0;
  bool failed_ = false;
};

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// A length-delimited field `number` holding `payload`, which is `body`
// less the bytes [cut_begin, cut_end) of it.
void AppendCutField(uint64_t number, std::string_view body, size_t cut_begin,
                    size_t cut_end, std::string* out) {
  AppendVarint((number << 3) | kLengthDelimited, out);
  AppendVarint(body.size() - (cut_end - cut_begin), out);
  out->append(body.substr(0, cut_begin));
  out->append(body.substr(cut_end));
}

// Finds the length-delimited field `number` of the message in `bytes`, if
// it is there once, into `found`. False when the walk fails or the field
// is there more than once (protobuf then merges or overrides, which a cut
// of one field would not).
bool FindTheOnlyField(std::string_view bytes, uint64_t number,
                      std::optional<Field>* found) {
  WireReader fields(bytes);
  while (std::optional<Field> field = fields.Next()) {
    if (field->number != number || field->wire_type != kLengthDelimited) {
      continue;
    }
    if (*found) return false;
    *found = field;
  }
  return !fields.failed();
}

// An initializer whose raw_data is lifted: where it is in the graph's
// bytes and where its raw_data field is in its own.
struct Cut {
  Field initializer;
  Field raw_data;  // Offsets within the initializer's payload.
};

}  // namespace

std::optional<LiftedModel> LiftInitializerRawData(std::string_view model,
                                                  size_t min_bytes) {
  std::optional<Field> graph;
  if (!FindTheOnlyField(model, kModelGraphField, &graph) || !graph) {
    return std::nullopt;
  }

  const std::string_view graph_bytes =
      model.substr(graph->payload, graph->end - graph->payload);
  LiftedModel lifted;
  std::vector<Cut> cuts;
  WireReader fields(graph_bytes);
  while (std::optional<Field> field = fields.Next()) {
    if (field->number != kGraphInitializerField ||
        field->wire_type != kLengthDelimited) {
      continue;
    }
    const std::string_view tensor =
        graph_bytes.substr(field->payload, field->end - field->payload);
    std::optional<Field> raw;
    if (!FindTheOnlyField(tensor, kTensorRawDataField, &raw)) {
      return std::nullopt;
    }
    if (raw && raw->end - raw->payload >= min_bytes) {
      lifted.raw_data.emplace_back(
          tensor.substr(raw->payload, raw->end - raw->payload));
      cuts.push_back({*field, *raw});
    } else {
      lifted.raw_data.emplace_back(std::nullopt);
    }
  }
  if (fields.failed() || cuts.empty()) return std::nullopt;

  // The graph's fields as they were, but each cut initializer written
  // again without its raw_data (so with a new length).
  std::string graph_out;
  size_t copied = 0;
  for (const Cut& cut : cuts) {
    graph_out.append(
        graph_bytes.substr(copied, cut.initializer.begin - copied));
    const Field& init = cut.initializer;
    AppendCutField(kGraphInitializerField,
                   graph_bytes.substr(init.payload, init.end - init.payload),
                   cut.raw_data.begin, cut.raw_data.end, &graph_out);
    copied = init.end;
  }
  graph_out.append(graph_bytes.substr(copied));

  std::string& out = lifted.stripped;
  out.reserve(model.size() - graph_bytes.size() + graph_out.size() + 10);
  out.append(model.substr(0, graph->begin));
  AppendVarint((kModelGraphField << 3) | kLengthDelimited, &out);
  AppendVarint(graph_out.size(), &out);
  out.append(graph_out);
  out.append(model.substr(graph->end));
  return lifted;
}

}  // namespace weft::internal
