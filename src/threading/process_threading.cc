#include "threading/process_threading.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "threading/cpu_info.h"
#include "weft/options.h"
#include "weft/threading.h"
#include "weft/warnings.h"

namespace weft::internal {
namespace {

std::string CpusText(const std::vector<int>& cpus) {
  return cpus.empty() ? "none" : FormatCpuList(cpus);
}

// KMP_SETTINGS / OMP_DISPLAY_ENV: the effective defaults, once.
void Display(const ProcessDefaults& d) {
  std::fprintf(stderr,
               "weft: threading settings: inter-op threads %d, intra-op "
               "threads %d, spin %d / %d us (inter / intra), pinning %s / "
               "%s\n",
               d.inter, d.intra, d.inter_spin_us, d.intra_spin_us,
               CpusText(d.inter_pin_cpus).c_str(),
               CpusText(d.intra_pin_cpus).c_str());
  for (const EnvReading& r : d.env.seen) {
    std::fprintf(stderr, "weft:   %s=%s: %s\n", r.name.c_str(), r.value.c_str(),
                 r.effect.c_str());
  }
}

Status CheckCpus(const char* setter, const std::vector<int>& cpus) {
  const std::vector<int>& allowed = AutoCpuBudget().allowed_cpus;
  for (int cpu : cpus) {
    if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) {
      return InvalidArgumentError(std::string(setter) + ": CPU " +
                                  std::to_string(cpu) +
                                  " is not in this process's affinity mask");
    }
  }
  return Status::OK();
}

Status CheckSpin(const char* setter, int us) {
  if (us < -1 || us > kMaxSpinUs) {
    return InvalidArgumentError(std::string(setter) + "(" + std::to_string(us) +
                                "): must be from -1 (the default) to " +
                                std::to_string(kMaxSpinUs));
  }
  return Status::OK();
}

// The defaults for a getter: invalid environment values count as unset
// (with a warning), as they do nowhere else.
ProcessDefaults DefaultsForGetter(ProcessThreading& state)
    WEFT_REQUIRES(state.mu) {
  auto d = ResolveProcessDefaults(state);
  if (d.ok()) return *std::move(d);
  WarnThreading(d.status().message() + "; using auto");
  ProcessDefaults fallback;
  fallback.inter = fallback.intra = AutoThreads();
  fallback.inter_spin_us = fallback.intra_spin_us = kDefaultSpinUs;
  return fallback;
}

}  // namespace

ProcessThreading& ProcessThreading::Get() {
  static ProcessThreading* state = new ProcessThreading();  // Never freed.
  return *state;
}

StatusOr<ProcessDefaults> ResolveProcessDefaults(ProcessThreading& state) {
  ProcessDefaults d;
  d.env = ReadThreadingEnvironment(
      [](const char* name) { return std::getenv(name); }, AutoCpuBudget());
  for (const EnvReading& r : d.env.seen) {
    if (!r.understood && state.warned.insert(r.name + "=" + r.value).second) {
      WarnThreading(r.name + "='" + r.value + "': " + r.effect);
    }
  }
  WEFT_RETURN_IF_ERROR(d.env.error);
  const int auto_threads = AutoThreads();
  const auto pick = [](int setting, std::optional<int> env, int fallback) {
    if (setting != 0) return setting;
    if (env && *env != 0) return *env;
    return fallback;
  };
  d.inter = pick(state.inter_setting, d.env.inter, auto_threads);
  d.intra = pick(state.intra_setting, d.env.intra, auto_threads);
  const int env_spin = d.env.spin_us.value_or(kDefaultSpinUs);
  d.inter_spin_us =
      state.inter_spin_setting >= 0 ? state.inter_spin_setting : env_spin;
  d.intra_spin_us =
      state.intra_spin_setting >= 0 ? state.intra_spin_setting : env_spin;
  const std::vector<int> env_pin = d.env.pin_cpus.value_or(std::vector<int>{});
  d.inter_pin_cpus = state.inter_pin_setting.value_or(env_pin);
  d.intra_pin_cpus = state.intra_pin_setting.value_or(env_pin);
  if (d.env.display && !state.displayed) {
    state.displayed = true;
    Display(d);
  }
  return d;
}

int AutoThreads() { return AutoCpuBudget().threads; }

void WarnThreading(const std::string& message) {
  EmitWarning(WarningCategory::kThreading, message);
}

void ResetProcessThreadingForTest() {
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  state.inter_setting = 0;
  state.intra_setting = 0;
  state.inter_spin_setting = -1;
  state.intra_spin_setting = -1;
  state.inter_pin_setting.reset();
  state.intra_pin_setting.reset();
  state.inter.reset();
  state.intra.reset();
  state.named.clear();
  state.warned.clear();
  state.displayed = false;
}

}  // namespace weft::internal

namespace weft::threading {

using internal::MutexLock;
using internal::ProcessThreading;

// Each setter changes the process-wide default; a live shared pool made
// differently is let go (running sessions keep it through their
// shared_ptr; the next session gets a new one).

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
  if (state.inter && state.inter->threads != n) state.inter.reset();
  return Status::OK();
}

int GetInterOpParallelismThreads() {
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  if (state.inter) return state.inter->threads;
  return internal::DefaultsForGetter(state).inter;
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
  if (state.intra) return std::max(1, state.intra->threads);
  return std::max(1, internal::DefaultsForGetter(state).intra);
}

Status SetInterOpSpinUs(int us) {
  WEFT_RETURN_IF_ERROR(internal::CheckSpin("SetInterOpSpinUs", us));
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  state.inter_spin_setting = us;
  if (state.inter && us >= 0 && state.inter->spin_us != us) {
    state.inter.reset();
  }
  return Status::OK();
}

Status SetIntraOpSpinUs(int us) {
  WEFT_RETURN_IF_ERROR(internal::CheckSpin("SetIntraOpSpinUs", us));
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  state.intra_spin_setting = us;
  if (state.intra && us >= 0 && state.intra->spin_us != us) {
    state.intra.reset();
  }
  return Status::OK();
}

int GetInterOpSpinUs() {
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  if (state.inter) return state.inter->spin_us;
  return internal::DefaultsForGetter(state).inter_spin_us;
}

int GetIntraOpSpinUs() {
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  if (state.intra) return state.intra->spin_us;
  return internal::DefaultsForGetter(state).intra_spin_us;
}

bool SpinWindowsAreWeftsDefault() {
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  return state.inter_spin_setting < 0 && state.intra_spin_setting < 0 &&
         !internal::DefaultsForGetter(state).env.spin_us.has_value();
}

Status SetInterOpPinCpus(std::vector<int> cpus) {
  WEFT_RETURN_IF_ERROR(internal::CheckCpus("SetInterOpPinCpus", cpus));
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  if (state.inter && state.inter->pin_cpus != cpus) state.inter.reset();
  state.inter_pin_setting = std::move(cpus);
  return Status::OK();
}

Status SetIntraOpPinCpus(std::vector<int> cpus) {
  WEFT_RETURN_IF_ERROR(internal::CheckCpus("SetIntraOpPinCpus", cpus));
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  if (state.intra && state.intra->pin_cpus != cpus) state.intra.reset();
  state.intra_pin_setting = std::move(cpus);
  return Status::OK();
}

std::vector<int> GetInterOpPinCpus() {
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  if (state.inter) return state.inter->pin_cpus;
  return internal::DefaultsForGetter(state).inter_pin_cpus;
}

std::vector<int> GetIntraOpPinCpus() {
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  if (state.intra) return state.intra->pin_cpus;
  return internal::DefaultsForGetter(state).intra_pin_cpus;
}

}  // namespace weft::threading
