#include "session/session_options.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "framework/suggest.h"
#include "weft/graph_passes.h"
#include "weft/threading.h"

namespace weft::internal {
namespace {

Status InRange(int64_t value, int64_t lo, int64_t hi,
               const std::string& field) {
  if (value >= lo && value <= hi) return Status::OK();
  return InvalidArgumentError("SessionOptions." + field + " = " +
                              std::to_string(value) + " is out of range [" +
                              std::to_string(lo) + ", " + std::to_string(hi) +
                              "]");
}

Status CheckThreads(const SessionOptions& o) {
  WEFT_RETURN_IF_ERROR(InRange(o.inter_op_parallelism_threads,
                               kMinInterOpThreads, kMaxThreads,
                               "inter_op_parallelism_threads"));
  WEFT_RETURN_IF_ERROR(InRange(o.intra_op_parallelism_threads, 0, kMaxThreads,
                               "intra_op_parallelism_threads"));
  for (size_t i = 0; i < o.session_inter_op_thread_pools.size(); ++i) {
    WEFT_RETURN_IF_ERROR(InRange(o.session_inter_op_thread_pools[i].num_threads,
                                 0, kMaxThreads,
                                 "session_inter_op_thread_pools[" +
                                     std::to_string(i) + "].num_threads"));
  }
  WEFT_RETURN_IF_ERROR(
      InRange(o.inter_op_spin_us, -1, kMaxSpinUs, "inter_op_spin_us"));
  WEFT_RETURN_IF_ERROR(
      InRange(o.intra_op_spin_us, -1, kMaxSpinUs, "intra_op_spin_us"));
  const std::vector<int>& allowed = AutoCpuBudget().allowed_cpus;
  for (const auto* list : {&o.inter_op_pin_cpus, &o.intra_op_pin_cpus}) {
    for (int cpu : *list) {
      if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) {
        return InvalidArgumentError("SessionOptions pin CPU " +
                                    std::to_string(cpu) +
                                    " is not in this process's affinity mask");
      }
    }
  }
  return Status::OK();
}

Status CheckDevices(const SessionOptions& o) {
  for (const auto& [device, count] : o.device_count) {
    if (device == "CPU") {
      if (count < 1 || count > kMaxThreads) {
        return InvalidArgumentError(
            "SessionOptions.device_count[\"CPU\"] = " + std::to_string(count) +
            " must be in [1, " + std::to_string(kMaxThreads) + "]");
      }
    } else if (count != 0) {
      return InvalidArgumentError(
          "SessionOptions.device_count names device type '" + device +
          "'; weft runs on CPU only (use {\"CPU\": n})");
    }
  }
  return Status::OK();
}

Status CheckLimits(const SessionOptions& o) {
  if (o.memory_limit_bytes < 0) {
    return InvalidArgumentError("SessionOptions.memory_limit_bytes = " +
                                std::to_string(o.memory_limit_bytes) +
                                " must be >= 0 (0: no limit)");
  }
  if (o.operation_timeout_ms < 0) {
    return InvalidArgumentError("SessionOptions.operation_timeout_ms = " +
                                std::to_string(o.operation_timeout_ms) +
                                " must be >= 0");
  }
  return Status::OK();
}

// The executor's cost thresholds: a NaN or a negative one would silently
// turn a rule off or on for every node.
Status CheckCostThresholds(const SessionOptions& o) {
  const std::pair<const char*, double> thresholds[] = {
      {"inline_node_cost_ns", o.inline_node_cost_ns},
      {"join_inline_cost_ns", o.join_inline_cost_ns}};
  for (const auto& [field, ns] : thresholds) {
    if (!(ns >= 0) || std::isinf(ns)) {
      return InvalidArgumentError(std::string("SessionOptions.") + field +
                                  " = " + std::to_string(ns) +
                                  " must be a finite number of ns >= 0 "
                                  "(0 turns the rule off)");
    }
  }
  return Status::OK();
}

Status CheckGraphPasses(const SessionOptions& o) {
  std::vector<std::string> names;
  for (const GraphPassInfo& pass : GraphPasses()) names.push_back(pass.name);
  for (const std::string& name : o.disabled_graph_passes) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return InvalidArgumentError(
          "SessionOptions.disabled_graph_passes names '" + name +
          "', which is not a graph pass" + DidYouMean(name, names) +
          " (`weft info --passes` lists them)");
    }
  }
  return Status::OK();
}

}  // namespace

Status ValidateSessionOptions(const SessionOptions& options) {
  WEFT_RETURN_IF_ERROR(CheckDevices(options));
  WEFT_RETURN_IF_ERROR(CheckGraphPasses(options));
  WEFT_RETURN_IF_ERROR(CheckLimits(options));
  WEFT_RETURN_IF_ERROR(CheckCostThresholds(options));
  return CheckThreads(options);
}

}  // namespace weft::internal
