#include "runtime/core_budget.h"

#include <algorithm>

#include "weft/threading.h"

namespace weft::internal {

std::atomic<int> CoreBudget::running_{0};
thread_local int CoreBudget::depth_here_ = 0;

int CoreBudget::HelpersAllowed(int pool_workers, int intra_threads) {
  const int budget = std::max(AutoCpuBudget().threads, intra_threads);
  // running() counts this kernel too; at least zero helpers.
  const int free_cores = budget - std::max(running(), 1);
  return std::clamp(free_cores, 0, pool_workers);
}

}  // namespace weft::internal
