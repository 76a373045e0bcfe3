// weft info: what this machine offers and how weft's "auto" was derived.
#include <unistd.h>

#include <CLI/Version.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "threading/cpu_info.h"

namespace weft::cli {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::vector<std::string> SimdFeatures() {
  std::vector<std::string> found;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) found.push_back("sse4.2");
  if (__builtin_cpu_supports("avx")) found.push_back("avx");
  if (__builtin_cpu_supports("avx2")) found.push_back("avx2");
  if (__builtin_cpu_supports("fma")) found.push_back("fma");
  if (__builtin_cpu_supports("avx512f")) found.push_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) found.push_back("avx512bw");
  if (__builtin_cpu_supports("avx512vl")) found.push_back("avx512vl");
  if (__builtin_cpu_supports("avx512vnni")) found.push_back("avx512vnni");
#endif
  return found;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : " ") + item;
  return out.empty() ? "none" : out;
}

}  // namespace

int InfoCommand(bool json) {
  const CpuBudget& budget = AutoCpuBudget();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<std::string> env;
  for (const char* name :
       {"WEFT_NUM_INTEROP_THREADS", "WEFT_NUM_INTRAOP_THREADS"}) {
    if (const char* value = std::getenv(name)) {
      env.push_back(std::string(name) + "=" + value);
    }
  }
  const int inter = threading::GetInterOpParallelismThreads();
  const int intra = threading::GetIntraOpParallelismThreads();
  const std::string compiler = "g++ " __VERSION__;
  const std::string json_version =
      std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
      std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
      std::to_string(NLOHMANN_JSON_VERSION_PATCH);
  if (json) {
    nlohmann::json out = {
        {"cpu_model", CpuModel()},
        {"logical_cpus_online", online},
        {"affinity", internal::FormatCpuList(budget.allowed_cpus)},
        {"physical_cores_allowed", budget.physical_cores},
        {"cgroup_quota_cpus", budget.cgroup_quota_cpus},
        {"auto_threads", budget.threads},
        {"derivation", budget.derivation},
        {"effective_inter_op_threads", inter},
        {"effective_intra_op_threads", intra},
        {"environment", env},
        {"simd", SimdFeatures()},
        {"versions",
         {{"weft", WEFT_VERSION},
          {"compiler", compiler},
          {"nlohmann_json", json_version},
          {"CLI11", CLI11_VERSION}}}};
    std::printf("%s\n", out.dump(1).c_str());
    return kExitOk;
  }
  std::printf("CPU model:           %s\n", CpuModel().c_str());
  std::printf("logical CPUs online: %ld\n", online);
  std::printf("affinity mask:       %s (%zu CPUs)\n",
              internal::FormatCpuList(budget.allowed_cpus).c_str(),
              budget.allowed_cpus.size());
  std::printf("physical cores:      %d among the allowed CPUs\n",
              budget.physical_cores);
  if (budget.cgroup_quota_cpus > 0) {
    std::printf("cgroup CPU quota:    %.2f CPUs\n", budget.cgroup_quota_cpus);
  } else {
    std::printf("cgroup CPU quota:    none\n");
  }
  std::printf("auto thread count:   %d, derived as:\n", budget.threads);
  std::string line;
  for (char c : budget.derivation + "\n") {
    if (c == '\n') {
      if (!line.empty()) std::printf("  %s\n", line.c_str());
      line.clear();
    } else {
      line += c;
    }
  }
  std::printf("effective counts:    inter-op %d, intra-op %d\n", inter, intra);
  std::printf("WEFT_* variables:    %s\n", Join(env).c_str());
  std::printf("SIMD:                %s\n", Join(SimdFeatures()).c_str());
  std::printf("versions:            weft %s; %s; nlohmann_json %s; CLI11 %s\n",
              WEFT_VERSION, compiler.c_str(), json_version.c_str(),
              CLI11_VERSION);
  return kExitOk;
}

}  // namespace weft::cli
