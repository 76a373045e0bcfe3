// Keeps weft's computing threads on distinct CPUs while some CPU has none.
//
// Why: Linux may queue two of our computing threads on one CPU while
// another CPU idles, and leave them there for milliseconds: a CPU that goes
// idle often and briefly skips its "newly idle" balancing pass, and a
// queued thread that ran moments ago counts as cache-hot and is not
// migrated. On a 2-vCPU AMD EPYC guest, at (inter 2, intra 2), a 512 x 512
// MatMul block then took 5.3 ms instead of 1.3 while an inter-op worker and
// the intra-op helper of another kernel shared its CPU, and Runs of two
// MatMul chains took 1.3-1.5x their usual time (docs/BENCHMARKS.md,
// 2026-11-25). Threads that park and wake between kernels, as ours do, give
// the scheduler a placement to get wrong at every wake-up; threads that
// spin between parallel regions (OpenBLAS's) keep the CPU they have.
//
// What: a thread that starts computing records the CPU it runs on (a
// CpuClaim). A pool thread that finds another weft thread already computing
// on its CPU, while a CPU of its affinity mask has none, moves itself there
// (sched_setaffinity to that CPU, then straight back to its own mask, which
// leaves it where it is). So the scheduler's placement stands unless it
// stacked our threads, and a user's mask, taskset or cgroup cpuset is never
// widened. Threads the user owns (a Run's caller) are recorded, so pool
// threads avoid their CPU, but never moved. A thread pinned to one CPU
// (ThreadPoolOptions::pin_cpus) has nowhere to go.
//
// WEFT_CPU_SPREAD=0 turns the moves off (claims are still recorded).
//
// The record is a hint: the OS may move a thread after it claimed; a wrong
// record costs at most one needless move or one stacking not undone.
#ifndef WEFT_SRC_THREADING_CPU_SPREAD_H_
#define WEFT_SRC_THREADING_CPU_SPREAD_H_

#include "weft/status.h"

namespace weft::internal {

// Work expected to take at least this long is claimed, and moves off a
// shared CPU: a move costs about 23 us (two sched_setaffinity calls and the
// wake-up of the idle CPU, 2-vCPU AMD EPYC guest), a stacking half of the
// work or more; a claim costs two updates of a line of its own CPU.
inline constexpr double kSpreadMinNs = 50'000;

class CpuClaim {
 public:
  // Records the calling thread as computing on its CPU; when `may_move`
  // and that CPU already has a computing weft thread, first moves to a CPU
  // of this thread's mask that has none, if there is one. A claim made
  // while the thread holds one does nothing: the outer claim stands (and
  // the thread's own record is no reason to move).
  explicit CpuClaim(bool may_move);
  ~CpuClaim();
  CpuClaim(const CpuClaim&) = delete;
  CpuClaim& operator=(const CpuClaim&) = delete;

  // The CPU this claim counts on, or -1 when it counts on none (nested in
  // another claim, or the CPU number was not available).
  int cpu() const { return cpu_; }

 private:
  int cpu_ = -1;
  bool nested_ = true;  // Until the constructor finds no outer claim.
};

// WEFT_CPU_SPREAD's value: "1" or unset on, "0" off; anything else warns
// on stderr and leaves it on (Session::Create fails on it first, through
// CheckCpuSpreadEnvironment; a bare ThreadPool gets the warning).
bool CpuSpreadWanted(const char* value);
// An error naming WEFT_CPU_SPREAD when it is set to anything but 0 or 1.
Status CheckCpuSpreadEnvironment();

// Weft threads recorded as computing on `cpu` now (tests).
int ComputingOnCpu(int cpu);
// How many times a thread moved off a CPU shared with another computing
// weft thread since the process started (tests).
long CpuSpreadMoves();

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_CPU_SPREAD_H_
