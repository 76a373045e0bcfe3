// libFuzzer target for the parsers of the small files a user hands weft
// beside a model: .npy feeds (weft run --feed, weft.data's ReadNpyFn),
// serialized TensorProtos (weft test-onnx's input_K.pb), configuration text
// (--config as JSON or TensorFlow's text format, --set) and a served
// model's config.json. Every input must give a value or an error, never a
// crash, a hang, a sanitizer report or an allocation larger than the input
// asks for.
//
// The first byte picks the parser. What parses is checked for what a user
// relies on: a parsed .npy writes back to bytes that parse to the same
// tensor; a parsed TensorProto's element count agrees with its shape.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "serve/model_registry.h"
#include "weft/check.h"
#include "weft/config_file.h"
#include "weft/npy.h"
#include "weft/onnx.h"

namespace {

void FuzzNpy(std::string_view bytes) {
  auto tensor = weft::ParseNpy(bytes);
  if (!tensor.ok()) {
    WEFT_CHECK(tensor.status().code() == weft::StatusCode::kInvalidArgument,
               "ParseNpy failed with another code than InvalidArgument");
    return;
  }
  const std::string written = weft::SerializeNpy(*tensor);
  auto again = weft::ParseNpy(written);
  WEFT_CHECK(again.ok(), "a parsed .npy, written back, did not parse");
  WEFT_CHECK(again->BitwiseEqual(*tensor),
             "a parsed .npy, written back, parsed to another tensor");
}

void FuzzOnnxTensor(std::string_view bytes) {
  std::string name;
  auto tensor = weft::ParseOnnxTensor(bytes, &name);
  if (!tensor.ok()) return;
  WEFT_CHECK(tensor->NumElements() == tensor->shape().NumElements(),
             "a parsed TensorProto's element count differs from its shape's");
}

void FuzzConfigText(std::string_view bytes) {
  weft::RunConfig config;
  (void)weft::ApplyConfigText(std::string(bytes), "fuzz", &config);
  weft::RunConfig set;
  (void)weft::ApplySetting(std::string(bytes), &set);
}

void FuzzModelConfig(std::string_view bytes) {
  weft::serve::BatchingOptions batching;
  weft::SessionOptions session;
  if (weft::serve::ApplyModelConfig(std::string(bytes), "config.json",
                                    &batching, &session)
          .ok()) {
    (void)weft::serve::ValidateBatchingOptions(batching);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1,
                               size - 1);
  switch (data[0] % 4) {
    case 0:
      FuzzNpy(bytes);
      break;
    case 1:
      FuzzOnnxTensor(bytes);
      break;
    case 2:
      FuzzConfigText(bytes);
      break;
    default:
      FuzzModelConfig(bytes);
      break;
  }
  return 0;
}
