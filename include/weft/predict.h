// Batch inference over files: a weft::data pipeline (read, decode,
// preprocess; in parallel on the inter-op pool, a batch ahead) into a
// model, results written in input order and resumable. `weft predict` is
// its command line; weft.predict (Python) and weft.dask call it too.
//
//   weft::PredictOptions options;
//   options.model = "resnet18.onnx";
//   options.inputs = *weft::data::MatchFiles("photos/*.jpg");
//   options.output = "preds.npy";
//   weft::StatusOr<weft::PredictSummary> done = weft::Predict(options);
//
// Output: a file ending in .npy gets one array whose first dimension is the
// number of inputs predicted, rows in input order, with PATH.paths.txt (one
// input per line, the same order) and, when some were skipped,
// PATH.skipped.txt ("path<TAB>reason"). Any other path is a directory that
// gets one NAME.npy per input (NAME: the input's file name without its
// extension; two inputs with one NAME are refused before any work).
//
// An empty output keeps the rows in memory (PredictToMemory): weft.predict
// and the tasks of weft.dask.
//
// The model runs with SessionOptions::batch_invariant set: an input's row
// is bitwise the same whatever batch it falls in, so a job split into parts
// (weft.dask's partitions), resumed, or cut into other batch sizes gives
// the same rows; except in a model with DynamicQuantizeLinear, whose scale
// comes from the whole batch (docs/serving.md).
//
// Resuming: a .npy job keeps each finished batch in PATH.partial/ until the
// last one is done, then joins them; run again with the same inputs and
// output, it computes only the batches missing there. A directory job
// skips inputs whose NAME.npy exists. Files appear whole (written under a
// temporary name, then renamed), so an interrupted job leaves none cut.
#ifndef WEFT_PREDICT_H_
#define WEFT_PREDICT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "weft/data.h"
#include "weft/graph.h"
#include "weft/options.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

struct PredictProgress {
  int64_t total = 0;    // Inputs in the job.
  int64_t done = 0;     // Predicted or skipped so far, resumed included.
  int64_t resumed = 0;  // Found done by an earlier run.
  double seconds = 0;   // Since this run started.
  double items_per_second = 0;  // Of this run's own work.
};

struct PredictSummary {
  int64_t inputs = 0;
  int64_t predicted = 0;  // By this run.
  int64_t resumed = 0;    // Already done by an earlier run.
  // Inputs left out (skip_bad_inputs): path and what was wrong.
  std::vector<std::pair<std::string, std::string>> skipped;
  double seconds = 0;
  double model_seconds = 0;  // In the model's Runs.
  double wait_seconds = 0;   // Waiting for the pipeline's next item.
  int inter_op_threads = 0, intra_op_threads = 0;
  // The pipeline's stages, source first (weft/data.h): elements, busy time,
  // parallelism; empty when nothing was left to do.
  std::vector<data::StageStats> stages;
};

class Session;

// A model opened for Predict: its session, the input it feeds (the batch)
// and the output it reads. Open once to run many jobs on one session
// (weft.dask keeps one per worker process); jobs may share it from several
// threads at once, as Session::Run may.
class PredictModel {
 public:
  // `options.batch_invariant` is set whatever it says (see above).
  static StatusOr<std::shared_ptr<const PredictModel>> Open(
      const std::string& path, SessionOptions options);
  ~PredictModel();

  Session& session() const { return *session_; }
  const std::string& input() const { return input_; }
  const std::string& output() const { return output_; }

 private:
  PredictModel() = default;
  std::unique_ptr<Session> session_;
  std::string input_, output_;
};

struct PredictOptions {
  std::string model;  // ONNX model or weft JSON graph.
  // Used instead of `model` and `session` when set.
  std::shared_ptr<const PredictModel> opened_model;
  std::vector<std::string> inputs;  // Files, in the order of the output.
  // A recipe name (PreprocessRecipes()) or a weft JSON graph file with one
  // string Placeholder (the path), optionally one int64 Placeholder (the
  // key: the input's index, which seeds random ops such as
  // RandomResizedCrop, so an item is the same whatever thread made it),
  // and one output (one item of the batch).
  std::string preprocess = "imagenet";
  int64_t batch_size = 16;
  // A .npy file or a directory (above); empty for PredictToMemory.
  std::string output;
  // When `inputs` are a part of a larger job (a weft.dask partition): the
  // index of inputs[0] in it. The key random preprocessing sees is
  // key_offset + the input's index here, so a part gives the rows the whole
  // job would.
  int64_t key_offset = 0;
  // Leave out inputs that cannot be read or preprocessed, and say which;
  // otherwise the first one ends the job with an error naming it.
  bool skip_bad_inputs = false;
  // Prepare the next batch while the model runs (false: only when asked,
  // for experiments that show what the overlap buys).
  bool prefetch = true;
  // The model's session (threads); the pipeline runs on its inter-op pool.
  SessionOptions session;
  // Called after each batch (and once at the start), on the caller's thread.
  std::function<void(const PredictProgress&)> progress;
  // Checked between batches: true ends the job (Cancelled), what is done
  // kept for the next run to resume from.
  std::function<bool()> stop_requested;
};

// The recipes --preprocess names, with what each does.
std::vector<std::pair<std::string, std::string>> PreprocessRecipes();

// A preprocessing graph and the names of its feeds and fetch.
struct PreprocessGraph {
  Graph graph;
  std::string path_input;  // string scalar: the input file's path.
  std::string key_input;   // int64 scalar: the input's index; "" if none.
  std::string output;      // One item.
};

// A recipe by name, else the graph file at `spec`.
StatusOr<PreprocessGraph> LoadPreprocess(const std::string& spec);

StatusOr<PredictSummary> Predict(const PredictOptions& options);

// A job's rows kept in memory (options.output must be empty).
struct PredictRows {
  PredictSummary summary;
  // One row per predicted input, in input order; uninitialised when none
  // was predicted (all skipped).
  Tensor rows;
  std::vector<int64_t> predicted;  // Indices into options.inputs, in order.
  // Left out (skip_bad_inputs): index into options.inputs, what was wrong.
  std::vector<std::pair<int64_t, std::string>> skipped;
};
StatusOr<PredictRows> PredictToMemory(const PredictOptions& options);

// A job's input pipeline alone (`weft data-stats`): how fast it can feed a
// model, and which stage limits it.
struct PipelineReport {
  int64_t items = 0;    // Made.
  int64_t skipped = 0;  // Bad inputs, with skip_bad_inputs.
  double seconds = 0;
  int threads = 0;  // Of the pool it ran on.
  // Source first, as PredictSummary::stages, with AUTOTUNE's last choices
  // and the bottleneck marked (weft/data.h).
  std::vector<data::StageStats> stages;
};
// Runs the pipeline of the job `options` describes (inputs, preprocess,
// prefetch, on the inter-op pool of options.session) to the end, dropping
// its items; the model is not opened and options.output must be empty.
// A bad input is an error naming it, unless skip_bad_inputs.
StatusOr<PipelineReport> MeasurePipeline(const PredictOptions& options);

}  // namespace weft

#endif  // WEFT_PREDICT_H_
