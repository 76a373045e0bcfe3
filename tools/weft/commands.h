// The weft subcommands. Each declares its own flags (a Command, made by
// its Make*CommandLine) and does its work in a function of its arguments
// that returns the process exit code.
#ifndef WEFT_TOOLS_WEFT_COMMANDS_H_
#define WEFT_TOOLS_WEFT_COMMANDS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "explain.h"
#include "weft/serve.h"
#include "weft/weft.h"

namespace CLI {
class App;
}  // namespace CLI

namespace weft::cli {

// One subcommand of `weft` as main.cc sees it: it adds itself and its
// flags to the app, and runs once the command line has been parsed into
// them.
class Command {
 public:
  virtual ~Command() = default;
  // Adds the subcommand and its flags to `app`; returns the subcommand.
  virtual CLI::App* Declare(CLI::App& app) = 0;
  // Whether --json was given: errors are then printed as JSON too.
  virtual bool json() const = 0;
  // Checks what the flags hold and does the work; the exit code.
  virtual int Run() = 0;
};

// The subcommands, in the order `weft --help` lists them.
std::unique_ptr<Command> MakeInfoCommandLine();
std::unique_ptr<Command> MakeOpsCommandLine();
std::unique_ptr<Command> MakeRunCommandLine();
std::unique_ptr<Command> MakeBenchCommandLine();
std::unique_ptr<Command> MakeTuneCommandLine();
std::unique_ptr<Command> MakeDemoCommandLine();
std::unique_ptr<Command> MakeTestOnnxCommandLine();
std::unique_ptr<Command> MakeServeCommandLine();
std::unique_ptr<Command> MakeQuantizeCommandLine();
std::unique_ptr<Command> MakePredictCommandLine();
std::unique_ptr<Command> MakeDataStatsCommandLine();

struct RunArgs {
  std::string graph;
  std::string config_file;            // --config: SessionOptions, RunOptions.
  std::vector<std::string> settings;  // --set FIELD=VALUE, after the file.
  std::optional<int> inter, intra;
  std::vector<std::string> feeds;
  std::vector<std::string> fetches;
  std::string save_dir;
  std::string trace_file;
  int repeat = 1;
  int64_t timeout_ms = 0;
  bool json = false;
  bool values = false;        // With json: every output element.
  bool random_feeds = false;  // Fill placeholders without --feed.
};
int RunCommand(const RunArgs& args);

struct BenchArgs {
  std::string graph;
  std::string config_file;
  std::vector<std::string> settings;
  std::string inter_list, intra_list;  // Empty: the default grid.
  std::vector<std::string> feeds;
  int repeat = 5;
  int warmup = 2;
  bool json = false;
  bool random_feeds = false;  // Fill placeholders without --feed.
  bool in_turns = false;      // Time the settings in turns (noisy machines).
  int64_t timeout_ms = 0;     // Per Run; 0: the configuration's, or none.
};
int BenchCommand(const BenchArgs& args);

struct PredictArgs {
  std::string model;
  std::vector<std::string> inputs;  // --input: globs, files, directories.
  std::string preprocess = "imagenet";
  int64_t batch = 16;
  std::string output;
  bool skip_bad_inputs = false;
  bool quiet = false;  // No progress.
  bool no_prefetch = false;
  bool stats = false;  // Per-stage figures of the pipeline.
  std::optional<int> inter, intra;
  // On a Dask cluster (predict_cluster.h): an existing one, or one of
  // local_workers processes started here; TLS certificates by path.
  std::string scheduler;
  int local_workers = 0;
  int threads_per_worker = 1;
  int64_t partition_size = 0;  // Inputs per task; 0: weft.dask's default.
  std::string tls_ca_file, tls_cert, tls_key;
};

struct TuneArgs {
  std::string graph;
  std::string config_file;
  std::vector<std::string> settings;
  std::vector<std::string> feeds;
  std::optional<int> cores;  // Predict for another machine size.
  std::string plot_file;     // --plot: a PNG or SVG of the result.
  int64_t timeout_ms = 60000;
  bool json = false;
  bool random_feeds = false;
  // --serving: the batching and thread split of `weft serve` for the most
  // throughput within a p99 target (weft/serve.h, TuneServing).
  bool serving = false;
  double latency_target_ms = 100;
  int max_batch_size = 16;
  // --input: tune a weft predict job over these files (pipeline and
  // model), measured; with its --preprocess and --batch.
  std::vector<std::string> inputs;
  std::string preprocess = "imagenet";
  int64_t batch = 16;
};
int TuneCommand(const TuneArgs& args);
// weft tune MODEL --input ...: `inputs` expanded (predict_tune.cc).
int PredictTuneCommand(const TuneArgs& args,
                       const std::vector<std::string>& inputs);

// Each --input in turn: a directory gives its files, a pattern its matches
// (sorted by path), anything else names one file.
StatusOr<std::vector<std::string>> ExpandInputs(
    const std::vector<std::string>& specs);

// The serving tune of `weft tune --serving` and `weft serve --tune`: prints
// the timed table and the choice; the options to serve with.
StatusOr<serve::ServingTuneResult> RunServingTune(
    const std::string& model, const serve::ServingTuneOptions& options);

// Without a model: the machine, the CPU budget and versions. With an ONNX
// model: its producer, opsets, inputs, outputs, parameters and op histogram
// (unsupported ops marked).
int InfoCommand(const std::string& model, bool json);
// `weft info --passes [GRAPH]`: the graph passes, and what each does to
// GRAPH when one is given.
int PassesCommand(const std::string& graph,
                  const std::vector<std::string>& disabled, bool json);
// `weft info --options`: every SessionOptions field with its kind, range,
// default and what it does (weft/option_fields.h); --markdown prints the
// table docs/configuration.md carries.
int OptionsCommand(bool json, bool markdown);

struct TestOnnxArgs {
  std::vector<std::string> paths;  // Test cases or folders of them.
  std::string must_pass_file;      // Cases that must pass (one per line).
  int64_t timeout_ms = 60000;      // Per Run.
  // uint8/int8 outputs may differ from the expected ones by this many
  // quantisation steps (ONNX Runtime's quantized kernels round their own
  // way); 0 is exact.
  int64_t quantized_steps = 0;
  bool json = false;
};
int TestOnnxCommand(const TestOnnxArgs& args);

// Without a name: every registered op with its one-line summary. With one:
// its inputs, outputs, attributes (type, default, allowed dtypes), and
// whether it blocks. --markdown: docs/ops.md's form.
struct OpsArgs {
  std::string name;
  bool markdown = false;
};
int OpsCommand(const OpsArgs& args);

struct DemoArgs {
  std::string write_examples_dir;
  int repeat = 5;
  int64_t timeout_ms = 0;  // Per Run; 0: none.
};
int DemoCommand(const DemoArgs& args);

// One row of the thread-configuration experiment.
struct BenchRow {
  int inter = 1, intra = 1;  // The setting (0: auto, -1: caller's thread).
  int effective_inter = 1, effective_intra = 1;  // What it resolved to.
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double speedup = 0;  // Against inter = 1 / intra = 1 (0 when not measured).
  int64_t peak_bytes = 0;  // RunMetadata::peak_bytes of one traced Run.
  // That Run's RunMetadata::arena_bytes and ::heap_tensors.
  int64_t arena_bytes = 0;
  int64_t heap_tensors = 0;
  bool outputs_match = true;  // Hashes equal to the first row's.
  std::vector<std::string> hashes;
  // Which ops that traced Run split across threads (explain.h).
  SplitProfile splits;
};

struct BenchReport {
  std::vector<BenchRow> rows;
  int best = 0;  // Index of the fastest median.
  // The row measured at one inter-op and one intra-op thread (as set or as
  // resolved), which `speedup` is against; -1 when the grid has none.
  int baseline = -1;
  // Stopped by Ctrl-C: `rows` holds the settings with at least one timed
  // Run, each over the Runs it completed.
  bool interrupted = false;
};

class InterruptWatch;

// What BenchGraph measures and how.
struct BenchPlan {
  std::vector<int> inter_grid, intra_grid;
  int warmup = 2;
  int repeat = 5;
  bool progress = false;  // "[3/9] inter=2 intra=1 ..." on stderr.
  // Every other SessionOptions field (--config).
  SessionOptions base;
  // With `in_turns`, every session is made and warmed up first and each
  // round times each once, so that drift of the machine's speed reaches
  // every setting alike.
  bool in_turns = false;
  // For every Run: its deadline, and (with `interrupt`) its cancellation.
  RunOptions run_options;
  // When set, Ctrl-C ends the experiment with what it measured so far.
  const InterruptWatch* interrupt = nullptr;
};

// Runs the experiment: for each (inter, intra), a fresh session with its own
// pools, `warmup` untimed Runs, then `repeat` timed ones.
StatusOr<BenchReport> BenchGraph(const GraphFile& file,
                                 const NamedTensors& feeds,
                                 const BenchPlan& plan);
// With `show_peak`, a column of each setting's peak_bytes in MB.
void PrintBenchTable(const BenchReport& report, bool show_peak);

}  // namespace weft::cli

#endif  // WEFT_TOOLS_WEFT_COMMANDS_H_
