#include "tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

namespace weft::tune {
namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// A session with per-session pools of the setting's size.
StatusOr<std::unique_ptr<Session>> SessionFor(const GraphFile& file,
                                              Setting setting,
                                              const TuneOptions& options) {
  SessionOptions session = options.base;
  session.use_per_session_threads = true;
  session.inter_op_parallelism_threads = setting.inter;
  session.intra_op_parallelism_threads = setting.intra;
  return Session::Create(file.graph, session);
}

Status RunOnce(Session& session, const GraphFile& file,
               const NamedTensors& feeds, const TuneOptions& options,
               bool trace, RunMetadata* metadata) {
  RunOptions run;
  run.timeout_ms = options.timeout_ms;
  if (trace) run.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> outputs;
  Status status = session.Run(run, feeds, file.outputs, {}, &outputs, metadata);
  if (status.code() == StatusCode::kDeadlineExceeded) {
    return DeadlineExceededError(
        "a Run passed the tuning deadline of " +
        std::to_string(options.timeout_ms) +
        " ms; raise it with --timeout-ms, or tune a smaller input (" +
        status.message() + ")");
  }
  return status;
}

// Every turn of a session in turns starts with one untimed Run: after the
// other sessions' turns its threads have parked and its memory has left the
// caches, which a session used for Run after Run does not see (10% on a
// 4 ms graph at intra = 2, docs/BENCHMARKS.md).
Status Rewarm(Session& session, const GraphFile& file,
              const NamedTensors& feeds, const TuneOptions& options) {
  return RunOnce(session, file, feeds, options, false, nullptr);
}

// Median wall times (ms) of Runs on each session, timed in turns: after a
// warm-up on each, every round runs each session once (after its re-warm
// Run), so that the machine's drift (large on shared VMs) reaches every
// setting alike.
StatusOr<std::vector<double>> TimeInTurns(const std::vector<Session*>& sessions,
                                          const GraphFile& file,
                                          const NamedTensors& feeds,
                                          const TuneOptions& options) {
  for (Session* session : sessions) {
    for (int i = 0; i < options.warmup; ++i) {
      WEFT_RETURN_IF_ERROR(
          RunOnce(*session, file, feeds, options, false, nullptr));
    }
  }
  std::vector<std::vector<double>> times(sessions.size());
  for (int round = 0; round < options.measure_runs; ++round) {
    for (size_t i = 0; i < sessions.size(); ++i) {
      WEFT_RETURN_IF_ERROR(Rewarm(*sessions[i], file, feeds, options));
      const auto start = std::chrono::steady_clock::now();
      WEFT_RETURN_IF_ERROR(
          RunOnce(*sessions[i], file, feeds, options, false, nullptr));
      times[i].push_back(std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - start)
                             .count());
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& t : times) medians.push_back(Median(std::move(t)));
  return medians;
}

// Per-node medians of traced Runs on each session, taken in turns after a
// warm-up on each and a re-warm Run per turn, like TimeInTurns: a node's time
// at k threads and at one are then compared under the same mix of the machine's
// drift. At intra > 1 only nodes that split count: the others ran as serially.
// `executed` receives the graph the first session's Runs executed.
StatusOr<std::vector<NodeTimes>> TraceInTurns(
    const std::vector<Session*>& sessions, const std::vector<int>& intras,
    const GraphFile& file, const NamedTensors& feeds,
    const TuneOptions& options, std::vector<ExecutedNode>* executed) {
  for (Session* session : sessions) {
    for (int i = 0; i < options.warmup; ++i) {
      WEFT_RETURN_IF_ERROR(
          RunOnce(*session, file, feeds, options, false, nullptr));
    }
  }
  std::vector<std::vector<RunMetadata>> runs(sessions.size());
  for (int round = 0; round < options.profile_runs; ++round) {
    for (size_t i = 0; i < sessions.size(); ++i) {
      WEFT_RETURN_IF_ERROR(Rewarm(*sessions[i], file, feeds, options));
      RunMetadata metadata;
      WEFT_RETURN_IF_ERROR(
          RunOnce(*sessions[i], file, feeds, options, true, &metadata));
      runs[i].push_back(std::move(metadata));
    }
  }
  *executed = ExecutedNodes(runs.front().front());
  std::vector<NodeTimes> times;
  for (size_t i = 0; i < sessions.size(); ++i) {
    times.push_back(MedianNodeTimes(runs[i], /*only_split=*/intras[i] > 1));
  }
  return times;
}

std::string Percent(double share) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.0f%%", 100 * share);
  return text;
}

