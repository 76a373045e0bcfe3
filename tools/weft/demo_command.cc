// weft demo: the tuning guides' experiment on built-in graphs, with plain
// sentences on which configuration won and why.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cli_args.h"
#include "cli_util.h"
#include "commands.h"
#include "demo_graphs.h"
#include "explain.h"

namespace weft::cli {

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
    MachineNoise machine;
    BenchPlan plan;
    plan.inter_grid = grid;
    plan.intra_grid = grid;
    plan.warmup = 1;
    plan.repeat = args.repeat;
    plan.run_options.timeout_ms = args.timeout_ms;
    auto report = BenchGraph(demo.graph, feeds, plan);
    if (!report.ok()) {
      return Fail(kExitRunFailed,
                  "the run failed: " + report.status().ToString());
    }
    PrintBenchTable(*report, /*show_peak=*/false);
    for (const std::string& line :
         ExplainReport(*report, AnalyzeShapeAsRun(demo.graph.graph),
                       SplitsForExplanation(*report), machine, threads)) {
      std::printf("  %s\n", line.c_str());
    }
    bool all_match = true;
    for (const BenchRow& row : report->rows) all_match &= row.outputs_match;
    std::printf("  Outputs were %s in every configuration.\n",
                all_match ? "bitwise identical" : "NOT identical");
    std::printf("\n");
  }
  std::printf(
      "Read it as: set SessionOptions.inter_op_parallelism_threads for "
      "graphs with independent branches, intra_op_parallelism_threads for "
      "graphs of large ops; `weft bench GRAPH` runs the same experiment on "
      "your graph file.\n");
  return kExitOk;
}

namespace {

// `weft demo`: its flags; DemoCommand does the work.
class DemoCommandLine final : public CommandWithArgs<DemoArgs, DemoCommand> {
 public:
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command = app.add_subcommand(
        "demo", "the thread-configuration experiment on built-in graphs");
    command->add_option("--write-examples", args_.write_examples_dir,
                        "write the demo graphs as files into DIR");
    command->add_option("--timeout-ms", flags_.timeout_ms,
                        "deadline per Run (default: none)");
    command->add_option("--repeat", flags_.repeat,
                        "timed runs per setting (default 5)");
    return command;
  }
};

}  // namespace

std::unique_ptr<Command> MakeDemoCommandLine() {
  return std::make_unique<DemoCommandLine>();
}

}  // namespace weft::cli
