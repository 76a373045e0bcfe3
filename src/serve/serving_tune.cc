// TuneServing (weft/serve.h): measures a model's throughput per (split of
// the cores between runners and intra-op threads, batch size), with the
// runners' Runs at once as the server runs them, and picks the batching
// and split with the highest throughput whose predicted p99 stays within
// the target.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <latch>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "serve/model_signature.h"
#include "weft/model.h"
#include "weft/serve.h"
#include "weft/session.h"
#include "weft/tensor_rows.h"
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

// A split of the cores between Runs at once (the server's runner threads,
// its inter-op count) and the intra-op threads each Run may use.
struct Split {
  int runners = 1;
  int intra = 1;
};

// The splits timed on `cores`: every power-of-two intra-op count with as
// many runners as fill the cores, all the cores for one Run, and the
// server's own split without flags (as many runners as cores, each free
// to use every core, the one core budget keeping the threads computing to
// the cores), which must stay a candidate so that tuning never loses to
// the defaults.
std::vector<Split> SplitsToTime(int cores) {
  std::vector<Split> splits;
  for (int k = 1; k < cores; k *= 2) splits.push_back({cores / k, k});
  splits.push_back({1, cores});
  if (cores > 1) splits.push_back({cores, cores});
  return splits;
}

// One timing of a (split, batch): `runners` threads started together, each
// running the batch `runs` times after `warmup` untimed Runs.
struct Timing {
  double wall_ms = 0;          // From the start to the last Run's end.
  std::vector<double> run_ms;  // Every timed Run's wall time.
};

StatusOr<Timing> TimeRunners(Session& session, const NamedTensors& feeds,
                             const std::vector<std::string>& fetches,
                             int runners, int runs, int warmup) {
  std::vector<Status> statuses(static_cast<size_t>(runners));
  std::vector<std::vector<double>> times(static_cast<size_t>(runners));
  std::latch warmed(runners + 1);
  std::latch start(1);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(runners));
  for (int r = 0; r < runners; ++r) {
    threads.emplace_back([&, r] {
      const auto slot = static_cast<size_t>(r);
      std::vector<Tensor> outputs;
      for (int i = 0; i < warmup && statuses[slot].ok(); ++i) {
        statuses[slot] = session.Run(feeds, fetches, {}, &outputs);
      }
      warmed.count_down();
      start.wait();
      for (int i = 0; i < runs && statuses[slot].ok(); ++i) {
        const Clock::time_point begin = Clock::now();
        statuses[slot] = session.Run(feeds, fetches, {}, &outputs);
        times[slot].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - begin)
                .count());
      }
    });
  }
  warmed.arrive_and_wait();
  const Clock::time_point begin = Clock::now();
  start.count_down();
  for (std::thread& t : threads) t.join();
  Timing timing;
  timing.wall_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
  for (size_t r = 0; r < statuses.size(); ++r) {
    WEFT_RETURN_IF_ERROR(statuses[r]);
    timing.run_ms.insert(timing.run_ms.end(), times[r].begin(), times[r].end());
  }
  return timing;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The feeds of a batch of b requests for each b in `batches`: `request`'s
// tensors (zeros of the input's shape, open dimensions 1, where it has
// none) stacked b times along the first dimension.
StatusOr<std::vector<NamedTensors>> BatchFeeds(const ModelSignature& signature,
                                               const NamedTensors& request,
                                               const std::vector<int>& batches,
                                               const std::string& model_path) {
  std::optional<NamedTensors> zeros = ZeroFeeds(signature, 1);
  // Plain pairs, not structured bindings: the lambda reads the name (clang
  // 14 cannot capture a binding).
  for (const auto& feed : request) {
    const bool known =
        std::any_of(signature.inputs.begin(), signature.inputs.end(),
                    [&](const TensorSignature& input) {
                      return input.tensor == feed.first;
                    });
    if (!known) {
      return InvalidArgumentError("the request names '" + feed.first +
                                  "', which is not an input of " + model_path);
    }
  }
  std::vector<NamedTensors> feeds;
  for (int batch : batches) {
    NamedTensors stacked;
    for (size_t i = 0; i < signature.inputs.size(); ++i) {
      const std::string& tensor = signature.inputs[i].tensor;
      const Tensor* one = nullptr;
      for (const auto& feed : request) {
        if (feed.first == tensor) one = &feed.second;
      }
      if (one == nullptr) {
        if (!zeros) {
          return InvalidArgumentError(
              model_path + ": input '" + signature.inputs[i].name +
              "' has an unknown rank or dtype: give a request to time the "
              "model with");
        }
        one = &(*zeros)[i].second;
      }
      if (one->shape().rank() == 0) {
        return InvalidArgumentError("the request's '" +
                                    signature.inputs[i].name +
                                    "' is a scalar: requests are stacked "
                                    "along their first dimension");
      }
      const std::vector<const Tensor*> parts(static_cast<size_t>(batch), one);
      WEFT_ASSIGN_OR_RETURN(Tensor joined, ConcatRows(parts));
      stacked.emplace_back(tensor, std::move(joined));
    }
    feeds.push_back(std::move(stacked));
  }
  return feeds;
}

