#include "serve/grpc_server.h"

#include <grpcpp/grpcpp.h>

#include <cstring>
#include <utility>

#include "grpc_inference.grpc.pb.h"
#include "serve/infer_request.h"
#include "serve/infer_response.h"
#include "serve/rest_api.h"
#include "weft/float16.h"

namespace weft::serve {
namespace {

namespace pb = ::inference;

grpc::Status ToGrpc(const Status& status) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (status.code()) {
    case StatusCode::kOk:
      return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case StatusCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case StatusCode::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case StatusCode::kFailedPrecondition:
    case StatusCode::kCancelled:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case StatusCode::kDeadlineExceeded:
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
      break;
    default:
      break;
  }
  return grpc::Status(code, status.message());
}

// Copies `values` (of one contents kind) into *tensor's elements.
template <class T, class Values>
Status CopyValues(const Values& values, Tensor* tensor,
                  const std::string& context) {
  if (static_cast<int64_t>(values.size()) != tensor->NumElements()) {
    return InvalidArgumentError(context + ": shape " +
                                tensor->shape().ToString() + " is " +
                                std::to_string(tensor->NumElements()) +
                                " values, but its contents "
                                "hold " +
                                std::to_string(values.size()));
  }
  T* out = tensor->data<T>();
  for (int i = 0; i < values.size(); ++i) {
    out[i] = static_cast<T>(values[i]);
  }
  return Status::OK();
}

// Narrowing from int32/uint32 contents, refusing values out of T's range.
template <class T, class Values>
Status CopyNarrow(const Values& values, Tensor* tensor,
                  const std::string& context) {
  for (int i = 0; i < values.size(); ++i) {
    if (values[i] < std::numeric_limits<T>::min() ||
        values[i] > std::numeric_limits<T>::max()) {
      return InvalidArgumentError(context + ": value " + std::to_string(i) +
                                  " (" + std::to_string(values[i]) +
                                  ") is out of its datatype's range");
    }
  }
  return CopyValues<T>(values, tensor, context);
}

// NOLINTNEXTLINE(readability-function-size)
Status FromContents(const pb::InferTensorContents& c, Tensor* tensor,
                    const std::string& context) {
  switch (tensor->dtype()) {
    case DataType::kBool:
      return CopyValues<bool>(c.bool_contents(), tensor, context);
    case DataType::kInt8:
      return CopyNarrow<int8_t>(c.int_contents(), tensor, context);
    case DataType::kInt16:
      return CopyNarrow<int16_t>(c.int_contents(), tensor, context);
    case DataType::kInt32:
      return CopyValues<int32_t>(c.int_contents(), tensor, context);
    case DataType::kInt64:
      return CopyValues<int64_t>(c.int64_contents(), tensor, context);
    case DataType::kUInt8:
      return CopyNarrow<uint8_t>(c.uint_contents(), tensor, context);
    case DataType::kUInt16:
      return CopyNarrow<uint16_t>(c.uint_contents(), tensor, context);
    case DataType::kUInt32:
      return CopyValues<uint32_t>(c.uint_contents(), tensor, context);
    case DataType::kUInt64:
      return CopyValues<uint64_t>(c.uint64_contents(), tensor, context);
    case DataType::kFloat32:
      return CopyValues<float>(c.fp32_contents(), tensor, context);
    case DataType::kFloat64:
      return CopyValues<double>(c.fp64_contents(), tensor, context);
    case DataType::kString: {
      if (c.bytes_contents_size() != tensor->NumElements()) {
        return InvalidArgumentError(context + ": shape " +
                                    tensor->shape().ToString() +
                                    " does not match its bytes_contents");
      }
      std::string* out = tensor->data<std::string>();
      for (int i = 0; i < c.bytes_contents_size(); ++i)
        out[i] = c.bytes_contents(i);
      return Status::OK();
    }
    default:
      return InvalidArgumentError(context +
                                  ": FP16 and BF16 travel only as "
                                  "raw_input_contents");
  }
}

StatusOr<int64_t> IntParameter(
    const google::protobuf::Map<std::string, pb::InferParameter>& params,
    const char* key) {
  auto it = params.find(key);
  if (it == params.end()) return int64_t{0};
  if (it->second.parameter_choice_case() != pb::InferParameter::kInt64Param ||
      it->second.int64_param() < 0) {
    return InvalidArgumentError(std::string("parameters.") + key +
                                " must be a non-negative int64_param");
  }
  return it->second.int64_param();
}

// NOLINTNEXTLINE(readability-function-size)
StatusOr<InferRequest> FromProto(const pb::ModelInferRequest& in,
                                 const ModelSignature& signature) {
  InferRequest out;
  if (!in.id().empty()) out.id = in.id();
  WEFT_ASSIGN_OR_RETURN(out.timeout_us,
                        IntParameter(in.parameters(), "timeout"));
  WEFT_ASSIGN_OR_RETURN(int64_t priority,
                        IntParameter(in.parameters(), "priority"));
  out.priority = static_cast<int>(std::min<int64_t>(priority, 1'000'000));
  const bool raw = in.raw_input_contents_size() > 0;
  if (raw && in.raw_input_contents_size() != in.inputs_size()) {
    return InvalidArgumentError(std::to_string(in.raw_input_contents_size()) +
                                " raw_input_contents for " +
                                std::to_string(in.inputs_size()) +
                                " inputs: give one per input, or none");
  }
  out.inputs.assign(signature.inputs.size(), Tensor());
  std::vector<bool> seen(signature.inputs.size(), false);
  for (int i = 0; i < in.inputs_size(); ++i) {
    const pb::ModelInferRequest::InferInputTensor& input = in.inputs(i);
    const TensorSignature* expected = signature.FindInput(input.name());
    if (expected == nullptr) {
      return InvalidArgumentError("unknown input '" + input.name() + "'");
    }
    const size_t index = expected - signature.inputs.data();
    const std::string context = "input '" + input.name() + "'";
    if (seen[index]) return InvalidArgumentError(context + " is given twice");
    seen[index] = true;
    WEFT_ASSIGN_OR_RETURN(DataType dtype,
                          DtypeForInput(input.datatype(), *expected));
    const std::vector<int64_t> dims(input.shape().begin(), input.shape().end());
    WEFT_ASSIGN_OR_RETURN(Shape shape, ShapeForInput(dims, *expected));
    if (raw) {
      WEFT_ASSIGN_OR_RETURN(
          out.inputs[index],
          TensorFromBytes(dtype, shape, in.raw_input_contents(i), context));
      continue;
    }
    // Contents may not claim more values than the message holds: a shape's
    // count is checked against them before anything is allocated.
    const pb::InferTensorContents& c = input.contents();
    const int64_t held = c.bool_contents_size() + c.int_contents_size() +
                         c.int64_contents_size() + c.uint_contents_size() +
                         c.uint64_contents_size() + c.fp32_contents_size() +
                         c.fp64_contents_size() + c.bytes_contents_size();
    if (shape.NumElements() > held) {
      return InvalidArgumentError(context + ": shape " + shape.ToString() +
                                  " is " + std::to_string(shape.NumElements()) +
                                  " values; its contents hold " +
                                  std::to_string(held));
    }
    WEFT_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Create(dtype, shape));
    WEFT_RETURN_IF_ERROR(FromContents(c, &tensor, context));
    out.inputs[index] = std::move(tensor);
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) {
      return InvalidArgumentError("missing input '" + signature.inputs[i].name +
                                  "'");
    }
  }
  for (const auto& output : in.outputs()) {
    if (signature.FindOutput(output.name()) == nullptr) {
      return InvalidArgumentError("unknown output '" + output.name() + "'");
    }
    for (const RequestedOutput& earlier : out.outputs) {
      if (earlier.name == output.name()) {
        return InvalidArgumentError("output '" + output.name() +
                                    "' is asked for twice");
      }
    }
    out.outputs.push_back({output.name(), true});
  }
  return out;
}

