// The response side of the protocol: an inference response (JSON, or a
// JSON header followed by the raw bytes of the outputs asked for in binary)
// and the {"error": "..."} body of a failed request.
#ifndef WEFT_SRC_SERVE_INFER_RESPONSE_H_
#define WEFT_SRC_SERVE_INFER_RESPONSE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "serve/infer_request.h"
#include "serve/model_signature.h"
#include "weft/tensor.h"

namespace weft::serve {

// The outputs a request gets, in order: those it asked for, or every output
// of the model (binary when the request's binary_data_output says so).
std::vector<RequestedOutput> OutputsToSend(const InferRequest& request,
                                           const ModelSignature& signature);

// Appends the binary form of `tensor` to *out: its elements' bytes, or for
// BYTES each element as a 4-byte little-endian length and its bytes (what
// the binary extension and gRPC's raw contents carry).
void AppendTensorBytes(const Tensor& tensor, std::string* out);

struct EncodedResponse {
  std::string body;
  // Set when binary outputs follow the JSON: the JSON's length, for the
  // Inference-Header-Content-Length header.
  std::optional<size_t> json_length;
};

// `outputs` holds one tensor per OutputsToSend(request, signature), in that
// order. Values that JSON cannot hold (NaN, infinities) are written as
// null; BYTES that are not UTF-8 have their bad bytes replaced (ask for the
// output in binary to get them as they are).
EncodedResponse EncodeInferResponse(const std::string& model_name,
                                    const std::string& model_version,
                                    const InferRequest& request,
                                    const std::vector<RequestedOutput>& sent,
                                    const std::vector<Tensor>& outputs);

// {"error": message}
std::string ErrorBody(const std::string& message);

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_INFER_RESPONSE_H_
