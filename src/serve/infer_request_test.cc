#include "serve/infer_request.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "serve/infer_response.h"
#include "weft/json_depth.h"

namespace weft::serve {
namespace {

// x: FP32 [-1, 2]; ids: INT64 [-1]; text: BYTES [-1]; out: FP32.
ModelSignature TestSignature() {
  ModelSignature signature;
  signature.inputs.push_back(
      {"x", "x", DataType::kFloat32, std::vector<int64_t>{-1, 2}});
  signature.inputs.push_back(
      {"ids", "ids", DataType::kInt64, std::vector<int64_t>{-1}});
  signature.inputs.push_back(
      {"text", "text", DataType::kString, std::vector<int64_t>{-1}});
  signature.outputs.push_back({"y", "y:0", DataType::kFloat32, std::nullopt});
  signature.outputs.push_back({"z", "z:0", DataType::kInt64, std::nullopt});
  return signature;
}

const char* kValidJson = R"({
  "id": "r1",
  "parameters": {"timeout": 5000, "priority": 1, "custom": "kept"},
  "inputs": [
    {"name": "ids", "datatype": "INT64", "shape": [3], "data": [1, -2, 3]},
    {"name": "x", "datatype": "FP32", "shape": [2, 2], "data": [[1, 2], [3, 4.5]]},
    {"name": "text", "datatype": "BYTES", "shape": [1], "data": ["hello"]}
  ],
  "outputs": [{"name": "z"}, {"name": "y", "parameters": {"binary_data": true}}]
})";

StatusOr<InferRequest> Parse(const std::string& body,
                             std::optional<int64_t> header = std::nullopt) {
  return ParseInferRequest(body, header, TestSignature(), 64);
}

std::string ErrorOf(const std::string& body) {
  StatusOr<InferRequest> r = Parse(body);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST(InferRequestTest, ReadsNestedAndFlatJsonDataInSignatureOrder) {
  StatusOr<InferRequest> r = Parse(kValidJson);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->id, "r1");
  EXPECT_EQ(r->timeout_us, 5000);
  EXPECT_EQ(r->priority, 1);
  ASSERT_EQ(r->inputs.size(), 3u);
  EXPECT_EQ(r->inputs[0].shape(), Shape({2, 2}));
  EXPECT_EQ(r->inputs[0].data<float>()[3], 4.5f);
  EXPECT_EQ(r->inputs[1].data<int64_t>()[1], -2);
  EXPECT_EQ(r->inputs[2].data<std::string>()[0], "hello");
  ASSERT_EQ(r->outputs.size(), 2u);
  EXPECT_EQ(r->outputs[0].name, "z");
  EXPECT_FALSE(r->outputs[0].binary);
  EXPECT_TRUE(r->outputs[1].binary);
  EXPECT_NE(r->parameters_json.find("\"custom\":\"kept\""), std::string::npos);
}

void AppendLength(uint32_t n, std::string* out) {
  for (int s = 0; s < 32; s += 8) out->push_back(static_cast<char>(n >> s));
}

TEST(InferRequestTest, ReadsTheBinaryTensorDataExtension) {
  const std::string header = R"({"inputs": [
    {"name": "x", "datatype": "FP32", "shape": [1, 2], "parameters": {"binary_data_size": 8}},
    {"name": "ids", "datatype": "INT64", "shape": [1], "data": [7]},
    {"name": "text", "datatype": "BYTES", "shape": [2], "parameters": {"binary_data_size": 11}}]})";
  const float x[2] = {1.5f, -2.0f};
  std::string body = header;
  body.append(reinterpret_cast<const char*>(x), sizeof x);
  AppendLength(2, &body);
  body += "ab";
  AppendLength(1, &body);
  body += "c";
  StatusOr<InferRequest> r = Parse(body, header.size());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->inputs[0].data<float>()[1], -2.0f);
  EXPECT_EQ(r->inputs[2].data<std::string>()[0], "ab");
  EXPECT_EQ(r->inputs[2].data<std::string>()[1], "c");
}

TEST(InferRequestTest, RefusesBinarySizesThatDisagreeWithTheShapeOrTheBody) {
  const std::string header = R"({"inputs": [
    {"name": "x", "datatype": "FP32", "shape": [1, 2], "parameters": {"binary_data_size": 12}},
    {"name": "ids", "datatype": "INT64", "shape": [1], "data": [7]},
    {"name": "text", "datatype": "BYTES", "shape": [0], "data": []}]})";
  std::string body = header + std::string(12, '\0');
  StatusOr<InferRequest> r = Parse(body, header.size());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'x'"), std::string::npos);
  EXPECT_NE(r.status().message().find("12 bytes"), std::string::npos);
  // Past the end of the body.
  r = Parse(header + std::string(4, '\0'), header.size());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("past the end"), std::string::npos);
  // A header length past the body.
  r = Parse(header, header.size() + 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Inference-Header-Content-Length"),
            std::string::npos);
}

