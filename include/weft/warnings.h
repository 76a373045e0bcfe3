// Warnings: what weft says when it does something other than what was
// asked (a shared pool smaller than requested, an environment variable it
// ignores, a thread it could not pin) without failing. Every warning goes
// through one process-wide handler, so that each front end shows it its
// own way: the CLI prints it on stderr (the default, each distinct message
// once per process), Python raises it through the `warnings` module with
// its category (so `-W error` makes it an exception), a server can log it.
//
// Thread-safety: EmitWarning and SetWarningHandler may be called from any
// thread. The handler runs on the thread that emits the warning, outside
// weft's locks; it must not call SetWarningHandler.
#ifndef WEFT_WARNINGS_H_
#define WEFT_WARNINGS_H_

#include <functional>
#include <string>

namespace weft {

enum class WarningCategory {
  kThreading,      // Thread counts, pools, pinning: what runs differs.
  kConfiguration,  // A setting or environment variable not used as given.
  kPerformance,    // It runs as asked, but slower than it could.
};

// "threading", "configuration", "performance".
const char* WarningCategoryName(WarningCategory category);

struct Warning {
  WarningCategory category;
  std::string message;  // One sentence naming the setting and the effect.
};

using WarningHandler = std::function<void(const Warning&)>;

// Installs `handler` for the whole process and returns the one it replaces.
// An empty handler restores the default, which prints
// "weft: warning: <message>" on stderr, each distinct message once per
// process (a handler gets every warning).
WarningHandler SetWarningHandler(WarningHandler handler);

// Hands `message` to the current handler.
void EmitWarning(WarningCategory category, std::string message);

}  // namespace weft

#endif  // WEFT_WARNINGS_H_
