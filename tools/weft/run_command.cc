// weft run GRAPH: run a graph file and print (or save) its outputs.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli_args.h"
#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"
#include "interrupt.h"
#include "weft/chrome_trace.h"
#include "weft/config_file.h"
#include "weft/npy.h"

namespace weft::cli {

namespace {

// After Ctrl-C: what was completed, then the shell's code for Ctrl-C.
int ReportInterrupted(const std::vector<double>& times_ms, int repeat,
                      const Session& session) {
  if (times_ms.empty()) {
    std::printf("interrupted before a Run completed\n");
  } else {
    std::printf(
        "interrupted after %zu of %d runs: median %s, min %s, max %s "
        "(inter %d, intra %d)\n",
        times_ms.size(), repeat, FormatMs(Median(times_ms)).c_str(),
        FormatMs(*std::min_element(times_ms.begin(), times_ms.end())).c_str(),
        FormatMs(*std::max_element(times_ms.begin(), times_ms.end())).c_str(),
        session.inter_op_threads(), session.intra_op_threads());
  }
  return kExitInterrupted;
}

// --trace FILE (or '-') and --save DIR, after the last Run.
int WriteTraceAndSave(const RunArgs& args, const RunMetadata& metadata,
                      std::ofstream* trace_file,
                      const std::vector<std::string>& names,
                      const std::vector<Tensor>& outputs) {
  if (args.trace_file == "-") {
    std::printf("%s\n", ChromeTraceJson(metadata).c_str());
  } else if (trace_file != nullptr) {
    *trace_file << ChromeTraceJson(metadata);
    trace_file->flush();
    if (!*trace_file) {
      return Fail(kExitRunFailed,
                  "--trace " + args.trace_file +
                      ": cannot write the trace: " + ErrnoText());
    }
  }
  if (!args.save_dir.empty()) {
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string path = (std::filesystem::path(args.save_dir) /
                                (FileNameFor(names[i]) + ".npy"))
                                   .string();
      if (Status s = WriteNpy(path, outputs[i]); !s.ok()) {
        return Fail(kExitBadInput, "--save: " + s.ToString());
      }
    }
  }

  return kExitOk;
}

// The outputs, as text or as one JSON object (--json).
void PrintOutputs(const RunArgs& args, const std::vector<double>& times_ms,
                  const Session& session, const std::vector<std::string>& names,
                  const std::vector<Tensor>& outputs) {
  if (args.json) {
    nlohmann::json out = {{"graph", args.graph},
                          {"repeat", args.repeat},
                          {"times_ms", times_ms},
                          {"median_ms", Median(times_ms)},
                          {"outputs", nlohmann::json::array()}};
    AddThreadCounts(out, session.inter_op_threads(),
                    session.intra_op_threads());
    for (size_t i = 0; i < names.size(); ++i) {
      out["outputs"].push_back(TensorJson(names[i], outputs[i], args.values));
    }
    PrintJson(out);
    return;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    std::printf(
        "%s: %s %s hash=%s\n  %s\n", names[i].c_str(),
        DataTypeName(outputs[i].dtype()), outputs[i].shape().ToString().c_str(),
        ContentHash(outputs[i]).c_str(), FirstValues(outputs[i], 8).c_str());
  }
  std::printf("time: median %s over %d run%s (inter %d, intra %d)\n",
              FormatMs(Median(times_ms)).c_str(), args.repeat,
              args.repeat == 1 ? "" : "s", session.inter_op_threads(),
              session.intra_op_threads());
}

}  // namespace

