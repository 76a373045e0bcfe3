// TuneServing (weft/serve.h): times a model's Runs per (intra-op threads,
// batch size) and picks the batching and thread split with the highest
// predicted throughput whose predicted p99 stays within the target.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "serve/model_signature.h"
#include "weft/model.h"
#include "weft/serve.h"
#include "weft/session.h"
#include "weft/threading.h"

namespace weft::serve {
namespace {

using Clock = std::chrono::steady_clock;

std::string Ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof(text),
                ms < 1 ? "%.3f ms" : (ms < 10 ? "%.2f ms" : "%.1f ms"), ms);
  return text;
}

std::string Rate(double rps) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f req/s", rps);
  return text;
}

// The median wall time of `runs` Runs after `warmup` untimed ones.
StatusOr<double> MedianRunMs(Session& session, const NamedTensors& feeds,
                             const std::vector<std::string>& fetches,
                             const ServingTuneOptions& options) {
  std::vector<double> times;
  std::vector<Tensor> outputs;
  for (int i = 0; i < options.warmup + options.runs; ++i) {
    const Clock::time_point start = Clock::now();
    WEFT_RETURN_IF_ERROR(session.Run(feeds, fetches, {}, &outputs));
    const double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (i >= options.warmup) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// How long the batcher lets a batch of `batch` rows gather: half a
// one-row Run (at light load a request waits that long at most for
// company; at saturation batches fill while the runners are busy).
double QueueDelayMs(int batch, double one_row_ms) {
  return batch > 1 ? one_row_ms / 2 : 0;
}

std::string Describe(const ServingCandidate& c) {
  return std::to_string(c.runners) + " runner" + (c.runners > 1 ? "s" : "") +
         " x " + std::to_string(c.intra) + " intra-op thread" +
         (c.intra > 1 ? "s" : "") + ", batches of " + std::to_string(c.batch);
}

std::string Explain(const std::vector<ServingCandidate>& candidates, int best,
                    double target_ms, double one_row_ms, bool batchable) {
  const ServingCandidate& b = candidates[static_cast<size_t>(best)];
  std::string why =
      Describe(b) + ": " + std::to_string(b.runners) + " x " +
      std::to_string(b.batch) + " rows / " + Ms(b.run_ms) +
      " a Run = " + Rate(b.throughput_rps) + ", p99 ~ 2 x " + Ms(b.run_ms) +
      (b.batch > 1
           ? " + " + Ms(QueueDelayMs(b.batch, one_row_ms)) + " queue delay"
           : "") +
      " = " + Ms(b.p99_ms) +
      (b.p99_ms <= target_ms ? " within the " : " (no setting is within the ") +
      Ms(target_ms) + " target" + (b.p99_ms <= target_ms ? "" : ")") + ".";
  // The runner-up within the target, and what a larger batch would cost.
  int second = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (static_cast<int>(i) == best || candidates[i].p99_ms > target_ms) {
      continue;
    }
    if (second < 0 ||
        candidates[i].throughput_rps >
            candidates[static_cast<size_t>(second)].throughput_rps) {
      second = static_cast<int>(i);
    }
  }
  if (second >= 0) {
    const ServingCandidate& s = candidates[static_cast<size_t>(second)];
    why += " Next: " + Describe(s) + ", " + Rate(s.throughput_rps) +
           " at p99 " + Ms(s.p99_ms) + ".";
  }
  for (const ServingCandidate& c : candidates) {
    if (c.runners == b.runners && c.intra == b.intra && c.batch > b.batch &&
        c.throughput_rps > b.throughput_rps) {
      why += " Batches of " + std::to_string(c.batch) + " would give " +
             Rate(c.throughput_rps) + " at p99 " + Ms(c.p99_ms) +
             ", past the target.";
      break;
    }
  }
  if (!batchable) {
    why +=
        " The model's inputs do not all have an open first dimension: "
        "requests run one by one.";
  }
  return why;
}

}  // namespace

