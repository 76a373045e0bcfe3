#include "serve/served_model.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/infer_response.h"
#include "weft/model.h"
#include "weft/tensor_rows.h"
#include "weft/threading.h"

namespace weft::serve {
namespace {

double MicrosBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// Runs `session` once on zeros at each batch size of WarmedBatchSizes but
// 1 (the first warm-up's), so that no request waits for a shape's
// compilation; logs the sizes and the time, or a size whose Run failed.
void WarmBatchSizes(Session& session, const ModelSignature& signature,
                    const BatchingOptions& batching, const std::string& name,
                    const std::function<void(const std::string&)>& log) {
  const std::vector<std::string> fetches = signature.OutputTensors();
  const Clock::time_point start = Clock::now();
  std::string warmed;
  for (int rows : WarmedBatchSizes(batching)) {
    if (rows == 1) continue;
    std::optional<NamedTensors> feeds = ZeroFeeds(signature, rows);
    if (!feeds) return;
    std::vector<Tensor> outputs;
    if (Status s = session.Run(*feeds, fetches, {}, &outputs); !s.ok()) {
      log("weft serve: model '" + name + "': the warm-up Run of " +
          std::to_string(rows) + " rows failed (" + s.ToString() +
          "); serving it anyway");
      continue;
    }
    warmed += (warmed.empty() ? "" : ", ") + std::to_string(rows);
  }
  if (warmed.empty()) return;
  char took[32];
  std::snprintf(took, sizeof(took), "%.2f",
                MicrosBetween(start, Clock::now()) / 1e6);
  log("weft serve: model '" + name + "' warmed at batches of " + warmed +
      " rows too (" + took + " s)");
}

}  // namespace

void ApplyServingSpinWindow(SessionOptions* options) {
  if (!threading::SpinWindowsAreWeftsDefault()) return;
  if (options->inter_op_spin_us < 0) {
    options->inter_op_spin_us = kServingSpinUs;
  }
  if (options->intra_op_spin_us < 0) {
    options->intra_op_spin_us = kServingSpinUs;
  }
}

std::vector<int> WarmedBatchSizes(const BatchingOptions& batching) {
  std::vector<int> sizes;
  const auto add = [&](int rows) {
    if (rows >= 1 && rows <= batching.max_batch_size &&
        static_cast<int>(sizes.size()) < kWarmedBatchSizes &&
        std::find(sizes.begin(), sizes.end(), rows) == sizes.end()) {
      sizes.push_back(rows);
    }
  };
  for (int rows : batching.preferred_batch_size) add(rows);
  // Stops at the eighth: max_batch_size may be large.
  for (int rows = 1; rows <= batching.max_batch_size &&
                     static_cast<int>(sizes.size()) < kWarmedBatchSizes;
       ++rows) {
    add(rows);
  }
  return sizes;
}

StatusOr<std::unique_ptr<ServedModel>> ServedModel::Load(
    const std::string& name, int64_t version, const std::string& path,
    const SessionOptions& session_options, const BatchingOptions& batching,
    Metrics* metrics, const std::function<void(const std::string&)>& log) {
  WEFT_ASSIGN_OR_RETURN(OnnxModel model, LoadModel(path));
  StatusOr<ModelSignature> signature = SignatureOf(model);
  if (!signature.ok()) return signature.status().WithContext(path);
  if (signature->outputs.empty()) {
    return InvalidArgumentError(path + ": the model lists no outputs");
  }
  SessionOptions options = session_options;
  ApplyServingSpinWindow(&options);
  // The batcher's promise: a request's outputs are bitwise the same alone
  // or inside any batch.
  if (batching.max_batch_size > 0 && signature->FirstDimensionOpen()) {
    options.batch_invariant = true;
    if (!signature->batch_variance.empty()) {
      log("weft serve: model '" + name + "' is batched but not batch " +
          "invariant: " + signature->batch_variance +
          " (its metadata says batch_invariant: false; --max-batch-size 0 "
          "runs every request alone)");
    }
  }
  StatusOr<std::unique_ptr<Session>> session =
      Session::Create(std::move(model.file.graph), options);
  if (!session.ok()) return session.status().WithContext(path);

  if (std::optional<NamedTensors> feeds = ZeroFeeds(*signature, 1)) {
    std::vector<Tensor> outputs;
    if (Status s =
            (*session)->Run(*feeds, signature->OutputTensors(), {}, &outputs);
        s.ok()) {
      for (size_t i = 0; i < outputs.size(); ++i) {
        signature->outputs[i].dtype = outputs[i].dtype();
      }
    } else {
      log("weft serve: model '" + name +
          "': the warm-up Run on zeros failed (" + s.ToString() +
          "); serving it anyway");
    }
  }
  if (batching.max_batch_size > 0 && signature->OnlyFirstDimensionOpen()) {
    WarmBatchSizes(**session, *signature, batching, name, log);
  }
  for (const TensorSignature& output : signature->outputs) {
    if (!output.dtype || !ProtocolDatatype(*output.dtype)) {
      return InvalidArgumentError(
          path + ": output '" + output.name +
          "' has no dtype the inference protocol can carry (a weft JSON "
          "graph's outputs get theirs from a warm-up Run, which needs "
          "placeholders of known shape)");
    }
  }
  return std::unique_ptr<ServedModel>(
      new ServedModel(name, version, path, std::move(*signature),
                      std::move(*session), batching, metrics));
}

// As many batches in flight as the inter-op pool can run side by side:
// each runner thread mostly waits in Run while the pools compute.
int ServedModel::RunnerCount(const Session& session) {
  return std::max(1, session.inter_op_threads());
}

ServedModel::ServedModel(std::string name, int64_t version, std::string path,
                         ModelSignature signature,
                         std::unique_ptr<Session> session,
                         const BatchingOptions& batching, Metrics* metrics)
    : name_(std::move(name)),
      version_(version),
      path_(std::move(path)),
      signature_(std::move(signature)),
      session_(std::move(session)),
      batching_(batching),
      metrics_(metrics),
      queue_(batching, signature_.FirstDimensionOpen(), RunnerCount(*session_)),
      cancellation_(std::make_shared<RunCancellation>()) {
  const int runners = RunnerCount(*session_);
  runners_active_ = runners;
  for (int i = 0; i < runners; ++i) {
    runners_.emplace_back([this] { RunnerLoop(); });
  }
}

ServedModel::~ServedModel() { Stop(std::chrono::milliseconds(0)); }

Status ServedModel::Submit(InferRequest request, InferDone done) {
  auto pending = std::make_shared<PendingRequest>();
  pending->inputs = std::move(request.inputs);
  std::vector<RequestedOutput> sent = OutputsToSend(request, signature_);
  for (const RequestedOutput& output : sent) {
    pending->fetches.push_back(output.name);
  }
  // Rows count only where requests are stacked along the first dimension.
  pending->rows = queue_.batching() ? pending->inputs[0].shape().dim(0) : 1;
  for (size_t i = 1; queue_.batching() && i < pending->inputs.size(); ++i) {
    if (pending->inputs[i].shape().dim(0) != pending->rows) {
      return InvalidArgumentError(
          "input '" + signature_.inputs[i].name + "' has " +
          std::to_string(pending->inputs[i].shape().dim(0)) +
          " rows and input '" + signature_.inputs[0].name + "' " +
          std::to_string(pending->rows) +
          ": a batched model's inputs must agree on their first dimension");
    }
  }
  pending->priority_level = request.priority;
  pending->arrival = Clock::now();
  const int64_t timeout_us = request.timeout_us > 0
                                 ? request.timeout_us
                                 : batching_.default_timeout_us;
  if (timeout_us > 0) {
    pending->deadline =
        pending->arrival + std::chrono::microseconds(timeout_us);
  }
  const uint64_t sequence = next_sequence_++;
  pending->sequence = sequence;
  pending->done = [this, sequence, done = std::move(done), sent](
                      Status status, std::vector<Tensor> outputs) mutable {
    if (!status.ok()) metrics_->RequestFailed(name_, FailureReason(status));
    metrics_->InFlight(name_, -1);
    Release(sequence, [done = std::move(done), status = std::move(status),
                       outputs = std::move(outputs), sent = std::move(sent)] {
      done(status, outputs, sent);
    });
  };
  metrics_->InFlight(name_, +1);
  if (Status s = queue_.Push(pending); !s.ok()) {
    metrics_->InFlight(name_, -1);
    Release(sequence, [] {});
    return s;
  }
  return Status::OK();
}

void ServedModel::Release(uint64_t sequence, std::function<void()> answer) {
  if (!batching_.preserve_ordering) {
    answer();
    return;
  }
  std::vector<std::function<void()>> due;
  {
    std::lock_guard lock(order_mutex_);
    held_.emplace(sequence, std::move(answer));
    while (!held_.empty() && held_.begin()->first == next_to_release_) {
      due.push_back(std::move(held_.begin()->second));
      held_.erase(held_.begin());
      ++next_to_release_;
    }
  }
  for (auto& call : due) call();
}

void ServedModel::RunnerLoop() {
  for (;;) {
    Batch batch = queue_.NextBatch();
    if (batch.empty()) break;
    Execute(batch);
    queue_.Finished(batch);
  }
  --runners_active_;
}

StatusOr<std::vector<Tensor>> ServedModel::RunAlone(
    const PendingRequest& request) {
  NamedTensors feeds;
  for (size_t i = 0; i < signature_.inputs.size(); ++i) {
    feeds.emplace_back(signature_.inputs[i].tensor, request.inputs[i]);
  }
  std::vector<std::string> fetches;
  for (const std::string& name : request.fetches) {
    fetches.push_back(signature_.FindOutput(name)->tensor);
  }
  RunOptions options;
  options.cancellation = cancellation_;
  if (request.deadline) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        *request.deadline - Clock::now());
    options.timeout_ms = std::max<int64_t>(1, left.count());
  }
  std::vector<Tensor> outputs;
  RunMetadata metadata;
  WEFT_RETURN_IF_ERROR(
      session_->Run(options, feeds, fetches, {}, &outputs, &metadata));
  return outputs;
}

