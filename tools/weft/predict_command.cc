// weft predict MODEL --input 'DIR/*.jpg' --output preds.npy: batch
// inference over files (weft/predict.h), with a progress bar on a terminal
// and plain lines otherwise, resumable after Ctrl-C or a crash.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cli_args.h"
#include "cli_util.h"
#include "commands.h"
#include "interrupt.h"
#include "predict_cluster.h"
#include "weft/data.h"
#include "weft/predict.h"

namespace weft::cli {

namespace fs = std::filesystem;

StatusOr<std::vector<std::string>> ExpandInputs(
    const std::vector<std::string>& specs) {
  std::vector<std::string> inputs;
  for (const std::string& spec : specs) {
    std::error_code error;
    if (fs::is_directory(spec, error)) {
      std::vector<std::string> files;
      for (const auto& entry : fs::directory_iterator(spec, error)) {
        if (entry.is_regular_file()) files.push_back(entry.path().string());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        return InvalidArgumentError("--input " + spec + ": no files in it");
      }
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (spec.find_first_of("*?[") != std::string::npos) {
      StatusOr<std::vector<std::string>> matches = data::MatchFiles(spec);
      if (!matches.ok()) {
        return InvalidArgumentError("--input " + spec + ": no file matches");
      }
      inputs.insert(inputs.end(), matches->begin(), matches->end());
    } else if (access(spec.c_str(), R_OK) == 0) {
      inputs.push_back(spec);
    } else {
      return InvalidArgumentError("--input " + spec + ": " + ErrnoText());
    }
  }
  if (inputs.empty()) {
    return InvalidArgumentError("--input: give files, a directory or a glob");
  }
  return inputs;
}

namespace {

std::string Clock(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(seconds));
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld",
                  static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(text, sizeof(text), "%lld:%02lld",
                  static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return text;
}

// On a terminal, one line redrawn; otherwise a line per tenth of the job
// (and the last), so logs stay short.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool quiet)
      : quiet_(quiet), terminal_(isatty(STDERR_FILENO) == 1) {}

  void operator()(const PredictProgress& p) {
    if (quiet_ || p.total == 0) return;
    const double fraction =
        static_cast<double>(p.done) / static_cast<double>(p.total);
    const int64_t left = p.total - p.done;
    const std::string eta =
        p.items_per_second > 0
            ? Clock(static_cast<double>(left) / p.items_per_second)
            : "?";
    char line[160];
    std::snprintf(line, sizeof(line), "%lld/%lld inputs, %.1f items/s, ETA %s",
                  static_cast<long long>(p.done),
                  static_cast<long long>(p.total), p.items_per_second,
                  eta.c_str());
    if (terminal_) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(fraction * kWidth);
      std::string bar(filled, '=');
      if (filled < kWidth) bar += '>';
      bar.resize(kWidth, ' ');
      std::fprintf(stderr, "\r[%s] %3.0f%% %s\x1b[K", bar.c_str(),
                   fraction * 100, line);
      if (p.done == p.total) std::fprintf(stderr, "\n");
      std::fflush(stderr);
      return;
    }
    const int tenth = static_cast<int>(fraction * 10);
    if (tenth == last_tenth_ && p.done != p.total) return;
    last_tenth_ = tenth;
    std::fprintf(stderr, "progress: %s\n", line);
  }

  // Ends a redrawn line before other output.
  void Break() {
    if (!quiet_ && terminal_) std::fprintf(stderr, "\n");
  }

 private:
  bool quiet_, terminal_;
  int last_tenth_ = -1;
};

// Each stage of a pipeline (weft/data.h, StageStats) over `seconds`.
void PrintStages(const std::vector<data::StageStats>& stages, double seconds) {
  std::printf("  %-18s %9s %9s %9s %9s %6s\n", "stage", "elements", "elem/s",
              "busy s", "wait s", "par.");
  // par.: calls in flight (a Map) or buffer (a Prefetch), "(auto)" where
  // AUTOTUNE chose it; the bottleneck is the stage that limits the job.
  for (const data::StageStats& stage : stages) {
    const double rate =
        seconds > 0 ? static_cast<double>(stage.elements) / seconds : 0;
    std::printf("  %-18s %9lld %9.1f %9.2f %9.2f %6d%s%s\n",
                stage.stage.c_str(), static_cast<long long>(stage.elements),
                rate, stage.busy_seconds, stage.wait_seconds, stage.parallelism,
                stage.autotuned ? " (auto)" : "",
                stage.bottleneck ? "  <- bottleneck" : "");
  }
}

// Where the time went: the model, the wait for items, and each stage of
// the pipeline.
void PrintStats(const PredictSummary& s) {
  std::printf("model Runs %.2f s, waiting for items %.2f s\n", s.model_seconds,
              s.wait_seconds);
  PrintStages(s.stages, s.seconds);
}

// The pipeline's part of a job, as predict and data-stats take it.
PredictOptions JobOptions(const PredictArgs& args,
                          std::vector<std::string> inputs) {
  PredictOptions options;
  options.inputs = std::move(inputs);
  options.preprocess = args.preprocess;
  options.batch_size = args.batch;
  options.skip_bad_inputs = args.skip_bad_inputs;
  options.prefetch = !args.no_prefetch;
  if (args.inter) options.session.inter_op_parallelism_threads = *args.inter;
  return options;
}

// Exit code of a job that failed: bad input, or a failed run.
int FailJob(const Status& status) {
  const bool bad_input = status.code() == StatusCode::kInvalidArgument ||
                         status.code() == StatusCode::kNotFound ||
                         status.code() == StatusCode::kFailedPrecondition;
  return Fail(bad_input ? kExitBadInput : kExitRunFailed, status.message());
}

int PredictCommand(const PredictArgs& args) {
  StatusOr<std::vector<std::string>> inputs = ExpandInputs(args.inputs);
  if (!inputs.ok()) return Fail(kExitBadInput, inputs.status().message());
  if (access(args.model.c_str(), R_OK) != 0) {
    return Fail(kExitBadInput, "MODEL " + args.model + ": " + ErrnoText());
  }
  if (!args.scheduler.empty() || args.local_workers > 0) {
    return PredictOnCluster(args, *inputs);
  }
  InterruptWatch interrupt;
  PredictOptions options = JobOptions(args, std::move(inputs).value());
  options.model = args.model;
  options.output = args.output;
  if (args.intra) options.session.intra_op_parallelism_threads = *args.intra;
  ProgressPrinter printer(args.quiet);
  options.progress = [&printer](const PredictProgress& p) { printer(p); };
  options.stop_requested = [&interrupt] { return interrupt.interrupted(); };
  StatusOr<PredictSummary> summary = Predict(options);
  if (!summary.ok()) {
    printer.Break();
    if (interrupt.interrupted()) {
      std::fprintf(stderr, "weft predict: %s\n",
                   summary.status().message().c_str());
      return kExitInterrupted;
    }
    return FailJob(summary.status());
  }
  const PredictSummary& s = *summary;
  std::printf(
      "predicted %lld of %lld inputs in %.1f s (%.1f items/s; inter %d, "
      "intra %d)",
      static_cast<long long>(s.predicted), static_cast<long long>(s.inputs),
      s.seconds,
      s.seconds > 0 ? static_cast<double>(s.predicted) / s.seconds : 0.0,
      s.inter_op_threads, s.intra_op_threads);
  if (s.resumed > 0) {
    std::printf("; %lld done by an earlier run",
                static_cast<long long>(s.resumed));
  }
  std::printf("\n");
  if (!s.skipped.empty()) {
    std::printf("skipped %zu bad inputs:\n", s.skipped.size());
    for (const auto& [path, why] : s.skipped) {
      std::printf("  %s: %s\n", path.c_str(), why.c_str());
    }
  }
  if (args.stats) PrintStats(s);
  std::printf("wrote %s\n", args.output.c_str());
  return kExitOk;
}

// weft data-stats: predict's pipeline alone, without the model.
int DataStatsCommand(const PredictArgs& args) {
  StatusOr<std::vector<std::string>> inputs = ExpandInputs(args.inputs);
  if (!inputs.ok()) return Fail(kExitBadInput, inputs.status().message());
  PredictOptions options = JobOptions(args, std::move(inputs).value());
  StatusOr<PipelineReport> report = MeasurePipeline(options);
  if (!report.ok()) return FailJob(report.status());
  const PipelineReport& r = *report;
  std::printf(
      "made %lld of %zu items in %.2f s (%.1f items/s) on %d inter-op "
      "thread(s)",
      static_cast<long long>(r.items), options.inputs.size(), r.seconds,
      r.seconds > 0 ? static_cast<double>(r.items) / r.seconds : 0.0,
      r.threads);
  if (r.skipped > 0) {
    std::printf("; skipped %lld bad inputs", static_cast<long long>(r.skipped));
  }
  std::printf("\n");
  PrintStages(r.stages, r.seconds);
  return kExitOk;
}

// The pipeline's flags, as predict and data-stats take them.
void AddPipelineFlags(CLI::App* command, PredictArgs* args, FlagText* flags) {
  command
      ->add_option("-i,--input", args->inputs,
                   "a glob ('photos/*.jpg', sorted by path), a directory or "
                   "a file (repeatable, in order)")
      ->required()
      ->allow_extra_args(false);
  std::string recipes;
  for (const auto& [name, what] : PreprocessRecipes()) {
    recipes += (recipes.empty() ? "" : ", ") + name;
  }
  command->add_option("--preprocess", args->preprocess,
                      "a recipe (" + recipes +
                          "; default imagenet) or a weft JSON graph from a "
                          "path to one item");
  command->add_option("--batch", flags->batch, "items per Run (default 16)");
  command->add_flag("--skip-bad-inputs", args->skip_bad_inputs,
                    "leave out unreadable or corrupt inputs and list them, "
                    "rather than stop at the first");
  command->add_option("--inter", flags->inter,
                      "inter-op threads (default: auto); the pipeline runs "
                      "on this pool");
  command->add_flag("--no-prefetch", args->no_prefetch,
                    "prepare a batch only when the model asks for it (to "
                    "measure what the overlap buys)");
}

class DataStatsCommandLine final
    : public CommandWithArgs<PredictArgs, DataStatsCommand> {
 public:
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command = app.add_subcommand(
        "data-stats",
        "run weft predict's input pipeline alone (no model): items/s, and "
        "per stage its elements/s, busy time, AUTOTUNE's parallelism and "
        "the bottleneck");
    AddPipelineFlags(command, &args_, &flags_);
    return command;
  }
};