// An input with an open dimension past the first that `request` does not
// give: the tuner then timed it at length 1.
std::optional<std::string> UnsizedInput(const ModelSignature& signature,
                                        const NamedTensors& request) {
  for (const TensorSignature& input : signature.inputs) {
    const bool given = std::any_of(
        request.begin(), request.end(),
        [&](const auto& feed) { return feed.first == input.tensor; });
    if (given || !input.shape) continue;
    for (size_t d = 1; d < input.shape->size(); ++d) {
      if ((*input.shape)[d] < 0) return input.name;
    }
  }
  return std::nullopt;
}

std::string Describe(const ServingCandidate& c) {
  return std::to_string(c.runners) + " runner" + (c.runners > 1 ? "s" : "") +
         " x " + std::to_string(c.intra) + " intra-op thread" +
         (c.intra > 1 ? "s" : "") + ", batches of " + std::to_string(c.batch);
}

// Throughputs this close are one figure on the hosts weft is measured on (a
// setting's rounds spread further), so among the settings within it of the
// most throughput the choice goes by what the figures cannot show.
constexpr double kThroughputTolerance = 1.10;

// The split the server takes without flags: as many runners as cores, each
// free to use every core under the one budget.
bool IsDefaultSplit(const ServingCandidate& c, int cores) {
  return c.runners == cores && c.intra == cores;
}

// How much slower than the quickest split a lone request may run: the
// server's promise at concurrency 1 (within 1.10x of `weft run` plus 1 ms,
// docs/serving.md). A split of one-thread runners can top the throughput
// by a few percent and double a lone request's latency: the encoder's two
// runners x one thread read 177 req/s against the default split's 160-170
// and served a lone request in 11.5 ms against 5.7.
constexpr double kAloneSlowdown = 1.10;
constexpr double kAloneSlackMs = 1.0;

// Whether a lone request on `c` stays within kAloneSlowdown x + kAloneSlackMs
// of the quickest lone request of any split.
bool AloneWithinBound(const ServingCandidate& c, double quickest_alone_ms) {
  return c.alone_ms <= kAloneSlowdown * quickest_alone_ms + kAloneSlackMs;
}

double QuickestAlone(const std::vector<ServingCandidate>& candidates) {
  double quickest = candidates.front().alone_ms;
  for (const ServingCandidate& c : candidates) {
    quickest = std::min(quickest, c.alone_ms);
  }
  return quickest;
}

