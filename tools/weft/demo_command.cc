// weft demo: the tuning guides' experiment on built-in graphs, with plain
// sentences on which configuration won and why.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "commands.h"
#include "demo_graphs.h"

namespace weft::cli {
namespace {

const BenchRow* Find(const BenchReport& report, int inter, int intra) {
  for (const BenchRow& row : report.rows) {
    if (row.inter == inter && row.intra == intra) return &row;
  }
  return nullptr;
}

// A few sentences reading the table: the winner, and what inter-op and
// intra-op parallelism each bought.
void Explain(const BenchReport& report, int threads) {
  const BenchRow& best = report.rows[report.best];
  const BenchRow* serial = Find(report, 1, 1);
  const BenchRow* inter_only = Find(report, threads, 1);
  const BenchRow* intra_only = Find(report, 1, threads);
  std::printf("  Winner: inter = %d, intra = %d (%s", best.inter, best.intra,
              FormatMs(best.median_ms).c_str());
  if (serial != nullptr && serial != &best) {
    std::printf(", %.2fx faster than one thread",
                serial->median_ms / best.median_ms);
  }
  std::printf(")");
  std::string ties;
  for (const BenchRow& row : report.rows) {
    if (&row != &best && row.median_ms <= best.median_ms * 1.03) {
      ties += (ties.empty() ? "" : ", ") + std::string("inter = ") +
              std::to_string(row.inter) +
              " / intra = " + std::to_string(row.intra);
    }
  }
  if (!ties.empty()) std::printf(", tied within 3%% with %s", ties.c_str());
  std::printf(".\n");
  constexpr double kGain = 1.10;  // Below this, call it no gain.
  if (serial != nullptr && inter_only != nullptr && inter_only != serial) {
    const double gain = serial->median_ms / inter_only->median_ms;
    if (gain >= kGain) {
      std::printf(
          "  Inter-op parallelism alone (inter = %d) gives %.2fx: independent "
          "nodes (here, the separate branches) run at the same time.\n",
          threads, gain);
    } else {
      std::printf(
          "  Inter-op parallelism alone (inter = %d) gives %.2fx: nothing to "
          "overlap, each node needs the one before it.\n",
          threads, gain);
    }
  }
  if (serial != nullptr && intra_only != nullptr && intra_only != serial) {
    const double gain = serial->median_ms / intra_only->median_ms;
    if (gain >= kGain) {
      std::printf(
          "  Intra-op parallelism alone (intra = %d) gives %.2fx: the work "
          "inside each large op (a matrix product) is split across cores.\n",
          threads, gain);
    } else {
      std::printf(
          "  Intra-op parallelism alone (intra = %d) gives %.2fx: these ops "
          "are not split (Spin is one serial loop), so extra threads idle.\n",
          threads, gain);
    }
  }
  bool all_match = true;
  for (const BenchRow& row : report.rows) all_match &= row.outputs_match;
  std::printf("  Outputs were %s in every configuration.\n",
              all_match ? "bitwise identical" : "NOT identical");
}

}  // namespace

int DemoCommand(const DemoArgs& args) {
  const std::vector<DemoGraph> graphs = DemoGraphs();
  if (!args.write_examples_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.write_examples_dir, ec);
    for (const DemoGraph& demo : graphs) {
      const std::string path =
          (std::filesystem::path(args.write_examples_dir) / demo.file_name)
              .string();
      std::ofstream out(path);
      out << SerializeGraph(demo.graph);
      if (!out) return Fail(kExitBadInput, path + ": cannot write");
      std::printf("wrote %s\n", path.c_str());
    }
    return kExitOk;
  }
  const std::vector<int> grid = DefaultGrid();
  const int threads = grid.back();
  std::printf(
      "weft demo: which inter-op / intra-op settings make each graph fastest "
      "on this machine (auto = %d threads)?\nEach row: a fresh session, 1 "
      "warm-up run, median of %d runs.\n\n",
      threads, args.repeat);
  for (const DemoGraph& demo : graphs) {
    NamedTensors feeds;
    if (Status s = AddRandomFeeds(demo.graph, demo.graph.outputs, &feeds);
        !s.ok()) {
      return Fail(kExitRunFailed, s.ToString());
    }
    std::printf("%s\n", demo.title.c_str());
    BenchPlan plan;
    plan.inter_grid = grid;
    plan.intra_grid = grid;
    plan.warmup = 1;
    plan.repeat = args.repeat;
    auto report = BenchGraph(demo.graph, feeds, plan);
    if (!report.ok()) {
      return Fail(kExitRunFailed,
                  "the run failed: " + report.status().ToString());
    }
    PrintBenchTable(*report, /*show_peak=*/false);
    Explain(*report, threads);
    std::printf("\n");
  }
  std::printf(
      "Read it as: set SessionOptions.inter_op_parallelism_threads for "
      "graphs with independent branches, intra_op_parallelism_threads for "
      "graphs of large ops; `weft bench GRAPH` runs the same experiment on "
      "your graph file.\n");
  return kExitOk;
}

}  // namespace weft::cli
