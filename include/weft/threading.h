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
  // Per entry of allowed_cpus: its physical core, numbered 0 ..
  // physical_cores - 1 in (socket, die, core) order.
  std::vector<int> core_of_cpu;
  // Sockets (physical packages) among allowed_cpus, and NUMA nodes of the
  // machine (1 when the kernel shows none).
  int sockets = 1;
  int numa_nodes = 1;
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

// Process-wide spin windows and pinning, for sessions that leave
// SessionOptions' spin (-1) and pin (empty) fields at their defaults.
// Precedence as for the counts: the session's option > these setters >
// the environment (WEFT_SPIN_US, KMP_BLOCKTIME; WEFT_PIN_CPUS,
// KMP_AFFINITY, OMP_PROC_BIND / OMP_PLACES) > 50 us and no pinning.
// Spin: 0 to 1,000,000 us, -1 restores the default. Pinning: CPUs of this
// process's affinity mask; an empty list means no pinning (and overrides
// the environment). Out of range is InvalidArgument and changes nothing.
// The getters return the effective values (the live shared pool's, else
// what a new one would get).
Status SetInterOpSpinUs(int us);
Status SetIntraOpSpinUs(int us);
int GetInterOpSpinUs();
int GetIntraOpSpinUs();
Status SetInterOpPinCpus(std::vector<int> cpus);
Status SetIntraOpPinCpus(std::vector<int> cpus);
std::vector<int> GetInterOpPinCpus();
std::vector<int> GetIntraOpPinCpus();
// True when neither Set*SpinUs nor the environment gives a spin window, so
// sessions that set none get weft's own (kDefaultSpinUs). A program with
// its own reason for another window may then set it on its sessions
// without overriding what a user chose (weft serve does).
bool SpinWindowsAreWeftsDefault();
}  // namespace threading

}  // namespace weft

#endif  // WEFT_THREADING_H_
