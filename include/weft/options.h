// Session and Run configuration, with TensorFlow's names and weft's
// semantics. docs/configuration.md puts each option beside its TensorFlow,
// PyTorch and ONNX Runtime equivalent.
#ifndef WEFT_OPTIONS_H_
#define WEFT_OPTIONS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace weft {

// One inter-op pool of a session (TF's ThreadPoolOptionProto).
struct ThreadPoolSpec {
  // Threads in the pool; 0 = auto (the CPU budget).
  int num_threads = 0;
  // Non-empty: the pool is shared process-wide under this name. Asking for
  // the same name with another size is an error.
  std::string global_name;
};

// The thread counts every way of setting one accepts (SessionOptions, the
// process-wide setters in weft/threading.h, the WEFT_* environment
// variables, the command's flags): inter-op from -1 (every node on the
// calling thread) to kMaxThreads, intra-op from 0 to kMaxThreads; 0 is auto.
inline constexpr int kMaxThreads = 4096;
inline constexpr int kMinInterOpThreads = -1;
// The spin window of a pool when nothing sets one, in microseconds.
inline constexpr int kDefaultSpinUs = 50;
inline constexpr int kMaxSpinUs = 1'000'000;

struct SessionOptions {
  // Threads that run independent nodes at the same time.
  //   0 (default): auto — weft::threading::SetInterOpParallelismThreads, else
  //     WEFT_NUM_INTEROP_THREADS, else the CPU budget (weft/threading.h);
  //   n > 0: n threads;
  //   -1: every node runs in the thread that called Run.
  // From -1 to kMaxThreads.
  int inter_op_parallelism_threads = 0;

  // Threads one op may split its work over, counting the thread running the
  // op (so n means n - 1 pool workers). 0 (default): auto, resolved like
  // inter_op. 1: no intra-op pool; kernels run serially. Must be >= 0.
  int intra_op_parallelism_threads = 0;

  // false (default): share the process-wide pools; the first such session
  // creates them with its sizes (as in TensorFlow). true: this session gets
  // pools of its own, destroyed with it.
  bool use_per_session_threads = false;

  // When non-empty, the session's inter-op pools (RunOptions picks one by
  // index; the default is pool 0), replacing the one described above.
  std::vector<ThreadPoolSpec> session_inter_op_thread_pools;

  // Devices: {"CPU": n} makes /cpu:0 ... /cpu:n-1 (default 1). All CPU
  // devices share the same pools; placement is recorded in RunMetadata.
  std::map<std::string, int> device_count;
  // A node pinned to a device that does not exist is placed on /cpu:0
  // instead of failing the session.
  bool allow_soft_placement = false;
  // Print each node's device to stderr when the graph is compiled.
  bool log_device_placement = false;

  // Default deadline of every Run, in ms, when RunOptions::timeout_ms is 0.
  // 0: none.
  int64_t operation_timeout_ms = 0;

  // Most bytes of tensors one Run may hold at once (the outputs its nodes
  // produce, from allocation until the last reader has run; feeds and
  // constants are not counted). A node whose output would exceed it fails
  // the Run with ResourceExhausted naming the node, instead of the process
  // being killed. 0: no limit.
  int64_t memory_limit_bytes = 0;

  // Batch invariance: kernels whose path would depend on how many rows the
  // first dimension holds take one path for every count, so a row's
  // outputs are bitwise the same run alone or stacked with others (what
  // `weft serve` promises for batched models, and sets). It costs products
  // of few rows their faster paths (a one-row product against a constant
  // matrix, BLIS's unpacked path for fewer than four micro-tile rows).
  // Not kept by a node that computes over its whole input by definition:
  // DynamicQuantizeLinear's scale comes from every row (docs/serving.md).
  bool batch_invariant = false;

