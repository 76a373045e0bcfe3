// The REST routes of the Open Inference Protocol v2 and the server's own:
//
//   GET  /v2/health/live, /v2/health/ready      (no token needed)
//   GET  /v2                                    server metadata, extensions
//   GET  /v2/models/{name}[/versions/{v}]        model metadata
//   GET  /v2/models/{name}[/versions/{v}]/ready
//   POST /v2/models/{name}[/versions/{v}]/infer
//   POST /v2/repository/index, /v2/repository/models/{name}/load|unload
//   GET  /metrics                               Prometheus text
//
// Errors are {"error": "..."} with 400 (bad request), 401 (token), 404
// (unknown model, version or route), 405 (method), 503 (not ready, queue
// full, stopping), 504 (deadline), 500 (the Run failed).
#ifndef WEFT_SRC_SERVE_REST_API_H_
#define WEFT_SRC_SERVE_REST_API_H_

#include <atomic>
#include <string>

#include "serve/http_server.h"
#include "serve/metrics.h"
#include "serve/model_registry.h"
#include "weft/serve.h"

namespace weft::serve {

// The HTTP status of a failed request's Status.
int HttpStatusOf(const Status& status);

// Equal strings, in a time that depends only on their lengths.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

// Whether an Authorization value (HTTP header or gRPC metadata) lets a
// request in: anything when `token` is empty, else "Bearer <token>",
// compared in constant time. `value` null: the request sent none.
bool BearerTokenAccepted(const std::string* value, const std::string& token);

class RestApi {
 public:
  RestApi(const ServerOptions& options, ModelRegistry* registry,
          Metrics* metrics, const std::atomic<bool>* ready);

  // The HttpHandler: answers through `respond`, at once or (inference)
  // once the request has run.
  void Handle(const HttpRequest& request, Respond respond);

 private:
  void Infer(const HttpRequest& request, const std::string& model,
             const std::string& version, Respond respond);
  HttpResponse ModelMetadata(const std::string& model,
                             const std::string& version);
  HttpResponse ModelReady(const std::string& model, const std::string& version);
  HttpResponse Repository(const std::string& action, const std::string& model);
  HttpResponse ServerMetadata() const;
  HttpResponse MetricsText() const;
  bool Authorized(const HttpRequest& request) const;

  const ServerOptions& options_;
  ModelRegistry* const registry_;
  Metrics* const metrics_;
  const std::atomic<bool>* const ready_;
};

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_REST_API_H_
