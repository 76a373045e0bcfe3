// libFuzzer target for the server's request parser (src/serve/
// infer_request.h): any body, in the JSON form or the binary tensor data
// form, either fails with InvalidArgument or yields tensors that match the
// signature — never a crash, a hang, a sanitizer report or an allocation
// larger than the body. What parses is encoded back as a response, so the
// encoder meets every tensor the parser can make.
//
// The first byte picks the form: even, JSON only; odd, the next two bytes
// are the JSON header's length (Inference-Header-Content-Length).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "serve/infer_request.h"
#include "serve/infer_response.h"
#include "weft/check.h"

namespace {

weft::serve::ModelSignature Signature() {
  using weft::DataType;
  weft::serve::ModelSignature s;
  s.inputs = {{"x", "x", DataType::kFloat32, std::vector<int64_t>{-1, 2}},
              {"ids", "ids", DataType::kInt64, std::vector<int64_t>{-1}},
              {"text", "text", DataType::kString, std::vector<int64_t>{-1}},
              {"mask", "mask", DataType::kBool, std::nullopt},
              {"half", "half", DataType::kFloat16, std::vector<int64_t>{-1}},
              {"img", "img", DataType::kUInt8, std::vector<int64_t>{-1, -1}}};
  s.outputs = {{"x", "x", DataType::kFloat32, std::nullopt},
               {"text", "text", DataType::kString, std::nullopt}};
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const weft::serve::ModelSignature signature = Signature();
  if (size == 0) return 0;
  std::optional<int64_t> header_length;
  size_t skip = 1;
  if (data[0] % 2 == 1 && size >= 3) {
    header_length = data[1] | (data[2] << 8);
    skip = 3;
  }
  const std::string_view body(reinterpret_cast<const char*>(data) + skip,
                              size - skip);
  auto request =
      weft::serve::ParseInferRequest(body, header_length, signature, 64);
  if (!request.ok()) {
    WEFT_CHECK(request.status().code() == weft::StatusCode::kInvalidArgument,
               "the parser failed with another code than InvalidArgument");
    return 0;
  }
  WEFT_CHECK(request->inputs.size() == signature.inputs.size(),
             "a parsed request lacks an input");
  const std::vector<weft::serve::RequestedOutput> sent = {{"x", true},
                                                          {"text", false}};
  auto encoded = weft::serve::EncodeInferResponse(
      "m", "1", *request, sent, {request->inputs[0], request->inputs[2]});
  (void)encoded;
  return 0;
}
