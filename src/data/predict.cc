// weft::Predict: the batch-inference job behind `weft predict`.
#include "weft/predict.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "data/dataset_node.h"
#include "data/element_ops.h"
#include "weft/data.h"
#include "weft/file_status.h"
#include "weft/model.h"
#include "weft/npy.h"
#include "weft/session.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The model's one input and first output.
StatusOr<std::pair<std::string, std::string>> PredictIo(
    const std::string& path, const OnnxModel& model) {
  std::vector<std::string> inputs;
  for (const OnnxValueInfo& info : model.inputs) inputs.push_back(info.tensor);
  if (model.inputs.empty()) {
    for (const NodeDef& node : model.file.graph.nodes()) {
      if (node.op == "Placeholder") inputs.push_back(node.name);
    }
  }
  if (inputs.size() != 1 || model.file.outputs.empty()) {
    return InvalidArgumentError(
        path +
        ": weft predict feeds a model one input (the batch) and reads "
        "its first output; this model has " +
        std::to_string(inputs.size()) + " inputs and " +
        std::to_string(model.file.outputs.size()) + " outputs");
  }
  return std::make_pair(inputs[0], model.file.outputs[0]);
}

Status WriteAtomically(const fs::path& path, const std::string& bytes) {
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return ErrnoToStatus(errno, "cannot write " + temporary.string());
    out << bytes;
    out.flush();
    if (!out) return ErrnoToStatus(errno, "cannot write " + temporary.string());
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) {
    return InternalError("cannot rename " + temporary.string() + " to " +
                         path.string() + ": " + error.message());
  }
  return Status::OK();
}

StatusOr<std::string> ReadText(const fs::path& path) {
  return ReadFileBytes(path.string(), path.string());
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

// A path with a tab or a newline could not be listed one per line.
Status CheckListable(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    if (path.find_first_of("\t\n") != std::string::npos) {
      return InvalidArgumentError("input '" + path +
                                  "': a path with a tab or a newline cannot "
                                  "be listed in the output's paths file");
    }
  }
  return Status::OK();
}

// One batch of the job: which inputs, and what became of each.
struct Batch {
  int64_t id = 0;  // Position in the job's grid (the .npy form's file name).
  std::vector<int64_t> inputs;
};

struct BatchResult {
  std::vector<int64_t> predicted;  // Inputs with a row in `rows`, in order.
  Tensor rows;                     // Uninitialised when none predicted.
  std::vector<std::pair<int64_t, std::string>> skipped;
};

// The job's inputs in batches of batch_size, in order (the last may be
// smaller), numbered from 0.
std::vector<Batch> BatchGrid(const PredictOptions& options) {
  const auto n = static_cast<int64_t>(options.inputs.size());
  const int64_t b = options.batch_size;
  std::vector<Batch> grid;
  for (int64_t id = 0; id * b < n; ++id) {
    Batch batch{id, {}};
    for (int64_t i = id * b; i < std::min(n, (id + 1) * b); ++i) {
      batch.inputs.push_back(i);
    }
    grid.push_back(std::move(batch));
  }
  return grid;
}

// Where results go: the .npy form, the directory form or memory.
class Sink {
 public:
  virtual ~Sink() = default;
  // The batches still to do; *resumed counts the inputs already done.
  virtual StatusOr<std::vector<Batch>> Pending(int64_t* resumed) = 0;
  virtual Status Write(const Batch& batch, const BatchResult& result) = 0;
  // After the last batch: the summary's skipped list, the final files.
  virtual Status Finish(PredictSummary* summary) = 0;
};

class NpySink final : public Sink {
 public:
  NpySink(const PredictOptions& options)
      : options_(options),
        output_(options.output),
        partial_(options.output + ".partial") {}

