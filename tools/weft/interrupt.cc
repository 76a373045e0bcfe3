#include "interrupt.h"

#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace weft::cli {
namespace {

sigset_t InterruptSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

InterruptWatch::InterruptWatch() {
  const sigset_t set = InterruptSet();
  // Blocked here, so in every thread started from now on: the watcher's
  // sigtimedwait is the one place SIGINT arrives.
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  watcher_ = std::thread([this] { Watch(); });
}

InterruptWatch::~InterruptWatch() {
  stop_.store(true);
  watcher_.join();
  const sigset_t set = InterruptSet();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void InterruptWatch::Watch() {
  const sigset_t set = InterruptSet();
  // Wakes every 50 ms to see whether the command is done with it.
  const timespec tick = {0, 50'000'000};
  while (!stop_.load()) {
    if (sigtimedwait(&set, nullptr, &tick) != SIGINT) continue;
    if (interrupted_.exchange(true)) {
      std::fprintf(stderr, "\nweft: interrupted again: stopping now\n");
      std::_Exit(kExitInterrupted);
    }
    std::fprintf(stderr,
                 "\nweft: interrupted: stopping after the Runs in flight "
                 "(Ctrl-C again to stop at once)\n");
    cancellation_->Cancel();
  }
}

}  // namespace weft::cli
