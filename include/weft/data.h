// Input pipelines (tf.data's model): a Dataset is an immutable description
// of a sequence of elements, each a tuple of tensors; an Iterator walks one
// pass over it. Parallel stages (Map with num_parallel_calls, Prefetch) run
// as work on the inter-op pool they are given — the pool a Session runs its
// nodes on — so a pipeline and the Runs it feeds share one core budget.
//
//   auto files = weft::data::Dataset::ListFiles("images/*.jpg");
//   auto ds = files->Map(weft::data::ReadFileFn())
//                 .Map(decode_and_resize, weft::data::kAutotune)
//                 .Batch(16)
//                 .Prefetch(2);
//   auto it = ds.MakeIterator({.pool = pool});
//   weft::data::Element batch;
//   bool end = false;
//   while (true) {
//     weft::Status s = (*it)->GetNext(&batch, &end);
//     if (!s.ok()) ...            // this element failed; the next may not
//     if (end) break;
//     ...
//   }
//
// Determinism: with seeds given, the sequence of elements (order and
// values) is the same for every pool size and run, parallel Map included,
// unless a Map asks for deterministic = false (results then come in the
// order they finish).
//
// Errors are per element: GetNext returns the failing element's error, and
// the following call goes on with the next element (IgnoreErrors() skips
// them instead). Waiting for an element never holds an inter-op worker: map
// calls are tasks that never wait, and Prefetch's driver runs on the
// blocking pool.
//
// Thread-safety: a Dataset may be shared and used from any thread; an
// Iterator is used by one thread at a time.
#ifndef WEFT_DATA_H_
#define WEFT_DATA_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/options.h"
#include "weft/status.h"
#include "weft/tensor.h"
#include "weft/thread_pool.h"

namespace weft::data {

// One element: a tuple of tensors (Python's dict elements are a tuple plus
// the names, kept by the Python layer).
using Element = std::vector<Tensor>;

// tf.data.AUTOTUNE: for num_parallel_calls and Prefetch's buffer size.
inline constexpr int kAutotune = -1;

using MapFn = std::function<StatusOr<Element>(Element)>;
using PredicateFn = std::function<StatusOr<bool>(const Element&)>;
// Called for the next element; std::nullopt ends the sequence.
using GeneratorFn = std::function<StatusOr<std::optional<Element>>()>;
// Makes a fresh generator for each pass (each Iterator, each Repeat round).
using GeneratorFactory = std::function<GeneratorFn()>;

// A stage of a pipeline; defined inside the library (src/data/).
class DatasetNode;

// What one stage of a pipeline did during an iteration (Iterator::Stats).
struct StageStats {
  std::string stage;        // "Map", "Batch", ... with its position.
  int64_t elements = 0;     // Produced by this stage.
  double busy_seconds = 0;  // Time in this stage's own work (map calls,
                            // stacking, decoding), summed over threads.
  double wait_seconds = 0;  // Time its consumer waited on it.
  int parallelism = 1;      // Calls in flight (Map) or buffer (Prefetch):
                            // kAutotune's latest choice where autotuned.
  int64_t skipped = 0;      // Failed elements IgnoreErrors dropped.
  bool autotuned = false;   // Made with kAutotune: the pass chooses.
  // The stage that limits the pass: the most busy time per element the
  // consumer took, per thread it may use, and more than the consumer's own
  // time per element (else the consumer limits it and no stage is marked).
  bool bottleneck = false;
};

struct IteratorOptions {
  // Where parallel stages run: a Session's inter-op pool, or any pool.
  // Null: the process-wide inter-op pool (created as a Session would).
  std::shared_ptr<ThreadPool> pool;
  // tf.data's options.autotune.enabled: false keeps kAutotune stages at
  // their starting choice (a map: one call per pool thread; a prefetch:
  // two elements) instead of the performance model's.
  bool autotune = true;
};

class Iterator {
 public:
  virtual ~Iterator() = default;
  // The next element into *out, or *end_of_sequence = true (out untouched).
  // An error is that element's: the next call goes on after it.
  virtual Status GetNext(Element* out, bool* end_of_sequence) = 0;
  // Per stage, from the source to the last: what each has done so far.
  virtual std::vector<StageStats> Stats() const = 0;
};

class Dataset {
 public:
  // ---- Sources ----
  // Slices every component along its first dimension (all must agree).
  static StatusOr<Dataset> FromTensorSlices(std::vector<Tensor> components);
  // int64 scalars start, start + step, ... before stop. REQUIRES step != 0.
  static StatusOr<Dataset> Range(int64_t start, int64_t stop, int64_t step = 1);

