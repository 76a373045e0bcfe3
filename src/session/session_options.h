// Every check of a SessionOptions, in one place.
#ifndef WEFT_SRC_SESSION_SESSION_OPTIONS_H_
#define WEFT_SRC_SESSION_SESSION_OPTIONS_H_

#include <string>

#include "weft/options.h"
#include "weft/status.h"

namespace weft::internal {

// Session::Create calls it before anything else; the pools, the compiler
// and the executor take its result for granted. Errors name the field
// ("SessionOptions.intra_op_parallelism_threads = -2 is out of range
// [0, 4096]").
Status ValidateSessionOptions(const SessionOptions& options);

// SessionOptions::precision against the CPU: "bf16" needs AVX-512 BF16
// among `cpu_units` (as DescribeCpuBf16Units says them: "none" where there
// are none). A separate function so that a test can ask about a CPU other than
// the one it runs on.
Status CheckPrecisionForCpu(const std::string& precision,
                            const std::string& cpu_units);

}  // namespace weft::internal

#endif  // WEFT_SRC_SESSION_SESSION_OPTIONS_H_
