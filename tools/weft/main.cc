// weft: run, benchmark and inspect dataflow graphs.
//   weft info | run GRAPH | bench GRAPH | demo
// Exit codes: 0 success, 1 the run failed, 2 bad usage or bad input.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"

int main(int argc, char** argv) {
  using namespace weft::cli;
  CLI::App app{
      "weft: dataflow graphs of tensor ops on two cooperating thread pools"};
  app.require_subcommand(1);

  bool info_json = false;
  std::string info_model;
  auto* info = app.add_subcommand(
      "info",
      "CPU budget, auto thread counts and versions; or what MODEL.onnx holds");
  info->add_option("MODEL", info_model,
                   "an ONNX model: inputs, outputs, parameters, ops");
  info->add_flag("--json", info_json, "print one JSON object");

  RunArgs run;
  int run_inter = 0, run_intra = 0;
  auto* run_cmd =
      app.add_subcommand("run", "run a graph file and print its outputs");
  run_cmd->add_option("GRAPH", run.graph, "graph file (JSON) or model.onnx")
      ->required();
  auto* inter_opt = run_cmd->add_option(
      "--inter", run_inter, "inter-op threads (<0: caller's thread)");
  auto* intra_opt = run_cmd
                        ->add_option("--intra", run_intra,
                                     "intra-op threads, counting the caller")
                        ->check(CLI::Range(0, weft::kMaxThreads));
  run_cmd->add_option("--feed", run.feeds,
                      "NAME=FILE.npy or NAME=FILE.pb (repeatable)");
  run_cmd->add_option(
      "--fetch", run.fetches,
      "tensor to fetch (repeatable; default: the graph's outputs)");
  run_cmd->add_option("--save", run.save_dir,
                      "write each output to DIR/NAME.npy");
  run_cmd->add_option("--trace", run.trace_file,
                      "write a Chrome trace of the last run");
  run_cmd->add_option("--repeat", run.repeat, "runs")
      ->check(CLI::Range(1, 1000000));
  run_cmd->add_option("--timeout-ms", run.timeout_ms, "deadline per run")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  run_cmd->add_flag("--json", run.json, "print one JSON object");
  run_cmd->add_flag("--values", run.values,
                    "with --json: every element of every output");

  BenchArgs bench;
  auto* bench_cmd = app.add_subcommand(
      "bench", "time a graph over a grid of (inter, intra) settings");
  bench_cmd->add_option("GRAPH", bench.graph, "graph file (JSON) or model.onnx")
      ->required();
  bench_cmd->add_option("--inter", bench.inter_list,
                        "inter-op thread counts, e.g. 1,2,4");
  bench_cmd->add_option("--intra", bench.intra_list,
                        "intra-op thread counts, e.g. 1,2");
  bench_cmd->add_option("--feed", bench.feeds,
                        "NAME=FILE.npy or NAME=FILE.pb (repeatable)");
  bench_cmd->add_option("--repeat", bench.repeat, "timed runs per setting")
      ->check(CLI::Range(1, 100000));
  bench_cmd->add_option("--warmup", bench.warmup, "untimed runs per setting")
      ->check(CLI::Range(0, 100000));
  bench_cmd->add_flag("--json", bench.json, "print one JSON object");

  DemoArgs demo;
  auto* demo_cmd = app.add_subcommand(
      "demo", "the thread-configuration experiment on built-in graphs");
  demo_cmd->add_option("--write-examples", demo.write_examples_dir,
                       "write the demo graphs as files into DIR");
  demo_cmd->add_option("--repeat", demo.repeat, "timed runs per setting")
      ->check(CLI::Range(1, 1000));

  TestOnnxArgs test_onnx;
  auto* test_onnx_cmd = app.add_subcommand(
      "test-onnx",
      "run ONNX backend test cases (model.onnx + test_data_set_N)");
  test_onnx_cmd
      ->add_option("PATH", test_onnx.paths,
                   "a test case folder, or a folder of them")
      ->required();
  test_onnx_cmd->add_option("--must-pass", test_onnx.must_pass_file,
                            "file listing cases that must pass (one per line)");
  test_onnx_cmd
      ->add_option("--timeout-ms", test_onnx.timeout_ms,
                   "deadline per Run (default 60000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  test_onnx_cmd->add_flag("--json", test_onnx.json, "print one JSON object");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "weft: error: %s\n", e.what());
    std::fprintf(stderr, "run 'weft --help' for usage\n");
    return kExitBadInput;
  }
  if (info_json || run.json || bench.json || test_onnx.json) {
    EnableJsonErrors();  // docs/cli-json.md: errors as JSON on stdout too.
  }
  if (*info) return InfoCommand(info_model, info_json);
  if (*test_onnx_cmd) return TestOnnxCommand(test_onnx);
  if (*run_cmd) {
    if (*inter_opt) run.inter = run_inter;
    if (*intra_opt) run.intra = run_intra;
    return RunCommand(run);
  }
  if (*bench_cmd) return BenchCommand(bench);
  if (*demo_cmd) return DemoCommand(demo);
  return kExitBadInput;
}