// The candidate served: of those within the target whose lone request stays
// within its bound (AloneWithinBound), the ones whose throughput is within
// kThroughputTolerance of the most; among them the server's default split
// first (a lone request gets every core, concurrent ones a core each, so it
// loses least when other work takes cores, as the network threads and other
// models do in the server and never do here), then the smallest batch, then
// the lowest p99. The lowest p99 when no candidate is within the target.
// `fastest` is set to the most throughput's candidate within the target and
// the bound, or -1.
int Choose(const std::vector<ServingCandidate>& candidates, int cores,
           double target_ms, int* fastest) {
  const double quickest_alone = QuickestAlone(candidates);
  const auto eligible = [&](const ServingCandidate& c) {
    return c.p99_ms <= target_ms && AloneWithinBound(c, quickest_alone);
  };
  *fastest = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (eligible(candidates[i]) &&
        (*fastest < 0 ||
         candidates[i].throughput_rps >
             candidates[static_cast<size_t>(*fastest)].throughput_rps)) {
      *fastest = static_cast<int>(i);
    }
  }
  const auto rank = [&](const ServingCandidate& c) {
    return std::make_tuple(*fastest >= 0 && !IsDefaultSplit(c, cores),
                           *fastest >= 0 ? c.batch : 0, c.p99_ms);
  };
  int best = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const ServingCandidate& c = candidates[i];
    if (*fastest >= 0 &&
        (!eligible(c) ||
         c.throughput_rps * kThroughputTolerance <
             candidates[static_cast<size_t>(*fastest)].throughput_rps)) {
      continue;
    }
    if (best < 0 || rank(c) < rank(candidates[static_cast<size_t>(best)])) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::string Explain(const std::vector<ServingCandidate>& candidates, int best,
                    int fastest, double target_ms, bool batchable,
                    const std::optional<std::string>& unsized) {
  const ServingCandidate& b = candidates[static_cast<size_t>(best)];
  std::string why =
      Describe(b) + ": " + Rate(b.throughput_rps) + " measured with " +
      std::to_string(b.runners) + (b.runners > 1 ? " Runs" : " Run") + " of " +
      std::to_string(b.batch) + (b.batch > 1 ? " requests" : " request") +
      " at once (" + Ms(b.run_ms) + " a Run), p99 ~ 2 x " + Ms(b.run_ms) +
      " = " + Ms(b.p99_ms) +
      (b.p99_ms <= target_ms ? " within the " : " (no setting is within the ") +
      Ms(target_ms) + " target" + (b.p99_ms <= target_ms ? "" : ")") + ".";
  if (fastest >= 0 && fastest != best) {
    const ServingCandidate& f = candidates[static_cast<size_t>(fastest)];
    why += " The most throughput was " + Describe(f) + ", " +
           Rate(f.throughput_rps) + " at p99 " + Ms(f.p99_ms) +
           "; of the settings within " +
           std::to_string(std::lround((kThroughputTolerance - 1) * 100)) +
           "% of it, this one is served: the server's default split first "
           "where one is that close (it loses least when other work takes "
           "cores), then the smallest batch.";
  }
  const double quickest_alone = QuickestAlone(candidates);
  const ServingCandidate* slow_alone = nullptr;  // The fastest left out so.
  for (const ServingCandidate& c : candidates) {
    if (c.p99_ms <= target_ms && !AloneWithinBound(c, quickest_alone) &&
        c.throughput_rps > b.throughput_rps &&
        (slow_alone == nullptr ||
         c.throughput_rps > slow_alone->throughput_rps)) {
      slow_alone = &c;
    }
  }
  if (slow_alone != nullptr) {
    char bound[64];
    std::snprintf(bound, sizeof bound, "%.2f x + %.1f ms", kAloneSlowdown,
                  kAloneSlackMs);
    why += " " + Describe(*slow_alone) + " gives " +
           Rate(slow_alone->throughput_rps) + " but a lone request " +
           Ms(slow_alone->alone_ms) + " against " + Ms(quickest_alone) +
           ", past " + bound + ": left out.";
  }
  for (const ServingCandidate& c : candidates) {
    if (c.runners == b.runners && c.intra == b.intra && c.batch > b.batch &&
        c.throughput_rps > b.throughput_rps * kThroughputTolerance &&
        c.p99_ms > target_ms) {
      why += " Batches of " + std::to_string(c.batch) + " would give " +
             Rate(c.throughput_rps) + " at p99 " + Ms(c.p99_ms) +
             ", past the target.";
      break;
    }
  }
  if (b.batch > 1) {
    why += " No queue delay: a free runner takes what has queued, up to " +
           std::to_string(b.batch) +
           " requests, so batches form under load and a lone request never "
           "waits for company.";
  }
  if (!batchable) {
    why +=
        " The model's inputs do not all have an open first dimension: "
        "requests run one by one.";
  }
  if (unsized) {
    why += " Input '" + *unsized +
           "' has open dimensions past the first and no request gave them: "
           "it was timed at length 1, which a real request is not; give a "
           "typical request (--feed) for figures that hold.";
  }
  return why;
}

