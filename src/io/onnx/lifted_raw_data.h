// The raw_data of a model's weights, taken out of its serialized bytes
// before protobuf parses them.
//
// Parsing an onnx.ModelProto copies every initializer's raw_data into a
// string of its own: for ResNet-18, 45 MB written to new memory only to be
// copied once more into the weights and freed. LiftInitializerRawData walks
// the protobuf wire format of the model's main graph and cuts the large
// raw_data fields out, so that protobuf parses a message of a few hundred
// KB, and the weights are copied from the model's bytes themselves
// (TensorFromProto's `lifted_raw_data`).
#ifndef WEFT_SRC_IO_ONNX_LIFTED_RAW_DATA_H_
#define WEFT_SRC_IO_ONNX_LIFTED_RAW_DATA_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::internal {

struct LiftedModel {
  // The ModelProto's bytes without the lifted raw_data fields: the same
  // message, field for field, except that those initializers have no
  // raw_data.
  std::string stripped;
  // Per initializer of the main graph (ModelProto.graph.initializer), in
  // order: its raw_data, a view into the bytes given, or nullopt where it
  // was left in place.
  std::vector<std::optional<std::string_view>> raw_data;
};

// `model`, a serialized onnx.ModelProto, with the raw_data of the main
// graph's initializers of `min_bytes` or more lifted out. nullopt when
// nothing was lifted or the bytes are not in the plain shape this handles,
// which protobuf then parses as they are: the graph field more than once
// (protobuf would merge them), an initializer with raw_data more than once
// (the last would win), groups, or bytes that do not walk as protobuf's
// wire format (the parse reports them).
std::optional<LiftedModel> LiftInitializerRawData(std::string_view model,
                                                  size_t min_bytes);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_ONNX_LIFTED_RAW_DATA_H_
