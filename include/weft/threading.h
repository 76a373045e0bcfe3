// Process-wide threading facts: how many CPUs this process may really use.
//
// "0 = auto" everywhere in weft resolves through AutoCpuBudget(): the physical
// cores this process may run on (affinity mask, SMT siblings counted once),
// capped by the cgroup CPU quota rounded up, never below 1. Unlike
// std::thread::hardware_concurrency(), this respects containers.
#ifndef WEFT_THREADING_H_
#define WEFT_THREADING_H_

#include <string>
#include <vector>

#include "weft/status.h"

namespace weft {

// The result of probing the CPUs available to this process.
struct CpuBudget {
  // The effective "auto" thread count: min(physical cores allowed,
  // ceil(cgroup quota)), at least 1.
  int threads = 1;
  // Logical CPUs in the affinity mask, in increasing order.
  std::vector<int> allowed_cpus;
  // Distinct physical cores among allowed_cpus.
  int physical_cores = 1;
  // The tightest cgroup CPU quota found, in CPUs; 0 when there is none.
  double cgroup_quota_cpus = 0;
  // One line per source consulted and the value it gave, then the result.
  // Meant for people (`weft info`), not for parsing.
  std::string derivation;
};

// Probes the running system once and caches the answer for the process.
// Thread-safe.
const CpuBudget& AutoCpuBudget();

// Process-wide defaults, like tf.config.threading and torch.set_num_threads.
// Precedence for a session: its own option > these setters > the
// environment (WEFT_NUM_INTEROP_THREADS, WEFT_NUM_INTRAOP_THREADS) > auto.
//
// The setters work at any time: sessions created afterwards get pools of the
// new size; sessions already running keep theirs. 0 restores auto.
// The getters return effective counts, never 0: the size the process-wide
// pools have (or would get) for a session that sets nothing itself.
// Thread-safe.
namespace threading {
// The setters check n as SessionOptions does (weft/options.h: inter-op
// from -1, the caller's thread, to kMaxThreads; intra-op from 0 to
// kMaxThreads) and return InvalidArgument, changing nothing, outside it.
Status SetInterOpParallelismThreads(int n);
int GetInterOpParallelismThreads();
Status SetIntraOpParallelismThreads(int n);
int GetIntraOpParallelismThreads();
}  // namespace threading

}  // namespace weft

#endif  // WEFT_THREADING_H_
