#include "tune/simulate.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace weft::tune {

std::vector<int> IntraOpCounts(int cores) {
  // Every count up to 8, then powers of two and the cores themselves: a
  // 64-core grid has 12 x 11 settings, not 65 x 64.
  std::vector<int> counts;
  for (int k = 1; k <= cores; k = k < 8 ? k + 1 : 2 * k) counts.push_back(k);
  if (counts.back() != cores) counts.push_back(cores);
  return counts;
}

std::vector<Setting> TuneGrid(int cores) {
  const std::vector<int> counts = IntraOpCounts(cores);
  std::vector<Setting> grid;
  std::vector<int> inters = {-1};
  inters.insert(inters.end(), counts.begin(), counts.end());
  for (int inter : inters) {
    for (int intra : counts) grid.push_back({inter, intra});
  }
  return grid;
}

double PredictRunMs(const GraphProfile& profile, Setting setting, int cores,
                    std::vector<TimelineEntry>* timeline) {
  const int n = static_cast<int>(profile.nodes.size());
  const int workers = setting.inter == -1  ? 1
                      : setting.inter == 0 ? cores
                                           : setting.inter;
  const int intra = setting.intra == 0 ? cores : setting.intra;
  const int budget = std::max(cores, intra);

  std::vector<int> pending(n);
  std::deque<int> ready;
  for (int i = 0; i < n; ++i) {
    pending[i] = static_cast<int>(profile.nodes[i].predecessors.size());
    if (pending[i] == 0) ready.push_back(i);
  }
  struct Running {
    int node;
    double remaining_ms;  // Serial milliseconds of work left.
    bool splits;
    double start_ms;
    int lane;
  };
  std::vector<bool> lane_busy(workers, false);
  std::vector<Running> running;  // In start order.
  double now = 0;
  for (;;) {
    while (static_cast<int>(running.size()) < workers && !ready.empty()) {
      const NodeProfile& node = profile.nodes[ready.front()];
      const int lane = static_cast<int>(
          std::find(lane_busy.begin(), lane_busy.end(), false) -
          lane_busy.begin());
      lane_busy[lane] = true;
      running.push_back(
          {ready.front(), node.serial_ms, profile.Splits(node.op), now, lane});
      ready.pop_front();
    }
    if (running.empty()) break;
    // Threads per running node: one, plus helpers while the budget has
    // cores left, first to the nodes that started first.
    int spare = budget - static_cast<int>(running.size());
    std::vector<int> threads(running.size(), 1);
    for (size_t i = 0; i < running.size(); ++i) {
      if (!running[i].splits || spare <= 0) continue;
      const int helpers = std::min(intra - 1, spare);
      threads[i] += helpers;
      spare -= helpers;
    }
    int computing = 0;
    for (int t : threads) computing += t;
    const double share =
        computing > cores ? static_cast<double>(cores) / computing : 1.0;
    std::vector<double> rate(running.size());
    double step = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < running.size(); ++i) {
      const NodeProfile& node = profile.nodes[running[i].node];
      // A node's own speed-up curve is its op's, measured alone on the
      // machine: on k threads of the budget it gets speedup(k).
      rate[i] = profile.Speedup(node.op, threads[i]) * share;
      step = std::min(step, running[i].remaining_ms / rate[i]);
    }
    now += step;
    std::vector<Running> still;
    for (size_t i = 0; i < running.size(); ++i) {
      running[i].remaining_ms -= rate[i] * step;
      if (running[i].remaining_ms > 1e-12) {
        still.push_back(running[i]);
        continue;
      }
      lane_busy[running[i].lane] = false;
      if (timeline != nullptr) {
        timeline->push_back(
            {running[i].node, running[i].start_ms, now, running[i].lane});
      }
      for (int s : profile.nodes[running[i].node].successors) {
        if (--pending[s] == 0) ready.push_back(s);
      }
    }
    running = std::move(still);
  }
  return now + profile.overhead_ms;
}

}  // namespace weft::tune
