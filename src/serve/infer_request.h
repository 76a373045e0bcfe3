// The request parser: an Open Inference Protocol v2 inference request, as
// JSON, or as a JSON header followed by raw tensor bytes (the binary tensor
// data extension: Inference-Header-Content-Length), checked against the
// model's signature. Every error is InvalidArgument with a sentence naming
// the input, field or value at fault (the server answers 400 with it).
//
// Bounded by construction: the JSON's nesting depth is checked before it is
// parsed, and no tensor is allocated before its element count has been
// matched against the values or bytes the body actually holds, so a
// request can never make the server allocate more than its body's size in
// tensors (and the body itself is bounded by the HTTP layer). Fuzzed by
// fuzz/infer_request_fuzz.cc.
#ifndef WEFT_SRC_SERVE_INFER_REQUEST_H_
#define WEFT_SRC_SERVE_INFER_REQUEST_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "serve/model_signature.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::serve {

struct RequestedOutput {
  std::string name;
  bool binary = false;  // Its values travel as raw bytes after the header.
};

struct InferRequest {
  std::optional<std::string> id;  // Echoed in the response.
  // One tensor per model input, in the signature's order.
  std::vector<Tensor> inputs;
  // The outputs asked for, in the order asked; empty: every output, in the
  // signature's order, each binary when binary_outputs is set.
  std::vector<RequestedOutput> outputs;
  bool binary_outputs = false;  // parameters.binary_data_output
  // parameters.timeout, in microseconds (Triton's); 0: none.
  int64_t timeout_us = 0;
  // parameters.priority (1 is the highest); 0: the model's default.
  int priority = 0;
  // The request's "parameters" object as JSON text ("" when absent),
  // passed through to the response.
  std::string parameters_json;
};

// `header_length` is the Inference-Header-Content-Length header's value:
// the first header_length bytes of `body` are JSON and the rest tensor
// bytes; nullopt: the whole body is JSON.
StatusOr<InferRequest> ParseInferRequest(std::string_view body,
                                         std::optional<int64_t> header_length,
                                         const ModelSignature& signature,
                                         int max_json_depth);

// The checks every form of an input shares (JSON, binary, gRPC); errors
// name the input.
//   The datatype: one the protocol names, and the model's.
StatusOr<DataType> DtypeForInput(std::string_view datatype,
                                 const TensorSignature& expected);
//   Non-negative dimensions whose product fits, matching the model's shape.
StatusOr<Shape> ShapeForInput(std::span<const int64_t> dims,
                              const TensorSignature& expected);
//   Raw tensor bytes, exactly as many as the shape needs; BYTES as a 4-byte
//   little-endian length before each element's bytes. `context` names the
//   input in errors.
StatusOr<Tensor> TensorFromBytes(DataType dtype, const Shape& shape,
                                 std::string_view bytes,
                                 const std::string& context);

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_INFER_REQUEST_H_
