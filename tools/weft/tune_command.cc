// weft tune GRAPH: the best thread settings for a graph without trying them
// all — profile, predict with a model of weft's executor, confirm the best
// few, and explain the choice with the numbers (src/tune/).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli_args.h"
#include "cli_util.h"
#include "commands.h"
#include "explain.h"
#include "weft/config_file.h"
#include "weft/tune.h"

namespace weft::cli {
namespace {

// Above these, the machine was busy enough to move the figures: more than
// three quarters of a CPU's load per CPU, or 5% of the time stolen.
constexpr double kBusyLoadPerCore = 0.75;
constexpr double kBusySteal = 0.05;

std::string Cell(const std::optional<double>& ms) {
  return ms ? FormatMs(*ms) : "-";
}

// The chosen setting in each framework's words.
void PrintSettingFor(const tune::Setting& s) {
  const int inter = s.inter;
  const int intra = s.intra;
  std::printf(
      "chosen: SessionOptions.inter_op_parallelism_threads = %d, "
      "SessionOptions.intra_op_parallelism_threads = %d\n",
      inter, intra);
  std::printf(
      "  TensorFlow:   tf.compat.v1.ConfigProto(inter_op_parallelism_threads="
      "%d, intra_op_parallelism_threads=%d)\n"
      "                tf.config.threading.set_inter_op_parallelism_threads(%d)"
      "; tf.config.threading.set_intra_op_parallelism_threads(%d)\n",
      inter, intra, inter, intra);
  // PyTorch has no caller-thread mode: one inter-op thread is closest.
  std::printf(
      "  PyTorch:      torch.set_num_interop_threads(%d); "
      "torch.set_num_threads(%d)\n",
      inter < 1 ? 1 : inter, intra);
  if (inter == 1 || inter == -1) {
    std::printf(
        "  ONNX Runtime: so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL; "
        "so.intra_op_num_threads = %d\n",
        intra);
  } else {
    std::printf(
        "  ONNX Runtime: so.execution_mode = ort.ExecutionMode.ORT_PARALLEL; "
        "so.inter_op_num_threads = %d; so.intra_op_num_threads = %d\n",
        inter, intra);
  }
}

void PrintResult(const std::string& graph, const tune::TuneResult& result,
                 const MachineNoise& machine) {
  const tune::GraphProfile& p = result.profile;
  std::printf("%s: profiled on %d cores\n", graph.c_str(),
              result.machine_cores);
  // The machine's own noise over the tune, and a warning where it is busy
  // enough to move the figures.
  const bool busy = machine.load_per_core() > kBusyLoadPerCore ||
                    machine.steal_share() > kBusySteal;
  std::printf("  noise: %s%s\n", machine.Describe().c_str(),
              busy ? " -- the machine is busy: the timings below may be off "
                     "by more than usual; rerun when it is idle, or compare "
                     "settings in turns (weft bench --in-turns)"
                   : "");
  std::printf(
      "  work %s, critical path %s, parallelism %.2f; %.0f%% of the work in "
      "ops that split (split by the kernels in traced Runs)\n",
      FormatMs(p.work_ms).c_str(), FormatMs(p.span_ms).c_str(), p.parallelism(),
      100 * p.SplitNodeShare());
  std::string path;
  for (size_t i = 0; i < p.critical_path.size(); ++i) {
    if (i == 6 && p.critical_path.size() > 8) {
      path +=
          " -> ... (" + std::to_string(p.critical_path.size() - 7) + " more)";
      i = p.critical_path.size() - 2;
      continue;
    }
    path += (i == 0 ? "" : " -> ") + p.nodes[p.critical_path[i]].name;
  }
  std::printf("  critical path: %s\n", path.c_str());
  if (!result.measured) {
    std::printf(
        "prediction for a machine of %d cores (this one has %d): nothing "
        "below was measured\n",
        result.cores, result.machine_cores);
  }
  std::printf("  %5s %5s %10s %10s\n", "inter", "intra", "predicted",
              "measured");
  for (size_t i = 0; i < result.settings.size(); ++i) {
    const tune::SettingResult& r = result.settings[i];
    std::printf("%s %5d %5d %10s %10s\n",
                static_cast<int>(i) == result.best ? "*" : " ", r.setting.inter,
                r.setting.intra, FormatMs(r.predicted_ms).c_str(),
                Cell(r.measured_ms).c_str());
  }
  PrintSettingFor(result.settings[result.best].setting);
  std::printf("why: %s\n", result.explanation.c_str());
}

// The plotting script. Installed, it lies at share/weft/tune_plot.py under
// the prefix, found from this executable's own place (bin/weft), so an
// installed or relocated weft needs neither the build tree nor a Python
// version in the path; a weft run from the build tree uses the source copy.
std::string PlotScript() {
  std::error_code error;
  const std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", error);
  std::vector<std::string> candidates;
  if (!error) {
    candidates.push_back(
        (exe.parent_path().parent_path() / "share/weft/tune_plot.py").string());
  }
  candidates.push_back(WEFT_PLOT_SCRIPT_SOURCE);
  for (const std::string& path : candidates) {
    if (access(path.c_str(), R_OK) == 0) return path;
  }
  return "";
}

// Whether `python` imports matplotlib: asked before any tuning, so that a
// missing package is said at once and a later failure is not blamed on it.
Status CheckMatplotlib() {
  const std::string command =
      std::string(WEFT_PLOT_PYTHON) + " -c 'import matplotlib' 2>/dev/null";
  if (std::system(command.c_str()) != 0) {
    return FailedPreconditionError(
        "--plot draws with matplotlib, which " WEFT_PLOT_PYTHON
        " cannot import: apt-get install python3-matplotlib");
  }
  return Status::OK();
}

// What --plot needs, checked before the tune starts: a file name it can
// write, ending in .png, .svg or .pdf, the script, and matplotlib.
Status CheckPlotFile(const std::string& file) {
  WEFT_RETURN_IF_ERROR(CheckOutputFile("--plot", file));
  const std::string extension = std::filesystem::path(file).extension();
  if (extension != ".png" && extension != ".svg" && extension != ".pdf") {
    return InvalidArgumentError("--plot " + file +
                                ": the file must end in .png, .svg or .pdf");
  }
  if (PlotScript().empty()) {
    return NotFoundError(
        "--plot needs weft's plotting script (share/weft/tune_plot.py under "
        "the install prefix): cmake --install build");
  }
  return CheckMatplotlib();
}

// Draws `json` into `file` with matplotlib (python/weft/_tune_plot.py).
Status Plot(const std::string& json, const std::string& file) {
  const std::string script = PlotScript();
  char scratch[] = "/tmp/weft-tune-XXXXXX";
  const int fd = mkstemp(scratch);
  if (fd < 0)
    return InternalError("cannot make a scratch file: " + ErrnoText());
  const bool written =
      write(fd, json.data(), json.size()) == static_cast<ssize_t>(json.size());
  close(fd);
  if (!written) {
    unlink(scratch);
    return InternalError("cannot write the scratch file: " + ErrnoText());
  }
  const ChildExit end =
      RunChildProcess({WEFT_PLOT_PYTHON, script, scratch, file});
  unlink(scratch);
  if (!end.exited || end.code != 0) {
    return UnknownError(std::string("drawing ") + file + " failed (" +
                        WEFT_PLOT_PYTHON " " + script +
                        "): its error is above");
  }
  return Status::OK();
}

// `weft tune --serving`: TuneServing's table and choice, and the flags
// that serve with it.
int ServingTuneCommand(const TuneArgs& args) {
  if (args.json || !args.plot_file.empty() || args.cores) {
    return Fail(kExitBadInput,
                "--serving prints its table as text: --json, --plot and "
                "--cores are not taken with it");
  }
  StatusOr<RunConfig> config = ReadRunConfig(args.config_file, args.settings);
  if (!config.ok()) return Fail(kExitBadInput, config.status().ToString());
  serve::ServingTuneOptions options;
  options.latency_target_ms = args.latency_target_ms;
  options.max_batch_size = args.max_batch_size;
  options.base = config->session;
  // --feed: one typical request (a batch of b stacks it b times).
  if (args.random_feeds) {
    return Fail(kExitBadInput,
                "--serving takes one request with --feed, not --random-feeds");
  }
  if (!args.feeds.empty()) {
    StatusOr<Model> model = LoadModel(args.graph);
    if (!model.ok()) return Fail(kExitBadInput, model.status().ToString());
    StatusOr<NamedTensors> request = ReadFeeds(args.feeds, *model);
    if (!request.ok()) return Fail(kExitBadInput, request.status().ToString());
    options.request = *std::move(request);
  }
  StatusOr<serve::ServingTuneResult> result =
      RunServingTune(args.graph, options);
  if (!result.ok()) return Fail(kExitBadInput, result.status().ToString());
  const serve::BatchingOptions& b = result->batching;
  std::string flags =
      "--inter " +
      std::to_string(result->session.inter_op_parallelism_threads) +
      " --intra " +
      std::to_string(result->session.intra_op_parallelism_threads);
  if (b.max_batch_size > 0) {
    flags += " --max-batch-size " + std::to_string(b.max_batch_size) +
             " --preferred-batch-size " +
             std::to_string(b.preferred_batch_size.front()) +
             " --max-queue-delay-us " + std::to_string(b.max_queue_delay_us);
  }
  std::printf("serve with: weft serve %s %s (or weft serve --tune)\n",
              args.graph.c_str(), flags.c_str());
  return kExitOk;
}

}  // namespace

StatusOr<serve::ServingTuneResult> RunServingTune(
    const std::string& model, const serve::ServingTuneOptions& options) {
  WEFT_ASSIGN_OR_RETURN(serve::ServingTuneResult result,
                        serve::TuneServing(model, options));
  std::printf("%s: serving tune, p99 target %.1f ms\n", model.c_str(),
              options.latency_target_ms);
  std::printf("  %7s %5s %5s %10s %12s %10s %10s\n", "runners", "intra",
              "batch", "Run", "throughput", "p99", "alone");
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    const serve::ServingCandidate& c = result.candidates[i];
    std::printf(
        "%s %7d %5d %5d %7.3f ms %8.0f/s %7.3f ms %7.3f ms%s\n",
        static_cast<int>(i) == result.best ? "*" : " ", c.runners, c.intra,
        c.batch, c.run_ms, c.throughput_rps, c.p99_ms, c.alone_ms,
        c.p99_ms > options.latency_target_ms ? "  (over the target)" : "");
  }
  std::printf("why: %s\n", result.explanation.c_str());
  std::fflush(stdout);
  return result;
}

