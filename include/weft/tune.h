// weft tune, for programs: profile a graph, predict every (inter, intra)
// setting with a model of the executor, time the few best predicted, and
// explain the choice with the numbers (docs/tune.md). `weft tune` and
// weft.tune() are its two front ends.
#ifndef WEFT_TUNE_H_
#define WEFT_TUNE_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "weft/graph_io.h"
#include "weft/options.h"
#include "weft/session.h"
#include "weft/status.h"

namespace weft::tune {

// --- What tune learns about a graph from traced Runs -------------------------
// Each executed node's serial cost, each op kind's intra-op speed-up curve,
// and the graph's dependency structure; from these the total work, the
// critical path and the average parallelism.

struct NodeProfile {
  std::string name;
  std::string op;
  double serial_ms = 0;           // Median time with intra = 1.
  std::vector<int> predecessors;  // Indices into GraphProfile::nodes.
  std::vector<int> successors;
};

struct GraphProfile {
  // The nodes the Runs executed, in an order where every node comes after
  // its predecessors (fed and constant tensors are not nodes here).
  std::vector<NodeProfile> nodes;
  // speedup[op][k - 1]: how many times faster the op's nodes ran with k
  // intra-op threads than with 1, summed over the graph's nodes of that op
  // (k = 1 ... cores; 1.0 at k = 1).
  std::map<std::string, std::vector<double>> speedup;
  int cores = 1;  // The CPU budget the curves were measured on.
  // A Run's time beyond its nodes' (dispatch, start, completion), from the
  // serial Run: its median wall time minus the nodes' total.
  double overhead_ms = 0;
  double serial_run_ms = 0;  // Median wall time at inter = 1, intra = 1.
  // The same residual at each timed intra-op count k: the median wall time
  // at (1, k) minus the model's node total there (each node's serial time
  // over its op's speed-up at k). At k > 1 it holds what a Run at k spends
  // outside its nodes' traced times (helpers woken between nodes, the
  // traced Runs' own cost); it may be negative. overhead_at[1] is
  // overhead_ms.
  std::map<int, double> overhead_at;
  // SessionOptions::join_inline_cost_ns of the sessions tuned, in ms: the
  // executor runs a short node beside the costlier sibling it joins with
  // (0: never).
  double join_inline_ms = 0;

  double work_ms = 0;              // W: the nodes' serial costs summed.
  double span_ms = 0;              // S: the longest dependency chain of them.
  std::vector<int> critical_path;  // Its nodes, first to last.
  double parallelism() const { return span_ms > 0 ? work_ms / span_ms : 1; }

  // The speed-up of `op` on k threads (the last measured one beyond).
  double Speedup(const std::string& op, int k) const;
  // Ops whose nodes run at least 15% faster on 2 threads than on 1.
  bool Splits(const std::string& op) const { return Speedup(op, 2) >= 1.15; }
  // Share of the work in ops that split, 0..1.
  double SplittingShare() const;
  // The nodes whose work a traced Run at more than one intra-op thread
  // split over several threads (NodeExecStats::intra_op_shards > 1): what
  // the kernels do, which a loaded machine does not change, unlike the
  // speed-ups Splits() reads.
  std::set<std::string> split_nodes;
  // Share of the work in those nodes, 0..1: the figure tune prints.
  double SplitNodeShare() const;
  // The Run's overhead at `intra` threads: overhead_at, linear between the
  // timed counts, the last one's beyond them (overhead_ms when none).
  double OverheadMs(int intra) const;
};

// --- The settings and the model's timeline
// ------------------------------------

struct Setting {
  int inter = 1;  // -1, 0 (auto) or a count.
  int intra = 1;  // 0 (auto) or a count, the op's own thread included.

  friend bool operator==(const Setting&, const Setting&) = default;
  friend auto operator<=>(const Setting&, const Setting&) = default;
};

// One node of a Run's timeline: when it ran (ms from the Run's start) and
// on which inter-op worker (or thread) it ran.
struct TimelineEntry {
  int node = 0;  // Index into GraphProfile::nodes.
  double start_ms = 0;
  double end_ms = 0;
  int lane = 0;
};

// --- Tuning ------------------------------------------------------------------

struct TuneOptions {
  // Predict for a machine of this many cores (default: this one's CPU
  // budget). Another count than this machine's is a prediction only:
  // nothing is measured.
  std::optional<int> cores;
  // Traced Runs per profiled setting (medians), taken in turns across them.
  int profile_runs = 9;
  // Timed Runs per timed setting (medians), taken in turns across them.
  int measure_runs = 9;
  int warmup = 2;
  // Settings timed to confirm, beyond the (1, k) ones the profile timed:
  // at most this many, and the timed ones at most half the grid.
  int confirm = 3;
  int64_t timeout_ms = 60000;  // Per Run, profile and confirmation alike.
  SessionOptions base;         // Everything but the thread counts.
};

struct SettingResult {
  Setting setting;
  double predicted_ms = 0;
  std::optional<double> measured_ms;  // Only for timed settings.
};

struct TuneResult {
  GraphProfile profile;
  int cores = 1;          // Predicted for.
  int machine_cores = 1;  // This machine's budget, where it was measured.
  bool measured = false;  // False for a --cores prediction.
  std::vector<SettingResult> settings;  // The grid, in grid order.
  int best = 0;  // Index into settings: best measured, else
                 // best predicted.
  std::string explanation;
  // One Run at the best setting: traced when measured, else as predicted.
  std::vector<TimelineEntry> timeline;
  bool timeline_measured = false;
};

// Runs the profile, predictions and confirmation. Errors: a graph or feed
// that does not run (with the Run's error), a Run past options.timeout_ms,
// cores outside 1 ... kMaxThreads.
StatusOr<TuneResult> TuneGraph(const GraphFile& file, const NamedTensors& feeds,
                               const TuneOptions& options);

// A TuneResult as the JSON object `weft tune --json` prints and weft.tune()
// reads (docs/cli-json.md: thread counts under TensorFlow's names, times in
// ms under keys ending in "_ms"). `indent` as nlohmann::json::dump's: -1
// for one line.
std::string TuneResultJson(const std::string& graph, const TuneResult& result,
                           int indent = 1);

}  // namespace weft::tune

#endif  // WEFT_TUNE_H_