class PredictCommandLine final
    : public CommandWithArgs<PredictArgs, PredictCommand> {
 public:
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command = app.add_subcommand(
        "predict",
        "run a model over files: a pipeline (read, decode, preprocess) into "
        "batches, results in input order, resumable");
    command->add_option("MODEL", args_.model, "ONNX model or weft JSON graph")
        ->required();
    AddPipelineFlags(command, &args_, &flags_);
    command
        ->add_option("-o,--output", args_.output,
                     "FILE.npy (one array, rows in input order, plus "
                     "FILE.paths.txt) or a "
                     "directory (one NAME.npy per input)")
        ->required();
    command->add_option("--intra", flags_.intra,
                        "intra-op threads (default: auto)");
    command->add_flag("--stats", args_.stats,
                      "print where the time went: the model, the wait for "
                      "items, each stage of the pipeline");
    command->add_flag("-q,--quiet", args_.quiet, "no progress");
    command->add_option("--scheduler", args_.scheduler,
                        "run on this Dask cluster (tcp://HOST:8786 or "
                        "tls://...); docs/dask.md");
    command
        ->add_option("--local-workers", args_.local_workers,
                     "run on a Dask LocalCluster of N worker processes on "
                     "this machine (loopback only)")
        ->check(CLI::Range(1, 1024));
    command
        ->add_option("--threads-per-worker", args_.threads_per_worker,
                     "with --local-workers: Dask task threads per worker "
                     "(default 1)")
        ->check(CLI::Range(1, 1024));
    command
        ->add_option(
            "--partition-size", args_.partition_size,
            "on a cluster: inputs per task (default: whole batches, up to "
            "8, about 32 tasks)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
    command->add_option("--tls-ca-file", args_.tls_ca_file,
                        "on a cluster: the CA certificate (PEM) for tls://");
    command->add_option("--tls-cert", args_.tls_cert,
                        "on a cluster: this client's certificate (PEM)");
    command->add_option("--tls-key", args_.tls_key,
                        "on a cluster: this client's private key (PEM)");
    return command;
  }
};

}  // namespace

std::unique_ptr<Command> MakePredictCommandLine() {
  return std::make_unique<PredictCommandLine>();
}

std::unique_ptr<Command> MakeDataStatsCommandLine() {
  return std::make_unique<DataStatsCommandLine>();
}

}  // namespace weft::cli