  StatusOr<std::vector<Batch>> Pending(int64_t* resumed) override {
    const std::string listing = JoinLines(options_.inputs);
    const fs::path listed = partial_ / "inputs.txt";
    if (!fs::exists(partial_) && fs::exists(output_)) {
      WEFT_RETURN_IF_ERROR(CheckFinished());
      complete_ = true;
      *resumed = static_cast<int64_t>(options_.inputs.size());
      return std::vector<Batch>{};
    }
    if (fs::exists(partial_)) {
      WEFT_ASSIGN_OR_RETURN(std::string before, ReadText(listed));
      if (before !=
          listing + "batch " + std::to_string(options_.batch_size) + "\n") {
        return FailedPreconditionError(
            partial_.string() +
            " holds an interrupted job over other inputs or another batch "
            "size; remove it to start over, or give the same inputs");
      }
    } else {
      std::error_code error;
      fs::create_directories(partial_, error);
      if (error) {
        return ErrnoToStatus(error.value(),
                             "cannot create " + partial_.string());
      }
      WEFT_RETURN_IF_ERROR(WriteAtomically(
          listed,
          listing + "batch " + std::to_string(options_.batch_size) + "\n"));
    }
    std::vector<Batch> pending;
    *resumed = 0;
    for (Batch& batch : BatchGrid(options_)) {
      if (fs::exists(ListPath(batch.id))) {
        *resumed += static_cast<int64_t>(batch.inputs.size());
      } else {
        pending.push_back(std::move(batch));
      }
    }
    return pending;
  }

  Status Write(const Batch& batch, const BatchResult& result) override {
    if (!result.predicted.empty()) {
      WEFT_RETURN_IF_ERROR(
          WriteAtomically(RowsPath(batch.id), SerializeNpy(result.rows)));
    }
    // The list is written last: it marks the batch done.
    std::string list;
    for (int64_t i : result.predicted)
      list += "ok\t" + options_.inputs[i] + "\n";
    for (const auto& [i, why] : result.skipped) {
      list += "skip\t" + options_.inputs[i] + "\t" + OneLine(why) + "\n";
    }
    return WriteAtomically(ListPath(batch.id), list);
  }

  Status Finish(PredictSummary* summary) override {
    if (complete_) {
      summary->skipped = finished_skipped_;
      return Status::OK();
    }
    std::vector<Tensor> parts;
    std::vector<std::string> paths;
    std::string skipped;
    const auto n = static_cast<int64_t>(options_.inputs.size());
    for (int64_t id = 0; id * options_.batch_size < n; ++id) {
      WEFT_ASSIGN_OR_RETURN(std::string list, ReadText(ListPath(id)));
      std::istringstream lines(list);
      std::string line;
      bool any = false;
      while (std::getline(lines, line)) {
        const size_t tab = line.find('\t');
        if (tab == std::string::npos) continue;
        const std::string rest = line.substr(tab + 1);
        if (line.compare(0, tab, "ok") == 0) {
          paths.push_back(rest);
          any = true;
        } else {
          const size_t reason = rest.find('\t');
          summary->skipped.emplace_back(
              rest.substr(0, reason),
              reason == std::string::npos ? "" : rest.substr(reason + 1));
          skipped += rest + "\n";
        }
      }
      if (any) {
        StatusOr<Tensor> rows = ReadNpy(RowsPath(id).string());
        if (!rows.ok()) return rows.status();
        parts.push_back(std::move(rows).value());
      }
    }
    if (parts.empty()) {
      return InvalidArgumentError("no input could be predicted (all " +
                                  std::to_string(n) + " skipped)");
    }
    std::vector<const Tensor*> views;
    for (const Tensor& part : parts) views.push_back(&part);
    WEFT_ASSIGN_OR_RETURN(Tensor all, data::internal::ConcatRows(views));
    WEFT_RETURN_IF_ERROR(WriteAtomically(output_, SerializeNpy(all)));
    WEFT_RETURN_IF_ERROR(
        WriteAtomically(options_.output + ".paths.txt", JoinLines(paths)));
    const fs::path skipped_path = options_.output + ".skipped.txt";
    if (!skipped.empty()) {
      WEFT_RETURN_IF_ERROR(WriteAtomically(skipped_path, skipped));
    } else {
      fs::remove(skipped_path);
    }
    std::error_code error;
    fs::remove_all(partial_, error);
    return Status::OK();
  }

