// Sessions: a compiled graph plus the thread pools that run it.
//
//   weft::SessionOptions options;
//   options.inter_op_parallelism_threads = 2;
//   auto session = weft::Session::Create(std::move(graph), options);
//   if (!session.ok()) ...
//   std::vector<weft::Tensor> outputs;
//   weft::Status s = (*session)->Run({{"x", x}}, {"y"}, {}, &outputs);
//
// Thread-safety: Run may be called from many threads at once.
#ifndef WEFT_SESSION_H_
#define WEFT_SESSION_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "weft/graph.h"
#include "weft/options.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

class Session {
 public:
  // Validates the options, compiles the graph (every node's op, inputs,
  // attributes, dtypes and shapes) and sets up the pools.
  static StatusOr<std::unique_ptr<Session>> Create(
      Graph graph, const SessionOptions& options = {});

  ~Session();  // Closes the session if it is still open.

  // Runs the nodes needed for `fetches` ("node" or "node:k") and `targets`
  // (nodes run for their effect), with `feeds` replacing tensors. On success
  // *outputs holds one tensor per fetch; on failure it is left empty.
  Status Run(const NamedTensors& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs);
  Status Run(const RunOptions& run_options, const NamedTensors& feeds,
             const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata);

  // Checks a Run's feeds (names, dtypes, shapes), fetches and targets, and
  // prepares its plan, without running anything: the errors Run would give
  // before starting any node.
  Status Prepare(const NamedTensors& feeds,
                 const std::vector<std::string>& fetches,
                 const std::vector<std::string>& targets);

  // Ends Runs in flight with Cancelled, waits for their nodes to stop, and
  // releases the session's pools. Later Runs fail with FailedPrecondition.
  Status Close();

  // Effective sizes: inter-op threads of pool 0 (-1: the caller's thread)
  // and intra-op threads counting the caller.
  int inter_op_threads() const;
  int intra_op_threads() const;
  // Effective spin windows (us) and pinning of inter-op pool 0 and the
  // intra-op pool: what the pools were made with, which for a session that
  // shares the process-wide pools may differ from what it asked (it was
  // warned, naming the field).
  int inter_op_spin_us() const;
  int intra_op_spin_us() const;
  std::vector<int> inter_op_pin_cpus() const;
  std::vector<int> intra_op_pin_cpus() const;

  // Bytes the kernels of the graph compiled at creation prepared from its
  // constants: weights packed for the matrix-product micro-kernel
  // (docs/kernels.md). A graph specialised for new feed shapes, or the graph
  // as given, packs its own copies when first run.
  int64_t prepared_bytes() const;

 private:
  class Impl;  // Defined inside the library.
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft

#endif  // WEFT_SESSION_H_
