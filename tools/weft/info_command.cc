// weft info: what this machine offers and how weft's "auto" was derived.
#include <unistd.h>

#include <CLI/Version.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_json.h"
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

// shape: an array of sizes, a symbolic dimension as its name, one of
// unknown size as null; null for an unknown rank.
nlohmann::json ValueInfoJson(const OnnxValueInfo& v) {
  nlohmann::json shape = nullptr;
  if (v.rank_known) {
    shape = nlohmann::json::array();
    for (const OnnxDim& d : v.dims) {
      if (d.fixed()) {
        shape.push_back(d.size);
      } else if (!d.symbol.empty()) {
        shape.push_back(d.symbol);
      } else {
        shape.push_back(nullptr);
      }
    }
  }
  return {{"name", v.name}, {"type", v.type_name}, {"shape", shape}};
}

std::string OpsetList(const OnnxModelSummary& m) {
  std::string out;
  for (const auto& [domain, version] : m.opsets) {
    out += (out.empty() ? "" : ", ") +
           (domain.empty() ? std::string("ai.onnx") : domain) + " " +
           std::to_string(version);
  }
  return out;
}

// weft info MODEL.onnx: what the model holds and which of its ops weft
// lacks, before anyone runs it.
int ModelInfo(const std::string& path, bool json) {
  auto model = InspectOnnxModel(path);
  if (!model.ok()) return Fail(kExitBadInput, model.status().ToString());
  int64_t unsupported = 0;
  for (const OnnxOpUse& op : model->ops) unsupported += op.supported ? 0 : 1;
  if (json) {
    nlohmann::json out = {
        {"model", path},
        {"producer", model->producer_name + " " + model->producer_version},
        {"ir_version", model->ir_version},
        {"opsets", nlohmann::json::object()},
        {"inputs", nlohmann::json::array()},
        {"outputs", nlohmann::json::array()},
        {"parameters", model->parameter_count},
        {"parameter_bytes", model->parameter_bytes},
        {"ops", nlohmann::json::array()},
        {"unsupported_ops", unsupported}};
    for (const auto& [domain, version] : model->opsets) {
      out["opsets"][domain.empty() ? "ai.onnx" : domain] = version;
    }
    for (const auto& v : model->inputs)
      out["inputs"].push_back(ValueInfoJson(v));
    for (const auto& v : model->outputs) {
      out["outputs"].push_back(ValueInfoJson(v));
    }
    for (const OnnxOpUse& op : model->ops) {
      out["ops"].push_back({{"domain", op.domain},
                            {"op", op.op_type},
                            {"count", op.count},
                            {"supported", op.supported}});
    }
    std::printf("%s\n", out.dump(1).c_str());
    return kExitOk;
  }
  std::printf("model:       %s\n", path.c_str());
  std::printf("producer:    %s %s\n", model->producer_name.c_str(),
              model->producer_version.c_str());
  std::printf("IR version:  %lld\n", static_cast<long long>(model->ir_version));
  std::printf("opsets:      %s\n", OpsetList(*model).c_str());
  std::printf("parameters:  %lld (%.1f MB)\n",
              static_cast<long long>(model->parameter_count),
              static_cast<double>(model->parameter_bytes) / 1e6);
  std::printf("inputs:\n");
  for (const auto& v : model->inputs) {
    std::printf("  %-24s %-16s %s\n", v.name.c_str(), v.type_name.c_str(),
                v.ShapeString().c_str());
  }
  std::printf("outputs:\n");
  for (const auto& v : model->outputs) {
    std::printf("  %-24s %-16s %s\n", v.name.c_str(), v.type_name.c_str(),
                v.ShapeString().c_str());
  }
  std::printf("ops (%zu kinds, %lld unsupported):\n", model->ops.size(),
              static_cast<long long>(unsupported));
  for (const OnnxOpUse& op : model->ops) {
    const std::string name =
        op.domain.empty() ? op.op_type : op.domain + "." + op.op_type;
    std::printf("  %6lld  %s%s\n", static_cast<long long>(op.count),
                name.c_str(), op.supported ? "" : "  [unsupported]");
  }
  return kExitOk;
}

}  // namespace

int InfoCommand(const std::string& model, bool json) {
  if (!model.empty()) return ModelInfo(model, json);
  const CpuBudget& budget = AutoCpuBudget();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<std::pair<std::string, std::string>> env;
  for (const char* name :
       {"WEFT_NUM_INTEROP_THREADS", "WEFT_NUM_INTRAOP_THREADS"}) {
    if (const char* value = std::getenv(name)) env.emplace_back(name, value);
  }
  const int inter = threading::GetInterOpParallelismThreads();
  const int intra = threading::GetIntraOpParallelismThreads();
  const std::string compiler = CompilerName();
  const std::string json_version =
      std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
      std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
      std::to_string(NLOHMANN_JSON_VERSION_PATCH);
  if (json) {
    nlohmann::json environment = nlohmann::json::array();
    for (const auto& [name, value] : env) {
      environment.push_back({{"name", name}, {"value", value}});
    }
    nlohmann::json derivation = nlohmann::json::array();
    std::istringstream lines(budget.derivation);
    for (std::string line; std::getline(lines, line);) {
      derivation.push_back(line);
    }
    nlohmann::json out = {{"cpu_model", CpuModel()},
                          {"logical_cpus_online", online},
                          {"allowed_cpus", budget.allowed_cpus},
                          {"physical_cores_allowed", budget.physical_cores},
                          {"cgroup_quota_cpus", budget.cgroup_quota_cpus},
                          {"auto_threads", budget.threads},
                          {"derivation", derivation},
                          {"environment", environment},
                          {"simd", SimdFeatures()},
                          {"versions",
                           {{"weft", WEFT_VERSION},
                            {"compiler", compiler},
                            {"nlohmann_json", json_version},
                            {"CLI11", CLI11_VERSION}}}};
    AddThreadCounts(out, inter, intra);
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
  std::vector<std::string> env_lines;
  for (const auto& [name, value] : env) env_lines.push_back(name + "=" + value);
  std::printf("WEFT_* variables:    %s\n", Join(env_lines).c_str());
  std::printf("SIMD:                %s\n", Join(SimdFeatures()).c_str());
  std::printf("versions:            weft %s; %s; nlohmann_json %s; CLI11 %s\n",
              WEFT_VERSION, compiler.c_str(), json_version.c_str(),
              CLI11_VERSION);
  return kExitOk;
}

}  // namespace weft::cli