namespace {

int TuneWork(const TuneArgs& args) {
  const MachineNoise machine;  // Load and steal over the whole tune.
  if (args.cores && (*args.cores < 1 || *args.cores > kMaxThreads)) {
    return Fail(kExitBadInput, "--cores " + std::to_string(*args.cores) +
                                   " is out of range: 1 to " +
                                   std::to_string(kMaxThreads));
  }
  if (args.timeout_ms < 1) {
    return Fail(kExitBadInput, "--timeout-ms must be >= 1");
  }
  if (!args.plot_file.empty()) {
    if (Status s = CheckPlotFile(args.plot_file); !s.ok()) {
      return Fail(kExitBadInput, s.message());
    }
  }
  auto model = LoadModel(args.graph);
  if (!model.ok()) return Fail(kExitBadInput, model.status().ToString());
  const GraphFile& file = model->file;
  if (file.outputs.empty()) {
    return Fail(kExitBadInput, args.graph + ": the graph lists no \"outputs\"");
  }
  StatusOr<RunConfig> config = ReadRunConfig(args.config_file, args.settings);
  if (!config.ok()) return Fail(kExitBadInput, config.status().ToString());
  auto feeds = ReadFeeds(args.feeds, *model);
  if (!feeds.ok()) return Fail(kExitBadInput, feeds.status().ToString());
  if (args.random_feeds) {
    if (Status s = AddRandomFeeds(file, file.outputs, &*feeds); !s.ok()) {
      return Fail(kExitBadInput, s.message());
    }
  }
  if (Status s = CheckFeedsGiven(*model, file.outputs, *feeds); !s.ok()) {
    return Fail(kExitBadInput, s.message());
  }
  {  // A graph or feed that does not fit is bad input (exit 2).
    auto session = Session::Create(file.graph, config->session);
    if (!session.ok()) {
      return Fail(kExitBadInput,
                  session.status().WithContext(args.graph).ToString());
    }
    if (Status s = (*session)->Prepare(*feeds, file.outputs, {}); !s.ok()) {
      return Fail(kExitBadInput, s.ToString());
    }
  }
  tune::TuneOptions options;
  options.cores = args.cores;
  options.timeout_ms = args.timeout_ms;
  options.base = config->session;
  auto result = tune::TuneGraph(file, *feeds, options);
  if (!result.ok()) {
    // A model that fails to run or passes the deadline: no recommendation.
    return Fail(kExitRunFailed, "cannot tune " + args.graph + ": " +
                                    result.status().ToString() +
                                    "; no setting is recommended");
  }
  if (!args.plot_file.empty()) {
    if (Status s =
            Plot(tune::TuneResultJson(args.graph, *result, -1), args.plot_file);
        !s.ok()) {
      return Fail(kExitRunFailed, s.message());
    }
    std::fprintf(stderr, "weft: drew %s (with %s)\n", args.plot_file.c_str(),
                 PlotScript().c_str());
  }
  if (args.json) {
    std::printf("%s\n", tune::TuneResultJson(args.graph, *result).c_str());
  } else {
    PrintResult(args.graph, *result, machine);
  }
  return kExitOk;
}

}  // namespace