// NOLINTNEXTLINE(readability-function-size)
StatusOr<std::vector<std::vector<Tensor>>> ServedModel::RunStacked(
    const Batch& batch) {
  NamedTensors feeds;
  for (size_t i = 0; i < signature_.inputs.size(); ++i) {
    std::vector<const Tensor*> parts;
    for (const auto& request : batch) parts.push_back(&request->inputs[i]);
    WEFT_ASSIGN_OR_RETURN(Tensor joined, ConcatRows(parts));
    feeds.emplace_back(signature_.inputs[i].tensor, std::move(joined));
  }
  // Every output some request of the batch asked for, in signature order.
  std::vector<size_t> fetched;
  for (size_t o = 0; o < signature_.outputs.size(); ++o) {
    for (const auto& request : batch) {
      const auto& names = request->fetches;
      if (std::find(names.begin(), names.end(), signature_.outputs[o].name) !=
          names.end()) {
        fetched.push_back(o);
        break;
      }
    }
  }
  std::vector<std::string> fetches;
  for (size_t o : fetched) fetches.push_back(signature_.outputs[o].tensor);
  RunOptions options;
  options.cancellation = cancellation_;
  // The Run may last until the latest deadline of its requests; one whose
  // own deadline passed before it ended is answered with the deadline error.
  bool all_have_deadlines = true;
  Clock::time_point latest = Clock::time_point::min();
  for (const auto& request : batch) {
    all_have_deadlines &= request->deadline.has_value();
    if (request->deadline) latest = std::max(latest, *request->deadline);
  }
  if (all_have_deadlines) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(latest - Clock::now());
    options.timeout_ms = std::max<int64_t>(1, left.count());
  }
  std::vector<Tensor> outputs;
  RunMetadata metadata;
  WEFT_RETURN_IF_ERROR(
      session_->Run(options, feeds, fetches, {}, &outputs, &metadata));
  int64_t rows = 0;
  for (const auto& request : batch) rows += request->rows;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k].shape().rank() == 0 || outputs[k].shape().dim(0) != rows) {
      return FailedPreconditionError(
          "output '" + signature_.outputs[fetched[k]].name + "' has shape " +
          outputs[k].shape().ToString() + " for a batch of " +
          std::to_string(rows) + " rows");
    }
  }
  std::vector<std::vector<Tensor>> per_request;
  int64_t at = 0;
  for (const auto& request : batch) {
    std::vector<Tensor> mine;
    for (const std::string& name : request->fetches) {
      size_t k = 0;
      while (signature_.outputs[fetched[k]].name != name) ++k;
      mine.push_back(SliceRows(outputs[k], at, at + request->rows));
    }
    at += request->rows;
    per_request.push_back(std::move(mine));
  }
  return per_request;
}