StatusOr<ServingTuneResult> TuneServing(const std::string& model_path,
                                        const ServingTuneOptions& options) {
  if (!(options.latency_target_ms > 0)) {
    return InvalidArgumentError("the latency target must be above 0 ms");
  }
  if (options.runs < 1 || options.warmup < 0 || options.max_batch_size < 1) {
    return InvalidArgumentError(
        "runs and max_batch_size must be at least 1, warmup at least 0");
  }
  WEFT_ASSIGN_OR_RETURN(OnnxModel probe, LoadModel(model_path));
  WEFT_ASSIGN_OR_RETURN(ModelSignature signature, SignatureOf(probe));
  const bool batchable =
      signature.FirstDimensionOpen() && options.max_batch_size > 1;
  std::vector<int> batches = {1};
  while (batchable && batches.back() * 2 <= options.max_batch_size) {
    batches.push_back(batches.back() * 2);
  }
  std::vector<std::string> fetches;
  for (const TensorSignature& output : signature.outputs) {
    fetches.push_back(output.tensor);
  }
  const int cores = options.cores > 0 ? options.cores : AutoCpuBudget().threads;

  // run_ms[k - 1][i]: one Run of batches[i] rows on k intra-op threads.
  std::vector<std::vector<double>> run_ms(static_cast<size_t>(cores));
  for (int k = 1; k <= cores; ++k) {
    WEFT_ASSIGN_OR_RETURN(OnnxModel model, LoadModel(model_path));
    SessionOptions session_options = options.base;
    session_options.inter_op_parallelism_threads = 1;
    session_options.intra_op_parallelism_threads = k;
    // Pools of its own: a process-wide pool made at another count would
    // time another setting than the one named.
    session_options.use_per_session_threads = true;
    session_options.batch_invariant = batchable;  // As the server runs it.
    WEFT_ASSIGN_OR_RETURN(
        std::unique_ptr<Session> session,
        Session::Create(std::move(model.file.graph), session_options));
    for (int batch : batches) {
      std::optional<NamedTensors> feeds = ZeroFeeds(signature, batch);
      if (!feeds) {
        return InvalidArgumentError(
            model_path +
            ": an input's rank or dtype is unknown, so the tuner has no "
            "tensor to time the model with");
      }
      WEFT_ASSIGN_OR_RETURN(double ms,
                            MedianRunMs(*session, *feeds, fetches, options));
      run_ms[static_cast<size_t>(k - 1)].push_back(ms);
    }
  }

  ServingTuneResult result;
  const double one_row_ms = run_ms[0][0];
  for (int k = 1; k <= cores; ++k) {
    for (int runners = 1; runners * k <= cores; ++runners) {
      for (size_t i = 0; i < batches.size(); ++i) {
        ServingCandidate c;
        c.runners = runners;
        c.intra = k;
        c.batch = batches[i];
        c.run_ms = run_ms[static_cast<size_t>(k - 1)][i];
        c.throughput_rps = runners * c.batch * 1000.0 / c.run_ms;
        c.p99_ms = 2 * c.run_ms + QueueDelayMs(c.batch, one_row_ms);
        result.candidates.push_back(c);
      }
    }
  }
  // The most throughput within the target; the lowest p99 when none is.
  int best = -1;
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    const ServingCandidate& c = result.candidates[i];
    if (c.p99_ms > options.latency_target_ms) continue;
    if (best < 0 ||
        c.throughput_rps >
            result.candidates[static_cast<size_t>(best)].throughput_rps) {
      best = static_cast<int>(i);
    }
  }
  if (best < 0) {
    for (size_t i = 0; i < result.candidates.size(); ++i) {
      if (best < 0 || result.candidates[i].p99_ms <
                          result.candidates[static_cast<size_t>(best)].p99_ms) {
        best = static_cast<int>(i);
      }
    }
  }
  result.best = best;
  const ServingCandidate& chosen = result.candidates[static_cast<size_t>(best)];
  result.session = options.base;
  result.session.inter_op_parallelism_threads = chosen.runners;
  result.session.intra_op_parallelism_threads = chosen.intra;
  if (chosen.batch > 1) {
    result.batching.max_batch_size = chosen.batch;
    result.batching.preferred_batch_size = {chosen.batch};
    result.batching.max_queue_delay_us =
        static_cast<int64_t>(QueueDelayMs(chosen.batch, one_row_ms) * 1000);
  }
  result.explanation =
      Explain(result.candidates, best, options.latency_target_ms, one_row_ms,
              batchable);
  return result;
}

}  // namespace weft::serve