int TuneCommand(const TuneArgs& args) {
  if (!args.inputs.empty()) {
    StatusOr<std::vector<std::string>> inputs = ExpandInputs(args.inputs);
    if (!inputs.ok()) return Fail(kExitBadInput, inputs.status().message());
    return PredictTuneCommand(args, *inputs);
  }
  if (args.serving) return ServingTuneCommand(args);
  return TuneWork(args);
}

namespace {

// `weft tune`: its flags; TuneCommand does the work.
class TuneCommandLine final : public CommandWithArgs<TuneArgs, TuneCommand> {
 public:
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command = app.add_subcommand(
        "tune",
        "predict the best (inter, intra) setting from a profile, measure the "
        "best few, explain");
    command->add_option("GRAPH", args_.graph, "graph file (JSON) or model.onnx")
        ->required();
    command->add_option("--config", args_.config_file,
                        "SessionOptions from FILE (JSON or text-format "
                        "ConfigProto); tune sets the thread counts");
    command->add_option("--set", args_.settings, "FIELD=VALUE over --config")
        ->allow_extra_args(false);
    AddFeedFlags(command, &args_.feeds, &args_.random_feeds);
    command->add_option("--cores", flags_.cores,
                        "predict for a machine of N cores (a prediction: "
                        "nothing is measured unless N is this machine's)");
    command->add_option("--timeout-ms", flags_.timeout_ms,
                        "deadline per profiling or timing run (default "
                        "60000)");
    command->add_option("--plot", args_.plot_file,
                        "draw the grid (heat maps) and one Run (timeline) "
                        "into FILE.png or FILE.svg (needs python3-matplotlib)");
    command->add_flag("--json", args_.json, "print one JSON object");
    command->add_option("--input", args_.inputs,
                        "tune a weft predict job over these files (a glob, a "
                        "directory or a file; repeatable): its pipeline and "
                        "model measured at each (inter, intra)");
    command->add_option("--preprocess", args_.preprocess,
                        "with --input: weft predict's --preprocess");
    command
        ->add_option("--batch", args_.batch,
                     "with --input: items per Run (default 16)")
        ->check(CLI::Range(int64_t{1}, int64_t{65536}));
    command->add_flag("--serving", args_.serving,
                      "tune for weft serve: batching and thread split for "
                      "the most throughput within --latency-target-ms");
    command->add_option("--latency-target-ms", args_.latency_target_ms,
                        "with --serving: the p99 to stay within (default "
                        "100)");
    command->add_option("--max-batch-size", args_.max_batch_size,
                        "with --serving: the largest batch timed (default 16)");
    return command;
  }
};

}  // namespace

std::unique_ptr<Command> MakeTuneCommandLine() {
  return std::make_unique<TuneCommandLine>();
}

}  // namespace weft::cli