 private:
  // An output from a finished job is this job's only when it covered the
  // same inputs (predicted or skipped), in the same order.
  Status CheckFinished() {
    Status other = FailedPreconditionError(
        output_.string() +
        " exists and is not the finished result of this job (other "
        "inputs); remove it or choose another --output");
    StatusOr<std::string> paths = ReadText(options_.output + ".paths.txt");
    if (!paths.ok()) return other;
    std::vector<std::string> covered;
    std::istringstream predicted(*paths);
    std::string line;
    std::set<std::string> done;
    while (std::getline(predicted, line)) done.insert(line);
    if (StatusOr<std::string> skipped =
            ReadText(options_.output + ".skipped.txt");
        skipped.ok()) {
      std::istringstream lines(*skipped);
      while (std::getline(lines, line)) {
        const size_t tab = line.find('\t');
        const std::string path = line.substr(0, tab);
        done.insert(path);
        finished_skipped_.emplace_back(
            path, tab == std::string::npos ? "" : line.substr(tab + 1));
      }
    }
    const std::set<std::string> wanted(options_.inputs.begin(),
                                       options_.inputs.end());
    return done == wanted ? Status::OK() : other;
  }

  static std::string OneLine(std::string text) {
    for (char& c : text) {
      if (c == '\n' || c == '\t') c = ' ';
    }
    return text;
  }
  fs::path ListPath(int64_t id) const {
    return partial_ / ("batch-" + std::to_string(id) + ".txt");
  }
  fs::path RowsPath(int64_t id) const {
    return partial_ / ("batch-" + std::to_string(id) + ".npy");
  }

  const PredictOptions& options_;
  fs::path output_, partial_;
  bool complete_ = false;
  std::vector<std::pair<std::string, std::string>> finished_skipped_;
};

class DirectorySink final : public Sink {
 public:
  explicit DirectorySink(const PredictOptions& options) : options_(options) {}

  StatusOr<std::vector<Batch>> Pending(int64_t* resumed) override {
    std::map<std::string, std::string> owners;
    for (const std::string& input : options_.inputs) {
      const std::string name = fs::path(input).stem().string() + ".npy";
      auto [it, added] = owners.emplace(name, input);
      if (!added) {
        return InvalidArgumentError("--output " + options_.output + ": " +
                                    it->second + " and " + input +
                                    " would both write " + name +
                                    "; give a .npy file as the output instead");
      }
      names_.push_back(name);
    }
    std::error_code error;
    fs::create_directories(options_.output, error);
    if (error) {
      return ErrnoToStatus(error.value(), "cannot create " + options_.output);
    }
    std::vector<Batch> pending;
    *resumed = 0;
    for (size_t i = 0; i < options_.inputs.size(); ++i) {
      if (fs::exists(fs::path(options_.output) / names_[i])) {
        ++*resumed;
        continue;
      }
      if (pending.empty() ||
          static_cast<int64_t>(pending.back().inputs.size()) ==
              options_.batch_size) {
        pending.push_back(Batch{static_cast<int64_t>(pending.size()), {}});
      }
      pending.back().inputs.push_back(static_cast<int64_t>(i));
    }
    return pending;
  }

  Status Write(const Batch&, const BatchResult& result) override {
    for (size_t r = 0; r < result.predicted.size(); ++r) {
      const int64_t i = result.predicted[r];
      WEFT_RETURN_IF_ERROR(
          WriteAtomically(fs::path(options_.output) / names_[i],
                          SerializeNpy(data::internal::SliceRow(
                              result.rows, static_cast<int64_t>(r)))));
    }
    for (const auto& [i, why] : result.skipped) {
      skipped_.emplace_back(options_.inputs[i], why);
    }
    return Status::OK();
  }

  Status Finish(PredictSummary* summary) override {
    summary->skipped = skipped_;
    return Status::OK();
  }

