#include "threading/process_threading.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "weft/options.h"
#include "weft/threading.h"

namespace weft::internal {
namespace {

// Reads WEFT_NUM_*_THREADS: nullopt when unset; an error when not a number.
StatusOr<std::optional<int>> ReadEnvThreads(const char* variable) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return std::optional<int>();
  // The same ranges as the options: only inter-op has -1.
  const int lowest =
      std::string_view(variable).find("INTEROP") != std::string_view::npos
          ? kMinInterOpThreads
          : 0;
  int value = 0;
  const char* end = text + std::char_traits<char>::length(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end || value > kMaxThreads ||
      value < lowest) {
    return InvalidArgumentError(
        std::string("environment variable ") + variable + "='" + text +
        "' is not a thread count (an integer from " + std::to_string(lowest) +
        " to " + std::to_string(kMaxThreads) + ")");
  }
  return std::optional<int>(value);
}

// The effective value for a getter: the live pool's size, else what a new
// one would get. Invalid environment values count as unset (with a warning).
int Effective(const std::optional<SharedPool>& pool, int setting,
              const char* variable) {
  if (pool) return pool->threads;
  auto value = ProcessDefault(setting, variable);
  if (!value.ok()) {
    WarnThreading(value.status().message() + "; using auto");
    return AutoThreads();
  }
  return *value;
}

}  // namespace

ProcessThreading& ProcessThreading::Get() {
  static ProcessThreading* state = new ProcessThreading();  // Never freed.
  return *state;
}

StatusOr<int> ProcessDefault(int setting, const char* variable) {
  if (setting != 0) return setting;
  WEFT_ASSIGN_OR_RETURN(std::optional<int> env, ReadEnvThreads(variable));
  if (env && *env != 0) return *env;
  return AutoThreads();
}

int AutoThreads() { return AutoCpuBudget().threads; }

void WarnThreading(const std::string& message) {
  std::fprintf(stderr, "weft: warning: %s\n", message.c_str());
}

void ResetProcessThreadingForTest() {
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  state.inter_setting = 0;
  state.intra_setting = 0;
  state.inter.reset();
  state.intra.reset();
  state.named.clear();
}

}  // namespace weft::internal

namespace weft::threading {

using internal::MutexLock;
using internal::ProcessThreading;

Status SetInterOpParallelismThreads(int n) {
  if (n < kMinInterOpThreads || n > kMaxThreads) {
    return InvalidArgumentError("SetInterOpParallelismThreads(" +
                                std::to_string(n) + "): must be from " +
                                std::to_string(kMinInterOpThreads) + " to " +
                                std::to_string(kMaxThreads));
  }
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  state.inter_setting = n;
  // Running sessions keep the pool they hold; later sessions get a new one.
  if (state.inter && state.inter->threads != n) state.inter.reset();
  return Status::OK();
}

int GetInterOpParallelismThreads() {
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  return internal::Effective(state.inter, state.inter_setting,
                             "WEFT_NUM_INTEROP_THREADS");
}

Status SetIntraOpParallelismThreads(int n) {
  if (n < 0 || n > kMaxThreads) {
    return InvalidArgumentError("SetIntraOpParallelismThreads(" +
                                std::to_string(n) + "): must be from 0 to " +
                                std::to_string(kMaxThreads));
  }
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  state.intra_setting = n;
  if (state.intra && state.intra->threads != n) state.intra.reset();
  return Status::OK();
}

int GetIntraOpParallelismThreads() {
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  return std::max(1, internal::Effective(state.intra, state.intra_setting,
                                         "WEFT_NUM_INTRAOP_THREADS"));
}

}  // namespace weft::threading