std::string Fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

std::string SettingText(Setting s) {
  return "(" + std::to_string(s.inter) + ", " + std::to_string(s.intra) + ")";
}

// The timeline of one Run at the best setting: a traced Run when this
// machine is the one predicted for, else the model's schedule. Lanes are
// the threads nodes ran on, numbered in order of first use.
Status RecordTimeline(const GraphFile& file, const NamedTensors& feeds,
                      const TuneOptions& options, TuneResult* result) {
  const Setting best = result->settings[result->best].setting;
  const GraphProfile& profile = result->profile;
  if (!result->measured) {
    PredictRunMs(profile, best, result->cores, &result->timeline);
    return Status::OK();
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                        SessionFor(file, best, options));
  WEFT_RETURN_IF_ERROR(RunOnce(*session, file, feeds, options, false, nullptr));
  RunMetadata metadata;
  WEFT_RETURN_IF_ERROR(
      RunOnce(*session, file, feeds, options, true, &metadata));
  std::map<std::string, int> index;
  for (size_t i = 0; i < profile.nodes.size(); ++i) {
    index[profile.nodes[i].name] = static_cast<int>(i);
  }
  std::map<int64_t, int> lanes;
  for (const NodeExecStats& stats : metadata.node_stats) {
    auto it = index.find(stats.node_name);
    if (it == index.end()) continue;
    const int lane =
        lanes.emplace(stats.os_thread_id, static_cast<int>(lanes.size()))
            .first->second;
    result->timeline.push_back(
        {it->second,
         static_cast<double>(stats.start_ns - metadata.run_start_ns) / 1e6,
         static_cast<double>(stats.end_ns - metadata.run_start_ns) / 1e6,
         lane});
  }
  result->timeline_measured = true;
  return Status::OK();
}

}  // namespace

std::string Explain(const TuneResult& result) {
  const GraphProfile& p = result.profile;
  const SettingResult& best = result.settings[result.best];
  // Each verdict is said against the setting chosen, so that the words
  // never recommend what the choice did not take.
  const bool chose_inter = best.setting.inter >= 2;
  const bool chose_intra = best.setting.intra >= 2;
  std::string text = "parallelism " + Fixed(p.parallelism(), 1) + ": ";
  if (p.parallelism() >= 1.1) {
    text += p.parallelism() >= 1.5 ? "independent branches much of the time"
                                   : "some independent branches";
    text += chose_inter
                ? " -> inter >= 2 pays"
                : " -> they could overlap, but the chosen setting gives the "
                  "cores to splitting ops instead (inter = 1 measured or "
                  "predicted faster)";
  } else {
    text += "one chain -> more inter-op threads have nothing to overlap";
    if (chose_inter) {
      text += " (inter = " + std::to_string(best.setting.inter) +
              " was chosen on the times alone: within them, not for overlap)";
    }
  }
  // The op with the most work, and its speed-up on the cores.
  std::map<std::string, double> work;
  for (const NodeProfile& node : p.nodes) work[node.op] += node.serial_ms;
  auto top = std::max_element(
      work.begin(), work.end(),
      [](const auto& a, const auto& b) { return a.second < b.second; });
  if (top != work.end() && p.work_ms > 0) {
    const int k = std::max(2, p.cores);
    const double speedup = p.Speedup(top->first, k);
    text += "; " + top->first + " is " + Percent(top->second / p.work_ms) +
            " of the work and runs " + Fixed(speedup, 1) + "x faster on " +
            std::to_string(k) + " threads";
    if (speedup >= 1.15) {
      text += chose_intra
                  ? " -> intra >= 2 pays"
                  : " -> intra could pay, but the chosen setting gives the "
                    "cores to independent branches instead (intra = 1 "
                    "measured or predicted faster)";
    } else {
      text += chose_intra ? " -> intra barely pays (intra = " +
                                std::to_string(best.setting.intra) +
                                " was chosen on the times alone)"
                          : " -> intra does not pay";
    }
  }
  // The chosen setting against the best with the other intra-op count, or
  // the other inter-op count, to show what the core budget costs.
  const SettingResult* other_intra = nullptr;
  const SettingResult* other_inter = nullptr;
  for (const SettingResult& r : result.settings) {
    if (&r == &best) continue;
    if (r.setting.inter == best.setting.inter &&
        (other_intra == nullptr ||
         r.predicted_ms < other_intra->predicted_ms)) {
      other_intra = &r;
    }
    if (r.setting.intra == best.setting.intra &&
        (other_inter == nullptr ||
         r.predicted_ms < other_inter->predicted_ms)) {
      other_inter = &r;
    }
  }
  // Like with like: measured against measured, else predicted against
  // predicted.
  auto compare = [&](const SettingResult* r) {
    if (r == nullptr) return;
    const bool measured = r->measured_ms && best.measured_ms;
    const double mine = measured ? *best.measured_ms : best.predicted_ms;
    const double theirs = measured ? *r->measured_ms : r->predicted_ms;
    if (mine <= 0) return;
    const double change = theirs / mine - 1;
    text += "; " + SettingText(r->setting) + " " +
            (measured ? "measured " : "predicted ") +
            Percent(std::abs(change)) + (change >= 0 ? " slower" : " faster") +
            " than " + SettingText(best.setting);
  };
  compare(other_intra);
  compare(other_inter);
  if (best.setting.inter != 1 && best.setting.intra > 1) {
    text += " (inter x intra share " + std::to_string(result.cores) +
            " cores through the core budget)";
  }
  // Said when the tie rule, not the clock, chose (ChooseMeasured).
  for (const SettingResult& r : result.settings) {
    if (best.measured_ms && r.measured_ms &&
        *r.measured_ms < *best.measured_ms) {
      text += "; " + SettingText(r.setting) + " measured " +
              Percent(1 - *r.measured_ms / *best.measured_ms) +
              " faster, within the " + Percent(kTieFraction) +
              " a measurement does not resolve, and " +
              SettingText(best.setting) + " starts fewer threads";
      break;
    }
  }
  return text;
}

