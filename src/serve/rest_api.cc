#include "serve/rest_api.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "serve/infer_request.h"
#include "serve/infer_response.h"
#include "weft/machine.h"
#include "weft/threading.h"

namespace weft::serve {
namespace {

using Json = nlohmann::json;

HttpResponse JsonResponse(int status, const Json& body) {
  HttpResponse response;
  response.status = status;
  response.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return response;
}

HttpResponse Error(int status, const std::string& message) {
  HttpResponse response;
  response.status = status;
  response.body = ErrorBody(message);
  return response;
}

HttpResponse ErrorOf(const Status& status) {
  return Error(HttpStatusOf(status), status.message());
}

// "/v2/models/m/versions/2/infer?x" -> {"v2", "models", "m", ...}.
std::vector<std::string> PathParts(const std::string& target) {
  const std::string path = target.substr(0, target.find('?'));
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= path.size()) {
    const size_t slash = path.find('/', at);
    const std::string part = path.substr(
        at, slash == std::string::npos ? std::string::npos : slash - at);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  return parts;
}

Json TensorMetadata(const TensorSignature& tensor) {
  Json shape = Json::array();
  if (tensor.shape) {
    for (int64_t dim : *tensor.shape) shape.push_back(dim);
  }
  return {
      {"name", tensor.name},
      {"datatype",
       tensor.dtype ? std::string(ProtocolDatatype(*tensor.dtype).value_or(""))
                    : std::string()},
      {"shape", shape}};
}

// A model route: /v2/models/{name}[/versions/{v}][/{action}].
struct ModelRoute {
  std::string name, version, action;
};
std::optional<ModelRoute> ParseModelRoute(const std::vector<std::string>& p) {
  if (p.size() < 3 || p[0] != "v2" || p[1] != "models") return std::nullopt;
  ModelRoute route{p[2], "", ""};
  size_t next = 3;
  if (p.size() >= 5 && p[3] == "versions") {
    route.version = p[4];
    next = 5;
  }
  if (p.size() == next + 1) {
    route.action = p[next];
  } else if (p.size() != next) {
    return std::nullopt;
  }
  if (!route.action.empty() && route.action != "ready" &&
      route.action != "infer") {
    return std::nullopt;
  }
  return route;
}

}  // namespace

int HttpStatusOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kResourceExhausted:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kCancelled:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

RestApi::RestApi(const ServerOptions& options, ModelRegistry* registry,
                 Metrics* metrics, const std::atomic<bool>* ready)
    : options_(options),
      registry_(registry),
      metrics_(metrics),
      ready_(ready) {}

bool BearerTokenAccepted(const std::string* value, const std::string& token) {
  if (token.empty()) return true;
  const std::string prefix = "Bearer ";
  if (value == nullptr || value->compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  return ConstantTimeEquals(value->substr(prefix.size()), token);
}

bool RestApi::Authorized(const HttpRequest& request) const {
  return BearerTokenAccepted(request.Header("authorization"),
                             options_.auth_token);
}

// NOLINTNEXTLINE(readability-function-size)
void RestApi::Handle(const HttpRequest& request, Respond respond) {
  const std::vector<std::string> parts = PathParts(request.target);
  auto answer = [&respond](HttpResponse response) {
    respond([response = std::move(response)] { return response; });
  };
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";
  if (parts.size() == 3 && parts[0] == "v2" && parts[1] == "health") {
    if (!get) return answer(Error(405, "use GET"));
    if (parts[2] == "live") return answer(JsonResponse(200, {{"live", true}}));
    if (parts[2] == "ready") {
      const bool ready = ready_->load();
      return answer(JsonResponse(ready ? 200 : 503, {{"ready", ready}}));
    }
    return answer(Error(404, "no route " + request.target));
  }
  if (!Authorized(request)) {
    metrics_->RequestFailed("", "unauthorized");
    HttpResponse response =
        Error(401, "this server needs \"Authorization: Bearer <token>\"");
    response.headers.emplace_back("WWW-Authenticate", "Bearer");
    return answer(std::move(response));
  }
  if (parts.size() == 1 && parts[0] == "metrics") {
    if (!get) return answer(Error(405, "use GET"));
    return answer(MetricsText());
  }
  if (parts.size() == 1 && parts[0] == "v2") {
    if (!get) return answer(Error(405, "use GET"));
    return answer(ServerMetadata());
  }
  if (parts.size() >= 3 && parts[0] == "v2" && parts[1] == "repository") {
    if (!post) return answer(Error(405, "use POST"));
    if (parts.size() == 3 && parts[2] == "index") {
      return answer(Repository("index", ""));
    }
    if (parts.size() == 5 && parts[2] == "models" &&
        (parts[4] == "load" || parts[4] == "unload")) {
      return answer(Repository(parts[4], parts[3]));
    }
    return answer(Error(404, "no route " + request.target));
  }
  const std::optional<ModelRoute> route = ParseModelRoute(parts);
  if (!route) return answer(Error(404, "no route " + request.target));
  if (route->action == "infer") {
    if (!post) return answer(Error(405, "use POST to infer"));
    return Infer(request, route->name, route->version, std::move(respond));
  }
  if (!get) return answer(Error(405, "use GET"));
  if (route->action == "ready") {
    return answer(ModelReady(route->name, route->version));
  }
  return answer(ModelMetadata(route->name, route->version));
}

void RestApi::Infer(const HttpRequest& request, const std::string& model_name,
                    const std::string& version, Respond respond) {
  auto fail = [this, &respond, &model_name](const Status& status) {
    metrics_->RequestFailed(model_name, FailureReason(status));
    HttpResponse response = ErrorOf(status);
    respond([response = std::move(response)] { return response; });
  };
  StatusOr<std::shared_ptr<ServedModel>> model =
      registry_->Find(model_name, version);
  if (!model.ok()) return fail(model.status());
  std::optional<int64_t> header_length;
  if (const std::string* length =
          request.Header("inference-header-content-length")) {
    char* end = nullptr;
    const long long value = std::strtoll(length->c_str(), &end, 10);
    if (length->empty() || end == nullptr || *end != '\0' || value < 0) {
      return fail(InvalidArgumentError("Inference-Header-Content-Length '" +
                                       *length +
                                       "' is not a non-negative integer"));
    }
    header_length = value;
  }
  StatusOr<InferRequest> parsed =
      ParseInferRequest(request.body, header_length, (*model)->signature(),
                        options_.limits.max_json_depth);
  if (!parsed.ok()) return fail(parsed.status());
  // What the response echoes; the tensors go to the queue.
  InferRequest echo;
  echo.id = parsed->id;
  echo.parameters_json = parsed->parameters_json;
  std::shared_ptr<ServedModel> served = *model;
  Status queued = served->Submit(
      std::move(*parsed), [served, echo = std::move(echo), respond](
                              Status status, std::vector<Tensor> outputs,
                              std::vector<RequestedOutput> sent) {
        respond([served, echo, status = std::move(status),
                 outputs = std::move(outputs), sent = std::move(sent)] {
          if (!status.ok()) return ErrorOf(status);
          EncodedResponse encoded = EncodeInferResponse(
              served->name(), std::to_string(served->version()), echo, sent,
              outputs);
          HttpResponse response;
          response.body = std::move(encoded.body);
          if (encoded.json_length) {
            response.content_type = "application/octet-stream";
            response.headers.emplace_back("Inference-Header-Content-Length",
                                          std::to_string(*encoded.json_length));
          }
          return response;
        });
      });
  if (!queued.ok()) fail(queued);
}

HttpResponse RestApi::ModelMetadata(const std::string& name,
                                    const std::string& version) {
  StatusOr<std::shared_ptr<ServedModel>> model = registry_->Find(name, version);
  if (!model.ok()) return ErrorOf(model.status());
  const ServedModel& m = **model;
  Json inputs = Json::array(), outputs = Json::array();
  for (const TensorSignature& t : m.signature().inputs) {
    inputs.push_back(TensorMetadata(t));
  }
  for (const TensorSignature& t : m.signature().outputs) {
    outputs.push_back(TensorMetadata(t));
  }
  // Unbatched, every request runs alone: invariant whatever the model.
  const bool batch_invariant =
      !m.batching() || m.signature().batch_variance.empty();
  Json parameters = {{"max_batch_size",
                      m.batching() ? m.batching_options().max_batch_size : 0},
                     {"batch_invariant", batch_invariant},
                     {"inter_op_threads", m.session().inter_op_threads()},
                     {"intra_op_threads", m.session().intra_op_threads()}};
  if (!batch_invariant) {
    parameters["batch_variance"] = m.signature().batch_variance;
  }
  return JsonResponse(200, {{"name", m.name()},
                            {"versions", {std::to_string(m.version())}},
                            {"platform", "weft"},
                            {"inputs", inputs},
                            {"outputs", outputs},
                            {"parameters", parameters}});
}

HttpResponse RestApi::ModelReady(const std::string& name,
                                 const std::string& version) {
  StatusOr<std::shared_ptr<ServedModel>> model = registry_->Find(name, version);
  if (!model.ok()) return ErrorOf(model.status());
  return JsonResponse(200, {{"name", name}, {"ready", true}});
}

HttpResponse RestApi::Repository(const std::string& action,
                                 const std::string& model) {
  if (action == "index") {
    Json index = Json::array();
    for (const RepositoryEntry& entry : registry_->Index()) {
      Json e = {{"name", entry.name}, {"state", entry.state}};
      if (entry.version) e["version"] = std::to_string(*entry.version);
      if (!entry.reason.empty()) e["reason"] = entry.reason;
      index.push_back(std::move(e));
    }
    return JsonResponse(200, index);
  }
  const Status status =
      action == "load" ? registry_->Load(model) : registry_->Unload(model);
  if (!status.ok()) return ErrorOf(status);
  return JsonResponse(200, Json::object());
}

HttpResponse RestApi::ServerMetadata() const {
  return JsonResponse(
      200,
      {{"name", "weft"},
       {"version", WEFT_SERVE_VERSION},
       {"extensions", {"binary_tensor_data", "model_repository", "metrics"}}});
}

HttpResponse RestApi::MetricsText() const {
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4";
  response.body =
      metrics_->Render(AutoCpuBudget().threads, KernelsComputingNow(),
                       threading::GetInterOpParallelismThreads(),
                       threading::GetIntraOpParallelismThreads());
  return response;
}

}  // namespace weft::serve
