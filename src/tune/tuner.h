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
#include "weft/tune.h"
#include "weft/weft.h"

namespace weft::tune {

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