// The candidates from the rounds' figures ([split][batch]: each round's
// throughput, every Run's time; [split]: batch-1 Runs alone on the
// batch-invariant session, empty where the model does not batch), with
// the p99 and lone-request times they predict.
std::vector<ServingCandidate> Candidates(
    const std::vector<Split>& splits, const std::vector<int>& batches,
    const std::vector<std::vector<double>>& rates,
    const std::vector<std::vector<double>>& run_times,
    const std::vector<std::vector<double>>& invariant_alone, int cores) {
  std::vector<ServingCandidate> candidates;
  for (size_t s = 0; s < splits.size(); ++s) {
    for (size_t b = 0; b < batches.size(); ++b) {
      const size_t config = s * batches.size() + b;
      ServingCandidate c;
      c.runners = splits[s].runners;
      c.intra = splits[s].intra;
      c.batch = batches[b];
      c.run_ms = Median(run_times[config]);
      c.throughput_rps = Median(rates[config]);
      // A request waits at most for the batch being computed and its own.
      c.p99_ms = 2 * c.run_ms;
      candidates.push_back(c);
    }
  }
  // A lone request's figures are the quickest of their Runs, not the
  // median: the bound (AloneWithinBound) compares settings whose lone Runs
  // are often the same computation (a batch-1 Run of both cores on the
  // 1 x 2 and the 2 x 2 batch-invariant sessions), and on these hosts the
  // medians of a few Runs of such twins differed by 35% (ResNet-18, 16.6
  // against 12.3 ms, 2026-12-01), which left out the most throughput's
  // setting. The quickest Run is what the setting gives a lone request;
  // other work on the cores slows every setting alike.
  const auto quickest = [](const std::vector<double>& runs) {
    return *std::min_element(runs.begin(), runs.end());
  };
  // One Run of every core, batch 1: what a lone request gets on the
  // default split. batches[0] is 1, so a split's batch-1 figures lead its
  // row.
  double every_core_ms = 0;
  for (size_t s = 0; s < splits.size(); ++s) {
    if (splits[s].runners == 1 && splits[s].intra == cores) {
      every_core_ms = quickest(run_times[s * batches.size()]);
    }
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    ServingCandidate& c = candidates[i];
    if (c.batch > 1) {
      // The server batches: a lone request runs on the batch-invariant
      // session (slower where it costs products their few-row paths: the
      // encoder's 5.9 ms against 4.2-5.0), alone with the split's
      // intra-op threads.
      c.alone_ms = quickest(invariant_alone[i / batches.size()]);
    } else {
      // Its own Run, where r Runs of k threads filled the cores (as much as
      // a lone request gets, give or take what concurrent Runs cost each
      // other); on the default split a lone request gets every core.
      c.alone_ms =
          IsDefaultSplit(c, cores) ? every_core_ms : quickest(run_times[i]);
    }
  }
  return candidates;
}

}  // namespace