namespace {

// Threads a setting adds to the caller's: inter-op workers (none for -1)
// and intra-op helpers.
int ExtraThreads(Setting s, int cores) {
  const int inter = s.inter == 0 ? cores : std::max(s.inter, 0);
  const int intra = s.intra == 0 ? cores : s.intra;
  return inter + intra - 1;
}

}  // namespace

std::vector<int> RankPredictions(const std::vector<SettingResult>& settings,
                                 int cores) {
  auto extra_threads = [cores](Setting s) { return ExtraThreads(s, cores); };
  std::vector<int> order(settings.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return settings[a].predicted_ms < settings[b].predicted_ms;
  });
  // Within kTieFraction of the best, order by threads: stable, so equal
  // counts keep their predicted order.
  if (!order.empty()) {
    const double tie_ms =
        settings[order.front()].predicted_ms * (1 + kTieFraction);
    const auto ties_end = std::find_if(order.begin(), order.end(), [&](int i) {
      return settings[i].predicted_ms > tie_ms;
    });
    std::stable_sort(order.begin(), ties_end, [&](int a, int b) {
      return extra_threads(settings[a].setting) <
             extra_threads(settings[b].setting);
    });
  }
  return order;
}

int ChooseMeasured(const std::vector<SettingResult>& settings, int cores) {
  int fastest = -1;
  for (size_t i = 0; i < settings.size(); ++i) {
    if (settings[i].measured_ms &&
        (fastest < 0 ||
         *settings[i].measured_ms < *settings[fastest].measured_ms)) {
      fastest = static_cast<int>(i);
    }
  }
  if (fastest < 0) return -1;
  const double tie_ms = *settings[fastest].measured_ms * (1 + kTieFraction);
  int chosen = fastest;
  for (size_t i = 0; i < settings.size(); ++i) {
    const SettingResult& r = settings[i];
    if (!r.measured_ms || *r.measured_ms > tie_ms) continue;
    const int threads = ExtraThreads(r.setting, cores);
    const int chosen_threads = ExtraThreads(settings[chosen].setting, cores);
    if (threads < chosen_threads ||
        (threads == chosen_threads &&
         *r.measured_ms < *settings[chosen].measured_ms)) {
      chosen = static_cast<int>(i);
    }
  }
  return chosen;
}

