#include "session/session_options.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/suggest.h"
#include "kernels/bf16_gemm.h"
#include "weft/graph_passes.h"
#include "weft/option_fields.h"
#include "weft/threading.h"

namespace weft::internal {
namespace {

Status CheckCpus(const SessionOptionField& field,
                 const std::vector<int>& cpus) {
  const std::vector<int>& allowed = AutoCpuBudget().allowed_cpus;
  for (int cpu : cpus) {
    if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) {
      return InvalidArgumentError("SessionOptions." + std::string(field.name) +
                                  ": pin CPU " + std::to_string(cpu) +
                                  " is not in this process's affinity mask");
    }
  }
  return Status::OK();
}

Status CheckDevices(const SessionOptionField& field,
                    const std::map<std::string, int>& devices) {
  for (const auto& [device, count] : devices) {
    if (device == "CPU") {
      WEFT_RETURN_IF_ERROR(
          CheckOptionRange(field, count, "device_count[\"CPU\"]"));
    } else if (count != 0) {
      return InvalidArgumentError(
          "SessionOptions.device_count names device type '" + device +
          "'; weft runs on CPU only (use {\"CPU\": n})");
    }
  }
  return Status::OK();
}

Status CheckPools(const SessionOptionField& field,
                  const std::vector<ThreadPoolSpec>& pools) {
  for (size_t i = 0; i < pools.size(); ++i) {
    WEFT_RETURN_IF_ERROR(CheckOptionRange(
        field, pools[i].num_threads,
        std::string(field.name) + "[" + std::to_string(i) + "].num_threads"));
  }
  return Status::OK();
}

Status CheckGraphPasses(const std::vector<std::string>& disabled) {
  std::vector<std::string> names;
  for (const GraphPassInfo& pass : GraphPasses()) names.push_back(pass.name);
  for (const std::string& name : disabled) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return InvalidArgumentError(
          "SessionOptions.disabled_graph_passes names '" + name +
          "', which is not a graph pass" + DidYouMean(name, names) +
          " (`weft info --passes` lists them)");
    }
  }
  return Status::OK();
}

// A kChoice field's value: one of its choices; precision also against
// the CPU.
Status CheckChoice(const SessionOptionField& field, const std::string& value) {
  const std::vector<std::string> choices(field.choices.begin(),
                                         field.choices.end());
  if (std::find(choices.begin(), choices.end(), value) == choices.end()) {
    return InvalidArgumentError("SessionOptions." + std::string(field.name) +
                                " = '" + value + "' is not one of " +
                                RangeText(field) + DidYouMean(value, choices));
  }
  if (field.name == "precision") {
    return CheckPrecisionForCpu(value, DescribeCpuBf16Units());
  }
  return Status::OK();
}

// One field's value against the rule of its kind.
Status CheckField(const SessionOptionField& field,
                  const SessionOptions& options) {
  return std::visit(
      [&](auto member) -> Status {
        const auto& value = options.*member;
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, bool>) {
          return Status::OK();
        } else if constexpr (std::is_arithmetic_v<T>) {
          return CheckOptionRange(field, static_cast<double>(value));
        } else if constexpr (std::is_same_v<T, std::vector<int>>) {
          return CheckCpus(field, value);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return CheckGraphPasses(value);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return CheckChoice(field, value);
        } else if constexpr (std::is_same_v<T, std::map<std::string, int>>) {
          return CheckDevices(field, value);
        } else {
          return CheckPools(field, value);
        }
      },
      field.member);
}

}  // namespace

Status CheckPrecisionForCpu(const std::string& precision,
                            const std::string& cpu_units) {
  // AMX-BF16 CPUs have AVX-512 BF16 too; weft's products run on it.
  if (precision != "bf16" ||
      cpu_units.find("AVX-512 BF16") != std::string::npos) {
    return Status::OK();
  }
  return InvalidArgumentError(
      "SessionOptions.precision = bf16 needs a CPU that multiplies bf16 "
      "in hardware (AVX-512 BF16, which every AMX-BF16 CPU also has); this "
      "one's bf16 units: " +
      cpu_units + ". Use precision fp32 (the default) on it");
}

Status ValidateSessionOptions(const SessionOptions& options) {
  for (const SessionOptionField& field : SessionOptionFields()) {
    WEFT_RETURN_IF_ERROR(CheckField(field, options));
  }
  return Status::OK();
}

}  // namespace weft::internal
