#include "explain.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "cli_util.h"
#include "commands.h"
#include "weft/graph_passes.h"

namespace weft::cli {
namespace {

bool IsComputeNode(const NodeDef& node) {
  return node.op != "Placeholder" && node.op != "Const" && node.op != "NoOp";
}

// The "cpu" line of /proc/stat: (steal, total) jiffies; zeros where absent.
std::pair<long long, long long> CpuTimes() {
  std::ifstream in("/proc/stat");
  std::string label;
  in >> label;
  if (label != "cpu") return {0, 0};
  long long value = 0, total = 0, steal = 0;
  for (int field = 0; field < 8 && in >> value; ++field) {
    total += value;
    if (field == 7)
      steal = value;  // user nice system idle iowait irq softirq steal
  }
  return {steal, total};
}

std::string Percent(double share) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.0f%%", 100 * share);
  return text;
}

std::string Times(double x) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.2fx", x);
  return text;
}

std::string List(const std::vector<std::string>& names, size_t most = 3) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < most; ++i) {
    out += (i ? ", " : "") + names[i];
  }
  return out;
}

const BenchRow* FindRow(const BenchReport& report, int inter, int intra) {
  for (const BenchRow& row : report.rows) {
    if (row.effective_inter == inter && row.effective_intra == intra) {
      return &row;
    }
  }
  return nullptr;
}

std::string Setting(const BenchRow& row) {
  return "(inter " + std::to_string(row.inter) + ", intra " +
         std::to_string(row.intra) + ")";
}

}  // namespace

GraphShape AnalyzeShape(const Graph& graph) {
  GraphShape shape;
  const std::vector<NodeDef>& nodes = graph.nodes();
  std::unordered_map<std::string, int> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].name] = i;
  // Depth = compute nodes on the longest chain ending at the node. Nodes
  // are in dependency order in a valid graph file; a few passes settle
  // the rest (at most as many as the graph is deep).
  std::vector<int> depth(nodes.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      int before = 0;
      for (const std::string& input : nodes[i].inputs) {
        auto it = index.find(NodeOf(input));
        if (it != index.end() && it->second != static_cast<int>(i)) {
          before = std::max(before, depth[it->second]);
        }
      }
      const int mine = before + (IsComputeNode(nodes[i]) ? 1 : 0);
      if (mine != depth[i] && mine <= static_cast<int>(nodes.size())) {
        depth[i] = mine;
        changed = true;
      }
    }
  }
  // Two compute nodes at one depth have no path between them: a path would
  // make the later one deeper.
  std::map<int, std::vector<std::string>> levels;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!IsComputeNode(nodes[i])) continue;
    ++shape.compute_nodes;
    levels[depth[i]].push_back(nodes[i].name);
    shape.chain = std::max(shape.chain, depth[i]);
  }
  for (const auto& [level, names] : levels) {
    if (static_cast<int>(names.size()) > shape.width) {
      shape.width = static_cast<int>(names.size());
      shape.widest.assign(names.begin(),
                          names.begin() + std::min<size_t>(3, names.size()));
    }
  }
  return shape;
}

GraphShape AnalyzeShapeAsRun(const Graph& graph) {
  StatusOr<OptimizedGraph> optimized = OptimizeGraph(graph);
  return AnalyzeShape(optimized.ok() ? optimized->graph : graph);
}

SplitProfile ProfileSplits(const RunMetadata& traced) {
  SplitProfile profile;
  std::map<std::string, double> split_ms, serial_ms;
  double total = 0, split = 0;
  for (const NodeExecStats& node : traced.node_stats) {
    const double ms = (node.end_ns - node.start_ns) / 1e6;
    total += ms;
    if (node.intra_op_shards > 1) {
      split += ms;
      split_ms[node.op] += ms;
    } else {
      serial_ms[node.op] += ms;
    }
  }
  if (total <= 0) return profile;
  profile.known = true;
  profile.split_share = split / total;
  auto heaviest_first = [](const std::map<std::string, double>& by_op) {
    std::vector<std::pair<double, std::string>> sorted;
    for (const auto& [op, ms] : by_op) sorted.push_back({-ms, op});
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> ops;
    for (const auto& entry : sorted) ops.push_back(entry.second);
    return ops;
  };
  profile.split_ops = heaviest_first(split_ms);
  profile.serial_ops = heaviest_first(serial_ms);
  return profile;
}

MachineNoise::MachineNoise() {
  std::tie(steal_start_, total_start_) = CpuTimes();
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  load_per_core_ = cpus > 0 ? load / cpus : load;
}

double MachineNoise::steal_share() const {
  const auto [steal, total] = CpuTimes();
  const long long spent = total - total_start_;
  return spent > 0 ? static_cast<double>(steal - steal_start_) / spent : 0;
}

std::string MachineNoise::Describe() const {
  char text[96];
  std::snprintf(text, sizeof(text), "load %.2f per CPU before, steal %s",
                load_per_core(), Percent(steal_share()).c_str());
  return text;
}

double NoiseThreshold(const BenchReport& report) {
  std::vector<double> spreads;
  for (const BenchRow& row : report.rows) {
    if (row.median_ms > 0) {
      spreads.push_back((row.max_ms - row.min_ms) / row.median_ms);
    }
  }
  return std::max(0.03, spreads.empty() ? 0.0 : Median(spreads));
}

