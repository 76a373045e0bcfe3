#include "weft/chrome_trace.h"

#include <map>
#include <nlohmann/json.hpp>

namespace weft {

std::string ChromeTraceJson(const RunMetadata& metadata) {
  using Json = nlohmann::json;
  constexpr int kPid = 1;
  const auto us = [&](int64_t ns) {
    return static_cast<double>(ns - metadata.run_start_ns) / 1000.0;
  };
  Json events = Json::array();
  std::map<int64_t, std::string> thread_names;
  for (const NodeExecStats& node : metadata.node_stats) {
    const std::string thread = node.pool == "caller"
                                   ? "caller (" + node.thread_name + ")"
                                   : node.thread_name;
    thread_names.emplace(node.os_thread_id, thread);
    events.push_back(
        {{"name", node.node_name},
         {"cat", "node"},
         {"ph", "X"},
         {"pid", kPid},
         {"tid", node.os_thread_id},
         {"ts", us(node.start_ns)},
         {"dur", static_cast<double>(node.end_ns - node.start_ns) / 1000.0},
         {"args",
          {{"op", node.op},
           {"device", node.device},
           {"pool", node.pool},
           {"output_shapes", node.output_shapes},
           {"queue_wait_us",
            static_cast<double>(node.start_ns - node.scheduled_ns) / 1000.0},
           {"intra_op_shards", node.intra_op_shards}}}});
    for (const ShardExecStats& shard : node.shards) {
      thread_names.emplace(shard.os_thread_id, shard.thread_name);
      events.push_back(
          {{"name", node.node_name + " (shard)"},
           {"cat", "intra-op"},
           {"ph", "X"},
           {"pid", kPid},
           {"tid", shard.os_thread_id},
           {"ts", us(shard.start_ns)},
           {"dur", static_cast<double>(shard.end_ns - shard.start_ns) / 1000.0},
           {"args", {{"node", node.node_name}, {"op", node.op}}}});
    }
  }
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", kPid},
                    {"args", {{"name", "weft"}}}});
  for (const auto& [tid, name] : thread_names) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", kPid},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  }
  Json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  // A model's names are bytes, and may not be UTF-8 (ONNX Runtime loads
  // such a model too): those bytes print as U+FFFD rather than throw.
  return trace.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace weft