int RunCommand(const RunArgs& args) {
  // First: every thread the command starts (pools) inherits SIGINT blocked.
  InterruptWatch interrupt;
  auto model = LoadModel(args.graph);
  if (!model.ok()) return Fail(kExitBadInput, model.status().ToString());
  const GraphFile* file = &model->file;
  // What the user asked for, by their names, and the tensors behind them.
  const std::vector<std::string> names =
      args.fetches.empty() ? model->output_names : args.fetches;
  std::vector<std::string> fetches;
  for (const std::string& name : names)
    fetches.push_back(model->TensorOf(name));
  if (fetches.empty()) {
    return Fail(kExitBadInput, args.graph +
                                   ": the graph lists no \"outputs\"; pass "
                                   "--fetch NAME");
  }
  auto feeds = ReadFeeds(args.feeds, *model);
  if (!feeds.ok()) return Fail(kExitBadInput, feeds.status().ToString());
  if (args.json && args.trace_file == "-") {
    return Fail(kExitBadInput,
                "--trace - and --json both write to standard output: give "
                "--trace a file");
  }
  if (args.random_feeds) {
    if (Status s = AddRandomFeeds(*file, fetches, &*feeds); !s.ok()) {
      return Fail(kExitBadInput, s.message());
    }
  }
  if (Status s = CheckFeedsGiven(*model, fetches, *feeds); !s.ok()) {
    return Fail(kExitBadInput, s.message());
  }
  // Output files are opened before anything runs: a path that cannot be
  // written is the user's input (exit 2), found before a long run.
  std::unique_ptr<std::ofstream> trace_file;
  if (!args.trace_file.empty() && args.trace_file != "-") {
    trace_file = std::make_unique<std::ofstream>(args.trace_file);
    if (!*trace_file) {
      return Fail(kExitBadInput, "--trace " + args.trace_file +
                                     ": cannot write: " + ErrnoText());
    }
  }
  if (!args.save_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.save_dir, ec);
    if (ec) {
      return Fail(kExitBadInput,
                  "--save " + args.save_dir +
                      ": cannot create the folder: " + ec.message());
    }
  }

  // The configuration file, then --set, then the thread flags.
  StatusOr<RunConfig> read = ReadRunConfig(args.config_file, args.settings);
  if (!read.ok()) return Fail(kExitBadInput, read.status().ToString());
  RunConfig& config = *read;
  SessionOptions& options = config.session;
  if (args.inter) options.inter_op_parallelism_threads = *args.inter;
  if (args.intra) options.intra_op_parallelism_threads = *args.intra;
  auto session = Session::Create(file->graph, options);
  if (!session.ok()) {
    return Fail(kExitBadInput,
                session.status().WithContext(args.graph).ToString());
  }
  if (Status s = (*session)->Prepare(*feeds, fetches, {}); !s.ok()) {
    return Fail(kExitBadInput, s.ToString());
  }

  RunOptions run_options = config.run;
  if (args.timeout_ms > 0) run_options.timeout_ms = args.timeout_ms;
  if (!args.trace_file.empty()) {
    run_options.trace_level = RunOptions::TraceLevel::kFull;
  }
  run_options.cancellation = interrupt.cancellation();
  std::vector<Tensor> outputs;
  std::vector<double> times_ms;
  RunMetadata metadata;
  ProgressLine progress("run", args.repeat);
  for (int i = 0; i < args.repeat && !interrupt.interrupted(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    Status s =
        (*session)->Run(run_options, *feeds, fetches, {}, &outputs, &metadata);
    if (!s.ok() && interrupt.interrupted()) break;  // Cancelled by Ctrl-C.
    times_ms.push_back(std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - start)
                           .count());
    if (!s.ok()) return Fail(kExitRunFailed, "the run failed: " + s.ToString());
    progress.Update(i + 1, Median(times_ms));
  }
  progress.Clear();
  if (interrupt.interrupted()) {
    return ReportInterrupted(times_ms, args.repeat, **session);
  }

  if (int code =
          WriteTraceAndSave(args, metadata, trace_file.get(), names, outputs);
      code != kExitOk) {
    return code;
  }
  PrintOutputs(args, times_ms, **session, names, outputs);
  return kExitOk;
}

namespace {

// `weft run`: its flags; RunCommand does the work.
class RunCommandLine final : public CommandWithArgs<RunArgs, RunCommand> {
 public:
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command =
        app.add_subcommand("run", "run a graph file and print its outputs");
    command->add_option("GRAPH", args_.graph, "graph file (JSON) or model.onnx")
        ->required();
    command->add_option("--config", args_.config_file,
                        "SessionOptions and RunOptions from FILE: JSON or "
                        "TensorFlow's text-format ConfigProto");
    command
        ->add_option("--set", args_.settings,
                     "FIELD=VALUE over --config, e.g. "
                     "inter_op_parallelism_threads=2 (repeatable)")
        ->allow_extra_args(false);
    AddPrecisionFlag(command, &args_.settings);
    command->add_option("--inter", flags_.inter,
                        "inter-op threads, -1 to 4096 (-1: the caller's "
                        "thread; default: auto)");
    command->add_option("--intra", flags_.intra,
                        "intra-op threads counting the caller, 0 to 4096 "
                        "(default 0: auto)");
    AddFeedFlags(command, &args_.feeds, &args_.random_feeds);
    command
        ->add_option("--fetch", args_.fetches,
                     "tensor to fetch (repeatable; default: the graph's "
                     "outputs)")
        ->allow_extra_args(false);
    command->add_option("--save", args_.save_dir,
                        "write each output to DIR/NAME.npy ('node:1' is "
                        "saved as node_1.npy)");
    command->add_option("--trace", args_.trace_file,
                        "write a Chrome trace of the last run ('-': stdout)");
    command->add_option("--repeat", flags_.repeat, "runs (default 1)");
    command->add_option("--timeout-ms", flags_.timeout_ms,
                        "deadline per run (default 0: none)");
    command->add_flag("--json", args_.json, "print one JSON object");
    command->add_flag("--values", args_.values,
                      "with --json: every element of every output");
    return command;
  }
};

}  // namespace

std::unique_ptr<Command> MakeRunCommandLine() {
  return std::make_unique<RunCommandLine>();
}

}  // namespace weft::cli
