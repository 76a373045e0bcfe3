// Ctrl-C during a Run: Python delivers KeyboardInterrupt only to the main
// thread, and only when it runs Python code, which it does not while it
// waits in Session::Run. So a SIGINT handler is chained in front of
// Python's: it wakes a watcher thread, which cancels the Runs the main
// thread registered (RunCancellation); Python's own handler still runs, so
// KeyboardInterrupt is raised once the Run has returned.
#ifndef WEFT_PYTHON_SRC_INTERRUPT_H_
#define WEFT_PYTHON_SRC_INTERRUPT_H_

#include <memory>

#include "weft/options.h"

namespace weft::python {

// Makes the Run that uses `cancellation` end on Ctrl-C, when constructed on
// the main thread (elsewhere it does nothing: Python would not raise
// KeyboardInterrupt there). REQUIRES: the GIL is held.
class InterruptScope {
 public:
  explicit InterruptScope(std::shared_ptr<RunCancellation> cancellation);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // True if a SIGINT arrived while registered.
  bool interrupted() const;

 private:
  std::shared_ptr<RunCancellation> cancellation_;  // Null: not registered.
};

// Records the main thread; called when the module is imported.
void RememberMainThread();

}  // namespace weft::python

#endif  // WEFT_PYTHON_SRC_INTERRUPT_H_