  // How long idle workers spin before parking, in microseconds (0 to
  // 1,000,000): lower latency for back-to-back work against CPU burnt while
  // idle. -1 (default): the process default — threading::Set*SpinUs, else
  // WEFT_SPIN_US or KMP_BLOCKTIME, else kDefaultSpinUs.
  int inter_op_spin_us = -1;
  int intra_op_spin_us = -1;

  // Pin workers to CPUs (round robin over the list). Empty (default): the
  // process default — threading::Set*PinCpus, else WEFT_PIN_CPUS,
  // KMP_AFFINITY or OMP_PROC_BIND/OMP_PLACES, else no pinning.
  std::vector<int> inter_op_pin_cpus;
  std::vector<int> intra_op_pin_cpus;

  // A ready node whose measured cost is below this (ns) runs inline in the
  // thread that made it ready instead of being dispatched to the pool. A Run
  // whose roots are all below it (and not blocking) is started by the
  // calling thread, which runs the cheap nodes and hands expensive ones to
  // the inter-op pool (a hand-off to the pool and back would cost more than
  // cheap nodes). 0: neither.
  double inline_node_cost_ns = 5000;

  // Two expensive nodes made ready together whose outputs meet again at
  // once (every consumer of the shorter also reads the longer, as in a
  // diamond or SqueezeNet's fire modules): the shorter runs on the same
  // thread as the longer, instead of going to another inter-op worker,
  // when its measured cost is below this (ns). Running it there delays
  // the join by its own time; handing it over costs a parked worker's
  // wake-up plus moving its input and output between cores (100-250 us a
  // time on the project's 2-vCPU VMs, docs/BENCHMARKS.md), and the overlap
  // it buys is at most the shorter node. The default sits above that
  // range because a node run on another core is measured with its data's
  // move included: at 100 us, SqueezeNet's largest 1x1 convolutions (55 us
  // here, 110-235 us when handed over) stayed handed over once a first
  // Run's page faults had pushed them past it. Nodes that lead to other
  // work are handed over whatever their cost. 0: always hand over.
  double join_inline_cost_ns = 250000;

  // Rewrite the graph when the session is created (weft/graph_passes.h):
  // fold constants, fuse activations into convolutions, ... ONNX Runtime's
  // graph_optimization_level ALL (true) or DISABLE_ALL (false).
  bool optimize_graph = true;
  // Passes to skip, by name (`weft info --passes`; ONNX Runtime's
  // disabled_optimizers). An unknown name is an error.
  std::vector<std::string> disabled_graph_passes;

  // ONNX Runtime's enable_mem_pattern: each Run signature's first Run
  // records the size of every intermediate tensor, and later Runs place
  // those tensors in one arena per Run, laid out from the graph's order so
  // that tensors whose lives cannot overlap share memory; a steady Run then
  // takes none of them from the heap. A tensor larger than recorded (a
  // larger feed) goes to the heap. False: every tensor from the heap.
  bool enable_mem_pattern = true;

  // The arithmetic of float convolutions and of matrix products against a
  // constant weight (OpenVINO's inference-precision hint; docs/kernels.md,
  // "bf16 mode"): "fp32" (default), or "bf16": their operands rounded to
  // bfloat16, the products summed in float32, on the CPU's bf16 units
  // (AVX-512 BF16, and AMX-BF16 where oneDNN uses it); every other op, and
  // those forms the units cannot run, stay float32. Results remain the same
  // for every thread setting, within about 2^-8 relative of fp32's. A CPU
  // without such units refuses "bf16" at Session::Create, naming what it
  // lacks.
  std::string precision = "fp32";
};

// Ends Runs from another thread: ONNX Runtime's RunOptions.terminate,
// TensorFlow's CancellationManager. Share one through
// RunOptions::cancellation; Cancel() ends every Run given it that is in
// flight with Cancelled once the nodes then running return (a kernel that
// checks IsCancelled, or waits in WaitFor, returns early), and every later
// Run given it fails at once, until Reset(). Thread-safe.
class RunCancellation {
 public:
  RunCancellation();
  ~RunCancellation();
  RunCancellation(const RunCancellation&) = delete;
  RunCancellation& operator=(const RunCancellation&) = delete;

