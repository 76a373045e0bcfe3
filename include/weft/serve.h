// weft serve: models behind the Open Inference Protocol v2 (KServe v2, as
// Triton, KServe and Seldon speak it) over HTTP, with Triton's dynamic
// batching, every request on the process's one set of pools and core budget.
// docs/serving.md is the user's guide.
//
//   weft::serve::ServerOptions options;
//   options.models.push_back({.name = "resnet", .path = "resnet18.onnx"});
//   options.http_port = 0;  // Any free port.
//   auto server = weft::serve::Server::Start(std::move(options));
//   if (!server.ok()) ...
//   (*server)->http_port();  // Where it listens, on 127.0.0.1.
//   (*server)->Shutdown(std::chrono::seconds(30));
//
// Thread-safety: every member of Server may be called from any thread.
#ifndef WEFT_SERVE_H_
#define WEFT_SERVE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/options.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::serve {

// Triton's dynamic_batching block (config.pbtxt), per model.
struct BatchingOptions {
  // Most rows (first-dimension entries) one Run takes. 0: no batching;
  // each request runs alone.
  int max_batch_size = 0;
  // Batch sizes a batch is formed at as soon as the queue holds them,
  // without waiting for max_queue_delay_us.
  std::vector<int> preferred_batch_size;
  // How long the oldest queued request may wait for others to join it.
  int64_t max_queue_delay_us = 0;
  // Requests queued at most; one more is refused at once
  // (503, ResourceExhausted). Must be >= 1.
  int max_queue_size = 1024;
  // Responses leave in the order the requests arrived.
  bool preserve_ordering = false;
  // Queues by priority (1 the highest); 0 or 1: a single queue.
  int priority_levels = 0;
  // The level of a request that names none; 0: the lowest.
  int default_priority_level = 0;
  // A request's deadline when it gives no parameters.timeout; 0: none.
  int64_t default_timeout_us = 0;
};

// One model to serve.
struct ModelSpec {
  std::string name;  // Empty: the file's stem.
  std::string path;  // A .onnx model or a weft JSON graph.
  int64_t version = 1;
  // Unset fields take ServerOptions::batching and ::session.
  std::optional<BatchingOptions> batching;
  std::optional<SessionOptions> session;
};

// Bounds on what a client may send (docs/serving.md, "Limits").
struct RequestLimits {
  int64_t max_body_bytes = int64_t{64} << 20;  // 413 beyond.
  int64_t max_header_bytes = 16 << 10;         // 431 beyond.
  int max_json_depth = 64;                     // 400 beyond.
  // A request must arrive whole within this, counted from when the
  // connection opened or its previous response was sent: a client sending
  // one byte a second is cut off, and a kept-alive connection idle this
  // long is closed. No thread waits on a connection meanwhile.
  int64_t read_timeout_ms = 10'000;
  int max_connections = 1024;  // More are closed at once.
};

enum class AccessLog { kNone, kText, kJson };

struct ServerOptions {
  // Loopback unless the user names another address.
  std::string host = "127.0.0.1";
  int http_port = 8000;  // 0: a free port (Server::http_port says which).
  // gRPC (inference.GRPCInferenceService); 0: a free port; -1: none.
  int grpc_port = 8001;
  std::vector<ModelSpec> models;
  // Triton's layout: DIR/<name>/<version>/model.onnx (or model.json), an
  // optional DIR/<name>/config.json; the highest version is served.
  std::string model_repository;
  SessionOptions session;    // Defaults for every model.
  BatchingOptions batching;  // Defaults for every model.
  RequestLimits limits;
  // Non-empty: every route but /v2/health/* requires
  // "Authorization: Bearer <auth_token>" (401 otherwise).
  std::string auth_token;
  // Threads that accept, parse and serialise; they never run a kernel.
  int network_threads = 1;
  AccessLog access_log = AccessLog::kNone;
  // Receives each access-log line and each model's ready line; stderr when
  // unset.
  std::function<void(const std::string&)> log;
};

