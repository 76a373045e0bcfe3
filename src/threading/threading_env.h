// The environment variables users already set for TensorFlow, PyTorch,
// OpenMP and Intel's runtime, read as weft's threading defaults below its
// own WEFT_* variables (docs/configuration.md, "Environment variables").
#ifndef WEFT_SRC_THREADING_THREADING_ENV_H_
#define WEFT_SRC_THREADING_THREADING_ENV_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "weft/status.h"
#include "weft/threading.h"

namespace weft::internal {

// One variable that was set, and what weft made of it.
struct EnvReading {
  std::string name;
  std::string value;
  std::string effect;  // "intra-op threads: 4", "not used: ... wins", ...
  bool understood = true;
};

// The defaults the environment gives, each from the first variable in
// precedence order that is set and understood.
struct ThreadingEnvironment {
  std::optional<int> inter, intra;           // Thread counts.
  std::optional<int> spin_us;                // Both pools' spin window.
  std::optional<std::vector<int>> pin_cpus;  // Both pools; empty: none.
  bool display = false;  // KMP_SETTINGS / OMP_DISPLAY_ENV: print once.
  // A WEFT_* variable with a bad value: Session::Create fails with it
  // (weft's own variables are strict; the others warn and are ignored).
  Status error;
  std::vector<EnvReading> seen;  // Every variable set, in table order.
};

using GetEnvFn = std::function<const char*(const char*)>;

// Every variable ReadThreadingEnvironment reads, in its table's order.
const std::vector<const char*>& ThreadingVariableNames();

// Reads the variables through `getenv` (std::getenv in the library; a map
// in tests). `budget` gives the CPUs that pinning forms are resolved to.
ThreadingEnvironment ReadThreadingEnvironment(const GetEnvFn& getenv,
                                              const CpuBudget& budget);

// How KMP_AFFINITY / OMP_PROC_BIND place consecutive workers.
enum class PinForm {
  kCompact,     // Fill a core's SMT siblings, then the next core.
  kCoresFirst,  // One per physical core first, then siblings (scatter).
  kOnePerCore,  // Only the first CPU of each physical core.
};

// The CPU list (worker i goes to list[i % size]) for a form.
std::vector<int> PinOrder(PinForm form, const CpuBudget& budget);

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_THREADING_ENV_H_
