// weft bench GRAPH: the thread-configuration experiment of the tuning
// guides, done properly (fresh sessions, warm-up, medians, output hashes).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"
#include "config_file.h"

namespace weft::cli {

namespace {

// One setting of the experiment while it is measured.
struct Trial {
  std::unique_ptr<Session> session;
  BenchRow row;
  std::vector<double> times;
};

StatusOr<Trial> StartTrial(const GraphFile& file, const NamedTensors& feeds,
                           int inter, int intra, int warmup,
                           const SessionOptions& base) {
  SessionOptions options = base;
  options.use_per_session_threads = true;  // Fresh pools per setting.
  options.inter_op_parallelism_threads = inter;
  options.intra_op_parallelism_threads = intra;
  Trial trial;
  WEFT_ASSIGN_OR_RETURN(trial.session, Session::Create(file.graph, options));
  std::vector<Tensor> outputs;
  for (int i = 0; i < warmup; ++i) {
    WEFT_RETURN_IF_ERROR(trial.session->Run(feeds, file.outputs, {}, &outputs));
  }
  // One more, untimed and traced, for the memory it holds at its peak.
  RunOptions traced;
  traced.trace_level = RunOptions::TraceLevel::kFull;
  RunMetadata metadata;
  WEFT_RETURN_IF_ERROR(
      trial.session->Run(traced, feeds, file.outputs, {}, &outputs, &metadata));
  trial.row.peak_bytes = metadata.peak_bytes;
  trial.row.arena_bytes = metadata.arena_bytes;
  trial.row.heap_tensors = metadata.heap_tensors;
  trial.row.inter = inter;
  trial.row.intra = intra;
  trial.row.effective_inter = trial.session->inter_op_threads();
  trial.row.effective_intra = trial.session->intra_op_threads();
  return trial;
}

// One timed Run; the first one's outputs are hashed.
Status TimeOnce(const GraphFile& file, const NamedTensors& feeds,
                Trial& trial) {
  std::vector<Tensor> outputs;
  const auto start = std::chrono::steady_clock::now();
  WEFT_RETURN_IF_ERROR(trial.session->Run(feeds, file.outputs, {}, &outputs));
  trial.times.push_back(std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count());
  if (trial.times.size() == 1) {
    for (const Tensor& t : outputs) trial.row.hashes.push_back(ContentHash(t));
  }
  return Status::OK();
}

BenchRow FinishTrial(Trial& trial) {
  BenchRow row = std::move(trial.row);
  row.median_ms = Median(trial.times);
  row.min_ms = *std::min_element(trial.times.begin(), trial.times.end());
  row.max_ms = *std::max_element(trial.times.begin(), trial.times.end());
  return row;
}

}  // namespace

StatusOr<BenchReport> BenchGraph(const GraphFile& file,
                                 const NamedTensors& feeds,
                                 const std::vector<int>& inter_grid,
                                 const std::vector<int>& intra_grid, int warmup,
                                 int repeat, bool progress,
                                 const SessionOptions& base, bool in_turns) {
  BenchReport report;
  const int total = static_cast<int>(inter_grid.size() * intra_grid.size());
  auto show = [&](size_t done, int inter, int intra) {
    if (progress) {
      std::fprintf(stderr, "\r[%zu/%d] inter=%d intra=%d ...   ", done + 1,
                   total, inter, intra);
    }
  };
  if (in_turns) {
    // Every session first, then rounds that run each once.
    std::vector<Trial> trials;
    for (int inter : inter_grid) {
      for (int intra : intra_grid) {
        show(trials.size(), inter, intra);
        WEFT_ASSIGN_OR_RETURN(
            Trial trial, StartTrial(file, feeds, inter, intra, warmup, base));
        trials.push_back(std::move(trial));
      }
    }
    // Each turn re-warms its session with one untimed Run: the first Run
    // after the other sessions' turns finds its threads parked for the
    // whole round and its memory out of the caches, which a session used
    // for Run after Run does not (docs/BENCHMARKS.md: 10% on a 4 ms graph
    // at intra = 2, AMD EPYC Zen 5).
    for (int round = 0; round < repeat; ++round) {
      for (Trial& trial : trials) {
        std::vector<Tensor> outputs;
        WEFT_RETURN_IF_ERROR(
            trial.session->Run(feeds, file.outputs, {}, &outputs));
        WEFT_RETURN_IF_ERROR(TimeOnce(file, feeds, trial));
      }
    }
    for (Trial& trial : trials) report.rows.push_back(FinishTrial(trial));
  } else {
    for (int inter : inter_grid) {
      for (int intra : intra_grid) {
        show(report.rows.size(), inter, intra);
        WEFT_ASSIGN_OR_RETURN(
            Trial trial, StartTrial(file, feeds, inter, intra, warmup, base));
        for (int i = 0; i < repeat; ++i) {
          WEFT_RETURN_IF_ERROR(TimeOnce(file, feeds, trial));
        }
        report.rows.push_back(FinishTrial(trial));
      }
    }
  }
  if (progress) std::fprintf(stderr, "\r%60s\r", "");
  double baseline_ms = 0;
  for (const BenchRow& row : report.rows) {
    if (row.inter == 1 && row.intra == 1) baseline_ms = row.median_ms;
  }
  for (size_t i = 0; i < report.rows.size(); ++i) {
    BenchRow& row = report.rows[i];
    row.outputs_match = row.hashes == report.rows.front().hashes;
    row.speedup = baseline_ms > 0 ? baseline_ms / row.median_ms : 0;
    if (row.median_ms < report.rows[report.best].median_ms) {
      report.best = static_cast<int>(i);
    }
  }
  return report;
}

// A setting as given, with what it resolved to when that differs:
// "0 (2)" for auto on two cores.
std::string SettingText(int setting, int effective) {
  return setting == effective || (setting < 0 && effective < 0)
             ? std::to_string(setting)
             : std::to_string(setting) + " (" + std::to_string(effective) + ")";
}

void PrintBenchTable(const BenchReport& report, bool show_peak) {
  std::printf("  %5s %5s %10s %10s %10s %8s", "inter", "intra", "median", "min",
              "max", "speedup");
  if (show_peak) std::printf(" %9s", "peak MB");
  std::printf("  outputs\n");
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const BenchRow& r = report.rows[i];
    std::printf("%s %5s %5s %10s %10s %10s %7.2fx",
                static_cast<int>(i) == report.best ? "*" : " ",
                SettingText(r.inter, r.effective_inter).c_str(),
                SettingText(r.intra, r.effective_intra).c_str(),
                FormatMs(r.median_ms).c_str(), FormatMs(r.min_ms).c_str(),
                FormatMs(r.max_ms).c_str(), r.speedup);
    if (show_peak) {
      std::printf(" %9.2f", static_cast<double>(r.peak_bytes) / 1e6);
    }
    std::printf("  %s\n", r.outputs_match ? "identical" : "DIFFERENT");
  }
}

