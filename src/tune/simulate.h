// A model of weft's executor, replaying a profiled graph on C cores for one
// (inter, intra) setting and predicting the Run's time.
//
// What it models, from src/runtime (docs/architecture.md):
// - inter-op workers: `inter` threads (0: C; -1: the calling thread only)
//   take ready nodes first come, first served;
// - the core budget: every running node holds a core; a node of an op that
//   splits enlists intra-op helpers up to intra - 1 while the budget has
//   cores left (max(C, intra) minus running nodes), and takes freed cores
//   when other nodes finish;
// - more threads computing than cores share them evenly (time slicing);
// - a node on k threads runs speedup(op, k) times faster than on one;
// - the Run's overhead beyond its nodes, measured at (1, k) for each
//   intra-op count k (GraphProfile::OverheadMs);
// - of the nodes one node's end makes ready, a short one that joins the
//   costliest at once runs on the same thread before it
//   (SessionOptions::join_inline_cost_ns, GraphProfile::join_inline_ms).
// The inline rule for cheap nodes (below inline_node_cost_ns, a few
// microseconds) is not modelled separately: such nodes cost little either
// way.
#ifndef WEFT_SRC_TUNE_SIMULATE_H_
#define WEFT_SRC_TUNE_SIMULATE_H_

#include "tune/profile.h"

namespace weft::tune {

// Predicted wall time (ms) of one Run of the profiled graph with `setting`
// on a machine of `cores` cores; with `timeline`, also when each node would
// run.
double PredictRunMs(const GraphProfile& profile, Setting setting, int cores,
                    std::vector<TimelineEntry>* timeline = nullptr);

// The intra-op counts of the grid: 1 ... min(cores, 8), then powers of
// two up to the cores, and the cores.
std::vector<int> IntraOpCounts(int cores);

// The grid `weft tune` predicts: inter in {-1} and the counts, intra in the
// counts, where the counts are 1 ... min(cores, 8), then powers of two up
// to the cores, and the cores.
std::vector<Setting> TuneGrid(int cores);

}  // namespace weft::tune

#endif  // WEFT_SRC_TUNE_SIMULATE_H_
