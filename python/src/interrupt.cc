#include "interrupt.h"

#include <Python.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <thread>
#include <vector>

namespace weft::python {
namespace {

unsigned long g_main_thread = 0;  // PyThread_get_thread_ident() of main.

// The self-pipe the handler writes and the watcher reads.
int g_pipe[2] = {-1, -1};
// The handler that was installed before ours, called after ours. Written
// only by the main thread, before our handler is (re)installed.
struct sigaction g_previous;

// Runs registered by InterruptScope, and whether a SIGINT hit them.
struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<RunCancellation>> runs;
  std::vector<RunCancellation*> interrupted;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();  // Used until exit.
  return *registry;
}

void OnSigint(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const char byte = 1;
  (void)!write(g_pipe[1], &byte, 1);  // Async-signal-safe.
  errno = saved_errno;
  if ((g_previous.sa_flags & SA_SIGINFO) != 0) {
    if (g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(signal, info, context);
    }
  } else if (g_previous.sa_handler != SIG_DFL &&
             g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(signal);
  }
}

// Cancels every registered Run on each byte from the handler. The thread
// lives until exit, blocked in read() when idle.
void WatchInterrupts() {
  char byte;
  for (;;) {
    const ssize_t n = read(g_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    Registry& registry = GetRegistry();
    std::lock_guard<std::mutex> lock(registry.mu);
    for (const auto& run : registry.runs) {
      run->Cancel();
      registry.interrupted.push_back(run.get());
    }
  }
}

// Puts our handler in front of the current one unless it is there already
// (Python's signal.signal() replaces it; the next Run puts it back). Not
// when SIGINT is ignored or has its default action: then Ctrl-C does not
// raise KeyboardInterrupt either. Main thread only.
bool InstallHandler() {
  static const bool pipe_ready = [] {
    if (pipe2(g_pipe, O_CLOEXEC) != 0) return false;
    std::thread(WatchInterrupts).detach();
    return true;
  }();
  if (!pipe_ready) return false;
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return false;
  if ((current.sa_flags & SA_SIGINFO) != 0 &&
      current.sa_sigaction == OnSigint) {
    return true;
  }
  if ((current.sa_flags & SA_SIGINFO) == 0 &&
      (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) {
    return false;
  }
  g_previous = current;
  // The same flags and mask as the handler we chain to (Python's has no
  // SA_RESTART, so that a blocking read in the main thread returns EINTR
  // and Python can raise KeyboardInterrupt): ours stays installed after the
  // Run and must not change how SIGINT behaves.
  struct sigaction ours = current;
  ours.sa_sigaction = OnSigint;
  ours.sa_flags = (current.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
  return sigaction(SIGINT, &ours, nullptr) == 0;
}

}  // namespace

void RememberMainThread() { g_main_thread = PyThread_get_thread_ident(); }

InterruptScope::InterruptScope(std::shared_ptr<RunCancellation> cancellation) {
  if (PyThread_get_thread_ident() != g_main_thread || !InstallHandler()) {
    return;
  }
  cancellation_ = std::move(cancellation);
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  registry.runs.push_back(cancellation_);
}

InterruptScope::~InterruptScope() {
  if (cancellation_ == nullptr) return;
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto& runs = registry.runs;
  runs.erase(std::find(runs.begin(), runs.end(), cancellation_));
  auto& hit = registry.interrupted;
  hit.erase(std::remove(hit.begin(), hit.end(), cancellation_.get()),
            hit.end());
}

bool InterruptScope::interrupted() const {
  if (cancellation_ == nullptr) return false;
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  const auto& hit = registry.interrupted;
  return std::find(hit.begin(), hit.end(), cancellation_.get()) != hit.end();
}

}  // namespace weft::python
