#include "weft/warnings.h"

#include <cstdio>
#include <string>
#include <unordered_set>
#include <utility>

#include "threading/mutex.h"

namespace weft {
namespace {

// The most distinct messages the default printer remembers; past it, it
// prints every warning again rather than grow without bound (a server that
// loads models for weeks).
constexpr size_t kMaxRemembered = 1024;

struct HandlerSlot {
  internal::Mutex mu;
  WarningHandler handler WEFT_GUARDED_BY(mu);
  // Messages the default printer has printed.
  std::unordered_set<std::string> printed WEFT_GUARDED_BY(mu);
};

HandlerSlot& Slot() {
  static HandlerSlot* slot = new HandlerSlot;  // Never destroyed: warnings
  return *slot;                                // may come at exit.
}

}  // namespace

const char* WarningCategoryName(WarningCategory category) {
  switch (category) {
    case WarningCategory::kThreading:
      return "threading";
    case WarningCategory::kConfiguration:
      return "configuration";
    case WarningCategory::kPerformance:
      return "performance";
  }
  return "unknown";
}

WarningHandler SetWarningHandler(WarningHandler handler) {
  HandlerSlot& slot = Slot();
  internal::MutexLock lock(slot.mu);
  std::swap(slot.handler, handler);
  return handler;
}

void EmitWarning(WarningCategory category, std::string message) {
  WarningHandler handler;
  {
    HandlerSlot& slot = Slot();
    internal::MutexLock lock(slot.mu);
    handler = slot.handler;  // Called outside the lock: it may be slow.
  }
  const Warning warning{category, std::move(message)};
  if (handler) {
    handler(warning);
    return;
  }
  // The default prints each distinct message once per process, as Python's
  // default filter shows a warning once per place: `weft bench` over four
  // settings creates a session for each, and one line says it.
  {
    HandlerSlot& slot = Slot();
    internal::MutexLock lock(slot.mu);
    if (slot.printed.contains(warning.message)) return;
    if (slot.printed.size() < kMaxRemembered) {
      slot.printed.insert(warning.message);
    }
  }
  std::fprintf(stderr, "weft: warning: %s\n", warning.message.c_str());
}

}  // namespace weft