 private:
  const PredictOptions& options_;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, std::string>> skipped_;
};

// PredictToMemory's: the batches' rows kept, joined at the end.
class MemorySink final : public Sink {
 public:
  explicit MemorySink(const PredictOptions& options) : options_(options) {}

  StatusOr<std::vector<Batch>> Pending(int64_t* resumed) override {
    *resumed = 0;
    return BatchGrid(options_);
  }

  Status Write(const Batch&, const BatchResult& result) override {
    if (!result.predicted.empty()) parts_.push_back(result.rows);
    result_.predicted.insert(result_.predicted.end(), result.predicted.begin(),
                             result.predicted.end());
    result_.skipped.insert(result_.skipped.end(), result.skipped.begin(),
                           result.skipped.end());
    return Status::OK();
  }

  Status Finish(PredictSummary* summary) override {
    for (const auto& [i, why] : result_.skipped) {
      summary->skipped.emplace_back(options_.inputs[i], why);
    }
    if (parts_.empty()) return Status::OK();
    std::vector<const Tensor*> views;
    for (const Tensor& part : parts_) views.push_back(&part);
    WEFT_ASSIGN_OR_RETURN(result_.rows, data::internal::ConcatRows(views));
    parts_.clear();
    return Status::OK();
  }

  PredictRows TakeResult(PredictSummary summary) {
    result_.summary = std::move(summary);
    return std::move(result_);
  }

 private:
  const PredictOptions& options_;
  std::vector<Tensor> parts_;
  PredictRows result_;
};

Status CheckOptions(const PredictOptions& options, bool in_memory) {
  if (options.inputs.empty()) return InvalidArgumentError("no inputs given");
  if (options.batch_size < 1 || options.batch_size > 65536) {
    return InvalidArgumentError("--batch must be from 1 to 65536, not " +
                                std::to_string(options.batch_size));
  }
  if (options.output.empty() != in_memory) {
    return InvalidArgumentError(
        in_memory ? "PredictToMemory takes no output path"
                  : "--output: a .npy file, or a directory for one file per "
                    "input");
  }
  if (options.key_offset < 0) {
    return InvalidArgumentError("key_offset must be 0 or more, not " +
                                std::to_string(options.key_offset));
  }
  return CheckListable(options.inputs);
}

// The pipeline over the pending inputs: (path, index) -> (item, index), in
// parallel on `pool`, a batch ahead of the model.
StatusOr<std::unique_ptr<data::Iterator>> MakePipeline(
    const PredictOptions& options, const std::vector<Batch>& pending,
    std::shared_ptr<ThreadPool> pool) {
  WEFT_ASSIGN_OR_RETURN(PreprocessGraph recipe,
                        LoadPreprocess(options.preprocess));
  std::vector<std::string> feeds = {recipe.path_input};
  if (!recipe.key_input.empty()) feeds.push_back(recipe.key_input);
  // Each item on one thread (no pools of its own): the parallelism is
  // across items, on the pipeline's pool.
  SessionOptions item_options;
  item_options.use_per_session_threads = true;
  item_options.inter_op_parallelism_threads = -1;
  item_options.intra_op_parallelism_threads = 1;
  WEFT_ASSIGN_OR_RETURN(data::MapFn preprocess,
                        data::GraphFn(std::move(recipe.graph), feeds,
                                      {recipe.output}, item_options));
  std::vector<std::string> paths;
  std::vector<int64_t> keys;
  for (const Batch& batch : pending) {
    for (int64_t i : batch.inputs) {
      paths.push_back(options.inputs[i]);
      keys.push_back(options.key_offset + i);
    }
  }
  const auto n = static_cast<int64_t>(paths.size());
  WEFT_ASSIGN_OR_RETURN(data::Dataset items,
                        data::Dataset::FromTensorSlices(
                            {Tensor::FromVector<std::string>({n}, paths),
                             Tensor::FromVector<int64_t>({n}, keys)}));
  const bool keyed = !recipe.key_input.empty();
  data::MapFn named = [preprocess,
                       keyed](data::Element e) -> StatusOr<data::Element> {
    const std::string path = e[0].data<std::string>()[0];
    if (!keyed) e.pop_back();
    StatusOr<data::Element> item = preprocess(std::move(e));
    if (!item.ok()) {
      std::string message = item.status().message();
      // The graph's errors name its node; the user wants the file.
      if (const size_t at = message.find("): ");
          at != std::string::npos && message.rfind("node '", 0) == 0) {
        message = message.substr(at + 3);
      }
      return Status(item.status().code(), path + ": " + message);
    }
    return item;
  };
  data::Dataset pipeline = items.Map(named, data::kAutotune);
  if (options.prefetch) pipeline = pipeline.Prefetch(options.batch_size);
  return pipeline.MakeIterator({.pool = std::move(pool)});
}

