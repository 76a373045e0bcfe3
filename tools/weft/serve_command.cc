// weft serve: models behind the Open Inference Protocol v2 (docs/serving.md).
// The command turns its flags into weft::serve::ServerOptions, starts the
// server, prints one line per model, and on SIGTERM or SIGINT drains and
// exits 0.
#include <malloc.h>  // malloc_trim

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "cli_util.h"
#include "commands.h"
#include "weft/config_file.h"
#include "weft/serve.h"

namespace weft::cli {
namespace {

struct ServeArgs {
  std::vector<std::string> models;
  std::vector<std::string> names;  // --name, in the order of the models.
  std::string repository;
  std::string host = "127.0.0.1";
  std::string config_file;
  std::vector<std::string> settings;
  // Numeric flags as typed, checked in MakeOptions.
  std::string http_port = "8000", grpc_port = "8001", inter, intra,
              max_batch_size, max_queue_delay_us, max_queue_size,
              default_timeout_us, drain_timeout_s = "30", max_body_bytes,
              read_timeout_ms, network_threads;
  std::vector<std::string> preferred_batch_sizes;
  bool preserve_ordering = false;
  std::string auth_token_file;
  std::string log_format = "text";
  bool quiet = false;  // No access log.
  // --tune: each model file's batching and thread split from the serving
  // tuner, for the most throughput within --latency-target-ms.
  bool tune = false;
  std::string latency_target_ms = "100";
  // --tune-feed NAME=FILE: one typical request's input NAME, for each
  // model file that has that input.
  std::vector<std::string> tune_feeds;
};

// Reads flag `name` into *out when it was given: an integer in [lo, hi].
template <class T>
Status ReadNumber(const std::string& text, const char* name, int64_t lo,
                  int64_t hi, T* out) {
  if (text.empty()) return Status::OK();
  const std::optional<int64_t> value = ParseIntInRange(text, lo, hi);
  if (!value) {
    return InvalidArgumentError(
        std::string(name) + " " + text + ": must be an integer from " +
        std::to_string(lo) + " to " + std::to_string(hi));
  }
  *out = static_cast<T>(*value);
  return Status::OK();
}

Status ReadBatching(const ServeArgs& args, serve::BatchingOptions* batching) {
  WEFT_RETURN_IF_ERROR(ReadNumber(args.max_batch_size, "--max-batch-size", 0,
                                  1 << 20, &batching->max_batch_size));
  WEFT_RETURN_IF_ERROR(ReadNumber(args.max_queue_delay_us,
                                  "--max-queue-delay-us", 0, 60'000'000,
                                  &batching->max_queue_delay_us));
  WEFT_RETURN_IF_ERROR(ReadNumber(args.max_queue_size, "--max-queue-size", 1,
                                  1 << 20, &batching->max_queue_size));
  WEFT_RETURN_IF_ERROR(
      ReadNumber(args.default_timeout_us, "--default-timeout-us", 0,
                 int64_t{3'600'000'000}, &batching->default_timeout_us));
  for (const std::string& size : args.preferred_batch_sizes) {
    int value = 0;
    WEFT_RETURN_IF_ERROR(
        ReadNumber(size, "--preferred-batch-size", 1, 1 << 20, &value));
    batching->preferred_batch_size.push_back(value);
  }
  batching->preserve_ordering = args.preserve_ordering;
  return Status::OK();
}

// The --tune-feed flags whose NAME is an input of the model at `path`,
// read: one request of that model for the tuner. Marks the flags used.
StatusOr<NamedTensors> TuneRequest(const std::vector<std::string>& flags,
                                   const std::string& path,
                                   std::vector<bool>* used) {
  if (flags.empty()) return NamedTensors{};
  WEFT_ASSIGN_OR_RETURN(Model model, LoadModel(path));
  std::vector<std::string> mine;
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string name = flags[i].substr(0, flags[i].find('='));
    const NodeDef* node = model.file.graph.FindNode(model.TensorOf(name));
    if (node != nullptr && node->op == "Placeholder") {
      mine.push_back(flags[i]);
      (*used)[i] = true;
    }
  }
  return ReadFeeds(mine, model);
}

// --tune: times each model file (weft tune --serving) and serves it with
// the batching and thread counts chosen. The flags it chooses cannot be
// given beside it.
Status TuneModels(const ServeArgs& args, serve::ServerOptions* options) {
  if (!args.repository.empty()) {
    return InvalidArgumentError(
        "--tune tunes model files; a --model-repository's models take their "
        "batching from their config.json");
  }
  if (!args.inter.empty() || !args.intra.empty() ||
      !args.max_batch_size.empty() || !args.preferred_batch_sizes.empty() ||
      !args.max_queue_delay_us.empty()) {
    return InvalidArgumentError(
        "--tune chooses --inter, --intra, --max-batch-size, "
        "--preferred-batch-size and --max-queue-delay-us: give those or "
        "--tune, not both");
  }
  int64_t target_ms = 0;
  WEFT_RETURN_IF_ERROR(ReadNumber(args.latency_target_ms, "--latency-target-ms",
                                  1, 3'600'000, &target_ms));
  // Every model's request first: a --tune-feed no model takes is refused
  // before any model is timed.
  std::vector<bool> feed_used(args.tune_feeds.size(), false);
  std::vector<NamedTensors> requests;
  for (const serve::ModelSpec& spec : options->models) {
    WEFT_ASSIGN_OR_RETURN(NamedTensors request,
                          TuneRequest(args.tune_feeds, spec.path, &feed_used));
    requests.push_back(std::move(request));
  }
  for (size_t i = 0; i < feed_used.size(); ++i) {
    if (!feed_used[i]) {
      return InvalidArgumentError("--tune-feed " + args.tune_feeds[i] +
                                  ": no model file served has that input");
    }
  }
  for (size_t m = 0; m < options->models.size(); ++m) {
    serve::ModelSpec& spec = options->models[m];
    serve::ServingTuneOptions tune;
    tune.latency_target_ms = static_cast<double>(target_ms);
    tune.base = options->session;
    tune.request = std::move(requests[m]);
    WEFT_ASSIGN_OR_RETURN(serve::ServingTuneResult result,
                          RunServingTune(spec.path, tune));
    serve::BatchingOptions batching = options->batching;
    batching.max_batch_size = result.batching.max_batch_size;
    batching.preferred_batch_size = result.batching.preferred_batch_size;
    batching.max_queue_delay_us = result.batching.max_queue_delay_us;
    spec.batching = batching;
    spec.session = result.session;
  }
  // The tuner's sessions are gone, but glibc keeps most of what they freed:
  // ResNet-18's server held 2.16 GB resident after tuning, 0.89 GB with
  // the free memory handed back here.
  malloc_trim(0);
  return Status::OK();
}

// NOLINTNEXTLINE(readability-function-size)
StatusOr<serve::ServerOptions> MakeOptions(const ServeArgs& args) {
  serve::ServerOptions options;
  if (args.models.empty() && args.repository.empty()) {
    return InvalidArgumentError(
        "name a model file (weft serve model.onnx) or a --model-repository");
  }
  if (!args.names.empty() && args.names.size() != args.models.size()) {
    return InvalidArgumentError(
        "give one --name per model file, in the same order (" +
        std::to_string(args.names.size()) + " names for " +
        std::to_string(args.models.size()) + " models)");
  }
  options.host = args.host;
  options.model_repository = args.repository;
  WEFT_RETURN_IF_ERROR(
      ReadNumber(args.http_port, "--http-port", 0, 65535, &options.http_port));
  WEFT_RETURN_IF_ERROR(
      ReadNumber(args.grpc_port, "--grpc-port", -1, 65535, &options.grpc_port));
  WEFT_RETURN_IF_ERROR(ReadNumber(args.max_body_bytes, "--max-body-bytes", 1,
                                  int64_t{1} << 34,
                                  &options.limits.max_body_bytes));
  WEFT_RETURN_IF_ERROR(ReadNumber(args.read_timeout_ms, "--read-timeout-ms", 1,
                                  3'600'000, &options.limits.read_timeout_ms));
  WEFT_RETURN_IF_ERROR(ReadNumber(args.network_threads, "--network-threads", 1,
                                  64, &options.network_threads));
  WEFT_ASSIGN_OR_RETURN(RunConfig config,
                        ReadRunConfig(args.config_file, args.settings));
  options.session = config.session;
  WEFT_RETURN_IF_ERROR(
      ReadNumber(args.inter, "--inter", kMinInterOpThreads, kMaxThreads,
                 &options.session.inter_op_parallelism_threads));
  WEFT_RETURN_IF_ERROR(
      ReadNumber(args.intra, "--intra", 0, kMaxThreads,
                 &options.session.intra_op_parallelism_threads));
  WEFT_RETURN_IF_ERROR(ReadBatching(args, &options.batching));
  for (size_t i = 0; i < args.models.size(); ++i) {
    serve::ModelSpec spec;
    spec.path = args.models[i];
    if (!args.names.empty()) spec.name = args.names[i];
    options.models.push_back(std::move(spec));
  }
  if (args.tune) {
    WEFT_RETURN_IF_ERROR(TuneModels(args, &options));
  } else if (args.latency_target_ms != "100") {
    return InvalidArgumentError(
        "--latency-target-ms is --tune's target: give "
        "--tune with it");
  } else if (!args.tune_feeds.empty()) {
    return InvalidArgumentError(
        "--tune-feed is the request --tune times: give --tune with it");
  }
  if (!args.auth_token_file.empty()) {
    std::ifstream in(args.auth_token_file);
    if (!in) {
      return InvalidArgumentError("--auth-token-file " + args.auth_token_file +
                                  ": cannot be read: " + ErrnoText());
    }
    std::string token;
    std::getline(in, token);
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) {
      token.pop_back();
    }
    if (token.empty()) {
      return InvalidArgumentError("--auth-token-file " + args.auth_token_file +
                                  ": its first line is empty");
    }
    options.auth_token = token;
  }
  if (args.log_format == "json") {
    options.access_log = serve::AccessLog::kJson;
  } else if (args.log_format == "text") {
    options.access_log = serve::AccessLog::kText;
  } else {
    return InvalidArgumentError("--log-format " + args.log_format +
                                ": must be text or json");
  }
  if (args.quiet) options.access_log = serve::AccessLog::kNone;
  return options;
}

int ServeCommand(const ServeArgs& args) {
  // SIGTERM and SIGINT are taken by this thread alone (sigwait below):
  // every thread the server starts inherits them blocked.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  StatusOr<serve::ServerOptions> options = MakeOptions(args);
  if (!options.ok()) return Fail(kExitBadInput, options.status().message());
  int64_t drain_s = 30;
  if (Status s = ReadNumber(args.drain_timeout_s, "--drain-timeout-s", 0, 3600,
                            &drain_s);
      !s.ok()) {
    return Fail(kExitBadInput, s.message());
  }
  const std::string host = options->host;
  StatusOr<std::unique_ptr<serve::Server>> server =
      serve::Server::Start(std::move(*options));
  if (!server.ok()) return Fail(kExitBadInput, server.status().ToString());
  const std::string base =
      "http://" + host + ":" + std::to_string((*server)->http_port());
  for (const serve::ServedModelInfo& model : (*server)->models()) {
    std::printf(
        "weft serve: model '%s' version %lld ready (%s%s) at %s/v2/models/%s\n",
        model.name.c_str(), static_cast<long long>(model.version),
        model.path.c_str(), model.batching ? ", batching" : "", base.c_str(),
        model.name.c_str());
  }
  std::printf(
      "weft serve: listening on %s (HTTP, Open Inference Protocol v2)\n",
      base.c_str());
  if ((*server)->grpc_port() > 0) {
    std::printf(
        "weft serve: listening on %s:%d (gRPC, "
        "inference.GRPCInferenceService)\n",
        host.c_str(), (*server)->grpc_port());
  }
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "weft serve: %s: draining (up to %llds), then exiting\n",
               signal_number == SIGTERM ? "SIGTERM" : "SIGINT",
               static_cast<long long>(drain_s));
  (*server)->Shutdown(std::chrono::seconds(drain_s));
  return kExitOk;
}

class ServeCommandLine final : public CommandWithArgs<ServeArgs, ServeCommand> {
 public:
  // NOLINTNEXTLINE(readability-function-size)
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command = app.add_subcommand(
        "serve", "serve models over the Open Inference Protocol v2 (HTTP)");
    command->add_option("MODEL", args_.models,
                        "model files (.onnx or weft JSON), each served under "
                        "its file stem");
    command
        ->add_option("--name", args_.names,
                     "the name of each MODEL, in order (repeatable)")
        ->allow_extra_args(false);
    command->add_option("--model-repository", args_.repository,
                        "DIR/<name>/<version>/model.onnx, with optional "
                        "DIR/<name>/config.json (Triton's layout)");
    command->add_option("--host", args_.host,
                        "address to listen on (default 127.0.0.1)");
    command->add_option("--http-port", args_.http_port,
                        "HTTP port (default 8000; 0: any free port)");
    command->add_option("--grpc-port", args_.grpc_port,
                        "gRPC port (default 8001; 0: any free port; -1: no "
                        "gRPC)");
    command->add_option("--config", args_.config_file,
                        "SessionOptions from FILE, as weft run takes it");
    command->add_option("--set", args_.settings, "FIELD=VALUE over --config")
        ->allow_extra_args(false);
    AddPrecisionFlag(command, &args_.settings);
    command->add_option("--inter", args_.inter,
                        "inter-op threads (default auto)");
    command->add_option("--intra", args_.intra,
                        "intra-op threads (default auto)");
    command->add_option("--max-batch-size", args_.max_batch_size,
                        "rows one Run may take (default 0: no batching)");
    command
        ->add_option("--preferred-batch-size", args_.preferred_batch_sizes,
                     "batch sizes formed at once (repeatable)")
        ->allow_extra_args(false);
    command->add_option("--max-queue-delay-us", args_.max_queue_delay_us,
                        "longest wait for a batch to fill (default 0)");
    command->add_option("--max-queue-size", args_.max_queue_size,
                        "queued requests per model before 503 (default 1024)");
    command->add_option(
        "--default-timeout-us", args_.default_timeout_us,
        "deadline of a request that sets none (default 0: none)");
    command->add_flag("--preserve-ordering", args_.preserve_ordering,
                      "answer requests in the order they arrived");
    command->add_option("--auth-token-file", args_.auth_token_file,
                        "require 'Authorization: Bearer <first line of FILE>'");
    command->add_option("--max-body-bytes", args_.max_body_bytes,
                        "largest request body (default 64 MiB; 413 beyond)");
    command->add_option(
        "--read-timeout-ms", args_.read_timeout_ms,
        "a request must arrive whole within this (default 10000)");
    command->add_option("--network-threads", args_.network_threads,
                        "threads that parse and serialise (default 1)");
    command->add_option("--log-format", args_.log_format,
                        "access log lines: text (default) or json");
    command->add_flag("--quiet", args_.quiet, "no access log");
    command->add_flag("--tune", args_.tune,
                      "time each model and choose its batching and thread "
                      "split (weft tune --serving)");
    command->add_option("--latency-target-ms", args_.latency_target_ms,
                        "with --tune: the p99 to stay within (default 100)");
    command->add_option("--tune-feed", args_.tune_feeds,
                        "with --tune: NAME=FILE.npy, one typical request's "
                        "input NAME (repeatable; needed where an input has "
                        "open dimensions past the first)");
    command->add_option("--drain-timeout-s", args_.drain_timeout_s,
                        "on SIGTERM, time to finish requests in flight "
                        "(default 30)");
    return command;
  }
};

}  // namespace

std::unique_ptr<Command> MakeServeCommandLine() {
  return std::make_unique<ServeCommandLine>();
}

}  // namespace weft::cli
