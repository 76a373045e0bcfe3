// The process-wide threading state: the settings behind
// weft::threading::Set/Get* (weft/threading.h) and the pools that sessions
// without pools of their own share (as TensorFlow's global pools).
#ifndef WEFT_SRC_THREADING_PROCESS_THREADING_H_
#define WEFT_SRC_THREADING_PROCESS_THREADING_H_

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "threading/mutex.h"
#include "weft/status.h"
#include "weft/thread_pool.h"

namespace weft::internal {

// A pool shared process-wide and its size as users count them (intra:
// including the thread running the op).
struct SharedPool {
  std::shared_ptr<ThreadPool> pool;
  int threads = 0;
};

struct ProcessThreading {
  // The one instance; never destroyed (its pools may outlive main).
  static ProcessThreading& Get();

  Mutex mu;
  int inter_setting WEFT_GUARDED_BY(mu) = 0;  // 0: not set.
  int intra_setting WEFT_GUARDED_BY(mu) = 0;
  std::optional<SharedPool> inter WEFT_GUARDED_BY(mu);
  std::optional<SharedPool> intra WEFT_GUARDED_BY(mu);
  std::map<std::string, SharedPool> named WEFT_GUARDED_BY(mu);
};

// The process-wide default for a thread count: the setter's value
// (`setting`, 0 when unset), else the environment variable, else auto. An
// error when the variable is set to something that is not a thread count.
StatusOr<int> ProcessDefault(int setting, const char* variable);

// The CPU budget's thread count (AutoCpuBudget().threads).
int AutoThreads();

// Prints "weft: warning: <message>" on stderr.
void WarnThreading(const std::string& message);

// Testing only: forget the process-wide pools and settings.
void ResetProcessThreadingForTest();

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_PROCESS_THREADING_H_
