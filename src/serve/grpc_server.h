// The gRPC front end: inference.GRPCInferenceService (grpc_inference.proto)
// on gRPC's callback API. An inference call is parsed into the same
// InferRequest as over HTTP, queued on the model, and finished from the
// thread that ran it; no gRPC thread waits for a Run, and none runs a
// kernel.
#ifndef WEFT_SRC_SERVE_GRPC_SERVER_H_
#define WEFT_SRC_SERVE_GRPC_SERVER_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "serve/metrics.h"
#include "serve/model_registry.h"
#include "weft/serve.h"
#include "weft/status.h"

namespace weft::serve {

class GrpcServer {
 public:
  // Listens on host:port (0: a free port). Fails naming the address.
  static StatusOr<std::unique_ptr<GrpcServer>> Start(
      const ServerOptions& options, ModelRegistry* registry, Metrics* metrics,
      const std::atomic<bool>* ready);
  ~GrpcServer();

  int port() const;
  // Refuses new calls and waits up to `wait` for those in flight.
  void Shutdown(std::chrono::milliseconds wait);

  class Impl;

 private:
  explicit GrpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_GRPC_SERVER_H_
