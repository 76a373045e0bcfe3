// weft info --passes [GRAPH]: the graph passes a session runs when it is
// created, and, for a graph, what each of them changes in it.
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"
#include "weft/graph_passes.h"

namespace weft::cli {
namespace {

std::map<std::string, int> OpCounts(const Graph& graph) {
  std::map<std::string, int> counts;
  for (const NodeDef& node : graph.nodes()) ++counts[node.op];
  return counts;
}

// The column the passes' names (and the op names under them) fill: the
// longest pass name.
int NameWidth() {
  size_t width = 0;
  for (const GraphPassInfo& pass : GraphPasses()) {
    width = std::max(width, pass.name.size());
  }
  return static_cast<int>(width);
}

int ListPasses(bool json) {
  if (json) {
    nlohmann::json passes = nlohmann::json::array();
    for (const GraphPassInfo& pass : GraphPasses()) {
      passes.push_back({{"name", pass.name}, {"summary", pass.summary}});
    }
    PrintJson(nlohmann::json{{"passes", passes}});
    return kExitOk;
  }
  std::printf(
      "graph passes, in the order a session runs them when it is created\n"
      "(turn one off with --set disabled_graph_passes=NAME, all with --set "
      "optimize_graph=false):\n");
  for (const GraphPassInfo& pass : GraphPasses()) {
    std::printf("  %-*s %s\n", NameWidth(), pass.name.c_str(),
                pass.summary.c_str());
  }
  return kExitOk;
}

}  // namespace

int PassesCommand(const std::string& path,
                  const std::vector<std::string>& disabled, bool json) {
  if (path.empty()) return ListPasses(json);
  auto model = LoadModel(path);
  if (!model.ok()) return Fail(kExitBadInput, model.status().ToString());
  const Graph& given = model->file.graph;
  GraphPassOptions options;
  options.disabled = disabled;
  auto optimized = OptimizeGraph(given, options);
  if (!optimized.ok()) {
    return Fail(kExitBadInput, optimized.status().ToString());
  }
  const std::map<std::string, int> before = OpCounts(given);
  const std::map<std::string, int> after = OpCounts(optimized->graph);
  if (json) {
    nlohmann::json passes = nlohmann::json::array();
    for (const GraphPassResult& ran : optimized->passes) {
      passes.push_back({{"name", ran.pass}, {"rewrites", ran.rewrites}});
    }
    nlohmann::json out = {{"graph", path},
                          {"nodes_given", given.nodes().size()},
                          {"nodes_optimized", optimized->graph.nodes().size()},
                          {"passes", passes},
                          {"ops_given", before},
                          {"ops_optimized", after}};
    PrintJson(out);
    return kExitOk;
  }
  std::printf("%s: %zu nodes as given, %zu after the passes\n", path.c_str(),
              given.nodes().size(), optimized->graph.nodes().size());
  if (optimized->passes.empty()) {
    std::printf("  (the graph does not compile as given: no pass ran)\n");
  }
  for (const GraphPassResult& ran : optimized->passes) {
    std::printf("  %-*s %d rewrite%s\n", NameWidth(), ran.pass.c_str(),
                ran.rewrites, ran.rewrites == 1 ? "" : "s");
  }
  std::printf("ops that changed count:\n");
  std::map<std::string, std::pair<int, int>> changed;
  for (const auto& [op, n] : before) changed[op].first = n;
  for (const auto& [op, n] : after) changed[op].second = n;
  for (const auto& [op, counts] : changed) {
    if (counts.first == counts.second) continue;
    std::printf("  %-*s %4d -> %d\n", NameWidth(), op.c_str(), counts.first,
                counts.second);
  }
  return kExitOk;
}

}  // namespace weft::cli
