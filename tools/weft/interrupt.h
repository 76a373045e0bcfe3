// Ctrl-C for the commands that run a graph many times (run --repeat, bench,
// tune, demo): the first SIGINT cancels the Runs in flight, through the
// RunCancellation the command gives its Runs, and the command then reports
// what it completed and exits 130; a second SIGINT ends the process at once
// (exit 130), for a Run that does not stop.
#ifndef WEFT_TOOLS_WEFT_INTERRUPT_H_
#define WEFT_TOOLS_WEFT_INTERRUPT_H_

#include <atomic>
#include <memory>
#include <thread>

#include "weft/weft.h"

namespace weft::cli {

// The exit code of a command stopped by Ctrl-C (128 + SIGINT), as shells
// report it.
inline constexpr int kExitInterrupted = 130;

// REQUIRES: constructed before the command starts any thread (a session's
// pools), so that every thread inherits SIGINT blocked and the watcher
// alone receives it. One at a time per process.
class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  // Whether Ctrl-C was pressed. Thread-safe.
  bool interrupted() const { return interrupted_.load(); }
  // For RunOptions::cancellation: cancelled by the first Ctrl-C.
  const std::shared_ptr<RunCancellation>& cancellation() const {
    return cancellation_;
  }

 private:
  void Watch();

  std::shared_ptr<RunCancellation> cancellation_ =
      std::make_shared<RunCancellation>();
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

}  // namespace weft::cli

#endif  // WEFT_TOOLS_WEFT_INTERRUPT_H_
