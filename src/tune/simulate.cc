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

namespace {

// The nodes of one batch (made ready by one node's end, or the roots) in
// the groups the executor runs them in: each group goes to one thread and
// runs in order. The costliest node keeps the short nodes that join it at
// once (executor.cc, JoinsKeptNode), which run before it; every other node
// is a group of its own. Costs are the nodes' times at `intra` threads, as
// the executor's estimates measure them.
std::vector<std::vector<int>> GroupBatch(const GraphProfile& profile,
                                         const std::vector<int>& batch,
                                         int intra) {
  auto cost = [&](int i) {
    const NodeProfile& node = profile.nodes[i];
    return node.serial_ms / profile.Speedup(node.op, intra);
  };
  std::vector<std::vector<int>> groups;
  if (batch.empty()) return groups;
  const int kept =
      *std::max_element(batch.begin(), batch.end(),
                        [&](int a, int b) { return cost(a) < cost(b); });
  const std::vector<int>& kept_successors = profile.nodes[kept].successors;
  std::vector<int> kept_group;
  for (int i : batch) {
    if (i == kept) continue;
    const std::vector<int>& successors = profile.nodes[i].successors;
    const bool joins_kept =
        !successors.empty() &&
        std::all_of(successors.begin(), successors.end(), [&](int s) {
          return std::find(kept_successors.begin(), kept_successors.end(), s) !=
                 kept_successors.end();
        });
    if (joins_kept && cost(i) < profile.join_inline_ms) {
      kept_group.push_back(i);
    } else {
      groups.push_back({i});
    }
  }
  kept_group.push_back(kept);
  groups.insert(groups.begin(), std::move(kept_group));
  return groups;
}

}  // namespace

double PredictRunMs(const GraphProfile& profile, Setting setting, int cores,
                    std::vector<TimelineEntry>* timeline) {
  const int n = static_cast<int>(profile.nodes.size());
  const int workers = setting.inter == -1  ? 1
                      : setting.inter == 0 ? cores
                                           : setting.inter;
  const int intra = setting.intra == 0 ? cores : setting.intra;
  const int budget = std::max(cores, intra);

  std::vector<int> pending(n);
  std::vector<int> roots;
  for (int i = 0; i < n; ++i) {
    pending[i] = static_cast<int>(profile.nodes[i].predecessors.size());
    if (pending[i] == 0) roots.push_back(i);
  }
  std::deque<std::vector<int>> ready;  // Groups, each for one thread.
  auto make_ready = [&](const std::vector<int>& batch) {
    for (std::vector<int>& group :
         GroupBatch(profile, batch, std::min(intra, cores))) {
      ready.push_back(std::move(group));
    }
  };
  make_ready(roots);
  struct Running {
    std::vector<int> group;  // Nodes this thread runs, in order.
    size_t next;             // The one running now: group[next].
    double remaining_ms;     // Its serial milliseconds of work left.
    bool splits;
    double start_ms;
    int lane;
    int node() const { return group[next]; }
  };
  auto start = [&](std::vector<int> group, size_t next, int lane, double at) {
    const NodeProfile& node = profile.nodes[group[next]];
    return Running{std::move(group),        next, node.serial_ms,
                   profile.Splits(node.op), at,   lane};
  };
  std::vector<bool> lane_busy(workers, false);
  std::vector<Running> running;  // In start order.
  double now = 0;
  for (;;) {
    while (static_cast<int>(running.size()) < workers && !ready.empty()) {
      const int lane = static_cast<int>(
          std::find(lane_busy.begin(), lane_busy.end(), false) -
          lane_busy.begin());
      lane_busy[lane] = true;
      running.push_back(start(std::move(ready.front()), 0, lane, now));
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
      const NodeProfile& node = profile.nodes[running[i].node()];
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
        still.push_back(std::move(running[i]));
        continue;
      }
      Running& done = running[i];
      if (timeline != nullptr) {
        timeline->push_back({done.node(), done.start_ms, now, done.lane});
      }
      std::vector<int> batch;
      for (int s : profile.nodes[done.node()].successors) {
        if (--pending[s] == 0) batch.push_back(s);
      }
      make_ready(batch);
      if (done.next + 1 < done.group.size()) {
        // The thread goes on with its group's next node.
        still.push_back(
            start(std::move(done.group), done.next + 1, done.lane, now));
      } else {
        lane_busy[done.lane] = false;
      }
    }
    running = std::move(still);
  }
  // The Run's overhead at this intra-op count, as the profile timed it at
  // (1, k). A negative one (traced node times above what untraced Runs
  // took) takes back at most half the schedule: a guard, no graph measured
  // came near it.
  return std::max(0.5 * now, now + profile.OverheadMs(std::min(intra, cores)));
}

}  // namespace weft::tune