SplitProfile SplitsForExplanation(const BenchReport& report) {
  const BenchRow* chosen = nullptr;
  for (const BenchRow& row : report.rows) {
    if (row.effective_inter > 1 || row.effective_intra < 2) continue;
    if (chosen == nullptr || row.effective_intra > chosen->effective_intra) {
      chosen = &row;
    }
  }
  return chosen != nullptr ? chosen->splits : SplitProfile{};
}

std::vector<std::string> ExplainReport(const BenchReport& report,
                                       const GraphShape& shape,
                                       const SplitProfile& splits,
                                       const MachineNoise& machine,
                                       int threads) {
  std::vector<std::string> lines;
  const double noise = NoiseThreshold(report);
  const auto within_noise = [noise](double gain) {
    return std::abs(gain - 1.0) < noise;
  };
  lines.push_back(
      "Graph: " + std::to_string(shape.compute_nodes) +
      (shape.compute_nodes == 1 ? " compute node; " : " compute nodes; ") +
      (shape.width > 1
           ? "up to " + std::to_string(shape.width) +
                 " can run at once (width " + std::to_string(shape.width) +
                 ": " + List(shape.widest) + (shape.width > 3 ? ", ..." : "") +
                 ")"
           : "each needs the one before it (width 1)") +
      "; the longest chain has " + std::to_string(shape.chain) + ".");
  lines.push_back("Noise: a setting's runs spread by " + Percent(noise) +
                  " (median over rows; 3% at least); " + machine.Describe() +
                  ".");
  // The winner, or a tie within the noise.
  const BenchRow& best = report.rows[report.best];
  std::vector<std::string> ties;
  for (const BenchRow& row : report.rows) {
    if (&row != &best && row.median_ms <= best.median_ms * (1 + noise)) {
      ties.push_back(Setting(row));
    }
  }
  const BenchRow* serial = FindRow(report, 1, 1);
  std::string winner = "Winner: inter = " + std::to_string(best.inter) +
                       ", intra = " + std::to_string(best.intra) + " (" +
                       FormatMs(best.median_ms);
  if (serial != nullptr && serial != &best) {
    winner += ", " + Times(serial->median_ms / best.median_ms) +
              " faster than one thread";
  }
  winner += ")";
  if (!ties.empty()) {
    winner = "No clear winner: " + Setting(best) + " at " +
             FormatMs(best.median_ms) + " and " + List(ties, 8) +
             " differ by less than the noise (" + Percent(noise) +
             "); for a firmer answer, more runs (--repeat 20) or settings "
             "timed in turns (weft bench --in-turns)";
  }
  lines.push_back(winner + ".");
  if (serial == nullptr) return lines;
  // What inter-op threads bought, and why, from the graph's width.
  if (const BenchRow* inter_only = FindRow(report, threads, 1);
      inter_only != nullptr && inter_only != serial) {
    const double gain = serial->median_ms / inter_only->median_ms;
    std::string line =
        "Inter-op parallelism alone (inter = " + std::to_string(threads) +
        ") gives " + Times(gain);
    if (within_noise(gain)) line += ", within the noise";
    if (shape.width <= 1) {
      line += ": the graph is one chain, so there is nothing to overlap";
      if (!within_noise(gain) && gain > 1) {
        line +=
            " (the gain beyond the noise comes from outside the graph's "
            "nodes: the Run's start and end overlap work)";
      }
    } else if (within_noise(gain)) {
      line += ": up to " + std::to_string(shape.width) +
              " nodes could run at once, but they are too short, or too "
              "unequal, to gain measurably";
    } else if (gain > 1) {
      line += ": independent nodes (" + List(shape.widest) +
              (shape.width > 3 ? ", ..." : "") + ") run at the same time";
    } else {
      line += ": slower, the independent nodes contend for the cores";
    }
    lines.push_back(line + ".");
  }
  // What intra-op threads bought, and why, from where the work splits.
  if (const BenchRow* intra_only = FindRow(report, 1, threads);
      intra_only != nullptr && intra_only != serial) {
    const double gain = serial->median_ms / intra_only->median_ms;
    std::string line =
        "Intra-op parallelism alone (intra = " + std::to_string(threads) +
        ") gives " + Times(gain);
    if (within_noise(gain)) line += ", within the noise";
    if (!splits.known) {
      line += ": no traced Run says which ops split";
    } else if (splits.split_share >= 0.5) {
      line += ": " + Percent(splits.split_share) +
              " of the work is in ops split across cores (" +
              List(splits.split_ops) + ")";
      if (within_noise(gain)) line += ", yet too short for the split to pay";
    } else {
      line += ": only " + Percent(splits.split_share) +
              " of the work is in ops split across cores; " +
              (splits.serial_ops.empty()
                   ? std::string("the rest runs serially")
                   : "most is in " + List(splits.serial_ops, 2) +
                         ", which ran on one thread, so extra threads idle");
    }
    lines.push_back(line + ".");
  }
  return lines;
}

}  // namespace weft::cli
