// weft run GRAPH: run a graph file and print (or save) its outputs.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"
#include "io/chrome_trace.h"
#include "io/npy.h"

namespace weft::cli {

int RunCommand(const RunArgs& args) {
  auto model = LoadModel(args.graph);
  if (!model.ok()) return Fail(kExitBadInput, model.status().ToString());
  const GraphFile* file = &model->file;
  // What the user asked for, by their names, and the tensors behind them.
  const std::vector<std::string> names =
      args.fetches.empty() ? model->output_names : args.fetches;
  std::vector<std::string> fetches;
  for (const std::string& name : names)
    fetches.push_back(model->TensorOf(name));
  if (fetches.empty()) {
    return Fail(kExitBadInput, args.graph +
                                   ": the graph lists no \"outputs\"; pass "
                                   "--fetch NAME");
  }
  auto feeds = ReadFeeds(args.feeds, *model);
  if (!feeds.ok()) return Fail(kExitBadInput, feeds.status().ToString());
  for (const std::string& name : MissingFeeds(*file, fetches, *feeds)) {
    const std::string user_name = model->NameOf(name);
    const char* kind = model->tensor_of.empty() ? "placeholder" : "input";
    return Fail(kExitBadInput, std::string(kind) + " '" + user_name +
                                   "' has no value: pass --feed " + user_name +
                                   "=FILE.npy (or .pb)");
  }

  SessionOptions options;
  if (args.inter) options.inter_op_parallelism_threads = *args.inter;
  if (args.intra) options.intra_op_parallelism_threads = *args.intra;
  auto session = Session::Create(file->graph, options);
  if (!session.ok()) {
    return Fail(kExitBadInput, args.graph + ": " + session.status().ToString());
  }
  if (Status s = (*session)->Prepare(*feeds, fetches, {}); !s.ok()) {
    return Fail(kExitBadInput, s.ToString());
  }

  RunOptions run_options;
  run_options.timeout_ms = args.timeout_ms;
  if (!args.trace_file.empty()) {
    run_options.trace_level = RunOptions::TraceLevel::kFull;
  }
  std::vector<Tensor> outputs;
  std::vector<double> times_ms;
  RunMetadata metadata;
  for (int i = 0; i < args.repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    Status s =
        (*session)->Run(run_options, *feeds, fetches, {}, &outputs, &metadata);
    times_ms.push_back(std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - start)
                           .count());
    if (!s.ok()) return Fail(kExitRunFailed, "the run failed: " + s.ToString());
  }

  if (!args.trace_file.empty()) {
    std::ofstream out(args.trace_file);
    out << internal::ChromeTraceJson(metadata);
    if (!out) {
      return Fail(kExitRunFailed, args.trace_file + ": cannot write the trace");
    }
  }
  if (!args.save_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.save_dir, ec);
    if (ec) {
      return Fail(
          kExitRunFailed,
          args.save_dir + ": cannot create the folder: " + ec.message());
    }
    for (size_t i = 0; i < fetches.size(); ++i) {
      const std::string path = (std::filesystem::path(args.save_dir) /
                                (FileNameFor(names[i]) + ".npy"))
                                   .string();
      if (Status s = internal::WriteNpy(path, outputs[i]); !s.ok()) {
        return Fail(kExitRunFailed, s.ToString());
      }
    }
  }

  if (args.json) {
    nlohmann::json out = {{"graph", args.graph},
                          {"repeat", args.repeat},
                          {"times_ms", times_ms},
                          {"median_ms", Median(times_ms)},
                          {"outputs", nlohmann::json::array()}};
    AddThreadCounts(out, (*session)->inter_op_threads(),
                    (*session)->intra_op_threads());
    for (size_t i = 0; i < fetches.size(); ++i) {
      out["outputs"].push_back(TensorJson(names[i], outputs[i], args.values));
    }
    std::printf("%s\n", out.dump(1).c_str());
    return kExitOk;
  }
  for (size_t i = 0; i < fetches.size(); ++i) {
    std::printf(
        "%s: %s %s hash=%s\n  %s\n", names[i].c_str(),
        DataTypeName(outputs[i].dtype()), outputs[i].shape().ToString().c_str(),
        ContentHash(outputs[i]).c_str(), FirstValues(outputs[i], 8).c_str());
  }
  std::printf("time: median %.3f ms over %d run%s (inter %d, intra %d)\n",
              Median(times_ms), args.repeat, args.repeat == 1 ? "" : "s",
              (*session)->inter_op_threads(), (*session)->intra_op_threads());
  return kExitOk;
}

}  // namespace weft::cli
