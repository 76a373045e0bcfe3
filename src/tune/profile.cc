#include "tune/profile.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <unordered_map>

namespace weft::tune {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The value at k of the points (count -> value), linear between two
// counts, the nearest end's value outside them. points is not empty.
double LinearAt(const std::map<int, double>& points, int k) {
  auto above = points.lower_bound(k);
  if (above == points.end()) return points.rbegin()->second;
  if (above->first == k || above == points.begin()) return above->second;
  auto below = std::prev(above);
  const double t =
      static_cast<double>(k - below->first) / (above->first - below->first);
  return below->second + t * (above->second - below->second);
}

}  // namespace

double GraphProfile::Speedup(const std::string& op, int k) const {
  auto it = speedup.find(op);
  if (it == speedup.end() || it->second.empty() || k <= 1) return 1.0;
  const int index = std::min<int>(k, static_cast<int>(it->second.size())) - 1;
  return it->second[index];
}

double GraphProfile::SplittingShare() const {
  if (work_ms <= 0) return 0;
  double split = 0;
  for (const NodeProfile& node : nodes) {
    if (Splits(node.op)) split += node.serial_ms;
  }
  return split / work_ms;
}

double GraphProfile::SplitNodeShare() const {
  if (work_ms <= 0) return 0;
  double split = 0;
  for (const NodeProfile& node : nodes) {
    if (split_nodes.count(node.name)) split += node.serial_ms;
  }
  return split / work_ms;
}

double GraphProfile::OverheadMs(int intra) const {
  return overhead_at.empty() ? overhead_ms : LinearAt(overhead_at, intra);
}

NodeTimes MedianNodeTimes(const std::vector<RunMetadata>& runs,
                          bool only_split) {
  std::map<std::string, std::vector<double>> samples;
  std::set<std::string> split;
  for (const RunMetadata& run : runs) {
    for (const NodeExecStats& stats : run.node_stats) {
      samples[stats.node_name].push_back(
          static_cast<double>(stats.end_ns - stats.start_ns) / 1e6);
      if (stats.intra_op_shards > 1) split.insert(stats.node_name);
    }
  }
  NodeTimes medians;
  double sum_of_medians = 0;
  for (auto& [name, values] : samples) {
    if (!only_split || split.count(name)) {
      medians[name] = Median(values);
      sum_of_medians += medians[name];
    }
  }
  std::vector<double> run_totals;
  for (const RunMetadata& run : runs) {
    double total = 0;
    for (const NodeExecStats& stats : run.node_stats) {
      if (medians.count(stats.node_name)) {
        total += static_cast<double>(stats.end_ns - stats.start_ns) / 1e6;
      }
    }
    run_totals.push_back(total);
  }
  if (sum_of_medians > 0) {
    const double scale = Median(std::move(run_totals)) / sum_of_medians;
    for (auto& [name, ms] : medians) ms *= scale;
  }
  return medians;
}

std::vector<ExecutedNode> ExecutedNodes(const RunMetadata& run) {
  std::vector<ExecutedNode> nodes;
  for (const NodeExecStats& stats : run.node_stats) {
    if (stats.iteration >= 0) continue;  // A body's node.
    nodes.push_back({stats.node_name, stats.op, stats.input_nodes});
  }
  return nodes;
}