StatusOr<TuneResult> TuneGraph(const GraphFile& file, const NamedTensors& feeds,
                               const TuneOptions& options) {
  TuneResult result;
  result.machine_cores = std::max(1, AutoCpuBudget().threads);
  result.cores = options.cores.value_or(result.machine_cores);
  if (result.cores < 1 || result.cores > kMaxThreads) {
    return InvalidArgumentError("--cores " + std::to_string(result.cores) +
                                " is out of range: 1 to " +
                                std::to_string(kMaxThreads));
  }
  if (options.profile_runs < 1 || options.measure_runs < 1 ||
      options.warmup < 0 || options.timeout_ms < 0) {
    return InvalidArgumentError(
        "profile and measure runs must be >= 1, warm-up and timeout >= 0");
  }
  result.measured = result.cores == result.machine_cores;

  // Profile at (1, k) for each intra-op count k of this machine's grid:
  // one inter-op thread, so nothing else runs and each node gets the
  // threads it asks for. These are settings of the grid, and are timed with
  // the confirmed ones below.
  std::map<Setting, std::unique_ptr<Session>> timed;
  const std::vector<int> intras = IntraOpCounts(result.machine_cores);
  std::vector<Session*> profiled;
  for (int k : intras) {
    const Setting setting{1, k};
    WEFT_ASSIGN_OR_RETURN(timed[setting], SessionFor(file, setting, options));
    profiled.push_back(timed[setting].get());
  }
  std::vector<ExecutedNode> executed;
  WEFT_ASSIGN_OR_RETURN(
      std::vector<NodeTimes> times,
      TraceInTurns(profiled, intras, file, feeds, options, &executed));
  const NodeTimes& serial = times.front();  // intras starts at 1.
  std::map<int, NodeTimes> times_at;
  for (size_t i = 1; i < intras.size(); ++i) times_at[intras[i]] = times[i];
  // Untraced Runs at each (1, k), for the model's overhead at k.
  WEFT_ASSIGN_OR_RETURN(std::vector<double> profiled_ms,
                        TimeInTurns(profiled, file, feeds, options));
  std::map<int, double> run_ms_at;
  for (size_t i = 0; i < intras.size(); ++i) {
    run_ms_at[intras[i]] = profiled_ms[i];
  }
  result.profile =
      BuildProfile(executed, serial, times_at, run_ms_at, result.machine_cores);
  result.profile.join_inline_ms = options.base.join_inline_cost_ns / 1e6;
  // At intra > 1, TraceInTurns kept only the nodes that split.
  for (const auto& [k, at_k] : times_at) {
    for (const auto& entry : at_k)
      result.profile.split_nodes.insert(entry.first);
  }

  // Predict the grid.
  for (Setting setting : TuneGrid(result.cores)) {
    result.settings.push_back(
        {setting, PredictRunMs(result.profile, setting, result.cores), {}});
  }
  const std::vector<int> order = RankPredictions(result.settings, result.cores);
  result.best = order.front();
  if (!result.measured) {
    WEFT_RETURN_IF_ERROR(RecordTimeline(file, feeds, options, &result));
    result.explanation = Explain(result);
    return result;
  }

  // Confirm: the best predicted settings not profiled, while the timed ones
  // stay at most half the grid; then every timed setting in turns. The
  // winner is the best timed.
  const size_t half = result.settings.size() / 2;
  int confirmed = 0;
  for (int i : order) {
    if (timed.size() >= half || confirmed >= options.confirm) break;
    const Setting setting = result.settings[i].setting;
    if (timed.count(setting)) continue;
    WEFT_ASSIGN_OR_RETURN(timed[setting], SessionFor(file, setting, options));
    ++confirmed;
  }
  std::vector<Session*> sessions;
  for (const auto& [setting, session] : timed)
    sessions.push_back(session.get());
  WEFT_ASSIGN_OR_RETURN(std::vector<double> medians,
                        TimeInTurns(sessions, file, feeds, options));
  size_t next = 0;
  for (const auto& [setting, session] : timed) {
    for (SettingResult& r : result.settings) {
      if (r.setting == setting) r.measured_ms = medians[next];
    }
    ++next;
  }
  result.best = ChooseMeasured(result.settings, result.cores);
  WEFT_RETURN_IF_ERROR(RecordTimeline(file, feeds, options, &result));
  result.explanation = Explain(result);
  return result;
}

}  // namespace weft::tune