  // The paths that match a glob pattern, sorted, as string scalars; with
  // shuffle, in an order drawn from seed and the pass number (reshuffled
  // each Repeat round, as tf.data). No match is an error naming the
  // pattern.
  static StatusOr<Dataset> ListFiles(const std::string& pattern,
                                     bool shuffle = false, uint64_t seed = 0);
  static Dataset FromGenerator(GeneratorFactory factory);
  // Elements of the datasets side by side, until the shortest ends.
  static StatusOr<Dataset> Zip(const std::vector<Dataset>& datasets);

  // ---- Transformations (each returns a new Dataset) ----
  // num_parallel_calls: 0 runs fn in the consumer's thread; n > 0 keeps up
  // to n calls in flight on the pool; kAutotune chooses from the pool.
  // blocking: fn waits (for Python's GIL, for I/O), so its parallel calls
  // run on the blocking pool and hold no inter-op worker while they wait.
  Dataset Map(MapFn fn, int num_parallel_calls = 0, bool deterministic = true,
              bool blocking = false) const;
  Dataset Filter(PredicateFn predicate) const;
  // Stacks batch_size elements (same dtypes and shapes) along a new first
  // dimension; the last batch may be smaller unless drop_remainder.
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  // As Batch, padding each component to the largest shape in the batch
  // (or to padded_shapes where given, -1 meaning "largest") with zeros, or
  // with padding_values[c] where given for component c (one value: for
  // every component): a scalar of the component's dtype, or a number the
  // component's numeric dtype holds exactly (an empty Tensor: zeros).
  Dataset PaddedBatch(int64_t batch_size,
                      std::vector<std::vector<int64_t>> padded_shapes = {},
                      bool drop_remainder = false,
                      std::vector<Tensor> padding_values = {}) const;
  Dataset Unbatch() const;
  // Draws uniformly from a buffer of buffer_size elements (seeded).
  Dataset Shuffle(int64_t buffer_size, uint64_t seed,
                  bool reshuffle_each_iteration = true) const;
  Dataset Repeat(int64_t count = -1) const;  // -1: forever.
  Dataset Take(int64_t count) const;         // -1: all.
  Dataset Skip(int64_t count) const;         // -1: all.
  // Maps each element to a dataset and cycles over cycle_length of them,
  // block_length elements from each in turn (tf.data's order).
  Dataset Interleave(std::function<StatusOr<Dataset>(Element)> fn,
                     int cycle_length, int block_length = 1) const;
  // Prepends an int64 scalar counter from start.
  Dataset Enumerate(int64_t start = 0) const;
  // The first full pass is kept (in memory, or in the file at path for later
  // iterators and processes); later passes read it back.
  Dataset Cache(std::string path = "") const;
  // Computes up to buffer_size elements ahead on the blocking pool (which
  // only waits; the stages it drives compute as their own stage says).
  Dataset Prefetch(int64_t buffer_size = kAutotune) const;
  // Skips elements whose production failed, counting them (Stats()).
  Dataset IgnoreErrors() const;
  Dataset Apply(const std::function<Dataset(Dataset)>& transform) const {
    return transform(*this);
  }

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(
      IteratorOptions options = {}) const;

  // Stage names from source to last ("ListFiles -> Map -> Batch").
  std::string DebugString() const;

  explicit Dataset(std::shared_ptr<const DatasetNode> node)
      : node_(std::move(node)) {}
  const std::shared_ptr<const DatasetNode>& node() const { return node_; }

 private:
  std::shared_ptr<const DatasetNode> node_;
};

// Makes a pass over `dataset` that graphs read with the IteratorGetNext op
// (TensorFlow's name; attributes `iterator` = name and `output_types`, the
// element's dtypes): each execution of such a node takes the next element,
// so one Run reads its own batch, and with inter-op threads loads it while
// other nodes compute. At the end of the pass the node fails with
// OutOfRange ("end of sequence"). The op is registered with the first
// iterator. AlreadyExists when the name is taken.
Status RegisterIterator(const std::string& name, const Dataset& dataset,
                        IteratorOptions options = {});
// Ends the pass (waiting for its work in flight); NotFound for no such name.
Status UnregisterIterator(const std::string& name);

// The paths that match a glob pattern, sorted by byte value (the same
// order on every machine); no match is NotFound naming the pattern.
StatusOr<std::vector<std::string>> MatchFiles(const std::string& pattern);

// Map functions for common steps.
// A string scalar path -> its bytes as a string scalar (tf.io.read_file).
MapFn ReadFileFn();
// As ReadFileFn, for a .npy file -> its array.
MapFn ReadNpyFn();
// Runs a graph on each element: the element's tensors feed `inputs` in
// order, the result is `outputs`. The graph runs in a Session made with
// `options` (its intra-op pool splits the ops).
StatusOr<MapFn> GraphFn(Graph graph, std::vector<std::string> inputs,
                        std::vector<std::string> outputs,
                        const SessionOptions& options = {});

}  // namespace weft::data

#endif  // WEFT_DATA_H_
