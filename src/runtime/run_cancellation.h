// The library's side of RunCancellation (weft/options.h): a Run registers
// its RunState for the time it executes, so that Cancel() can abort it.
#ifndef WEFT_SRC_RUNTIME_RUN_CANCELLATION_H_
#define WEFT_SRC_RUNTIME_RUN_CANCELLATION_H_

#include "weft/options.h"

namespace weft {
namespace internal {
class RunState;
}  // namespace internal

class RunCancellationInternal {
 public:
  // Registers `run` until Unregister. False, registering nothing, when the
  // cancellation is already cancelled: the Run must not start.
  static bool Register(RunCancellation& cancellation, internal::RunState* run);
  static void Unregister(RunCancellation& cancellation,
                         internal::RunState* run);
};

}  // namespace weft

#endif  // WEFT_SRC_RUNTIME_RUN_CANCELLATION_H_
