#include "weft/warnings.h"

#include <cstdio>
#include <utility>

#include "threading/mutex.h"

namespace weft {
namespace {

void PrintWarning(const Warning& warning) {
  std::fprintf(stderr, "weft: warning: %s\n", warning.message.c_str());
}

struct HandlerSlot {
  internal::Mutex mu;
  WarningHandler handler WEFT_GUARDED_BY(mu);
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
  } else {
    PrintWarning(warning);
  }
}

}  // namespace weft
