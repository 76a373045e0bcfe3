// A TuneResult as the JSON object `weft tune --json` prints and weft.tune()
// reads (docs/cli-json.md: thread counts under TensorFlow's names, times in
// ms under keys ending in "_ms").
#ifndef WEFT_SRC_TUNE_TUNE_JSON_H_
#define WEFT_SRC_TUNE_TUNE_JSON_H_

#include <string>

#include "tune/tuner.h"

namespace weft::tune {

// `indent` as nlohmann::json::dump's: -1 for one line.
std::string TuneResultJson(const std::string& graph, const TuneResult& result,
                           int indent = 1);

}  // namespace weft::tune

#endif  // WEFT_SRC_TUNE_TUNE_JSON_H_
