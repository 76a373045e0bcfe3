// Which thread pools a session runs on: the process-wide pools (created by
// the first session that shares them, as in TensorFlow), pools of its own,
// or named pools shared process-wide (threading/process_threading.h).
#ifndef WEFT_SRC_SESSION_POOLS_H_
#define WEFT_SRC_SESSION_POOLS_H_

#include <memory>
#include <string>
#include <vector>

#include "weft/options.h"
#include "weft/status.h"
#include "weft/thread_pool.h"

namespace weft::internal {

struct InterPool {
  std::shared_ptr<ThreadPool> pool;  // Null: the caller's thread.
  std::string name;                  // "inter", a global name, or "caller".
  int threads = -1;                  // Workers; -1 for the caller's thread.
};

struct SessionPools {
  std::vector<InterPool> inter;       // RunOptions::inter_op_thread_pool.
  std::shared_ptr<ThreadPool> intra;  // Null when intra = 1.
  int intra_threads = 1;              // Counting the thread running the op.
  // The effective spin windows and pinning of pool 0 and the intra pool
  // (what they were made with, even when shared and asked otherwise).
  int inter_spin_us = 0, intra_spin_us = 0;
  std::vector<int> inter_pin_cpus, intra_pin_cpus;
};

// The session's pools. REQUIRES: ValidateSessionOptions(options) is OK.
// Errors name the option or environment variable at fault.
StatusOr<SessionPools> AcquireSessionPools(const SessionOptions& options);

}  // namespace weft::internal

#endif  // WEFT_SRC_SESSION_POOLS_H_
