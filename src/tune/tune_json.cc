#include <nlohmann/json.hpp>

#include "weft/tune.h"

namespace weft::tune {
namespace {

using nlohmann::json;

json SettingJson(const SettingResult& r) {
  json out = {{"inter", r.setting.inter},
              {"intra", r.setting.intra},
              {"inter_op_parallelism_threads", r.setting.inter},
              {"intra_op_parallelism_threads", r.setting.intra},
              {"predicted_ms", r.predicted_ms},
              {"measured_ms", nullptr}};
  if (r.measured_ms) out["measured_ms"] = *r.measured_ms;
  return out;
}

}  // namespace

std::string TuneResultJson(const std::string& graph, const TuneResult& result,
                           int indent) {
  const GraphProfile& p = result.profile;
  json settings = json::array();
  for (const SettingResult& r : result.settings) {
    settings.push_back(SettingJson(r));
  }
  json path = json::array();
  for (int i : p.critical_path) path.push_back(p.nodes[i].name);
  // One entry per op kind: its speed-up on 1, 2, ... intra-op threads.
  json speedup = json::array();
  for (const auto& [op, curve] : p.speedup) {
    speedup.push_back({{"op", op}, {"speedup", curve}});
  }
  json nodes = json::array();
  for (const NodeProfile& node : p.nodes) {
    nodes.push_back({{"name", node.name},
                     {"op", node.op},
                     {"serial_ms", node.serial_ms},
                     {"predecessors", node.predecessors}});
  }
  json overhead_at = json::array();
  for (const auto& [k, ms] : p.overhead_at) {
    overhead_at.push_back({{"intra", k}, {"overhead_ms", ms}});
  }
  json timeline = json::array();
  for (const TimelineEntry& e : result.timeline) {
    timeline.push_back({{"node", p.nodes[e.node].name},
                        {"op", p.nodes[e.node].op},
                        {"start_ms", e.start_ms},
                        {"end_ms", e.end_ms},
                        {"lane", e.lane}});
  }
  const json out = {{"graph", graph},
                    {"cores", result.cores},
                    {"machine_cores", result.machine_cores},
                    {"measured", result.measured},
                    {"best", SettingJson(result.settings[result.best])},
                    {"settings", settings},
                    {"work_ms", p.work_ms},
                    {"span_ms", p.span_ms},
                    {"parallelism", p.parallelism()},
                    {"splitting_share", p.SplittingShare()},
                    {"overhead_ms", p.overhead_ms},
                    {"overhead_at_intra", overhead_at},
                    {"critical_path", path},
                    {"speedup", speedup},
                    {"nodes", nodes},
                    {"timeline", timeline},
                    {"timeline_measured", result.timeline_measured},
                    {"explanation", result.explanation}};
  // Node names that are not UTF-8 print as U+FFFD rather than throw.
  return out.dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace weft::tune