StatusOr<ServingTuneResult> TuneServing(const std::string& model_path,
                                        const ServingTuneOptions& options) {
  if (!(options.latency_target_ms > 0)) {
    return InvalidArgumentError("the latency target must be above 0 ms");
  }
  if (options.runs < 1 || options.rounds < 1 || options.warmup < 0 ||
      options.max_batch_size < 1) {
    return InvalidArgumentError(
        "runs, rounds and max_batch_size must be at least 1, warmup at "
        "least 0");
  }
  WEFT_ASSIGN_OR_RETURN(OnnxModel probe, LoadModel(model_path));
  WEFT_ASSIGN_OR_RETURN(ModelSignature signature, SignatureOf(probe));
  const bool batchable =
      signature.FirstDimensionOpen() && options.max_batch_size > 1;
  std::vector<int> batches = {1};
  while (batchable && batches.back() * 2 <= options.max_batch_size) {
    batches.push_back(batches.back() * 2);
  }
  const std::vector<std::string> fetches = signature.OutputTensors();
  const int cores = options.cores > 0 ? options.cores : AutoCpuBudget().threads;

  // The sessions of each split, made first, so that the rounds below take
  // turns over every (split, batch) and a host whose speed drifts over
  // seconds reaches each alike. Each (split, batch) is timed as the server
  // runs it: `runners` Runs at once on one session, so that what
  // concurrent Runs cost each other (caches, memory bandwidth, the core
  // budget) is in the figure rather than assumed away; batches of one on a
  // session as a server without batching makes it, larger ones on one that
  // is batch-invariant, as the batcher's promise makes it (that costs some
  // products their faster paths).
  const std::vector<Split> splits = SplitsToTime(cores);
  const auto make_session =
      [&](const Split& split,
          bool batch_invariant) -> StatusOr<std::unique_ptr<Session>> {
    WEFT_ASSIGN_OR_RETURN(OnnxModel model, LoadModel(model_path));
    SessionOptions session_options = options.base;
    session_options.inter_op_parallelism_threads = split.runners;
    session_options.intra_op_parallelism_threads = split.intra;
    // Pools of its own: a process-wide pool made at another count would
    // time another setting than the one named.
    session_options.use_per_session_threads = true;
    session_options.batch_invariant = batch_invariant;
    return Session::Create(std::move(model.file.graph), session_options);
  };
  std::vector<std::unique_ptr<Session>> alone, batched;
  for (const Split& split : splits) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> one,
                          make_session(split, false));
    alone.push_back(std::move(one));
    if (batchable) {
      WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> many,
                            make_session(split, true));
      batched.push_back(std::move(many));
    }
  }
  WEFT_ASSIGN_OR_RETURN(
      std::vector<NamedTensors> feeds,
      BatchFeeds(signature, options.request, batches, model_path));
  // [split][batch]: each round's throughput, and every Run's time.
  const size_t configs = splits.size() * batches.size();
  std::vector<std::vector<double>> rates(configs), run_times(configs);
  // [split]: batch-1 Runs alone on the batch-invariant session.
  std::vector<std::vector<double>> invariant_alone(splits.size());
  for (int round = 0; round < options.rounds; ++round) {
    for (size_t s = 0; s < splits.size(); ++s) {
      for (size_t b = 0; b < batches.size(); ++b) {
        WEFT_ASSIGN_OR_RETURN(
            Timing timing,
            TimeRunners(batches[b] > 1 ? *batched[s] : *alone[s], feeds[b],
                        fetches, splits[s].runners, options.runs,
                        round == 0 ? options.warmup : 0));
        const size_t config = s * batches.size() + b;
        rates[config].push_back(static_cast<double>(timing.run_ms.size()) *
                                batches[b] * 1000.0 / timing.wall_ms);
        run_times[config].insert(run_times[config].end(), timing.run_ms.begin(),
                                 timing.run_ms.end());
      }
      // A lone request where the server batches. Warmed like the others:
      // the batch-invariant session has not run a batch of one before, and
      // a first Run of a shape builds its kernels.
      if (batchable) {
        WEFT_ASSIGN_OR_RETURN(
            Timing timing,
            TimeRunners(*batched[s], feeds[0], fetches, 1, options.runs,
                        round == 0 ? options.warmup : 0));
        invariant_alone[s].insert(invariant_alone[s].end(),
                                  timing.run_ms.begin(), timing.run_ms.end());
      }
    }
  }

  ServingTuneResult result;
  result.candidates =
      Candidates(splits, batches, rates, run_times, invariant_alone, cores);
  int fastest = -1;
  result.best =
      Choose(result.candidates, cores, options.latency_target_ms, &fastest);
  const ServingCandidate& chosen =
      result.candidates[static_cast<size_t>(result.best)];
  result.session = options.base;
  result.session.inter_op_parallelism_threads = chosen.runners;
  result.session.intra_op_parallelism_threads = chosen.intra;
  if (chosen.batch > 1) {
    // The batcher counts rows: a batch of b requests of r rows is b r.
    const int rows = static_cast<int>(
        chosen.batch *
        (feeds[0].empty()
             ? 1
             : std::max<int64_t>(1, feeds[0][0].second.shape().dim(0))));
    result.batching.max_batch_size = rows;
    result.batching.preferred_batch_size = {rows};
    result.batching.max_queue_delay_us = 0;
  }
  result.explanation = Explain(result.candidates, result.best, fastest,
                               options.latency_target_ms, batchable,
                               UnsizedInput(signature, options.request));
  return result;
}

}  // namespace weft::serve