// Pulls one batch's items from the pipeline and runs the model on them.
StatusOr<BatchResult> RunBatch(const PredictOptions& options,
                               const Batch& batch, data::Iterator& items,
                               const PredictModel& model,
                               PredictSummary* summary) {
  BatchResult result;
  std::vector<Tensor> rows;
  const Clock::time_point wait_start = Clock::now();
  for (int64_t i : batch.inputs) {
    data::Element item;
    bool end = false;
    Status s = items.GetNext(&item, &end);
    if (end) {
      return InternalError("the pipeline ended before input " +
                           std::to_string(i));
    }
    if (!s.ok()) {
      if (!options.skip_bad_inputs) {
        return Status(s.code(), "input " + std::to_string(i) + ", " +
                                    s.message() +
                                    " (--skip-bad-inputs leaves such inputs "
                                    "out)");
      }
      result.skipped.emplace_back(i, s.message());
      continue;
    }
    result.predicted.push_back(i);
    rows.push_back(std::move(item[0]));
  }
  summary->wait_seconds +=
      std::chrono::duration<double>(Clock::now() - wait_start).count();
  if (rows.empty()) return result;
  std::vector<const Tensor*> views;
  for (const Tensor& row : rows) views.push_back(&row);
  StatusOr<Tensor> stacked = data::internal::StackRows(views);
  if (!stacked.ok()) {
    return InvalidArgumentError(
        "the preprocessed items of " + options.inputs[result.predicted[0]] +
        " and later inputs differ in shape: " + stacked.status().message());
  }
  std::vector<Tensor> outputs;
  const Clock::time_point run_start = Clock::now();
  Status run =
      model.session().Run({{model.input(), std::move(stacked).value()}},
                          {model.output()}, {}, &outputs);
  summary->model_seconds +=
      std::chrono::duration<double>(Clock::now() - run_start).count();
  if (!run.ok()) {
    return Status(run.code(), "the model on inputs " +
                                  std::to_string(batch.inputs.front()) +
                                  " to " + std::to_string(batch.inputs.back()) +
                                  ": " + run.message());
  }
  if (outputs[0].shape().rank() < 1 ||
      outputs[0].shape().dim(0) != static_cast<int64_t>(rows.size())) {
    return InvalidArgumentError(
        "the model's output " + outputs[0].shape().ToString() +
        " does not have one row per item of the batch (" +
        std::to_string(rows.size()) + ")");
  }
  result.rows = std::move(outputs[0]);
  return result;
}

