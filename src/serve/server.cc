// weft::serve::Server: the registry of models, the REST routes and the HTTP
// front end, put together and taken apart in the right order.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <utility>

#include "serve/grpc_server.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "serve/model_registry.h"
#include "serve/rest_api.h"
#include "weft/serve.h"

namespace weft::serve {
namespace {

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string AccessLine(AccessLog format, const HttpRequest& request, int status,
                       size_t bytes) {
  if (format == AccessLog::kJson) {
    return nlohmann::json{
        {"time", UtcNow()},         {"peer", request.peer},
        {"method", request.method}, {"target", request.target},
        {"status", status},         {"bytes", bytes}}
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return UtcNow() + " " + request.peer + " \"" + request.method + " " +
         request.target + "\" " + std::to_string(status) + " " +
         std::to_string(bytes);
}

}  // namespace

class Server::Impl {
 public:
  explicit Impl(ServerOptions options)
      : options_(std::move(options)),
        registry_(options_, &metrics_),
        api_(options_, &registry_, &metrics_, &ready_) {
    if (!options_.log) {
      options_.log = [](const std::string& line) {
        std::fprintf(stderr, "%s\n", line.c_str());
      };
    }
  }

  Status Start() {
    WEFT_RETURN_IF_ERROR(registry_.LoadAll());
    HttpObserver observer;
    if (options_.access_log != AccessLog::kNone) {
      observer = [this](const HttpRequest& request, int status, size_t bytes) {
        options_.log(AccessLine(options_.access_log, request, status, bytes));
      };
    }
    WEFT_ASSIGN_OR_RETURN(
        http_, HttpServer::Start(
                   options_.host, options_.http_port, options_.limits,
                   options_.network_threads,
                   [this](const HttpRequest& request, Respond respond) {
                     api_.Handle(request, std::move(respond));
                   },
                   std::move(observer)));
    if (options_.grpc_port >= 0) {
      WEFT_ASSIGN_OR_RETURN(
          grpc_, GrpcServer::Start(options_, &registry_, &metrics_, &ready_));
    }
    ready_ = true;
    return Status::OK();
  }

  void Shutdown(std::chrono::milliseconds drain) {
    if (stopped_.exchange(true)) return;
    ready_ = false;
    if (http_) http_->StopAccepting();
    // Every accepted request is answered (or refused) before the network
    // threads stop, so each gets its response written.
    registry_.StopAll(drain);
    if (grpc_) grpc_->Shutdown(std::chrono::milliseconds(1000));
    if (http_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      http_->Stop();
    }
  }

  int http_port() const { return http_ ? http_->port() : 0; }
  int grpc_port() const { return grpc_ ? grpc_->port() : 0; }

  std::vector<ServedModelInfo> models() const {
    std::vector<ServedModelInfo> infos;
    for (const auto& model : registry_.All()) {
      infos.push_back(
          {model->name(), model->version(), model->path(), model->batching()});
    }
    return infos;
  }

 private:
  ServerOptions options_;
  Metrics metrics_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopped_{false};
  ModelRegistry registry_;
  RestApi api_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<GrpcServer> grpc_;
};

StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  WEFT_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() { impl_->Shutdown(std::chrono::milliseconds(0)); }
int Server::http_port() const { return impl_->http_port(); }
int Server::grpc_port() const { return impl_->grpc_port(); }
std::vector<ServedModelInfo> Server::models() const { return impl_->models(); }
void Server::Shutdown(std::chrono::milliseconds drain) {
  impl_->Shutdown(drain);
}

}  // namespace weft::serve
