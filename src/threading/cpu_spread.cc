#include "threading/cpu_spread.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "weft/warnings.h"

namespace weft::internal {
namespace {

// One counter per CPU, each on its own cache line: threads on different
// CPUs claim without sharing a line.
struct alignas(64) CpuSlot {
  std::atomic<int> computing{0};
};

class CpuTable {
 public:
  CpuTable()
      : size_(static_cast<int>(
            std::clamp<long>(sysconf(_SC_NPROCESSORS_CONF), 1, CPU_SETSIZE))),
        slots_(std::make_unique<CpuSlot[]>(static_cast<size_t>(size_))) {}

  int size() const { return size_; }
  std::atomic<int>& computing(int cpu) { return slots_[cpu].computing; }

  std::atomic<long> moves{0};

 private:
  const int size_;
  std::unique_ptr<CpuSlot[]> slots_;
};

CpuTable& Table() {
  static CpuTable* const table = new CpuTable;  // Never destroyed: pool
  return *table;                                // threads may outlive main.
}

// Reserves a CPU other than `here`, of the calling thread's mask, that no
// weft thread computes on, moves there and returns it; -1 (and no move)
// when there is none or the move failed.
int MoveToFreeCpu(CpuTable& table, int here) {
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0) return -1;
  for (int cpu = 0; cpu < table.size(); ++cpu) {
    if (cpu == here || !CPU_ISSET(cpu, &mine)) continue;
    int expected = 0;
    if (!table.computing(cpu).compare_exchange_strong(
            expected, 1, std::memory_order_acq_rel)) {
      continue;
    }
    cpu_set_t there;
    CPU_ZERO(&there);
    CPU_SET(cpu, &there);
    // The first call migrates this thread before it returns; the second
    // gives the mask back and leaves the thread where it now is.
    const bool moved = sched_setaffinity(0, sizeof(there), &there) == 0;
    sched_setaffinity(0, sizeof(mine), &mine);
    if (moved && sched_getcpu() == cpu) {
      table.moves.fetch_add(1, std::memory_order_relaxed);
      return cpu;
    }
    table.computing(cpu).fetch_sub(1, std::memory_order_acq_rel);
    return -1;
  }
  return -1;
}

bool IsZeroOrOne(const char* value) {
  const std::string text(value);
  return text == "0" || text == "1";
}

}  // namespace

bool CpuSpreadWanted(const char* value) {
  if (value == nullptr) return true;
  if (IsZeroOrOne(value)) return value[0] == '1';
  EmitWarning(
      WarningCategory::kConfiguration,
      std::string("ignoring WEFT_CPU_SPREAD=") + value + " (expected 0 or 1)");
  return true;
}

Status CheckCpuSpreadEnvironment() {
  const char* value = std::getenv("WEFT_CPU_SPREAD");
  if (value == nullptr || IsZeroOrOne(value)) return Status::OK();
  return InvalidArgumentError(std::string("WEFT_CPU_SPREAD=") + value +
                              " is neither 0 (computing threads stay where "
                              "the OS put them) nor 1 (the default: they "
                              "spread over free CPUs; docs/architecture.md)");
}

// Whether the calling thread holds a claim: a nested one counts nothing.
thread_local bool tls_claimed = false;

CpuClaim::CpuClaim(bool may_move) {
  if (tls_claimed) return;
  tls_claimed = true;
  nested_ = false;
  static const bool wanted = CpuSpreadWanted(std::getenv("WEFT_CPU_SPREAD"));
  may_move = may_move && wanted;
  CpuTable& table = Table();
  const int here = sched_getcpu();
  if (here < 0 || here >= table.size()) return;
  if (table.computing(here).fetch_add(1, std::memory_order_acq_rel) == 0 ||
      !may_move) {
    cpu_ = here;
    return;
  }
  // Shared: give this CPU back first, so that a thread choosing at the same
  // time may take it, then look for a free one.
  table.computing(here).fetch_sub(1, std::memory_order_acq_rel);
  cpu_ = MoveToFreeCpu(table, here);
  if (cpu_ < 0) {
    cpu_ = here;
    table.computing(here).fetch_add(1, std::memory_order_acq_rel);
  }
}

CpuClaim::~CpuClaim() {
  if (nested_) return;
  tls_claimed = false;
  if (cpu_ >= 0) {
    Table().computing(cpu_).fetch_sub(1, std::memory_order_acq_rel);
  }
}

int ComputingOnCpu(int cpu) {
  CpuTable& table = Table();
  if (cpu < 0 || cpu >= table.size()) return 0;
  return table.computing(cpu).load(std::memory_order_acquire);
}

long CpuSpreadMoves() { return Table().moves.load(std::memory_order_relaxed); }

}  // namespace weft::internal
