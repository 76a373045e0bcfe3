// weft tune MODEL --input 'DIR/*.jpg': the thread setting for a batch job
// (weft predict), pipeline included. The executor's model behind plain
// `weft tune` knows graphs, not decoders and AUTOTUNE's choices, so this
// one measures: the job on a sample of the inputs at each (inter, intra)
// of a small grid, in turns, and recommends the fastest.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "weft/predict.h"
#include "weft/threading.h"

namespace weft::cli {
namespace {

// The sample: enough whole batches for AUTOTUNE to settle (it sets its
// knobs every 50 ms) and few enough to try every setting in turns.
constexpr int64_t kSampleBatches = 6;
constexpr int kRounds = 3;

// 1, 2, 4, ... up to `cores`, and `cores` itself.
std::vector<int> ThreadCounts(int cores) {
  std::vector<int> counts;
  for (int n = 1; n < cores; n *= 2) counts.push_back(n);
  counts.push_back(cores);
  return counts;
}

struct TuneTrial {
  int inter = 1, intra = 1;
  std::vector<double> items_per_second;  // One per round.
  std::string bottleneck;                // From the last round's stats.
  int map_parallelism = 0;               // AUTOTUNE's last choice.
};

}  // namespace

int PredictTuneCommand(const TuneArgs& args,
                       const std::vector<std::string>& inputs) {
  if (args.json || !args.plot_file.empty() || args.cores || args.serving) {
    return Fail(kExitBadInput,
                "--input tunes a weft predict job and prints its table as "
                "text: --json, --plot, --cores and --serving are not taken "
                "with it");
  }
  PredictOptions base;
  base.preprocess = args.preprocess;
  base.batch_size = args.batch;
  const auto sample = static_cast<size_t>(std::min<int64_t>(
      static_cast<int64_t>(inputs.size()), kSampleBatches * args.batch));
  base.inputs.assign(inputs.begin(),
                     inputs.begin() + static_cast<std::ptrdiff_t>(sample));
  const int cores = AutoCpuBudget().threads;
  std::vector<TuneTrial> trials;
  for (int inter : ThreadCounts(cores)) {
    for (int intra : ThreadCounts(cores)) {
      trials.push_back({inter, intra, {}, "", 0});
    }
  }
  std::printf(
      "tuning weft predict on %zu of %zu inputs (batch %lld), %zu settings "
      "x %d rounds in turns, on %d core(s)\n",
      sample, inputs.size(), static_cast<long long>(args.batch), trials.size(),
      kRounds, cores);
  // The model opened once per setting (its threads are the setting's).
  std::map<std::pair<int, int>, std::shared_ptr<const PredictModel>> models;
  for (int round = 0; round < kRounds; ++round) {
    for (TuneTrial& trial : trials) {
      PredictOptions options = base;
      // Pools of its own per setting: in one process the process-wide
      // pool would keep the first setting's size (in `weft predict`, a
      // fresh process, the first session makes it at the size asked).
      options.session.use_per_session_threads = true;
      options.session.inter_op_parallelism_threads = trial.inter;
      options.session.intra_op_parallelism_threads = trial.intra;
      auto& model = models[{trial.inter, trial.intra}];
      if (model == nullptr) {
        StatusOr<std::shared_ptr<const PredictModel>> opened =
            PredictModel::Open(args.graph, options.session);
        if (!opened.ok()) return Fail(kExitBadInput, opened.status().message());
        model = *opened;
        options.opened_model = model;
        // Warm: the first job pays for first touches of the weights.
        if (StatusOr<PredictRows> warm = PredictToMemory(options); !warm.ok()) {
          return Fail(kExitBadInput, warm.status().message());
        }
      }
      options.opened_model = model;
      StatusOr<PredictRows> rows = PredictToMemory(options);
      if (!rows.ok()) return Fail(kExitBadInput, rows.status().message());
      const PredictSummary& s = rows->summary;
      trial.items_per_second.push_back(
          s.seconds > 0 ? static_cast<double>(s.predicted) / s.seconds : 0);
      trial.bottleneck = "the model";
      for (const data::StageStats& stage : s.stages) {
        if (stage.bottleneck) trial.bottleneck = stage.stage;
        if (stage.autotuned && stage.stage == "ParallelMap") {
          trial.map_parallelism = stage.parallelism;
        }
      }
    }
  }
  std::printf("  %5s %5s %9s %12s %s\n", "inter", "intra", "items/s",
              "decode calls", "bottleneck");
  const TuneTrial* best = nullptr;
  for (const TuneTrial& t : trials) {
    const double rate = Median(t.items_per_second);
    std::printf("  %5d %5d %9.1f %12d %s\n", t.inter, t.intra, rate,
                t.map_parallelism, t.bottleneck.c_str());
    if (best == nullptr || rate > Median(best->items_per_second)) best = &t;
  }
  std::printf(
      "run with: weft predict %s --inter %d --intra %d (median of %d "
      "rounds: %.1f items/s; decode calls: AUTOTUNE's choice)\n",
      args.graph.c_str(), best->inter, best->intra, kRounds,
      Median(best->items_per_second));
  return kExitOk;
}

}  // namespace weft::cli
