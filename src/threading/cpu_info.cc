#include "threading/cpu_info.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

namespace weft::internal {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\n\r");
  if (first == std::string_view::npos) return "";
  const auto last = s.find_last_not_of(" \t\n\r");
  return std::string(s.substr(first, last - first + 1));
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t value = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// A path under the probe root: Under("/", "/sys/x") is "/sys/x".
fs::path Under(const std::string& root, std::string_view absolute) {
  return fs::path(root) / fs::path(absolute).relative_path();
}

// /proc/self/mountinfo escapes spaces and such as \ooo.
std::string UnescapeMountField(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string_view oct = s.substr(i + 1, 3);
      if (std::all_of(oct.begin(), oct.end(),
                      [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(static_cast<char>((oct[0] - '0') * 64 +
                                        (oct[1] - '0') * 8 + (oct[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

struct CgroupMount {
  std::string root;         // The cgroup path mounted there.
  std::string mount_point;  // Where it is mounted.
};

bool HasToken(std::string_view list, std::string_view token) {
  for (const std::string& t : Split(list, ',')) {
    if (t == token) return true;
  }
  return false;
}

// Finds the cgroup2 mount (v2 == true) or the v1 mount carrying the "cpu"
// controller. Falls back to the conventional place when mountinfo is absent.
std::optional<CgroupMount> FindCgroupMount(const std::string& root, bool v2) {
  if (auto text = ReadFile(Under(root, "/proc/self/mountinfo"))) {
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line)) {
      // id parent major:minor root mount-point options [optional...] - type
      // source super-options
      const auto fields = Split(line, ' ');
      const auto dash = std::find(fields.begin(), fields.end(), "-");
      if (fields.size() < 5 || dash == fields.end() ||
          fields.end() - dash < 4) {
        continue;
      }
      const std::string& type = *(dash + 1);
      const std::string& super_options = *(dash + 3);
      const bool match =
          v2 ? type == "cgroup2"
             : type == "cgroup" && HasToken(super_options, "cpu");
      if (match) {
        return CgroupMount{UnescapeMountField(fields[3]),
                           UnescapeMountField(fields[4])};
      }
    }
    return std::nullopt;
  }
  const std::string guess = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu";
  const char* marker = v2 ? "cgroup.controllers" : "cpu.cfs_period_us";
  if (fs::exists(Under(root, guess) / marker)) return CgroupMount{"/", guess};
  return std::nullopt;
}

// The process's cgroup path for the v2 hierarchy ("0::/path") or the v1
// hierarchy holding the "cpu" controller ("4:cpu,cpuacct:/path").
std::optional<std::string> FindCgroupPath(const std::string& root, bool v2) {
  auto text = ReadFile(Under(root, "/proc/self/cgroup"));
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string_view controllers =
        std::string_view(line).substr(first + 1, second - first - 1);
    const bool match =
        v2 ? line.compare(0, first, "0") == 0 && controllers.empty()
           : HasToken(controllers, "cpu");
    if (match) return line.substr(second + 1);
  }
  return std::nullopt;
}

struct Quota {
  double cpus;
  std::string description;  // Where it came from and the raw values.
};

// Reads one directory's limit: v2 "cpu.max" ("max 100000" or "150000
// 100000"), v1 cpu.cfs_quota_us / cpu.cfs_period_us (-1 = none).
std::optional<Quota> ReadQuotaAt(const fs::path& dir, bool v2) {
  int64_t quota = -1, period = 0;
  std::string raw;
  if (v2) {
    auto text = ReadFile(dir / "cpu.max");
    if (!text) return std::nullopt;
    raw = Trim(*text);
    const auto parts = Split(raw, ' ');
    if (parts.size() != 2 || parts[0] == "max") return std::nullopt;
    auto q = ParseInt(parts[0]);
    auto p = ParseInt(parts[1]);
    if (!q || !p) return std::nullopt;
    quota = *q;
    period = *p;
    raw = "cpu.max \"" + raw + "\"";
  } else {
    auto q_text = ReadFile(dir / "cpu.cfs_quota_us");
    auto p_text = ReadFile(dir / "cpu.cfs_period_us");
    if (!q_text || !p_text) return std::nullopt;
    auto q = ParseInt(Trim(*q_text));
    auto p = ParseInt(Trim(*p_text));
    if (!q || !p) return std::nullopt;
    quota = *q;
    period = *p;
    raw = "cpu.cfs_quota_us " + std::to_string(quota) +
          " / cpu.cfs_period_us " + std::to_string(period);
  }
  if (quota <= 0 || period <= 0) return std::nullopt;
  return Quota{static_cast<double>(quota) / static_cast<double>(period),
               raw + " at " + dir.string()};
}

// The tightest quota on the path from the process's cgroup up to the
// hierarchy's root: a parent's limit binds its children too.
std::optional<Quota> ReadCgroupQuota(const std::string& root, bool v2) {
  const auto mount = FindCgroupMount(root, v2);
  if (!mount) return std::nullopt;
  const fs::path base = Under(root, mount->mount_point);
  std::string relative = FindCgroupPath(root, v2).value_or("/");
  // The mount may expose only a subtree (containers): strip its root.
  if (mount->root != "/" && relative.rfind(mount->root, 0) == 0) {
    relative = relative.substr(mount->root.size());
  }
  const fs::path stop = base.lexically_normal();
  fs::path dir = (base / fs::path(relative).relative_path()).lexically_normal();
  std::error_code ec;
  // A path outside the mount ("/../x" in a cgroup namespace) or missing from
  // it (a container whose cgroup is the mount's root) means: start at base.
  const fs::path relative_to_stop = dir.lexically_relative(stop);
  const bool inside =
      !relative_to_stop.empty() && *relative_to_stop.begin() != "..";
  if (!inside || !fs::is_directory(dir, ec)) dir = stop;
  std::optional<Quota> tightest;
  for (;;) {
    if (auto quota = ReadQuotaAt(dir, v2)) {
      if (!tightest || quota->cpus < tightest->cpus) tightest = quota;
    }
    if (dir == stop || dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return tightest;
}

std::optional<std::vector<int>> AffinityFromKernel() {
  for (int ncpus = 1024; ncpus <= (1 << 20); ncpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(ncpus);
    const size_t size = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      std::vector<int> cpus;
      for (int cpu = 0; cpu < ncpus; ++cpu) {
        if (CPU_ISSET_S(cpu, size, set)) cpus.push_back(cpu);
      }
      CPU_FREE(set);
      return cpus;
    }
    const int err = errno;
    CPU_FREE(set);
    if (err != EINVAL) break;  // EINVAL: the kernel's mask is larger.
  }
  return std::nullopt;
}

std::optional<std::vector<int>> AffinityFromStatus(const std::string& root) {
  auto text = ReadFile(Under(root, "/proc/self/status"));
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::string line;
  const std::string key = "Cpus_allowed_list:";
  while (std::getline(lines, line)) {
    if (line.rfind(key, 0) == 0)
      return ParseCpuList(Trim(line.substr(key.size())));
  }
  return std::nullopt;
}

// Distinct (package, die, core) triples among cpus; a CPU without topology
// files counts as a core of its own. Fills budget->core_of_cpu and
// budget->sockets.
int CountPhysicalCores(const std::string& root, const std::vector<int>& cpus,
                       bool* topology_found, CpuBudget* budget) {
  using Core = std::tuple<int64_t, int64_t, int64_t>;
  std::set<Core> cores;
  std::set<int64_t> packages;
  std::vector<Core> core_of(cpus.size());
  *topology_found = false;
  for (size_t i = 0; i < cpus.size(); ++i) {
    const int cpu = cpus[i];
    const fs::path dir = Under(root, "/sys/devices/system/cpu") /
                         ("cpu" + std::to_string(cpu)) / "topology";
    auto read = [&](const char* name) -> std::optional<int64_t> {
      auto text = ReadFile(dir / name);
      return text ? ParseInt(Trim(*text)) : std::nullopt;
    };
    const auto core = read("core_id");
    if (!core) {
      core_of[i] = Core(-1, -1, -1 - cpu);  // Unique per CPU.
      cores.insert(core_of[i]);
      continue;
    }
    *topology_found = true;
    const int64_t package = read("physical_package_id").value_or(0);
    packages.insert(package);
    core_of[i] = Core(package, read("die_id").value_or(0), *core);
    cores.insert(core_of[i]);
  }
  budget->core_of_cpu.clear();
  for (const Core& c : core_of) {
    budget->core_of_cpu.push_back(
        static_cast<int>(std::distance(cores.begin(), cores.find(c))));
  }
  budget->sockets = std::max<int>(1, static_cast<int>(packages.size()));
  return static_cast<int>(cores.size());
}

// NUMA nodes the kernel shows (/sys/devices/system/node/nodeN); 1 if none.
int CountNumaNodes(const std::string& root) {
  std::error_code ec;
  int nodes = 0;
  for (const auto& entry :
       fs::directory_iterator(Under(root, "/sys/devices/system/node"), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 4 && name.rfind("node", 0) == 0 &&
        ParseInt(name.substr(4))) {
      ++nodes;
    }
  }
  return std::max(1, nodes);
}

std::string FormatCpus(double cpus) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", cpus);
  return buf;
}

}  // namespace

std::optional<std::vector<int>> ParseCpuList(std::string_view text) {
  std::vector<int> cpus;
  const std::string trimmed = Trim(text);
  if (trimmed.empty()) return cpus;
  for (const std::string& part : Split(trimmed, ',')) {
    const auto dash = part.find('-');
    const auto lo = ParseInt(Trim(part.substr(0, dash)));
    const auto hi =
        dash == std::string::npos ? lo : ParseInt(Trim(part.substr(dash + 1)));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi >= (1 << 20)) {
      return std::nullopt;
    }
    for (int64_t cpu = *lo; cpu <= *hi; ++cpu) {
      cpus.push_back(static_cast<int>(cpu));
    }
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

CpuBudget ProbeCpuBudget(const CpuProbeSources& sources) {
  CpuBudget budget;
  std::string& why = budget.derivation;

  // 1. Affinity mask.
  std::optional<std::vector<int>> allowed =
      sources.use_sched_getaffinity ? AffinityFromKernel()
                                    : AffinityFromStatus(sources.root);
  const char* affinity_source = sources.use_sched_getaffinity
                                    ? "sched_getaffinity"
                                    : "Cpus_allowed_list in /proc/self/status";
  if (!allowed || allowed->empty()) {
    auto online_text =
        ReadFile(Under(sources.root, "/sys/devices/system/cpu/online"));
    allowed = online_text ? ParseCpuList(*online_text) : std::nullopt;
    affinity_source = "/sys/devices/system/cpu/online (no affinity mask)";
    if (!allowed || allowed->empty()) {
      allowed = std::vector<int>{0};
      affinity_source = "nothing readable; assuming one CPU";
    }
  }
  budget.allowed_cpus = *allowed;
  why += "affinity: " + std::to_string(allowed->size()) + " CPUs allowed (" +
         FormatCpuList(*allowed) + "), from " + affinity_source + "\n";

  // 2. Physical cores among them.
  bool topology_found = false;
  budget.physical_cores =
      CountPhysicalCores(sources.root, *allowed, &topology_found, &budget);
  budget.numa_nodes = CountNumaNodes(sources.root);
  why +=
      "topology: " + std::to_string(budget.physical_cores) +
      " physical cores among them" +
      (topology_found ? " (SMT siblings counted once), from "
                        "/sys/devices/system/cpu/cpu*/topology\n"
                      : " (no topology files: each CPU counted as a core)\n");

  // 3. cgroup quotas, v2 and v1 (a hybrid system may have both).
  std::optional<Quota> tightest;
  for (bool v2 : {true, false}) {
    const char* label = v2 ? "cgroup v2" : "cgroup v1";
    if (auto quota = ReadCgroupQuota(sources.root, v2)) {
      why += std::string(label) + ": " + quota->description + " = " +
             FormatCpus(quota->cpus) + " CPUs\n";
      if (!tightest || quota->cpus < tightest->cpus) tightest = quota;
    } else {
      why += std::string(label) + ": no CPU quota\n";
    }
  }

  // 4. Result.
  int threads = budget.physical_cores;
  why += "result: " + std::to_string(budget.physical_cores) + " physical cores";
  if (tightest) {
    budget.cgroup_quota_cpus = tightest->cpus;
    const int from_quota = static_cast<int>(std::ceil(tightest->cpus - 1e-9));
    why += ", quota " + FormatCpus(tightest->cpus) + " rounded up to " +
           std::to_string(std::max(from_quota, 1));
    threads = std::min(threads, from_quota);
  }
  budget.threads = std::max(threads, 1);
  why += " -> " + std::to_string(budget.threads) + " threads";
  return budget;
}

}  // namespace weft::internal

namespace weft {

const CpuBudget& AutoCpuBudget() {
  static const CpuBudget budget =
      internal::ProbeCpuBudget(internal::CpuProbeSources{});
  return budget;
}

}  // namespace weft