GraphProfile BuildProfile(const std::vector<ExecutedNode>& executed,
                          const NodeTimes& serial,
                          const std::map<int, NodeTimes>& times_at,
                          const std::map<int, double>& run_ms_at, int cores) {
  GraphProfile profile;
  profile.cores = cores;
  WEFT_CHECK(run_ms_at.count(1) == 1, "the serial Run's time is required");
  profile.serial_run_ms = run_ms_at.at(1);
  std::unordered_map<std::string, int> index;
  std::vector<const ExecutedNode*> sources;
  for (const ExecutedNode& node : executed) {
    auto it = serial.find(node.name);
    if (it == serial.end() || index.count(node.name)) continue;
    index[node.name] = static_cast<int>(profile.nodes.size());
    profile.nodes.push_back({node.name, node.op, it->second, {}, {}});
    sources.push_back(&node);
  }
  for (size_t i = 0; i < profile.nodes.size(); ++i) {
    std::set<int> predecessors;
    for (const std::string& input : sources[i]->inputs) {
      if (auto it = index.find(input); it != index.end()) {
        predecessors.insert(it->second);
      }
    }
    profile.nodes[i].predecessors.assign(predecessors.begin(),
                                         predecessors.end());
  }
  // Start order need not be a topological one (a fed graph, a test): sort
  // (Kahn).
  const int n = static_cast<int>(profile.nodes.size());
  std::vector<int> pending(n);
  std::vector<std::vector<int>> successors(n);
  for (int i = 0; i < n; ++i) {
    pending[i] = static_cast<int>(profile.nodes[i].predecessors.size());
    for (int p : profile.nodes[i].predecessors) successors[p].push_back(i);
  }
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) order.push_back(i);
  }
  for (size_t k = 0; k < order.size(); ++k) {
    for (int s : successors[order[k]]) {
      if (--pending[s] == 0) order.push_back(s);
    }
  }
  std::vector<int> position(n);
  for (int k = 0; k < n; ++k) position[order[k]] = k;
  std::vector<NodeProfile> sorted;
  for (int i : order) sorted.push_back(std::move(profile.nodes[i]));
  for (NodeProfile& node : sorted) {
    for (int& p : node.predecessors) p = position[p];
  }
  profile.nodes = std::move(sorted);
  for (int i = 0; i < n; ++i) {
    for (int p : profile.nodes[i].predecessors) {
      profile.nodes[p].successors.push_back(i);
    }
  }

  // Speed-up curves per op: serial time over time at k, summed per op, at
  // the measured k; linear in between.
  std::map<std::string, double> serial_sum;
  std::map<std::string, std::map<int, double>> at_k_sum;
  for (const NodeProfile& node : profile.nodes) {
    serial_sum[node.op] += node.serial_ms;
    for (const auto& [k, times] : times_at) {
      auto it = times.find(node.name);
      at_k_sum[node.op][k] += it != times.end() ? it->second : node.serial_ms;
    }
  }
  const int largest = times_at.empty() ? 1 : times_at.rbegin()->first;
  for (const auto& [op, serial_ms] : serial_sum) {
    std::map<int, double> measured = {{1, 1.0}};
    for (const auto& [k, at_k] : at_k_sum[op]) {
      // Never below 1: the noise of tiny ops would otherwise read as a
      // slow-down that more threads cannot cause (the core budget gives a
      // node helpers, it does not force them on it).
      measured[k] = at_k > 0 ? std::max(1.0, serial_ms / at_k) : 1.0;
    }
    std::vector<double> curve;
    for (int k = 1; k <= largest; ++k) curve.push_back(LinearAt(measured, k));
    profile.speedup[op] = std::move(curve);
  }

  // Work, span and the critical path.
  std::vector<double> finish(n, 0);
  std::vector<int> via(n, -1);
  for (int i = 0; i < n; ++i) {
    const NodeProfile& node = profile.nodes[i];
    double start = 0;
    for (int p : node.predecessors) {
      if (finish[p] > start) {
        start = finish[p];
        via[i] = p;
      }
    }
    finish[i] = start + node.serial_ms;
    profile.work_ms += node.serial_ms;
  }
  int last = -1;
  for (int i = 0; i < n; ++i) {
    if (last < 0 || finish[i] > finish[last]) last = i;
  }
  if (last >= 0) profile.span_ms = finish[last];
  for (int i = last; i >= 0; i = via[i]) profile.critical_path.push_back(i);
  std::reverse(profile.critical_path.begin(), profile.critical_path.end());
  profile.overhead_ms = std::max(0.0, profile.serial_run_ms - profile.work_ms);
  for (const auto& [k, run_ms] : run_ms_at) {
    if (k == 1) {
      profile.overhead_at[1] = profile.overhead_ms;
      continue;
    }
    double nodes_ms = 0;
    for (const NodeProfile& node : profile.nodes) {
      nodes_ms += node.serial_ms / profile.Speedup(node.op, k);
    }
    profile.overhead_at[k] = run_ms - nodes_ms;
  }
  return profile;
}

}  // namespace weft::tune
