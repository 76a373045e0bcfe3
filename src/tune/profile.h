// What `weft tune` learns about a graph from traced Runs: each executed
// node's serial cost, each op kind's intra-op speed-up curve, and the
// graph's dependency structure; from these the total work, the critical
// path and the average parallelism.
#ifndef WEFT_SRC_TUNE_PROFILE_H_
#define WEFT_SRC_TUNE_PROFILE_H_

#include <map>
#include <string>
#include <vector>

#include "weft/tune.h"
#include "weft/weft.h"

namespace weft::tune {

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
