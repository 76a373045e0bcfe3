// The gRPC front end, called through a client stub generated from the same
// grpc_inference.proto a user's client is built from.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>

#include "grpc_inference.grpc.pb.h"
#include "test_support/serve_data.h"
#include "weft/serve.h"

namespace weft::serve {
namespace {

namespace pb = ::inference;

class GrpcServerTest : public ::testing::Test {
 protected:
  void Start(const std::string& token = "") {
    ServerOptions options;
    options.http_port = 0;
    options.grpc_port = 0;
    options.auth_token = token;
    options.log = [](const std::string&) {};
    BatchingOptions batching;
    batching.max_batch_size = 4;
    options.models.push_back({.name = "mlp",
                              .path = test::ServeTestMlpPath(),
                              .batching = batching});
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    ASSERT_GT(server_->grpc_port(), 0);
    stub_ = pb::GRPCInferenceService::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->grpc_port()),
                            grpc::InsecureChannelCredentials()));
  }

  static pb::ModelInferRequest MlpRequest(bool raw) {
    pb::ModelInferRequest request;
    request.set_model_name("mlp");
    request.set_id("g1");
    auto* input = request.add_inputs();
    input->set_name("x");
    input->set_datatype("FP32");
    input->add_shape(2);
    input->add_shape(4);
    const float x[8] = {1, -2, 3, -4, 5, -6, 7, -8};
    if (raw) {
      request.add_raw_input_contents(
          std::string(reinterpret_cast<const char*>(x), sizeof x));
    } else {
      for (float v : x) input->mutable_contents()->add_fp32_contents(v);
    }
    return request;
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<pb::GRPCInferenceService::Stub> stub_;
};

TEST_F(GrpcServerTest, HealthAndMetadata) {
  Start();
  grpc::ClientContext live_context;
  pb::ServerLiveResponse live;
  ASSERT_TRUE(stub_->ServerLive(&live_context, {}, &live).ok());
  EXPECT_TRUE(live.live());
  grpc::ClientContext metadata_context;
  pb::ModelMetadataRequest request;
  request.set_name("mlp");
  pb::ModelMetadataResponse metadata;
  ASSERT_TRUE(stub_->ModelMetadata(&metadata_context, request, &metadata).ok());
  ASSERT_EQ(metadata.inputs_size(), 1);
  EXPECT_EQ(metadata.inputs(0).datatype(), "FP32");
  EXPECT_EQ(metadata.inputs(0).shape(0), -1);
  EXPECT_EQ(metadata.versions(0), "1");
}

TEST_F(GrpcServerTest, RawAndTypedContentsGiveTheSameBits) {
  Start();
  pb::ModelInferResponse raw, typed;
  grpc::ClientContext c1, c2;
  ASSERT_TRUE(stub_->ModelInfer(&c1, MlpRequest(true), &raw).ok());
  ASSERT_TRUE(stub_->ModelInfer(&c2, MlpRequest(false), &typed).ok());
  EXPECT_EQ(raw.id(), "g1");
  ASSERT_EQ(raw.outputs_size(), 1);
  EXPECT_EQ(raw.outputs(0).shape_size(), 2);
  EXPECT_EQ(raw.outputs(0).shape(1), 3);
  ASSERT_EQ(raw.raw_output_contents_size(), 1);
  EXPECT_EQ(raw.raw_output_contents(0).size(), 6 * sizeof(float));
  EXPECT_EQ(raw.raw_output_contents(0), typed.raw_output_contents(0));
}

TEST_F(GrpcServerTest, ErrorsCarryTheProtocolsCodes) {
  Start();
  pb::ModelInferResponse response;
  pb::ModelInferRequest unknown = MlpRequest(true);
  unknown.set_model_name("nope");
  grpc::ClientContext c1;
  EXPECT_EQ(stub_->ModelInfer(&c1, unknown, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  pb::ModelInferRequest wrong = MlpRequest(true);
  wrong.mutable_inputs(0)->set_datatype("INT32");
  grpc::ClientContext c2;
  const grpc::Status status = stub_->ModelInfer(&c2, wrong, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("input 'x'"), std::string::npos);
  pb::ModelInferRequest short_raw = MlpRequest(true);
  short_raw.set_raw_input_contents(0, std::string(12, '\0'));
  grpc::ClientContext c3;
  EXPECT_EQ(stub_->ModelInfer(&c3, short_raw, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  pb::ModelInferRequest few = MlpRequest(false);
  few.mutable_inputs(0)->mutable_contents()->clear_fp32_contents();
  grpc::ClientContext c4;
  EXPECT_EQ(stub_->ModelInfer(&c4, few, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(GrpcServerTest, ATokenGuardsEverythingButHealth) {
  Start("tok");
  grpc::ClientContext live_context;
  pb::ServerLiveResponse live;
  EXPECT_TRUE(stub_->ServerLive(&live_context, {}, &live).ok());
  pb::ModelInferResponse response;
  grpc::ClientContext without;
  EXPECT_EQ(
      stub_->ModelInfer(&without, MlpRequest(true), &response).error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext with;
  with.AddMetadata("authorization", "Bearer tok");
  EXPECT_TRUE(stub_->ModelInfer(&with, MlpRequest(true), &response).ok());
}

}  // namespace
}  // namespace weft::serve
