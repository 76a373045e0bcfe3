// weft bench GRAPH: the thread-configuration experiment of the tuning
// guides, done properly (fresh sessions, warm-up, medians, output hashes).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli_args.h"
#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"
#include "interrupt.h"
#include "weft/config_file.h"

namespace weft::cli {

namespace {

// One setting of the experiment while it is measured.
struct Trial {
  std::unique_ptr<Session> session;
  BenchRow row;
  std::vector<double> times;
};

StatusOr<Trial> StartTrial(const GraphFile& file, const NamedTensors& feeds,
                           int inter, int intra, const BenchPlan& plan) {
  SessionOptions options = plan.base;
  options.use_per_session_threads = true;  // Fresh pools per setting.
  options.inter_op_parallelism_threads = inter;
  options.intra_op_parallelism_threads = intra;
  Trial trial;
  WEFT_ASSIGN_OR_RETURN(trial.session, Session::Create(file.graph, options));
  std::vector<Tensor> outputs;
  for (int i = 0; i < plan.warmup; ++i) {
    WEFT_RETURN_IF_ERROR(trial.session->Run(
        plan.run_options, feeds, file.outputs, {}, &outputs, nullptr));
  }
  // One more, untimed and traced, for the memory it holds at its peak.
  RunOptions traced = plan.run_options;
  traced.trace_level = RunOptions::TraceLevel::kFull;
  RunMetadata metadata;
  WEFT_RETURN_IF_ERROR(
      trial.session->Run(traced, feeds, file.outputs, {}, &outputs, &metadata));
  trial.row.peak_bytes = metadata.peak_bytes;
  trial.row.arena_bytes = metadata.arena_bytes;
  trial.row.heap_tensors = metadata.heap_tensors;
  trial.row.splits = ProfileSplits(metadata);
  trial.row.inter = inter;
  trial.row.intra = intra;
  trial.row.effective_inter = trial.session->inter_op_threads();
  trial.row.effective_intra = trial.session->intra_op_threads();
  return trial;
}

// One timed Run; the first one's outputs are hashed.
Status TimeOnce(const GraphFile& file, const NamedTensors& feeds,
                const RunOptions& run_options, Trial& trial) {
  std::vector<Tensor> outputs;
  const auto start = std::chrono::steady_clock::now();
  WEFT_RETURN_IF_ERROR(trial.session->Run(run_options, feeds, file.outputs, {},
                                          &outputs, nullptr));
  trial.times.push_back(std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count());
  if (trial.times.size() == 1) {
    for (const Tensor& t : outputs) trial.row.hashes.push_back(ContentHash(t));
  }
  return Status::OK();
}

BenchRow FinishTrial(Trial& trial) {
  BenchRow row = std::move(trial.row);
  row.median_ms = Median(trial.times);
  row.min_ms = *std::min_element(trial.times.begin(), trial.times.end());
  row.max_ms = *std::max_element(trial.times.begin(), trial.times.end());
  return row;
}

bool Interrupted(const BenchPlan& plan) {
  return plan.interrupt != nullptr && plan.interrupt->interrupted();
}

// Makes and warms up the session of each setting in the grid, in order,
// calling `each` after each one is added to *trials; stops early, with
// OK, at Ctrl-C.
Status StartTrials(const GraphFile& file, const NamedTensors& feeds,
                   const BenchPlan& plan,
                   const std::function<void(int, int)>& show,
                   const std::function<Status(Trial&)>& each,
                   std::vector<Trial>* trials) {
  for (int inter : plan.inter_grid) {
    for (int intra : plan.intra_grid) {
      if (Interrupted(plan)) return Status::OK();
      show(inter, intra);
      WEFT_ASSIGN_OR_RETURN(Trial trial,
                            StartTrial(file, feeds, inter, intra, plan));
      trials->push_back(std::move(trial));
      WEFT_RETURN_IF_ERROR(each(trials->back()));
    }
  }
  return Status::OK();
}

// The settings measured one after the other.
Status MeasureInSequence(const GraphFile& file, const NamedTensors& feeds,
                         const BenchPlan& plan,
                         const std::function<void(int, int)>& show,
                         std::vector<Trial>* trials) {
  return StartTrials(
      file, feeds, plan, show,
      [&](Trial& trial) {
        for (int i = 0; i < plan.repeat && !Interrupted(plan); ++i) {
          WEFT_RETURN_IF_ERROR(TimeOnce(file, feeds, plan.run_options, trial));
        }
        return Status::OK();
      },
      trials);
}

// Every session first, then rounds that run each once.
Status MeasureInTurns(const GraphFile& file, const NamedTensors& feeds,
                      const BenchPlan& plan,
                      const std::function<void(int, int)>& show,
                      std::vector<Trial>* trials) {
  WEFT_RETURN_IF_ERROR(StartTrials(
      file, feeds, plan, show, [](Trial&) { return Status::OK(); }, trials));
  // Each turn re-warms its session with one untimed Run: the first Run
  // after the other sessions' turns finds its threads parked for the
  // whole round and its memory out of the caches, which a session used
  // for Run after Run does not (docs/BENCHMARKS.md: 10% on a 4 ms graph
  // at intra = 2, AMD EPYC Zen 5).
  for (int round = 0; round < plan.repeat; ++round) {
    for (Trial& trial : *trials) {
      if (Interrupted(plan)) return Status::OK();
      std::vector<Tensor> outputs;
      WEFT_RETURN_IF_ERROR(trial.session->Run(
          plan.run_options, feeds, file.outputs, {}, &outputs, nullptr));
      WEFT_RETURN_IF_ERROR(TimeOnce(file, feeds, plan.run_options, trial));
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<BenchReport> BenchGraph(const GraphFile& file,
                                 const NamedTensors& feeds,
                                 const BenchPlan& plan) {
  const int total =
      static_cast<int>(plan.inter_grid.size() * plan.intra_grid.size());
  int shown = 0;
  auto show = [&](int inter, int intra) {
    if (plan.progress) {
      std::fprintf(stderr, "\r[%d/%d] inter=%d intra=%d ...   ", ++shown, total,
                   inter, intra);
    }
  };
  std::vector<Trial> trials;
  Status measured = plan.in_turns
                        ? MeasureInTurns(file, feeds, plan, show, &trials)
                        : MeasureInSequence(file, feeds, plan, show, &trials);
  if (plan.progress) std::fprintf(stderr, "\r%60s\r", "");
  BenchReport report;
  report.interrupted = Interrupted(plan);
  // A Run that Ctrl-C cancelled is not a failure of the graph.
  if (!measured.ok() && !report.interrupted) return measured;
  for (Trial& trial : trials) {
    if (!trial.times.empty()) report.rows.push_back(FinishTrial(trial));
  }
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const BenchRow& row = report.rows[i];
    const bool one_one = (row.inter == 1 && row.intra == 1) ||
                         (row.effective_inter == 1 && row.effective_intra == 1);
    if (one_one && report.baseline < 0) report.baseline = static_cast<int>(i);
  }
  const double baseline_ms =
      report.baseline >= 0 ? report.rows[report.baseline].median_ms : 0;
  for (size_t i = 0; i < report.rows.size(); ++i) {
    BenchRow& row = report.rows[i];
    row.outputs_match = row.hashes == report.rows.front().hashes;
    row.speedup = baseline_ms > 0 ? baseline_ms / row.median_ms : 0;
    if (row.median_ms < report.rows[report.best].median_ms) {
      report.best = static_cast<int>(i);
    }
  }
  return report;
}

// A setting as given, with what it resolved to when that differs:
// "0 (2)" for auto on two cores.
std::string SettingText(int setting, int effective) {
  return setting == effective || (setting < 0 && effective < 0)
             ? std::to_string(setting)
             : std::to_string(setting) + " (" + std::to_string(effective) + ")";
}

void PrintBenchTable(const BenchReport& report, bool show_peak) {
  // Settings print as given, with what they resolved to: "0 (16)" is wider
  // than the heading, so the columns take the widest entry.
  int inter_width = 5, intra_width = 5;
  for (const BenchRow& r : report.rows) {
    inter_width = std::max<int>(inter_width,
                                SettingText(r.inter, r.effective_inter).size());
    intra_width = std::max<int>(intra_width,
                                SettingText(r.intra, r.effective_intra).size());
  }
  std::printf("  %*s %*s %10s %10s %10s %8s", inter_width, "inter", intra_width,
              "intra", "median", "min", "max", "speedup");
  if (show_peak) std::printf(" %9s", "peak MB");
  std::printf("  outputs\n");
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const BenchRow& r = report.rows[i];
    char speedup[16] = "       -";
    if (report.baseline >= 0) {
      std::snprintf(speedup, sizeof(speedup), "%7.2fx", r.speedup);
    }
    std::printf("%s %*s %*s %10s %10s %10s %8s",
                static_cast<int>(i) == report.best ? "*" : " ", inter_width,
                SettingText(r.inter, r.effective_inter).c_str(), intra_width,
                SettingText(r.intra, r.effective_intra).c_str(),
                FormatMs(r.median_ms).c_str(), FormatMs(r.min_ms).c_str(),
                FormatMs(r.max_ms).c_str(), speedup);
    if (show_peak) {
      std::printf(" %9.2f", static_cast<double>(r.peak_bytes) / 1e6);
    }
    std::printf("  %s\n", r.outputs_match ? "identical" : "DIFFERENT");
  }
  if (report.baseline < 0 && !report.rows.empty()) {
    std::printf(
        "  speedup: against inter 1, intra 1, which this grid does not "
        "measure (add 1 to --inter and --intra)\n");
  }
}

namespace {

// One output of a reduced-precision session against the same graph in fp32.
struct PrecisionError {
  std::string output;
  bool numeric = false;  // Floating point: the two figures below apply.
  double max_abs_error = 0;
  double max_abs_fp32 = 0;  // The largest |fp32 value|, the scale.
  bool equal = true;        // Every element the same.
};

// Runs the graph once at `options`' precision and once in fp32 (one
// thread each way: the precision, not the split, is what differs) and
// compares their outputs element by element.
StatusOr<std::vector<PrecisionError>> CompareWithFp32(
    const GraphFile& file, const NamedTensors& feeds,
    const SessionOptions& options, const RunOptions& run_options) {
  std::vector<std::vector<Tensor>> outputs(2);
  for (int i = 0; i < 2; ++i) {
    SessionOptions o = options;
    if (i == 1) o.precision = "fp32";
    o.use_per_session_threads = true;
    o.inter_op_parallelism_threads = 1;
    o.intra_op_parallelism_threads = 1;
    WEFT_ASSIGN_OR_RETURN(auto session, Session::Create(file.graph, o));
    WEFT_RETURN_IF_ERROR(session->Run(run_options, feeds, file.outputs, {},
                                      &outputs[i], nullptr));
  }
  std::vector<PrecisionError> errors;
  for (size_t k = 0; k < file.outputs.size(); ++k) {
    const Tensor& low = outputs[0][k];
    const Tensor& fp32 = outputs[1][k];
    PrecisionError e;
    e.output = file.outputs[k];
    const DataType t = fp32.dtype();
    e.numeric = t == DataType::kFloat32 || t == DataType::kFloat64 ||
                t == DataType::kFloat16 || t == DataType::kBFloat16;
    e.equal = ContentHash(low) == ContentHash(fp32);
    if (e.numeric && low.shape() == fp32.shape()) {
      for (int64_t i = 0; i < fp32.NumElements(); ++i) {
        const double reference = fp32.ValueAsDouble(i);
        e.max_abs_fp32 = std::max(e.max_abs_fp32, std::fabs(reference));
        e.max_abs_error = std::max(e.max_abs_error,
                                   std::fabs(low.ValueAsDouble(i) - reference));
      }
    }
    errors.push_back(e);
  }
  return errors;
}

double Relative(const PrecisionError& e) {
  return e.max_abs_fp32 > 0 ? e.max_abs_error / e.max_abs_fp32
                            : e.max_abs_error;
}

void PrintPrecisionErrors(const std::string& precision,
                          const std::vector<PrecisionError>& errors) {
  std::printf("precision %s against fp32 (one Run each, inter 1, intra 1):\n",
              precision.c_str());
  for (const PrecisionError& e : errors) {
    if (e.numeric) {
      std::printf(
          "  %s: max |error| %.3g, %.3g of its largest |fp32 value| %.3g\n",
          e.output.c_str(), e.max_abs_error, Relative(e), e.max_abs_fp32);
    } else {
      std::printf("  %s: %s\n", e.output.c_str(),
                  e.equal ? "identical" : "DIFFERENT (not floating point)");
    }
  }
}

// --json: the report as one JSON object (docs/cli-json.md).
int PrintBenchJson(const BenchArgs& args, const BenchReport& report,
                   const std::string& precision,
                   const std::vector<PrecisionError>& errors) {
  const BenchRow& best = report.rows[report.best];
  nlohmann::json rows = nlohmann::json::array();
  for (const BenchRow& r : report.rows) {
    nlohmann::json row = {{"median_ms", r.median_ms},
                          {"min_ms", r.min_ms},
                          {"max_ms", r.max_ms},
                          {"speedup", r.speedup},
                          {"peak_bytes", r.peak_bytes},
                          {"arena_bytes", r.arena_bytes},
                          {"heap_tensors", r.heap_tensors},
                          {"outputs_match", r.outputs_match},
                          {"hashes", r.hashes},
                          // Deprecated (0.1): the keys before the shared
                          // vocabulary; removed in the next release.
                          {"inter", r.inter},
                          {"intra", r.intra}};
    AddThreadCounts(row, r.inter, r.intra);
    AddThreadCounts(row["effective"], r.effective_inter, r.effective_intra);
    rows.push_back(std::move(row));
  }
  nlohmann::json best_json = {{"median_ms", best.median_ms}};
  AddThreadCounts(best_json, best.inter, best.intra);
  nlohmann::json out = {{"graph", args.graph},
                        {"repeat", args.repeat},
                        {"in_turns", args.in_turns},
                        {"warmup", args.warmup},
                        {"rows", rows},
                        {"best", best_json}};
  if (report.interrupted) out["interrupted"] = true;
  out["precision"] = precision;
  if (!errors.empty()) {
    nlohmann::json against = nlohmann::json::array();
    for (const PrecisionError& e : errors) {
      nlohmann::json item = {{"output", e.output}, {"identical", e.equal}};
      if (e.numeric) {
        item["max_abs_error"] = e.max_abs_error;
        item["max_abs_fp32"] = e.max_abs_fp32;
        item["relative_error"] = Relative(e);
      }
      against.push_back(std::move(item));
    }
    out["error_against_fp32"] = std::move(against);
  }
  PrintJson(out);
  return report.interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace

int BenchCommand(const BenchArgs& args) {
  // First: every thread the command starts (pools) inherits SIGINT blocked.
  InterruptWatch interrupt;
  if (args.repeat < 1 || args.warmup < 0) {
    return Fail(kExitBadInput, "--repeat must be >= 1 and --warmup >= 0");
  }
  std::vector<int> inter_grid = DefaultGrid(), intra_grid = DefaultGrid();
  if (!args.inter_list.empty()) {
    auto parsed = ParseIntList("--inter", args.inter_list, kMinInterOpThreads);
    if (!parsed.ok()) return Fail(kExitBadInput, parsed.status().message());
    inter_grid = *parsed;
  }
  if (!args.intra_list.empty()) {
    auto parsed = ParseIntList("--intra", args.intra_list, 0);
    if (!parsed.ok()) return Fail(kExitBadInput, parsed.status().message());
    intra_grid = *parsed;
  }
  auto model = LoadModel(args.graph);
  if (!model.ok()) return Fail(kExitBadInput, model.status().ToString());
  const GraphFile* file = &model->file;
  if (file->outputs.empty()) {
    return Fail(kExitBadInput, args.graph + ": the graph lists no \"outputs\"");
  }
  StatusOr<RunConfig> read = ReadRunConfig(args.config_file, args.settings);
  if (!read.ok()) return Fail(kExitBadInput, read.status().ToString());
  RunConfig& config = *read;
  auto feeds = ReadFeeds(args.feeds, *model);
  if (!feeds.ok()) return Fail(kExitBadInput, feeds.status().ToString());
  // Placeholders are filled as `run` fills them: from --feed, or with
  // --random-feeds; never silently.
  if (args.random_feeds) {
    if (Status s = AddRandomFeeds(*file, file->outputs, &*feeds); !s.ok()) {
      return Fail(kExitBadInput, s.message());
    }
  }
  if (Status s = CheckFeedsGiven(*model, file->outputs, *feeds); !s.ok()) {
    return Fail(kExitBadInput, s.message());
  }
  // Check the graph and feeds once, so that a bad input is exit code 2.
  {
    auto session = Session::Create(file->graph, config.session);
    if (!session.ok()) {
      return Fail(kExitBadInput,
                  session.status().WithContext(args.graph).ToString());
    }
    if (Status s = (*session)->Prepare(*feeds, file->outputs, {}); !s.ok()) {
      return Fail(kExitBadInput, s.ToString());
    }
  }
  MachineNoise machine;
  BenchPlan plan;
  plan.inter_grid = inter_grid;
  plan.intra_grid = intra_grid;
  plan.warmup = args.warmup;
  plan.repeat = args.repeat;
  plan.progress = isatty(STDERR_FILENO) != 0;
  plan.base = config.session;
  plan.in_turns = args.in_turns;
  plan.run_options = config.run;
  if (args.timeout_ms > 0) plan.run_options.timeout_ms = args.timeout_ms;
  plan.run_options.cancellation = interrupt.cancellation();
  plan.interrupt = &interrupt;
  auto report = BenchGraph(*file, *feeds, plan);
  if (!report.ok()) {
    return Fail(kExitRunFailed,
                "the run failed: " + report.status().ToString());
  }
  if (report->rows.empty()) {
    std::printf("interrupted before a setting was timed\n");
    return kExitInterrupted;
  }
  std::vector<PrecisionError> errors;
  if (config.session.precision != "fp32" && !report->interrupted) {
    auto compared =
        CompareWithFp32(*file, *feeds, config.session, plan.run_options);
    if (!compared.ok()) {
      return Fail(kExitRunFailed, "the fp32 comparison failed: " +
                                      compared.status().ToString());
    }
    errors = *std::move(compared);
  }
  const BenchRow& best = report->rows[report->best];
  if (args.json) {
    return PrintBenchJson(args, *report, config.session.precision, errors);
  }
  std::printf(
      "%s: median of %d runs after %d warm-up, fresh session per row%s\n",
      args.graph.c_str(), args.repeat, args.warmup,
      args.in_turns ? ", rows timed in turns" : "");
  PrintBenchTable(*report, /*show_peak=*/true);
  if (!errors.empty()) PrintPrecisionErrors(config.session.precision, errors);
  if (report->interrupted) {
    std::printf(
        "interrupted: %zu of %zu settings timed, each over the Runs it "
        "completed; no best setting is named\n",
        report->rows.size(), inter_grid.size() * intra_grid.size());
    return kExitInterrupted;
  }
  std::printf(
      "best (*): SessionOptions.inter_op_parallelism_threads = %d, "
      "SessionOptions.intra_op_parallelism_threads = %d\n",
      best.inter, best.intra);
  for (const std::string& line : ExplainReport(
           *report, AnalyzeShapeAsRun(file->graph),
           SplitsForExplanation(*report), machine, AutoCpuBudget().threads)) {
    std::printf("  %s\n", line.c_str());
  }
  return kExitOk;
}

namespace {

// `weft bench`: its flags; BenchCommand does the work.
class BenchCommandLine final : public CommandWithArgs<BenchArgs, BenchCommand> {
 public:
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command = app.add_subcommand(
        "bench", "time a graph over a grid of (inter, intra) settings");
    command->add_option("GRAPH", args_.graph, "graph file (JSON) or model.onnx")
        ->required();
    command->add_option("--config", args_.config_file,
                        "SessionOptions from FILE (JSON or text-format "
                        "ConfigProto); the grid sets the thread counts");
    command->add_option("--set", args_.settings, "FIELD=VALUE over --config")
        ->allow_extra_args(false);
    command->add_option("--inter", args_.inter_list,
                        "inter-op thread counts, e.g. -1,0,1,2 (-1: the "
                        "caller's thread, 0: auto; default: 1, 2, 4, ... up "
                        "to the CPU budget)");
    command->add_option("--intra", args_.intra_list,
                        "intra-op thread counts, e.g. 0,1,2 (0: auto; "
                        "default: as --inter)");
    AddFeedFlags(command, &args_.feeds, &args_.random_feeds);
    command->add_option("--repeat", flags_.repeat,
                        "timed runs per setting (default 5)");
    command->add_option("--warmup", flags_.warmup,
                        "untimed runs per setting (default 2)");
    command->add_flag("--in-turns", args_.in_turns,
                      "make every setting's session first, then time them "
                      "in turns, one Run each per round after an untimed "
                      "one (for noisy machines: drift reaches every setting "
                      "alike)");
    command->add_option("--timeout-ms", flags_.timeout_ms,
                        "deadline per Run (default: none, or --config's)");
    AddPrecisionFlag(command, &args_.settings,
                     "; other than fp32, each output's error against fp32 "
                     "is reported");
    command->add_flag("--json", args_.json, "print one JSON object");
    return command;
  }
};

}  // namespace

std::unique_ptr<Command> MakeBenchCommandLine() {
  return std::make_unique<BenchCommandLine>();
}

}  // namespace weft::cli
