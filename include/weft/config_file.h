// Configuration text: every SessionOptions and RunOptions field, written as
// TensorFlow writes them — JSON with TensorFlow's field names, or TensorFlow's
// text-format ConfigProto for the fields weft implements
// (docs/configuration.md, "Configuration files"). Read by weft
// run|bench|tune|serve --config FILE and --set FIELD=VALUE, and by a served
// model's config.json "parameters".
#ifndef WEFT_CONFIG_FILE_H_
#define WEFT_CONFIG_FILE_H_

#include <string>
#include <vector>

#include "weft/options.h"
#include "weft/status.h"

namespace weft {

struct RunConfig {
  SessionOptions session;
  RunOptions run;
};

// Applies the fields of a configuration text to *config. JSON when the
// text starts with '{', else text format. `source` names the text in
// errors ("cfg.pbtxt", "--set"). Errors name the field and its line (and
// column, for syntax): unknown field, wrong type, out of range, bad syntax.
// Ranges are checked later, by Session::Create, with the same messages as
// for any SessionOptions.
Status ApplyConfigText(const std::string& text, const std::string& source,
                       RunConfig* config);

// Reads FILE and applies it.
Status ApplyConfigFile(const std::string& path, RunConfig* config);

// Applies "--set FIELD=VALUE": VALUE in text-format syntax (2, true,
// "name", FULL_TRACE, [0, 1], {num_threads: 2}).
Status ApplySetting(const std::string& assignment, RunConfig* config);

// The --config file (when `path` is not empty), then each --set in order.
StatusOr<RunConfig> ReadRunConfig(const std::string& path,
                                  const std::vector<std::string>& settings);

}  // namespace weft

#endif  // WEFT_CONFIG_FILE_H_
