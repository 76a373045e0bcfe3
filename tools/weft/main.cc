// weft: run, benchmark and inspect dataflow graphs.
//   weft info | ops | run GRAPH | bench GRAPH | tune GRAPH | demo | test-onnx
//   | help
// Exit codes: 0 success, 1 the run failed, 2 bad usage or bad input.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_args.h"
#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"

namespace {

// --feed and --random-feeds, as run, bench and tune take them.
void AddFeedFlags(CLI::App* command, std::vector<std::string>* feeds,
                  bool* random_feeds) {
  command
      ->add_option("--feed", *feeds,
                   "NAME=FILE.npy or NAME=FILE.pb (repeatable)")
      ->allow_extra_args(false);
  command->add_flag("--random-feeds", *random_feeds,
                    "fill placeholders without --feed with seeded random "
                    "values (printed when used)");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace weft::cli;
  CLI::App app{
      "weft: dataflow graphs of tensor ops on two cooperating thread pools"};
  app.require_subcommand(1);
  // --version is answered before parsing (HandleHelpAndUnknownCommands);
  // declared here so that --help lists it.
  app.add_flag("--version")->description("print weft's version");

  bool info_json = false;
  std::string info_model;
  auto* info = app.add_subcommand(
      "info",
      "CPU budget, auto thread counts and versions; or what MODEL.onnx holds");
  info->add_option("MODEL", info_model,
                   "an ONNX model: inputs, outputs, parameters, ops (with "
                   "--passes: any graph file)");
  info->add_flag("--json", info_json, "print one JSON object");
  bool info_options = false;
  bool info_markdown = false;
  info->add_flag("--options", info_options,
                 "the session options: kind, range, default, what each does");
  info->add_flag("--markdown", info_markdown,
                 "with --options: the table docs/configuration.md carries");
  bool info_passes = false;
  std::vector<std::string> info_disabled;
  info->add_flag("--passes", info_passes,
                 "the graph passes; with GRAPH, what each changes in it");
  info->add_option("--disable-pass", info_disabled,
                   "with --passes: leave this pass out (repeatable)")
      ->allow_extra_args(false);

  OpsArgs ops;
  auto* ops_cmd = app.add_subcommand(
      "ops", "list every op, or describe one: inputs, outputs, attributes");
  ops_cmd->add_option("NAME", ops.name, "an op to describe");
  ops_cmd->add_flag("--markdown", ops.markdown,
                    "print the reference as Markdown (docs/ops.md)");

  // Thread counts and --repeat are read as text and checked after parsing,
  // so that an error names the flag as typed (CheckedFlags, cli_args.h).
  RunArgs run;
  FlagText run_flags;
  auto* run_cmd =
      app.add_subcommand("run", "run a graph file and print its outputs");
  run_cmd->add_option("GRAPH", run.graph, "graph file (JSON) or model.onnx")
      ->required();
  run_cmd->add_option("--config", run.config_file,
                      "SessionOptions and RunOptions from FILE: JSON or "
                      "TensorFlow's text-format ConfigProto");
  run_cmd
      ->add_option("--set", run.settings,
                   "FIELD=VALUE over --config, e.g. "
                   "inter_op_parallelism_threads=2 (repeatable)")
      ->allow_extra_args(false);
  run_cmd->add_option("--inter", run_flags.inter,
                      "inter-op threads, -1 to 4096 (-1: the caller's "
                      "thread; default: auto)");
  run_cmd->add_option("--intra", run_flags.intra,
                      "intra-op threads counting the caller, 0 to 4096 "
                      "(default 0: auto)");
  AddFeedFlags(run_cmd, &run.feeds, &run.random_feeds);
  run_cmd
      ->add_option("--fetch", run.fetches,
                   "tensor to fetch (repeatable; default: the graph's "
                   "outputs)")
      ->allow_extra_args(false);
  run_cmd->add_option("--save", run.save_dir,
                      "write each output to DIR/NAME.npy ('node:1' is "
                      "saved as node_1.npy)");
  run_cmd->add_option("--trace", run.trace_file,
                      "write a Chrome trace of the last run ('-': stdout)");
  run_cmd->add_option("--repeat", run_flags.repeat, "runs (default 1)");
  run_cmd->add_option("--timeout-ms", run_flags.timeout_ms,
                      "deadline per run (default 0: none)");
  run_cmd->add_flag("--json", run.json, "print one JSON object");
  run_cmd->add_flag("--values", run.values,
                    "with --json: every element of every output");

  BenchArgs bench;
  FlagText bench_flags;
  auto* bench_cmd = app.add_subcommand(
      "bench", "time a graph over a grid of (inter, intra) settings");
  bench_cmd->add_option("GRAPH", bench.graph, "graph file (JSON) or model.onnx")
      ->required();
  bench_cmd->add_option("--config", bench.config_file,
                        "SessionOptions from FILE (JSON or text-format "
                        "ConfigProto); the grid sets the thread counts");
  bench_cmd->add_option("--set", bench.settings, "FIELD=VALUE over --config")
      ->allow_extra_args(false);
  bench_cmd->add_option("--inter", bench.inter_list,
                        "inter-op thread counts, e.g. -1,0,1,2 (-1: the "
                        "caller's thread, 0: auto; default: 1, 2, 4, ... up "
                        "to the CPU budget)");
  bench_cmd->add_option("--intra", bench.intra_list,
                        "intra-op thread counts, e.g. 0,1,2 (0: auto; "
                        "default: as --inter)");
  AddFeedFlags(bench_cmd, &bench.feeds, &bench.random_feeds);
  bench_cmd->add_option("--repeat", bench_flags.repeat,
                        "timed runs per setting (default 5)");
  bench_cmd->add_option("--warmup", bench_flags.warmup,
                        "untimed runs per setting (default 2)");
  bench_cmd->add_flag("--in-turns", bench.in_turns,
                      "make every setting's session first, then time them "
                      "in turns, one Run each per round after an untimed "
                      "one (for noisy machines: drift reaches every setting "
                      "alike)");
  bench_cmd->add_option("--timeout-ms", bench_flags.timeout_ms,
                        "deadline per Run (default: none, or --config's)");
  bench_cmd->add_flag("--json", bench.json, "print one JSON object");

  TuneArgs tune;
  FlagText tune_flags;
  auto* tune_cmd = app.add_subcommand(
      "tune",
      "predict the best (inter, intra) setting from a profile, measure the "
      "best few, explain");
  tune_cmd->add_option("GRAPH", tune.graph, "graph file (JSON) or model.onnx")
      ->required();
  tune_cmd->add_option("--config", tune.config_file,
                       "SessionOptions from FILE (JSON or text-format "
                       "ConfigProto); tune sets the thread counts");
  tune_cmd->add_option("--set", tune.settings, "FIELD=VALUE over --config")
      ->allow_extra_args(false);
  AddFeedFlags(tune_cmd, &tune.feeds, &tune.random_feeds);
  tune_cmd->add_option("--cores", tune_flags.cores,
                       "predict for a machine of N cores (a prediction: "
                       "nothing is measured unless N is this machine's)");
  tune_cmd->add_option("--timeout-ms", tune_flags.timeout_ms,
                       "deadline per profiling or timing run (default "
                       "60000)");
  tune_cmd->add_option("--plot", tune.plot_file,
                       "draw the grid (heat maps) and one Run (timeline) "
                       "into FILE.png or FILE.svg (needs python3-matplotlib)");
  tune_cmd->add_flag("--json", tune.json, "print one JSON object");

  DemoArgs demo;
  FlagText demo_flags;
  auto* demo_cmd = app.add_subcommand(
      "demo", "the thread-configuration experiment on built-in graphs");
  demo_cmd->add_option("--write-examples", demo.write_examples_dir,
                       "write the demo graphs as files into DIR");
  demo_cmd->add_option("--timeout-ms", demo_flags.timeout_ms,
                       "deadline per Run (default: none)");
  demo_cmd->add_option("--repeat", demo_flags.repeat,
                       "timed runs per setting (default 5)");

  TestOnnxArgs test_onnx;
  FlagText test_onnx_flags;
  auto* test_onnx_cmd = app.add_subcommand(
      "test-onnx",
      "run ONNX backend test cases (model.onnx + test_data_set_N)");
  test_onnx_cmd
      ->add_option("PATH", test_onnx.paths,
                   "a test case folder, or a folder of them")
      ->required();
  test_onnx_cmd->add_option("--must-pass", test_onnx.must_pass_file,
                            "file listing cases that must pass (one per line)");
  test_onnx_cmd->add_option("--timeout-ms", test_onnx_flags.timeout_ms,
                            "deadline per Run (default 60000)");
  test_onnx_cmd->add_flag("--json", test_onnx.json, "print one JSON object");

  std::vector<std::string> args = NormalizeArgs(argc, argv);
  if (int code = 0; HandleHelpAndUnknownCommands(app, args, &code)) {
    return code;
  }
  if (std::string message; FindUnknownOption(app, args, &message)) {
    return Fail(kExitBadInput, message);
  }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Fail(kExitBadInput,
                DescribeParseError(e, args) + " (weft help for usage)");
  }
  if (info_json || run.json || bench.json || test_onnx.json || tune.json) {
    EnableJsonErrors();  // docs/cli-json.md: errors as JSON on stdout too.
  }
  if (*info && info_options) {
    return OptionsCommand(info_json, info_markdown);
  }
  if (*info && info_passes) {
    return PassesCommand(info_model, info_disabled, info_json);
  }
  if (*info) return InfoCommand(info_model, info_json);
  if (*ops_cmd) return OpsCommand(ops);
  if (*test_onnx_cmd) {
    if (weft::Status s = ApplyFlags(test_onnx_flags, &test_onnx); !s.ok()) {
      return Fail(kExitBadInput, s.message());
    }
    return TestOnnxCommand(test_onnx);
  }
  if (*run_cmd) {
    if (weft::Status s = ApplyFlags(run_flags, &run); !s.ok()) {
      return Fail(kExitBadInput, s.message());
    }
    return RunCommand(run);
  }
  if (*bench_cmd) {
    if (weft::Status s = ApplyFlags(bench_flags, &bench); !s.ok()) {
      return Fail(kExitBadInput, s.message());
    }
    return BenchCommand(bench);
  }
  if (*tune_cmd) {
    if (weft::Status s = ApplyFlags(tune_flags, &tune); !s.ok()) {
      return Fail(kExitBadInput, s.message());
    }
    return TuneCommand(tune);
  }
  if (*demo_cmd) {
    if (weft::Status s = ApplyFlags(demo_flags, &demo); !s.ok()) {
      return Fail(kExitBadInput, s.message());
    }
    return DemoCommand(demo);
  }
  return kExitBadInput;
}
