// One entry point for loading a model file, for every front end (the weft
// command, Python, the coming server): the format is read from the file's
// content, with the extension only as a hint.
//
//   weft JSON graph   the first byte that is not white space is '{'
//   ONNX model        anything else (a serialized ModelProto)
//
// So an ONNX model named model.bin loads, and a JSON graph given to a
// command that expects a model is not called "not an ONNX model". When a
// file is neither, the error is the one of the format its extension names
// (the JSON parser's line and column for a .json file), else ONNX's.
#ifndef WEFT_MODEL_H_
#define WEFT_MODEL_H_

#include <string>
#include <string_view>

#include "weft/graph_io.h"
#include "weft/onnx.h"
#include "weft/status.h"

namespace weft {

enum class ModelFormat { kWeftJson, kOnnx };

// "weft JSON graph", "ONNX model".
const char* ModelFormatName(ModelFormat format);

// The format of `bytes`, the whole file or its first bytes, by the rule
// above.
ModelFormat DetectModelFormat(std::string_view bytes);

// The format of the file at `path`, read from its first bytes; errors carry
// the system's reason for a file that cannot be read.
StatusOr<ModelFormat> DetectModelFileFormat(const std::string& path);

// Loads `path` in the format its content has. A weft JSON graph comes back
// as an OnnxModel whose `file` holds it and whose inputs, outputs and
// metadata are empty (the graph's placeholders are its inputs). Errors
// start with the path and carry the system's reason for a file that cannot
// be read (weft/file_status.h).
StatusOr<OnnxModel> LoadModel(const std::string& path);

}  // namespace weft

#endif  // WEFT_MODEL_H_