// The job: the batches `sink` says are pending, through the pipeline and
// the model, into `sink`.
StatusOr<PredictSummary> RunJob(const PredictOptions& options, Sink* sink) {
  const Clock::time_point start = Clock::now();
  PredictSummary summary;
  summary.inputs = static_cast<int64_t>(options.inputs.size());
  WEFT_ASSIGN_OR_RETURN(std::vector<Batch> pending,
                        sink->Pending(&summary.resumed));
  std::shared_ptr<const PredictModel> model = options.opened_model;
  if (model == nullptr) {
    WEFT_ASSIGN_OR_RETURN(model,
                          PredictModel::Open(options.model, options.session));
  }
  summary.inter_op_threads = model->session().inter_op_threads();
  summary.intra_op_threads = model->session().intra_op_threads();
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<ThreadPool> pool,
                        data::internal::DefaultPipelinePool(options.session));
  std::unique_ptr<data::Iterator> items;
  if (!pending.empty()) {
    WEFT_ASSIGN_OR_RETURN(items, MakePipeline(options, pending, pool));
  }
  PredictProgress progress;
  progress.total = summary.inputs;
  progress.resumed = summary.resumed;
  progress.done = summary.resumed;
  auto report = [&] {
    progress.seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    const int64_t own = progress.done - progress.resumed;
    progress.items_per_second =
        progress.seconds > 0 ? static_cast<double>(own) / progress.seconds : 0;
    if (options.progress) options.progress(progress);
  };
  report();
  for (const Batch& batch : pending) {
    if (options.stop_requested && options.stop_requested()) {
      return CancelledError("stopped after " + std::to_string(progress.done) +
                            " of " + std::to_string(progress.total) +
                            " inputs; run the same command again to resume");
    }
    WEFT_ASSIGN_OR_RETURN(BatchResult result,
                          RunBatch(options, batch, *items, *model, &summary));
    WEFT_RETURN_IF_ERROR(sink->Write(batch, result));
    summary.predicted += static_cast<int64_t>(result.predicted.size());
    progress.done += static_cast<int64_t>(batch.inputs.size());
    report();
  }
  if (items != nullptr) summary.stages = items->Stats();
  WEFT_RETURN_IF_ERROR(sink->Finish(&summary));
  summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return summary;
}

}  // namespace

StatusOr<std::shared_ptr<const PredictModel>> PredictModel::Open(
    const std::string& path, SessionOptions options) {
  WEFT_ASSIGN_OR_RETURN(OnnxModel model, LoadModel(path));
  WEFT_ASSIGN_OR_RETURN(auto io, PredictIo(path, model));
  options.batch_invariant = true;
  std::shared_ptr<PredictModel> opened(new PredictModel());
  opened->input_ = std::move(io.first);
  opened->output_ = std::move(io.second);
  WEFT_ASSIGN_OR_RETURN(opened->session_,
                        Session::Create(std::move(model.file.graph), options));
  return std::shared_ptr<const PredictModel>(std::move(opened));
}

PredictModel::~PredictModel() = default;

StatusOr<PredictSummary> Predict(const PredictOptions& options) {
  WEFT_RETURN_IF_ERROR(CheckOptions(options, /*in_memory=*/false));
  std::unique_ptr<Sink> sink;
  if (fs::path(options.output).extension() == ".npy") {
    sink = std::make_unique<NpySink>(options);
  } else {
    sink = std::make_unique<DirectorySink>(options);
  }
  return RunJob(options, sink.get());
}

StatusOr<PredictRows> PredictToMemory(const PredictOptions& options) {
  WEFT_RETURN_IF_ERROR(CheckOptions(options, /*in_memory=*/true));
  MemorySink sink(options);
  WEFT_ASSIGN_OR_RETURN(PredictSummary summary, RunJob(options, &sink));
  return sink.TakeResult(std::move(summary));
}

StatusOr<PipelineReport> MeasurePipeline(const PredictOptions& options) {
  WEFT_RETURN_IF_ERROR(CheckOptions(options, /*in_memory=*/true));
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<ThreadPool> pool,
                        data::internal::DefaultPipelinePool(options.session));
  const Clock::time_point start = Clock::now();
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<data::Iterator> items,
                        MakePipeline(options, BatchGrid(options), pool));
  PipelineReport report;
  report.threads = pool == nullptr ? 0 : pool->NumThreads();
  while (true) {
    data::Element item;
    bool end = false;
    Status status = items->GetNext(&item, &end);
    if (end) break;
    if (!status.ok()) {
      if (!options.skip_bad_inputs) return status;
      ++report.skipped;
      continue;
    }
    ++report.items;
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report.stages = items->Stats();
  return report;
}

}  // namespace weft
