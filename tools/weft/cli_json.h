// The vocabulary of the command's --json output, in one place: every
// command names the same facts with the same keys and types
// (docs/cli-json.md). Thread counts are TensorFlow's names; times are
// numbers in ms under keys ending in "_ms"; lists are arrays.
#ifndef WEFT_TOOLS_WEFT_CLI_JSON_H_
#define WEFT_TOOLS_WEFT_CLI_JSON_H_

#include <nlohmann/json.hpp>
#include <string>

#include "weft/tensor.h"

namespace weft::cli {

// {"inter_op_parallelism_threads": inter, "intra_op_parallelism_threads":
// intra}, merged into `out`.
void AddThreadCounts(nlohmann::json& out, int inter, int intra);

// One output tensor: name, dtype, shape, hash, and with `values` every
// element (numbers; booleans as true/false).
nlohmann::json TensorJson(const std::string& name, const Tensor& tensor,
                          bool values);

// Prints `value` and a newline on stdout, indented by one space. Bytes
// that are not UTF-8 (a model's names are bytes: ONNX Runtime loads a
// model whose names are not UTF-8) print as U+FFFD, where nlohmann::json
// would throw.
void PrintJson(const nlohmann::json& value);

// The compiler that built this binary, as its own name and version.
std::string CompilerName();

// From here on, Fail() also prints its error as one JSON object on stdout:
// {"error": {"code", "exit_code", "message", "node"}}.
void EnableJsonErrors();
bool JsonErrorsEnabled();

// The JSON form of an error message: the first status code named in it
// (else InvalidArgument for exit code 2, Unknown for 1), and the node that
// the first "node '...'" or "placeholder '...'" in it names (else null).
nlohmann::json ErrorJson(int exit_code, const std::string& message);

}  // namespace weft::cli

#endif  // WEFT_TOOLS_WEFT_CLI_JSON_H_
