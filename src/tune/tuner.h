// weft tune: profile a graph, predict every (inter, intra) setting with the
// executor model (simulate.h), measure the few best predicted, and explain
// the choice with the numbers. Used by the command and by weft.tune().
#ifndef WEFT_SRC_TUNE_TUNER_H_
#define WEFT_SRC_TUNE_TUNER_H_

#include <optional>
#include <string>
#include <vector>

#include "tune/profile.h"
#include "tune/simulate.h"
#include "weft/weft.h"

namespace weft::tune {

struct TuneOptions {
  // Predict for a machine of this many cores (default: this one's CPU
  // budget). Another count than this machine's is a prediction only:
  // nothing is measured.
  std::optional<int> cores;
  // Traced Runs per profiled setting (medians), taken in turns across them.
  int profile_runs = 9;
  // Timed Runs per timed setting (medians), taken in turns across them.
  int measure_runs = 9;
  int warmup = 2;
  // Settings timed to confirm, beyond the (1, k) ones the profile timed:
  // at most this many, and the timed ones at most half the grid.
  int confirm = 3;
  int64_t timeout_ms = 60000;  // Per Run, profile and confirmation alike.
  SessionOptions base;         // Everything but the thread counts.
};

struct SettingResult {
  Setting setting;
  double predicted_ms = 0;
  std::optional<double> measured_ms;  // Only for timed settings.
};

struct TuneResult {
  GraphProfile profile;
  int cores = 1;          // Predicted for.
  int machine_cores = 1;  // This machine's budget, where it was measured.
  bool measured = false;  // False for a --cores prediction.
  std::vector<SettingResult> settings;  // The grid, in grid order.
  int best = 0;  // Index into settings: best measured, else
                 // best predicted.
  std::string explanation;
  // One Run at the best setting: traced when measured, else as predicted.
  std::vector<TimelineEntry> timeline;
  bool timeline_measured = false;
};

// Runs the profile, predictions and confirmation. Errors: a graph or feed
// that does not run (with the Run's error), a Run past options.timeout_ms,
// cores outside 1 ... kMaxThreads.
StatusOr<TuneResult> TuneGraph(const GraphFile& file, const NamedTensors& feeds,
                               const TuneOptions& options);

// Indices of `settings` from the one to time first to the last: by
// predicted time, except that settings predicted within kTieFraction of the
// best count as tied and come fewest threads first (inter = -1 adds no
// thread), because a prediction is not finer than that, and of two equal
// settings the one that starts fewer threads leaves more of the machine
// to everything else (on chain graphs, measured: docs/tune.md).
inline constexpr double kTieFraction = 0.03;
std::vector<int> RankPredictions(const std::vector<SettingResult>& settings,
                                 int cores);

// Index of the setting to recommend among the measured ones (-1 when none
// is): the fastest, except that a setting measured within kTieFraction of
// it ties, and of tied settings the one with fewest threads wins (a
// measured difference that small is within a median's noise on the
// machines measured, and the setting that starts fewer threads leaves more
// of the machine to everything else).
int ChooseMeasured(const std::vector<SettingResult>& settings, int cores);

// The explanation of a result, built from its numbers only.
std::string Explain(const TuneResult& result);

}  // namespace weft::tune

#endif  // WEFT_SRC_TUNE_TUNER_H_
