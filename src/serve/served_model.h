// One model being served: its session, its request queue and batcher, and
// the threads that take batches from the queue and run them. Those threads
// call Session::Run and wait; the kernels run on the process's pools under
// its one core budget, so requests of every model share the same cores.
// Network threads only call Submit, which never runs a kernel.
#ifndef WEFT_SRC_SERVE_SERVED_MODEL_H_
#define WEFT_SRC_SERVE_SERVED_MODEL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/infer_request.h"
#include "serve/metrics.h"
#include "serve/model_signature.h"
#include "serve/request_queue.h"
#include "weft/serve.h"
#include "weft/session.h"

namespace weft::serve {

// The spin window of a served model's pools where neither its options nor
// the process (Set*SpinUs, WEFT_SPIN_US, KMP_BLOCKTIME) set one. A server's
// Runs come a network round trip apart (0.5-0.6 ms on loopback): with
// weft's 50 us the workers park in every gap, and the next Run pays the
// wake-ups and runs on CPUs the host let go idle. 1 ms spans the gap:
// measured at concurrency 1, p50 16-21% lower on MobileNetV2 and 18% on the
// encoder, at the same CPU per request (docs/BENCHMARKS.md). An idle
// server spins 1 ms after its last request, then parks.
inline constexpr int kServingSpinUs = 1000;
// Sets kServingSpinUs on the spin fields `options` leaves at -1, unless
// the process sets a window.
void ApplyServingSpinWindow(SessionOptions* options);

// The batch sizes (rows) a batching model is warmed at before it reports
// ready: its preferred sizes, then 1, 2, 3, ... up to max_batch_size, at
// most kWarmedBatchSizes of them, each once. A session compiles its graph
// again for each new feed shape (ResNet-18: 0.38-0.54 s a shape on an AMD
// EPYC Zen 5), up to eight shapes (later ones run the general graph), and
// under load the batcher forms the sizes one by one: served unwarmed,
// ResNet-18 with batches of up to 8 answered its first 10 s at 88-122
// requests a second with p99 0.5-0.9 s, then 137 at 0.08 s.
inline constexpr int kWarmedBatchSizes = 8;
std::vector<int> WarmedBatchSizes(const BatchingOptions& batching);

// Called once per submitted request, from a runner thread: the outputs in
// the order `sent` lists them, or the error.
using InferDone = std::function<void(Status status, std::vector<Tensor> outputs,
                                     std::vector<RequestedOutput> sent)>;

class ServedModel {
 public:
  // Loads `path`, compiles it with `session_options`, runs it once on zeros
  // (the warm-up; a model whose warm-up fails is still served and the
  // reason logged through `log`), and once more at each other batch size of
  // WarmedBatchSizes where it batches and its inputs leave only the first
  // dimension open (logged with the time it took), and starts its runner
  // threads.
  static StatusOr<std::unique_ptr<ServedModel>> Load(
      const std::string& name, int64_t version, const std::string& path,
      const SessionOptions& session_options, const BatchingOptions& batching,
      Metrics* metrics, const std::function<void(const std::string&)>& log);

  ~ServedModel();  // Stop(0) when still running.

  const std::string& name() const { return name_; }
  int64_t version() const { return version_; }
  const std::string& path() const { return path_; }
  const ModelSignature& signature() const { return signature_; }
  const BatchingOptions& batching_options() const { return batching_; }
  bool batching() const { return queue_.batching(); }
  const Session& session() const { return *session_; }

  // Queues the request. Fails at once (and never calls `done`) when the
  // queue is full (ResourceExhausted), the request does not fit the batch
  // limits (InvalidArgument) or the model is stopping (FailedPrecondition).
  Status Submit(InferRequest request, InferDone done);

  // Refuses new requests, lets the queued and running ones finish within
  // `drain`, answers what is still queued after it with Unavailable-style
  // errors and cancels Runs still going, then joins the runner threads.
  void Stop(std::chrono::milliseconds drain);

 private:
  ServedModel(std::string name, int64_t version, std::string path,
              ModelSignature signature, std::unique_ptr<Session> session,
              const BatchingOptions& batching, Metrics* metrics);

  static int RunnerCount(const Session& session);
  void RunnerLoop();
  void Execute(const Batch& batch);
  // Runs the batch's requests stacked as one Run: their outputs, each
  // request's rows cut back out, or the error of the Run.
  StatusOr<std::vector<std::vector<Tensor>>> RunStacked(const Batch& batch);
  StatusOr<std::vector<Tensor>> RunAlone(const PendingRequest& request);
  // preserve_ordering: calls `answer` once every request that arrived
  // before `sequence` has been answered.
  void Release(uint64_t sequence, std::function<void()> answer);

  const std::string name_;
  const int64_t version_;
  const std::string path_;
  ModelSignature signature_;
  std::unique_ptr<Session> session_;
  const BatchingOptions batching_;
  Metrics* const metrics_;
  RequestQueue queue_;
  std::shared_ptr<RunCancellation> cancellation_;

  std::atomic<uint64_t> next_sequence_{0};
  std::mutex order_mutex_;
  uint64_t next_to_release_ = 0;
  std::map<uint64_t, std::function<void()>> held_;

  std::mutex stop_mutex_;
  bool stopped_ = false;
  std::vector<std::thread> runners_;
  std::atomic<int> runners_active_{0};
};

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_SERVED_MODEL_H_