int BenchCommand(const BenchArgs& args) {
  if (args.repeat < 1 || args.warmup < 0) {
    return Fail(kExitBadInput, "--repeat must be >= 1 and --warmup >= 0");
  }
  std::vector<int> inter_grid = DefaultGrid(), intra_grid = DefaultGrid();
  if (!args.inter_list.empty()) {
    auto parsed = ParseIntList("--inter", args.inter_list, kMinInterOpThreads);
    if (!parsed.ok()) return Fail(kExitBadInput, parsed.status().message());
    inter_grid = *parsed;
  }
  if (!args.intra_list.empty()) {
    auto parsed = ParseIntList("--intra", args.intra_list, 0);
    if (!parsed.ok()) return Fail(kExitBadInput, parsed.status().message());
    intra_grid = *parsed;
  }
  auto model = LoadModel(args.graph);
  if (!model.ok()) return Fail(kExitBadInput, model.status().ToString());
  const GraphFile* file = &model->file;
  if (file->outputs.empty()) {
    return Fail(kExitBadInput, args.graph + ": the graph lists no \"outputs\"");
  }
  StatusOr<RunConfig> read = ReadRunConfig(args.config_file, args.settings);
  if (!read.ok()) return Fail(kExitBadInput, read.status().ToString());
  RunConfig& config = *read;
  auto feeds = ReadFeeds(args.feeds, *model);
  if (!feeds.ok()) return Fail(kExitBadInput, feeds.status().ToString());
  // Placeholders are filled as `run` fills them: from --feed, or with
  // --random-feeds; never silently.
  if (args.random_feeds) {
    if (Status s = AddRandomFeeds(*file, file->outputs, &*feeds); !s.ok()) {
      return Fail(kExitBadInput, s.message());
    }
  }
  if (Status s = CheckFeedsGiven(*model, file->outputs, *feeds); !s.ok()) {
    return Fail(kExitBadInput, s.message());
  }
  // Check the graph and feeds once, so that a bad input is exit code 2.
  {
    auto session = Session::Create(file->graph, config.session);
    if (!session.ok()) {
      return Fail(kExitBadInput,
                  session.status().WithContext(args.graph).ToString());
    }
    if (Status s = (*session)->Prepare(*feeds, file->outputs, {}); !s.ok()) {
      return Fail(kExitBadInput, s.ToString());
    }
  }
  auto report = BenchGraph(*file, *feeds, inter_grid, intra_grid, args.warmup,
                           args.repeat, isatty(STDERR_FILENO) != 0,
                           config.session, args.in_turns);
  if (!report.ok()) {
    return Fail(kExitRunFailed,
                "the run failed: " + report.status().ToString());
  }
  const BenchRow& best = report->rows[report->best];
  if (args.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const BenchRow& r : report->rows) {
      nlohmann::json row = {{"median_ms", r.median_ms},
                            {"min_ms", r.min_ms},
                            {"max_ms", r.max_ms},
                            {"speedup", r.speedup},
                            {"peak_bytes", r.peak_bytes},
                            {"arena_bytes", r.arena_bytes},
                            {"heap_tensors", r.heap_tensors},
                            {"outputs_match", r.outputs_match},
                            {"hashes", r.hashes},
                            // Deprecated (0.1): the keys before the shared
                            // vocabulary; removed in the next release.
                            {"inter", r.inter},
                            {"intra", r.intra}};
      AddThreadCounts(row, r.inter, r.intra);
      AddThreadCounts(row["effective"], r.effective_inter, r.effective_intra);
      rows.push_back(std::move(row));
    }
    nlohmann::json best_json = {{"median_ms", best.median_ms}};
    AddThreadCounts(best_json, best.inter, best.intra);
    nlohmann::json out = {{"graph", args.graph},
                          {"repeat", args.repeat},
                          {"in_turns", args.in_turns},
                          {"warmup", args.warmup},
                          {"rows", rows},
                          {"best", best_json}};
    std::printf("%s\n", out.dump(1).c_str());
    return kExitOk;
  }
  std::printf(
      "%s: median of %d runs after %d warm-up, fresh session per row%s\n",
      args.graph.c_str(), args.repeat, args.warmup,
      args.in_turns ? ", rows timed in turns" : "");
  PrintBenchTable(*report, /*show_peak=*/true);
  std::printf(
      "best (*): SessionOptions.inter_op_parallelism_threads = %d, "
      "SessionOptions.intra_op_parallelism_threads = %d\n",
      best.inter, best.intra);
  return kExitOk;
}

}  // namespace weft::cli
