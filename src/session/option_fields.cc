#include "weft/option_fields.h"

#include <cmath>
#include <sstream>

namespace weft {
namespace {

constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

constexpr std::string_view kPrecisions[] = {"fp32", "bf16"};

// In the order of SessionOptions' declaration (weft/options.h holds each
// field's full contract; docs/configuration.md its peers' equivalents).
constexpr SessionOptionField kFields[] = {
    {"inter_op_parallelism_threads", "inter_op_parallelism_threads",
     OptionKind::kInt, &SessionOptions::inter_op_parallelism_threads,
     kMinInterOpThreads, kMaxThreads, "auto",
     "Threads that run independent nodes at once; -1: every node on the "
     "calling thread"},
    {"intra_op_parallelism_threads", "intra_op_parallelism_threads",
     OptionKind::kInt, &SessionOptions::intra_op_parallelism_threads, 0,
     kMaxThreads, "auto",
     "Threads one op splits over, the thread running it included"},
    {"use_per_session_threads", "use_per_session_threads", OptionKind::kBool,
     &SessionOptions::use_per_session_threads, 0, 0, "",
     "The session owns its pools instead of sharing the process's"},
    {"session_inter_op_thread_pools", "session_inter_op_thread_pool",
     OptionKind::kThreadPools, &SessionOptions::session_inter_op_thread_pools,
     0, kMaxThreads, "auto",
     "Inter-op pools that replace the default one; RunOptions picks one"},
    {"device_count", "device_count", OptionKind::kDeviceCount,
     &SessionOptions::device_count, 1, kMaxThreads, "",
     "{\"CPU\": n} makes the devices /cpu:0 ... /cpu:n-1"},
    {"allow_soft_placement", "allow_soft_placement", OptionKind::kBool,
     &SessionOptions::allow_soft_placement, 0, 0, "",
     "A node on a device that does not exist runs on /cpu:0"},
    {"log_device_placement", "log_device_placement", OptionKind::kBool,
     &SessionOptions::log_device_placement, 0, 0, "",
     "Print each node's device to stderr when the session is created"},
    {"operation_timeout_ms", "operation_timeout_in_ms", OptionKind::kInt64,
     &SessionOptions::operation_timeout_ms, 0, kNoMax, "no deadline",
     "Deadline of a Run whose RunOptions sets none, in ms"},
    {"memory_limit_bytes", "memory_limit_bytes", OptionKind::kInt64,
     &SessionOptions::memory_limit_bytes, 0, kNoMax, "no limit",
     "Most bytes of tensors one Run may hold at once"},
    {"batch_invariant", "batch_invariant", OptionKind::kBool,
     &SessionOptions::batch_invariant, 0, 0, "",
     "A row's outputs are bitwise the same alone or in any batch"},
    {"inter_op_spin_us", "inter_op_spin_us", OptionKind::kInt,
     &SessionOptions::inter_op_spin_us, -1, kMaxSpinUs, "park at once",
     "How long idle inter-op workers spin before parking; -1: the process "
     "default"},
    {"intra_op_spin_us", "intra_op_spin_us", OptionKind::kInt,
     &SessionOptions::intra_op_spin_us, -1, kMaxSpinUs, "park at once",
     "How long idle intra-op workers spin before parking; -1: the process "
     "default"},
    {"inter_op_pin_cpus", "inter_op_pin_cpus", OptionKind::kCpuList,
     &SessionOptions::inter_op_pin_cpus, 0, 0, "",
     "CPUs inter-op worker i runs on (list[i % size]); empty: the process "
     "default"},
    {"intra_op_pin_cpus", "intra_op_pin_cpus", OptionKind::kCpuList,
     &SessionOptions::intra_op_pin_cpus, 0, 0, "",
     "CPUs intra-op worker i runs on (list[i % size]); empty: the process "
     "default"},
    {"inline_node_cost_ns", "inline_node_cost_ns", OptionKind::kDouble,
     &SessionOptions::inline_node_cost_ns, 0, kNoMax, "the rule is off",
     "A ready node cheaper than this runs in the thread that made it ready"},
    {"join_inline_cost_ns", "join_inline_cost_ns", OptionKind::kDouble,
     &SessionOptions::join_inline_cost_ns, 0, kNoMax, "the rule is off",
     "The shorter of two joining nodes below this runs before the longer, on "
     "its thread"},
    {"optimize_graph", "optimize_graph", OptionKind::kBool,
     &SessionOptions::optimize_graph, 0, 0, "",
     "Rewrite the graph with weft's passes when the session is created"},
    {"disabled_graph_passes", "disabled_graph_passes", OptionKind::kNameList,
     &SessionOptions::disabled_graph_passes, 0, 0, "",
     "Graph passes to skip, by name (weft info --passes)"},
    {"enable_mem_pattern", "enable_mem_pattern", OptionKind::kBool,
     &SessionOptions::enable_mem_pattern, 0, 0, "",
     "Place a steady Run's intermediate tensors in one planned arena"},
    {"precision", "precision", OptionKind::kChoice, &SessionOptions::precision,
     0, 0, "",
     "fp32, or bf16: float convolutions and weight products in bfloat16 "
     "with float32 sums",
     kPrecisions},
};

// A value as written: integers without a fraction or an exponent.
std::string Number(double value) {
  if (std::isfinite(value) && value == std::trunc(value) &&
      std::fabs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace

std::string_view OptionKindName(OptionKind kind) {
  switch (kind) {
    case OptionKind::kInt:
      return "int";
    case OptionKind::kInt64:
      return "int64";
    case OptionKind::kBool:
      return "bool";
    case OptionKind::kDouble:
      return "double";
    case OptionKind::kCpuList:
      return "cpu list";
    case OptionKind::kNameList:
      return "name list";
    case OptionKind::kDeviceCount:
      return "device count";
    case OptionKind::kThreadPools:
      return "thread pools";
    case OptionKind::kChoice:
      return "choice";
  }
  return "?";
}

std::span<const SessionOptionField> SessionOptionFields() { return kFields; }

const SessionOptionField* FindSessionOptionField(std::string_view name) {
  for (const SessionOptionField& field : kFields) {
    if (field.name == name || field.config_name == name) return &field;
  }
  return nullptr;
}

std::string DefaultValueText(const SessionOptionField& field) {
  static const SessionOptions defaults;
  return std::visit(
      [](auto member) -> std::string {
        const auto& value = defaults.*member;
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, bool>) {
          return value ? "true" : "false";
        } else if constexpr (std::is_arithmetic_v<T>) {
          return Number(static_cast<double>(value));
        } else if constexpr (std::is_same_v<T, std::string>) {
          return value;
        } else if constexpr (std::is_same_v<T, std::map<std::string, int>>) {
          return value.empty() ? "{}" : "{...}";
        } else {
          return value.empty() ? "[]" : "[...]";
        }
      },
      field.member);
}

std::string RangeText(const SessionOptionField& field) {
  switch (field.kind) {
    case OptionKind::kInt:
    case OptionKind::kInt64:
    case OptionKind::kDouble:
    case OptionKind::kDeviceCount:
    case OptionKind::kThreadPools:
      if (field.max == kNoMax) return ">= " + std::to_string(field.min);
      return std::to_string(field.min) + " to " + std::to_string(field.max);
    case OptionKind::kChoice: {
      std::string text;
      for (std::string_view choice : field.choices) {
        text += (text.empty() ? "" : ", ") + std::string(choice);
      }
      return text;
    }
    default:
      return "";
  }
}

Status CheckOptionRange(const SessionOptionField& field, double value,
                        std::string_view what) {
  const bool in_range =
      std::isfinite(value) && value >= static_cast<double>(field.min) &&
      (field.max == kNoMax || value <= static_cast<double>(field.max));
  if (in_range) return Status::OK();
  std::string message = "SessionOptions." +
                        std::string(what.empty() ? field.name : what) + " = " +
                        Number(value);
  if (field.max == kNoMax) {
    message += " must be ";
    if (field.kind == OptionKind::kDouble) message += "a finite number ";
    message += ">= " + std::to_string(field.min);
  } else {
    message += " is out of range [" + std::to_string(field.min) + ", " +
               std::to_string(field.max) + "]";
  }
  if (!field.zero_means.empty()) {
    message += " (0: " + std::string(field.zero_means) + ")";
  }
  return InvalidArgumentError(message);
}

}  // namespace weft
