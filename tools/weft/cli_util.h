// Pieces shared by the weft subcommands.
#ifndef WEFT_TOOLS_WEFT_CLI_UTIL_H_
#define WEFT_TOOLS_WEFT_CLI_UTIL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/weft.h"

namespace weft::cli {

// Exit codes of every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitRunFailed = 1;
constexpr int kExitBadInput = 2;

// Prints "weft: error: <message>" to stderr and returns `code`.
int Fail(int code, const std::string& message);

// The C library's text for errno ("Permission denied").
std::string ErrnoText();

// How a child process ended: `started` false when it could not be made
// (fork failed: errno says why); `exited` false when a signal ended it;
// otherwise its exit code (127 when argv[0] could not be executed).
struct ChildExit {
  bool started = false;
  bool exited = false;
  int code = 0;
};

// Runs argv (argv[0] looked up on PATH) and waits for it. A non-empty
// `pythonpath` goes in front of the inherited PYTHONPATH in the child.
// With `child_takes_interrupts`, this process ignores SIGINT while it
// waits: Ctrl-C reaches the child (same process group), which decides what
// to keep. stdout is flushed first, so the child's output follows ours.
ChildExit RunChildProcess(std::vector<std::string> argv,
                          const std::string& pythonpath = "",
                          bool child_takes_interrupts = false);

// OK when `path` can be written as a file (it is no directory, and its
// folder exists and is writable), checked before any work starts; else
// InvalidArgument "FLAG PATH: <the system's reason>" ("No such file or
// directory", "Is a directory", "Permission denied"). Nothing is created.
Status CheckOutputFile(const std::string& flag, const std::string& path);

// A thread count given with `flag` ("--inter", "--intra") checked against
// this machine's core budget: more threads than the budget's cores is
// accepted with a warning that says what will happen (they take turns on
// those cores); more than kThreadsPerBudgetCoreCap per core of the budget
// (at least kMinThreadCap) is refused, naming the cap. Auto (0) and the
// caller's thread (-1) pass.
inline constexpr int kThreadsPerBudgetCoreCap = 16;
inline constexpr int kMinThreadCap = 64;
Status CheckThreadCount(const std::string& flag, int threads);

// A progress line on a terminal for a command that runs a graph `total`
// times: from two seconds on, "\r<what> 12/100, median 41.3 ms, about 3.6 s
// left" on stderr, rewritten after each Run; nothing when stderr is not a
// terminal, or for a job done sooner.
class ProgressLine {
 public:
  ProgressLine(std::string what, int total);
  void Update(int done, double median_ms);
  // Erases the line, if one was drawn.
  void Clear();

 private:
  std::string what_;
  int total_;
  bool terminal_;
  bool drawn_ = false;
  int64_t start_ns_;
};

// Whether `path` ends in `ext` (".pb", ".json").
bool HasExtension(const std::string& path, const char* ext);

// The node a tensor name or control input names: "n:1" and "^n" -> "n".
std::string NodeOf(const std::string& tensor_name);

// A duration in ms with three significant digits and a unit that keeps
// them: "412 µs", "41.3 ms", "4.13 s".
std::string FormatMs(double ms);

// A weft JSON graph or an ONNX model (by the .onnx extension), with the
// names its user knows: an ONNX model's inputs and outputs are fed and
// fetched by their ONNX names, which map to weft tensors here.
struct Model {
  GraphFile file;
  std::map<std::string, std::string> tensor_of;  // User name -> weft tensor.
  std::vector<std::string> output_names;         // Parallel to file.outputs.
  // The user's name for weft tensor `tensor` (itself when it has none).
  std::string NameOf(const std::string& tensor) const;
  // The weft tensor for a user name (itself when it is not mapped).
  std::string TensorOf(const std::string& name) const;
};
StatusOr<Model> LoadModel(const std::string& path);

// Parses NAME=FILE flags (FILE a .npy or an ONNX TensorProto .pb) and reads
// the files; NAME is mapped through model.TensorOf.
StatusOr<NamedTensors> ReadFeeds(const std::vector<std::string>& flags,
                                 const Model& model);

// `name` made safe as a file name: '/', ':' and '\\' become '_'.
std::string FileNameFor(std::string name);

// Gives every placeholder the fetches need and `feeds` lacks random values of
// its declared dtype and shape, from a fixed seed (the same for every call),
// and says so on stderr, naming the distribution: floats uniform in
// [-1, 1), integers in [-100, 100) ([0, 200) unsigned), booleans at even
// odds. An unfed placeholder of unknown shape is an error naming it. run
// and bench do this only with --random-feeds.
Status AddRandomFeeds(const GraphFile& file,
                      const std::vector<std::string>& fetches,
                      NamedTensors* feeds);

// An error naming the first placeholder (or ONNX input) the fetches need
// that `feeds` does not provide, and how to provide it.
Status CheckFeedsGiven(const Model& model,
                       const std::vector<std::string>& fetches,
                       const NamedTensors& feeds);

// The placeholders the fetches need that `feeds` does not provide.
std::vector<std::string> MissingFeeds(const GraphFile& file,
                                      const std::vector<std::string>& fetches,
                                      const NamedTensors& feeds);

// A 64-bit FNV-1a hash of dtype, shape and bytes, as 16 hex digits.
std::string ContentHash(const Tensor& tensor);

// "[0.1, 0.2, ...]": the first `count` values.
std::string FirstValues(const Tensor& tensor, int count);

double Median(std::vector<double> values);

// The whole of `text` as a decimal integer in [lo, hi]; nullopt for
// anything else (empty, trailing characters, out of range). The one
// integer reader behind every numeric flag.
std::optional<int64_t> ParseIntInRange(std::string_view text, int64_t lo,
                                       int64_t hi);

// Thread counts of a grid flag: "-1,0,1,2", each from `lowest` (-1 for
// inter-op, 0 for intra-op) to kMaxThreads. Errors name the flag and value.
StatusOr<std::vector<int>> ParseIntList(const std::string& flag,
                                        const std::string& text, int lowest);

// 1, 2, 4, ... up to the auto count, plus the auto count.
std::vector<int> DefaultGrid();

}  // namespace weft::cli

#endif  // WEFT_TOOLS_WEFT_CLI_UTIL_H_