void ServedModel::Execute(const Batch& batch) {
  const Clock::time_point start = Clock::now();
  int64_t rows = 0;
  for (const auto& request : batch) rows += request->rows;
  metrics_->BatchRan(name_, rows);
  std::vector<StatusOr<std::vector<Tensor>>> results;
  StatusOr<std::vector<std::vector<Tensor>>> stacked =
      batch.size() > 1 ? RunStacked(batch)
                       : StatusOr<std::vector<std::vector<Tensor>>>(
                             FailedPreconditionError("alone"));
  if (stacked.ok()) {
    for (auto& outputs : *stacked) results.emplace_back(std::move(outputs));
  } else {
    // A single request, or a model whose outputs do not keep its inputs'
    // rows (or a batch that failed): each request on its own, so one bad
    // request cannot fail the others.
    for (const auto& request : batch) results.push_back(RunAlone(*request));
  }
  const Clock::time_point end = Clock::now();
  const double compute_us = MicrosBetween(start, end);
  for (size_t i = 0; i < batch.size(); ++i) {
    PendingRequest& request = *batch[i];
    if (results[i].ok() && request.deadline && *request.deadline < end) {
      request.done(
          DeadlineExceededError("the request's timeout passed while it ran"),
          {});
    } else if (results[i].ok()) {
      metrics_->RequestSucceeded(name_, MicrosBetween(request.arrival, start),
                                 compute_us);
      request.done(Status::OK(), std::move(*results[i]));
    } else {
      request.done(results[i].status(), {});
    }
  }
}

void ServedModel::Stop(std::chrono::milliseconds drain) {
  std::lock_guard stop_lock(stop_mutex_);
  if (stopped_) return;
  stopped_ = true;
  queue_.Close();
  const Clock::time_point until = Clock::now() + drain;
  while (runners_active_ > 0 && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (const auto& request : queue_.TakeAll()) {
    request->done(
        FailedPreconditionError("the server stopped before the request ran"),
        {});
  }
  cancellation_->Cancel();
  for (std::thread& runner : runners_) runner.join();
  runners_.clear();
}

}  // namespace weft::serve