// What a served model is, for the ready lines.
struct ServedModelInfo {
  std::string name;
  int64_t version = 0;
  std::string path;
  bool batching = false;  // Requests may be batched.
};

class Server {
 public:
  // Loads and compiles every model, warms each with one Run, then listens.
  // Fails (naming the model, the file or the address) before listening when
  // any of that fails.
  static StatusOr<std::unique_ptr<Server>> Start(ServerOptions options);

  ~Server();  // Shutdown(0) when still running.

  int http_port() const;
  int grpc_port() const;  // 0 when gRPC is off.
  std::vector<ServedModelInfo> models() const;

  // Stops accepting connections, lets requests already accepted finish
  // within `drain` (those still queued after it get 503), then stops.
  void Shutdown(std::chrono::milliseconds drain);

 private:
  class Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// --- Tuning a model for serving (`weft serve --tune`, `weft tune --serving`)
//
// Measures the model (zeros of the inputs' shapes) at each split of the
// core budget between `runners` (Runs at once: the server's inter-op
// count) and `intra` (each Run's intra-op threads), and at each batch size:
// the runners run at once on one session, as the server runs them, so the
// throughput is measured, what concurrent Runs cost each other included.
// The splits are every power-of-two intra count with as many runners as
// fill the cores, one Run on all of them, and the server's default (as
// many runners as cores, each free to use every core under the one
// budget). The (split, batch) pairs are timed in rounds, taking turns, each
// one's median across the rounds kept. A request waits at most for the
// batch being computed and its own: p99 ~ 2 run_ms. Of the settings whose
// p99 is within the target, whose lone request stays within 1.10x + 1 ms
// of the quickest split's, and whose throughput is within 10% of the most
// (one figure on a noisy host), the choice is the server's default split
// first (it loses least when other work takes cores, which a tuning alone
// cannot see), then the smallest batch, then the lowest p99; the lowest p99
// when no setting is within the target. Batches get no queue delay: a free
// runner takes what has queued, so they form under load only and a lone
// request never waits for company.
struct ServingTuneOptions {
  double latency_target_ms = 100;
  // Largest batch timed (powers of two up to it), where the model's inputs
  // all have an open first dimension; 1 otherwise.
  int max_batch_size = 16;
  int runs = 3;    // Timed Runs of each runner per (split, batch) and round.
  int rounds = 3;  // Rounds over every (split, batch), in turns.
  int warmup = 1;  // Untimed Runs of each runner before the first round.
  // The core budget to split (0: this machine's auto thread count).
  int cores = 0;
  SessionOptions base;  // Everything but the thread counts.
  // One typical request's inputs, by the graph's input tensor names; a
  // batch of b requests stacks it b times along the first dimension.
  // Inputs not given are zeros of their shapes, open dimensions 1: give a
  // request where an input has open dimensions past the first (a
  // transformer's sequence), or the tuner times a request of length 1.
  NamedTensors request;
};

struct ServingCandidate {
  int runners = 1;  // Runs at once: the inter-op thread count.
  int intra = 1;
  int batch = 1;  // Requests per batch (of the tuner's request).
  // Measured, with `runners` Runs of `batch` requests at once: the median
  // Run's wall time, and requests a second.
  double run_ms = 0;
  double throughput_rps = 0;
  double p99_ms = 0;  // Predicted.
  // Predicted: a request that arrives alone, run as a batch of one at this
  // split's intra-op count (the server's default split gives it every
  // core): for batch 1 the quickest of the split's batch-1 Runs; for
  // larger batches the quickest batch-1 Run alone on the batch-invariant
  // session the batching server runs it on.
  double alone_ms = 0;
};

struct ServingTuneResult {
  std::vector<ServingCandidate> candidates;
  int best = 0;              // Index into candidates.
  BatchingOptions batching;  // For the best (max_batch_size 0: none).
  SessionOptions session;    // base with the best thread counts.
  std::string explanation;   // The choice, in numbers.
};

StatusOr<ServingTuneResult> TuneServing(const std::string& model_path,
                                        const ServingTuneOptions& options);

}  // namespace weft::serve

#endif  // WEFT_SERVE_H_
