// What `weft tune` learns about a graph from traced Runs: each executed
// node's serial cost, each op kind's intra-op speed-up curve, and the
// graph's dependency structure; from these the total work, the critical
// path and the average parallelism.
#ifndef WEFT_SRC_TUNE_PROFILE_H_
#define WEFT_SRC_TUNE_PROFILE_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::tune {

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

// The per-node timings of traced Runs: medians per node name, scaled
// together so that they add up to the median over Runs of those nodes'
// total. A Run's slow nodes are rare for each node, but most Runs have a
// few (a wake-up that came late, a preempted helper), so plain medians
// add up to less than a typical Run spends: at intra = 2 the model then
// promised SqueezeNet 10-15% more speed-up than a Run got. A node whose
// ParallelFor never enlisted a helper (intra_op_shards 1 in every Run) is
// left out when `only_split` is set: its time at k threads is its serial
// time, whatever the noise says.
using NodeTimes = std::map<std::string, double>;
NodeTimes MedianNodeTimes(const std::vector<RunMetadata>& runs,
                          bool only_split = false);

// One node of the graph a traced Run executed: after the graph passes, so
// a fused node stands for the nodes it replaced (a profile of the graph as
// given would miss its time, and count it as fixed overhead).
struct ExecutedNode {
  std::string name;
  std::string op;
  std::vector<std::string> inputs;  // NodeExecStats::input_nodes.
};

// The graph's own nodes (not those of If, Loop or Scan bodies, whose time
// is their calling node's) that `run` executed, in order of start.
std::vector<ExecutedNode> ExecutedNodes(const RunMetadata& run);

// Builds the profile of the `executed` graph from serial node times
// (intra = 1), the node times at some intra-op counts k > 1 (times_at[k];
// counts between them are interpolated, counts beyond the largest take its
// speed-up), and the median wall times of untraced Runs at (1, k)
// (run_ms_at[k]; k = 1 is required). Nodes missing from the serial times
// are left out, and so are inputs that are not executed nodes (feeds and
// constants).
GraphProfile BuildProfile(const std::vector<ExecutedNode>& executed,
                          const NodeTimes& serial,
                          const std::map<int, NodeTimes>& times_at,
                          const std::map<int, double>& run_ms_at, int cores);

}  // namespace weft::tune

#endif  // WEFT_SRC_TUNE_PROFILE_H_