void FillResponse(const ServedModel& model, const std::string& id,
                  const std::vector<RequestedOutput>& sent,
                  const std::vector<Tensor>& outputs,
                  pb::ModelInferResponse* response) {
  response->set_model_name(model.name());
  response->set_model_version(std::to_string(model.version()));
  response->set_id(id);
  for (size_t i = 0; i < sent.size() && i < outputs.size(); ++i) {
    pb::ModelInferResponse::InferOutputTensor* out = response->add_outputs();
    out->set_name(sent[i].name);
    out->set_datatype(
        std::string(ProtocolDatatype(outputs[i].dtype()).value_or("")));
    for (int64_t dim : outputs[i].shape().dims()) out->add_shape(dim);
    AppendTensorBytes(outputs[i], response->add_raw_output_contents());
  }
}

class InferenceService final
    : public pb::GRPCInferenceService::CallbackService {
 public:
  InferenceService(const ServerOptions& options, ModelRegistry* registry,
                   Metrics* metrics, const std::atomic<bool>* ready)
      : options_(options),
        registry_(registry),
        metrics_(metrics),
        ready_(ready) {}

  grpc::ServerUnaryReactor* ServerLive(
      grpc::CallbackServerContext* context, const pb::ServerLiveRequest*,
      pb::ServerLiveResponse* response) override {
    response->set_live(true);
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerReady(
      grpc::CallbackServerContext* context, const pb::ServerReadyRequest*,
      pb::ServerReadyResponse* response) override {
    response->set_ready(ready_->load());
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelReady(
      grpc::CallbackServerContext* context,
      const pb::ModelReadyRequest* request,
      pb::ModelReadyResponse* response) override {
    if (!Authorized(context)) return Unauthorized(context);
    response->set_ready(
        registry_->Find(request->name(), request->version()).ok());
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerMetadata(
      grpc::CallbackServerContext* context, const pb::ServerMetadataRequest*,
      pb::ServerMetadataResponse* response) override {
    if (!Authorized(context)) return Unauthorized(context);
    response->set_name("weft");
    response->set_version(WEFT_SERVE_VERSION);
    for (const char* e :
         {"binary_tensor_data", "model_repository", "metrics"}) {
      response->add_extensions(e);
    }
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelMetadata(
      grpc::CallbackServerContext* context,
      const pb::ModelMetadataRequest* request,
      pb::ModelMetadataResponse* response) override {
    if (!Authorized(context)) return Unauthorized(context);
    auto model = registry_->Find(request->name(), request->version());
    if (!model.ok()) return Done(context, ToGrpc(model.status()));
    response->set_name((*model)->name());
    response->add_versions(std::to_string((*model)->version()));
    response->set_platform("weft");
    auto add = [](const TensorSignature& t, auto* out) {
      out->set_name(t.name);
      out->set_datatype(
          t.dtype ? std::string(ProtocolDatatype(*t.dtype).value_or("")) : "");
      if (t.shape) {
        for (int64_t dim : *t.shape) out->add_shape(dim);
      }
    };
    for (const auto& t : (*model)->signature().inputs)
      add(t, response->add_inputs());
    for (const auto& t : (*model)->signature().outputs)
      add(t, response->add_outputs());
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelInfer(
      grpc::CallbackServerContext* context,
      const pb::ModelInferRequest* request,
      pb::ModelInferResponse* response) override {
    if (!Authorized(context)) return Unauthorized(context);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    const std::string& name = request->model_name();
    auto fail = [&](const Status& status) {
      metrics_->RequestFailed(name, FailureReason(status));
      reactor->Finish(ToGrpc(status));
      return reactor;
    };
    auto model = registry_->Find(name, request->model_version());
    if (!model.ok()) return fail(model.status());
    StatusOr<InferRequest> parsed = FromProto(*request, (*model)->signature());
    if (!parsed.ok()) return fail(parsed.status());
    // A client deadline bounds the request as parameters.timeout would.
    const auto left = context->deadline() - std::chrono::system_clock::now();
    if (parsed->timeout_us == 0 && left < std::chrono::hours(24 * 365)) {
      parsed->timeout_us = std::max<int64_t>(
          1,
          std::chrono::duration_cast<std::chrono::microseconds>(left).count());
    }
    std::shared_ptr<ServedModel> served = *model;
    const std::string id = request->id();
    Status queued = served->Submit(
        std::move(*parsed),
        [served, id, reactor, response](
            const Status& status, const std::vector<Tensor>& outputs,
            const std::vector<RequestedOutput>& sent) {
          if (status.ok()) FillResponse(*served, id, sent, outputs, response);
          reactor->Finish(ToGrpc(status));
        });
    if (!queued.ok()) return fail(queued);
    return reactor;
  }

 private:
  static grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context,
                                        const grpc::Status& status) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }

  bool Authorized(grpc::CallbackServerContext* context) const {
    const auto& metadata = context->client_metadata();
    auto it = metadata.find("authorization");
    if (it == metadata.end()) {
      return BearerTokenAccepted(nullptr, options_.auth_token);
    }
    const std::string value(it->second.data(), it->second.size());
    return BearerTokenAccepted(&value, options_.auth_token);
  }

  grpc::ServerUnaryReactor* Unauthorized(grpc::CallbackServerContext* context) {
    metrics_->RequestFailed("", "unauthorized");
    return Done(context,
                grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                             "this server needs \"authorization: Bearer "
                             "<token>\" metadata"));
  }

  const ServerOptions& options_;
  ModelRegistry* const registry_;
  Metrics* const metrics_;
  const std::atomic<bool>* const ready_;
};

}  // namespace

class GrpcServer::Impl {
 public:
  Impl(const ServerOptions& options, ModelRegistry* registry, Metrics* metrics,
       const std::atomic<bool>* ready)
      : service_(options, registry, metrics, ready) {}

  Status Start(const ServerOptions& options) {
    const std::string address =
        (options.host.find(':') != std::string::npos ? "[" + options.host + "]"
                                                     : options.host) +
        ":" + std::to_string(options.grpc_port);
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(
        options.limits.max_body_bytes, std::numeric_limits<int>::max())));
    builder.SetMaxSendMessageSize(std::numeric_limits<int>::max());
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) {
      return FailedPreconditionError("cannot listen for gRPC on " + address);
    }
    return Status::OK();
  }

  void Shutdown(std::chrono::milliseconds wait) {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() + wait);
    server_->Wait();
    server_.reset();
  }

  int port() const { return port_; }

 private:
  InferenceService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(
    const ServerOptions& options, ModelRegistry* registry, Metrics* metrics,
    const std::atomic<bool>* ready) {
  auto impl = std::make_unique<Impl>(options, registry, metrics, ready);
  WEFT_RETURN_IF_ERROR(impl->Start(options));
  return std::unique_ptr<GrpcServer>(new GrpcServer(std::move(impl)));
}

GrpcServer::GrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrpcServer::~GrpcServer() { Shutdown(std::chrono::milliseconds(0)); }
int GrpcServer::port() const { return impl_->port(); }
void GrpcServer::Shutdown(std::chrono::milliseconds wait) {
  impl_->Shutdown(wait);
}

}  // namespace weft::serve
