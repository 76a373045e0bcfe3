// What demo and bench say about their tables, derived so that the words
// cannot contradict the graph or the figures:
// - the graph's shape, read from the graph itself: how many compute nodes,
//   the most that can run at once (its width), the longest dependency chain;
// - which ops split across cores and how much of the work they hold, read
//   from a traced Run at the most intra-op threads measured;
// - the noise of the measurement (the spread of each setting's Runs, the
//   machine's load and the CPU time stolen from it), so that a difference
//   within it is called a tie, with how to get a firmer answer.
#ifndef WEFT_TOOLS_WEFT_EXPLAIN_H_
#define WEFT_TOOLS_WEFT_EXPLAIN_H_

#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::cli {

struct BenchReport;

struct GraphShape {
  int compute_nodes = 0;  // Nodes other than Placeholder, Const, NoOp.
  // The most compute nodes with no dependency path between any two of them
  // (those at one depth of the longest-path layering), and some of them.
  int width = 0;
  std::vector<std::string> widest;  // At most three names.
  int chain = 0;  // Compute nodes on the longest dependency chain.
};
GraphShape AnalyzeShape(const Graph& graph);
// The shape of the graph as a session runs it: after the graph passes
// (fusions change what can overlap), or as given when they fail.
GraphShape AnalyzeShapeAsRun(const Graph& graph);

// Where a traced Run spent its nodes' time: the share in nodes whose work
// was split over more than one thread, and the op kinds, heaviest first,
// that split and that did not.
struct SplitProfile {
  bool known = false;
  double split_share = 0;  // 0..1 of the nodes' summed time.
  std::vector<std::string> split_ops, serial_ops;
};
SplitProfile ProfileSplits(const RunMetadata& traced);

// The machine's state around a measurement: the load average per CPU when
// it started (read before weft's own Runs add to it) and the share of CPU
// time the hypervisor took since (steal).
class MachineNoise {
 public:
  MachineNoise();  // Reads the load; starts the steal count.
  // "load 0.40 per CPU, steal 0%".
  std::string Describe() const;
  double steal_share() const;
  double load_per_core() const { return load_per_core_; }

 private:
  long long steal_start_ = 0, total_start_ = 0;
  double load_per_core_ = 0;
};

// The relative difference below which two medians are a tie: the median
// over rows of each row's spread ((max - min) / median), at least 3%.
double NoiseThreshold(const BenchReport& report);

// The split profile to explain a report with: the row at one inter-op
// thread with the most intra-op threads (where ops split if they can).
SplitProfile SplitsForExplanation(const BenchReport& report);

// Sentences for `report` (measured on `graph` with `threads` cores):
// shape, winner or tie, what inter-op and intra-op threads bought and why.
std::vector<std::string> ExplainReport(const BenchReport& report,
                                       const GraphShape& shape,
                                       const SplitProfile& splits,
                                       const MachineNoise& machine,
                                       int threads);

}  // namespace weft::cli

#endif  // WEFT_TOOLS_WEFT_EXPLAIN_H_
