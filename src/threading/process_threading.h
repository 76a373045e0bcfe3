// The process-wide threading state: the settings behind
// weft::threading::Set/Get* (weft/threading.h), the defaults the
// environment gives (threading/threading_env.h), and the pools that
// sessions without pools of their own share (as TensorFlow's global pools).
#ifndef WEFT_SRC_THREADING_PROCESS_THREADING_H_
#define WEFT_SRC_THREADING_PROCESS_THREADING_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "threading/mutex.h"
#include "threading/threading_env.h"
#include "weft/status.h"
#include "weft/thread_pool.h"

namespace weft::internal {

// A pool shared process-wide, with what it was made with: its size as
// users count them (intra: including the thread running the op), its spin
// window and its pinning.
struct SharedPool {
  std::shared_ptr<ThreadPool> pool;
  int threads = 0;
  int spin_us = 0;
  std::vector<int> pin_cpus;
};

struct ProcessThreading {
  // The one instance; never destroyed (its pools may outlive main).
  static ProcessThreading& Get();

  Mutex mu;
  // The setters' values; 0 / -1 / nullopt: not set.
  int inter_setting WEFT_GUARDED_BY(mu) = 0;
  int intra_setting WEFT_GUARDED_BY(mu) = 0;
  int inter_spin_setting WEFT_GUARDED_BY(mu) = -1;
  int intra_spin_setting WEFT_GUARDED_BY(mu) = -1;
  std::optional<std::vector<int>> inter_pin_setting WEFT_GUARDED_BY(mu);
  std::optional<std::vector<int>> intra_pin_setting WEFT_GUARDED_BY(mu);
  std::optional<SharedPool> inter WEFT_GUARDED_BY(mu);
  std::optional<SharedPool> intra WEFT_GUARDED_BY(mu);
  std::map<std::string, SharedPool> named WEFT_GUARDED_BY(mu);
  // Environment readings already warned about ("NAME=value"), and whether
  // KMP_SETTINGS / OMP_DISPLAY_ENV output was printed: each happens once.
  std::set<std::string> warned WEFT_GUARDED_BY(mu);
  bool displayed WEFT_GUARDED_BY(mu) = false;
};

// What a session that sets nothing itself gets: for each field, the
// setter's value, else the environment's, else auto (thread counts),
// kDefaultSpinUs (spin) or no pinning.
struct ProcessDefaults {
  int inter = 1, intra = 1;
  int inter_spin_us = 0, intra_spin_us = 0;
  std::vector<int> inter_pin_cpus, intra_pin_cpus;
  ThreadingEnvironment env;
};

// Reads the environment now (tests change it), warns once per variable it
// does not understand, prints the effective settings once when
// KMP_SETTINGS / OMP_DISPLAY_ENV ask. An error when a WEFT_* variable has a
// bad value.
StatusOr<ProcessDefaults> ResolveProcessDefaults(ProcessThreading& state)
    WEFT_REQUIRES(state.mu);

// The CPU budget's thread count (AutoCpuBudget().threads).
int AutoThreads();

// Prints "weft: warning: <message>" on stderr.
void WarnThreading(const std::string& message);

// Testing only: forget the process-wide pools, settings and warnings.
void ResetProcessThreadingForTest();

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_PROCESS_THREADING_H_
