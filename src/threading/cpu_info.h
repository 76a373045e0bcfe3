// Probing the CPUs a process may use: affinity mask, cgroup CPU quota (v1 and
// v2) and core topology, read from /proc and /sys under a configurable root so
// that tests can run against fake trees.
#ifndef WEFT_SRC_THREADING_CPU_INFO_H_
#define WEFT_SRC_THREADING_CPU_INFO_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/threading.h"

namespace weft::internal {

struct CpuProbeSources {
  // Prefix for every /proc and /sys path read ("/" on a real system).
  std::string root = "/";
  // true: the affinity mask comes from sched_getaffinity(2). false: from the
  // Cpus_allowed_list line of <root>/proc/self/status (for fake trees).
  bool use_sched_getaffinity = true;
};

CpuBudget ProbeCpuBudget(const CpuProbeSources& sources);

// Parses the kernel's CPU list format ("0-3,8,10-11"). nullopt when
// malformed.
std::optional<std::vector<int>> ParseCpuList(std::string_view text);

// Formats CPUs in the kernel's list format, collapsing runs ("0-3,8").
std::string FormatCpuList(const std::vector<int>& cpus);

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_CPU_INFO_H_