TEST(InferRequestTest, RefusesBytesLengthsPastTheirData) {
  const std::string header = R"({"inputs": [
    {"name": "x", "datatype": "FP32", "shape": [0, 2], "data": []},
    {"name": "ids", "datatype": "INT64", "shape": [0], "data": []},
    {"name": "text", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": 6}}]})";
  std::string body = header;
  AppendLength(1000, &body);
  body += "ab";
  StatusOr<InferRequest> r = Parse(body, header.size());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("past the end"), std::string::npos);
}

std::string WithInput(const std::string& x_entry) {
  return R"({"inputs": [)" + x_entry +
         R"(, {"name": "ids", "datatype": "INT64", "shape": [1], "data": [1]},
         {"name": "text", "datatype": "BYTES", "shape": [1], "data": ["a"]}]})";
}

TEST(InferRequestTest, EachBadInputGetsASentenceNamingIt) {
  EXPECT_NE(ErrorOf("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(ErrorOf("[]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(ErrorOf("{}").find("no \"inputs\""), std::string::npos);
  EXPECT_NE(
      ErrorOf(
          WithInput(
              R"({"name": "x", "datatype": "FP99", "shape": [1, 2], "data": [1, 2]})"))
          .find("unknown datatype \"FP99\""),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          WithInput(
              R"({"name": "x", "datatype": "FP64", "shape": [1, 2], "data": [1, 2]})"))
          .find("does not match the model's FP32"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          WithInput(
              R"({"name": "x", "datatype": "FP32", "shape": [1, -2], "data": [1, 2]})"))
          .find("negative"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          WithInput(
              R"({"name": "x", "datatype": "FP32", "shape": [1, 2.5], "data": [1, 2]})"))
          .find("not an integer"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          WithInput(
              R"({"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]})"))
          .find("does not match the model's [-1, 2]"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          WithInput(
              R"({"name": "x", "datatype": "FP32", "shape": [4611686018427387904, 2], "data": [1]})"))
          .find("64 bits"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          WithInput(
              R"({"name": "x", "datatype": "FP32", "shape": [2, 2], "data": [1, 2, 3]})"))
          .find("4 values, but \"data\" holds 3"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          WithInput(
              R"({"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, "a"]})"))
          .find("not a number"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          WithInput(
              R"({"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}, {"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]})"))
          .find("given twice"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]})")
          .find("missing input 'ids'"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          R"({"inputs": [{"name": "nope", "datatype": "FP32", "shape": [1], "data": [1]}]})")
          .find("unknown input 'nope'"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          R"({"inputs": [{"name": "ids", "datatype": "INT64", "shape": [1], "data": [1.5]}]})")
          .find("not an integer"),
      std::string::npos);
}

TEST(InferRequestTest, RefusesDeepNestingBeforeParsing) {
  std::string deep(100000, '[');
  EXPECT_NE(ErrorOf(deep).find("nests deeper than 64"), std::string::npos);
  EXPECT_FALSE(FindJsonNestingPast(R"({"a": "[[[[", "b": [[1]]})", 3));
  EXPECT_EQ(FindJsonNestingPast(R"({"a": "[[[[", "b": [[1]]})", 2), 20u);
}

TEST(InferRequestTest, RefusesUnknownAndRepeatedOutputs) {
  std::string body = WithInput(
      R"({"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]})");
  body.pop_back();
  EXPECT_NE(ErrorOf(body + R"(, "outputs": [{"name": "w"}]})")
                .find("unknown output 'w'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(body + R"(, "outputs": [{"name": "y"}, {"name": "y"}]})")
                .find("asked for twice"),
            std::string::npos);
}

TEST(InferResponseTest, EncodesJsonAndBinaryOutputsInTheOrderAsked) {
  InferRequest request;
  request.id = "7";
  const Tensor y = Tensor::FromVector<float>(Shape{2}, {0.5f, 2.0f});
  const Tensor z = Tensor::FromVector<int64_t>(Shape{1}, {42});
  EncodedResponse r = EncodeInferResponse("m", "1", request,
                                          {{"z", false}, {"y", true}}, {z, y});
  ASSERT_TRUE(r.json_length.has_value());
  const std::string json = r.body.substr(0, *r.json_length);
  EXPECT_NE(json.find(R"("id":"7")"), std::string::npos);
  EXPECT_NE(json.find(R"("data":[42])"), std::string::npos);
  EXPECT_NE(json.find(R"("binary_data_size":8)"), std::string::npos);
  ASSERT_EQ(r.body.size(), *r.json_length + 8);
  float back[2];
  std::memcpy(back, r.body.data() + *r.json_length, 8);
  EXPECT_EQ(back[0], 0.5f);
  EXPECT_EQ(back[1], 2.0f);
}

}  // namespace
}  // namespace weft::serve
