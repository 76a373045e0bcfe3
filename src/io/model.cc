#include "weft/model.h"

#include <fstream>

#include "weft/file_status.h"

namespace weft {
namespace {

bool EndsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Enough of the file's start to tell the formats apart: white space before
// a JSON object's '{' is rarely longer.
constexpr size_t kSniffBytes = 4096;

StatusOr<std::string> ReadStart(const std::string& path) {
  WEFT_RETURN_IF_ERROR(CheckReadableFile(path, path + ": cannot open"));
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoToStatus(errno, path + ": cannot open");
  std::string start(kSniffBytes, '\0');
  in.read(start.data(), static_cast<std::streamsize>(start.size()));
  start.resize(static_cast<size_t>(in.gcount()));
  return start;
}

StatusOr<OnnxModel> LoadAs(ModelFormat format, const std::string& path) {
  if (format == ModelFormat::kOnnx) return LoadOnnxModel(path);
  WEFT_ASSIGN_OR_RETURN(GraphFile file, LoadGraph(path));
  OnnxModel model;
  model.file = std::move(file);
  return model;
}

}  // namespace

const char* ModelFormatName(ModelFormat format) {
  return format == ModelFormat::kWeftJson ? "weft JSON graph" : "ONNX model";
}

ModelFormat DetectModelFormat(std::string_view bytes) {
  size_t i = 0;
  // A UTF-8 byte-order mark may precede a JSON text.
  if (bytes.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < bytes.size() && (bytes[i] == ' ' || bytes[i] == '\t' ||
                              bytes[i] == '\n' || bytes[i] == '\r')) {
    ++i;
  }
  return i < bytes.size() && bytes[i] == '{' ? ModelFormat::kWeftJson
                                             : ModelFormat::kOnnx;
}

StatusOr<ModelFormat> DetectModelFileFormat(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::string start, ReadStart(path));
  return DetectModelFormat(start);
}

StatusOr<OnnxModel> LoadModel(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(const ModelFormat by_content,
                        DetectModelFileFormat(path));
  StatusOr<OnnxModel> model = LoadAs(by_content, path);
  if (model.ok()) return model;
  // Neither format fits: say what the extension promised, when it names
  // the other format (a .json file that is not '{'...: the JSON error).
  const bool json_name = EndsWith(path, ".json");
  const bool onnx_name = EndsWith(path, ".onnx");
  if ((json_name && by_content == ModelFormat::kOnnx) ||
      (onnx_name && by_content == ModelFormat::kWeftJson)) {
    StatusOr<OnnxModel> by_name =
        LoadAs(json_name ? ModelFormat::kWeftJson : ModelFormat::kOnnx, path);
    if (by_name.ok()) return by_name;
    return by_name.status();
  }
  return model.status();
}

}  // namespace weft