  void Cancel();
  // Later Runs given it run again (Runs it ended stay ended).
  void Reset();
  bool cancelled() const;

 private:
  // Sessions register their Runs through RunCancellationInternal
  // (src/runtime/run_cancellation.h).
  friend class RunCancellationInternal;
  struct State;  // Defined inside the library.
  std::unique_ptr<State> state_;
};

struct RunOptions {
  enum class TraceLevel { kNone, kFull };

  // Deadline for this Run in ms; 0 uses SessionOptions::operation_timeout_ms.
  // A Run past it ends with DeadlineExceeded.
  int64_t timeout_ms = 0;
  // Index into the session's inter-op pools; -1 runs every node in the
  // calling thread.
  int inter_op_thread_pool = 0;
  // kFull fills RunMetadata::node_stats.
  TraceLevel trace_level = TraceLevel::kNone;
  // Null: the Run ends only by itself, its deadline, an error or Close().
  std::shared_ptr<RunCancellation> cancellation;
};

// One block of an intra-op ParallelFor, with RunOptions::TraceLevel::kFull.
struct ShardExecStats {
  int64_t os_thread_id = 0;
  std::string thread_name;  // "weft-intra-0", or the node's thread
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// One executed node, with RunOptions::TraceLevel::kFull.
struct NodeExecStats {
  std::string node_name;
  std::string op;
  std::string device;
  // steady_clock nanoseconds: when the node became ready, started, ended.
  int64_t scheduled_ns = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // "inter" (or the named pool) and the worker index, or "caller" and -1.
  std::string pool;
  int thread_index = -1;
  int64_t os_thread_id = 0;
  std::string thread_name;  // As the OS knows it: "weft-inter-0", ...
  // Threads the node's ParallelFor calls enlisted (the most in one call):
  // 1 when it ran serially. It follows the core budget: a kernel running
  // while others do gets fewer intra-op helpers (docs/architecture.md).
  int intra_op_shards = 1;
  // Every ParallelFor block, when the node used the intra-op pool.
  std::vector<ShardExecStats> shards;
  // Shapes of the node's outputs.
  std::vector<std::vector<int64_t>> output_shapes;
  // The nodes it waited for (data and control inputs, each once, in input
  // order) in the graph the Run executed: after the graph passes, so the
  // names may be of fused nodes the graph as given does not have. A
  // constant or feed the Run did not execute is listed too.
  std::vector<std::string> input_nodes;
  // A node of a subgraph (If's branch, Loop's or Scan's body) is named
  // "<calling node>/<node>" and carries the iteration it ran in (0 for an
  // If); -1 for the graph's own nodes.
  int64_t iteration = -1;
};

struct RunMetadata {
  int64_t run_start_ns = 0;
  int64_t run_end_ns = 0;
  // With RunOptions::TraceLevel::kFull: the most bytes of tensors the Run
  // held at once, counted as memory_limit_bytes counts them (outputs its
  // nodes produced, from allocation until their last reader has run; feeds
  // and constants are not counted). 0 otherwise.
  int64_t peak_bytes = 0;
  // With TraceLevel::kFull: the tensors the Run's nodes allocated from the
  // heap rather than the Run's arena (SessionOptions::enable_mem_pattern):
  // how many, and their bytes. A steady Run with the memory pattern takes
  // only its fetched outputs (which the caller keeps) from the heap. 0
  // otherwise.
  int64_t heap_tensors = 0;
  int64_t heap_tensor_bytes = 0;
  // The Run's arena, in bytes (0: none, e.g. the signature's first Run).
  int64_t arena_bytes = 0;
  std::vector<NodeExecStats> node_stats;  // In order of start time.
};

}  // namespace weft

#endif  // WEFT_OPTIONS_H_
