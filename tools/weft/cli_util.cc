#include "cli_util.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "cli_json.h"
#include "weft/container.h"
#include "weft/dtype_dispatch.h"
#include "weft/npy.h"

namespace weft::cli {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "weft: error: %s\n", message.c_str());
  if (JsonErrorsEnabled()) {
    PrintJson(ErrorJson(code, message));
  }
  return code;
}

bool HasExtension(const std::string& path, const char* ext) {
  const std::string e = ext;
  return path.size() >= e.size() &&
         path.compare(path.size() - e.size(), e.size(), e) == 0;
}

std::string Model::NameOf(const std::string& tensor) const {
  for (const auto& [name, t] : tensor_of) {
    if (t == tensor) return name;
  }
  return tensor;
}

std::string Model::TensorOf(const std::string& name) const {
  auto it = tensor_of.find(name);
  return it == tensor_of.end() ? name : it->second;
}

StatusOr<Model> LoadModel(const std::string& path) {
  Model model;
  if (std::error_code ec; std::filesystem::is_directory(path, ec)) {
    return InvalidArgumentError(path +
                                " is a directory, not a graph file (a .json "
                                "graph or a .onnx model)");
  }
  // The format comes from the content (weft/model.h).
  WEFT_ASSIGN_OR_RETURN(OnnxModel onnx, weft::LoadModel(path));
  model.file = std::move(onnx.file);
  if (onnx.inputs.empty() && onnx.outputs.empty()) {  // A weft JSON graph.
    model.output_names = model.file.outputs;
    return model;
  }
  for (const OnnxValueInfo& v : onnx.inputs) model.tensor_of[v.name] = v.tensor;
  for (const OnnxValueInfo& v : onnx.outputs) {
    model.tensor_of[v.name] = v.tensor;
    model.output_names.push_back(v.name);
  }
  return model;
}

StatusOr<NamedTensors> ReadFeeds(const std::vector<std::string>& flags,
                                 const Model& model) {
  NamedTensors feeds;
  for (const std::string& flag : flags) {
    const auto eq = flag.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size()) {
      return InvalidArgumentError(
          "--feed '" + flag + "' must be NAME=FILE (a .npy or ONNX .pb file)");
    }
    const std::string file = flag.substr(eq + 1);
    const std::string tensor = model.TensorOf(flag.substr(0, eq));
    // A .pb file reads as the placeholder's dtype says: a SequenceProto or
    // OptionalProto for a container, bfloat16 from ONNX's UINT16 test
    // files. .npy holds tensors only.
    std::optional<DataType> declared;
    if (const NodeDef* node = model.file.graph.FindNode(tensor);
        node != nullptr && node->op == "Placeholder") {
      auto it = node->attrs.find("dtype");
      const DataType* dtype =
          it == node->attrs.end() ? nullptr : it->second.get_if<DataType>();
      if (dtype != nullptr) declared = *dtype;
    }
    auto value = !HasExtension(file, ".pb") ? ReadNpy(file)
                 : declared                 ? LoadOnnxValue(file, *declared)
                                            : LoadOnnxTensor(file);
    if (!value.ok()) {
      return value.status().WithContext("--feed " + flag.substr(0, eq));
    }
    feeds.emplace_back(tensor, *std::move(value));
  }
  return feeds;
}

std::string FileNameFor(std::string name) {
  for (char& c : name) {
    if (c == '/' || c == ':' || c == '\\') c = '_';
  }
  return name;
}

std::string NodeOf(const std::string& tensor_name) {
  std::string name = tensor_name;
  if (!name.empty() && name[0] == '^') name = name.substr(1);
  return name.substr(0, name.find(':'));
}

namespace {

// Placeholders reachable from the fetches, not looking behind fed nodes.
std::vector<const NodeDef*> NeededPlaceholders(
    const GraphFile& file, const std::vector<std::string>& fetches,
    const NamedTensors& feeds) {
  std::set<std::string> fed;
  for (const auto& feed : feeds) fed.insert(NodeOf(feed.first));
  std::vector<std::string> stack;
  for (const auto& fetch : fetches) stack.push_back(NodeOf(fetch));
  std::set<std::string> seen;
  std::vector<const NodeDef*> out;
  while (!stack.empty()) {
    const std::string name = stack.back();
    stack.pop_back();
    if (!seen.insert(name).second || fed.count(name)) continue;
    const NodeDef* node = file.graph.FindNode(name);
    if (node == nullptr) continue;  // Reported by the session.
    if (node->op == "Placeholder") out.push_back(node);
    for (const auto& input : node->inputs) stack.push_back(NodeOf(input));
  }
  return out;
}

}  // namespace

std::vector<std::string> MissingFeeds(const GraphFile& file,
                                      const std::vector<std::string>& fetches,
                                      const NamedTensors& feeds) {
  std::vector<std::string> names;
  for (const NodeDef* node : NeededPlaceholders(file, fetches, feeds)) {
    names.push_back(node->name);
  }
  return names;
}

namespace {

bool IsFloatDtype(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat64 ||
         dtype == DataType::kFloat16;
}

bool IsIntegerDtype(DataType dtype) {
  return !IsFloatDtype(dtype) && dtype != DataType::kBool &&
         !IsListedOnlyType(dtype) && !IsContainerType(dtype);
}

}  // namespace

Status CheckFeedsGiven(const Model& model,
                       const std::vector<std::string>& fetches,
                       const NamedTensors& feeds) {
  for (const std::string& name : MissingFeeds(model.file, fetches, feeds)) {
    const std::string user_name = model.NameOf(name);
    const char* kind = model.tensor_of.empty() ? "placeholder" : "input";
    return InvalidArgumentError(std::string(kind) + " '" + user_name +
                                "' has no value: pass --feed " + user_name +
                                "=FILE.npy (or .pb), or --random-feeds");
  }
  return Status::OK();
}

std::string ErrnoText() { return std::strerror(errno); }

Status CheckOutputFile(const std::string& flag, const std::string& path) {
  auto refuse = [&](int code) {
    return InvalidArgumentError(flag + " " + path + ": " + std::strerror(code));
  };
  if (path.empty()) return InvalidArgumentError(flag + " needs a file name");
  struct stat info;
  if (stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) return refuse(EISDIR);
    return access(path.c_str(), W_OK) == 0 ? Status::OK() : refuse(errno);
  }
  if (errno != ENOENT) return refuse(errno);
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : path.substr(0, slash);
  if (stat(folder.c_str(), &info) != 0) return refuse(errno);
  if (!S_ISDIR(info.st_mode)) return refuse(ENOTDIR);
  return access(folder.c_str(), W_OK | X_OK) == 0 ? Status::OK()
                                                  : refuse(errno);
}

ChildExit RunChildProcess(std::vector<std::string> argv,
                          const std::string& pythonpath,
                          bool child_takes_interrupts) {
  std::vector<char*> raw;
  for (std::string& arg : argv) raw.push_back(arg.data());
  raw.push_back(nullptr);
  std::string path = pythonpath;
  if (const char* inherited = std::getenv("PYTHONPATH");
      !path.empty() && inherited != nullptr && *inherited != '\0') {
    path += ":" + std::string(inherited);
  }
  struct sigaction ignore {};
  struct sigaction previous {};
  ignore.sa_handler = SIG_IGN;
  if (child_takes_interrupts) sigaction(SIGINT, &ignore, &previous);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    if (child_takes_interrupts) sigaction(SIGINT, &previous, nullptr);
    if (!path.empty()) setenv("PYTHONPATH", path.c_str(), 1);
    execvp(raw[0], raw.data());
    std::fprintf(stderr, "weft: error: cannot run %s: %s\n", raw[0],
                 ErrnoText().c_str());
    _exit(127);
  }
  ChildExit result;
  int status = 0;
  result.started = child > 0 && waitpid(child, &status, 0) == child;
  if (child_takes_interrupts) sigaction(SIGINT, &previous, nullptr);
  result.exited = result.started && WIFEXITED(status);
  result.code = result.exited ? WEXITSTATUS(status) : 0;
  return result;
}

std::string FormatMs(double ms) {
  char buf[32];
  if (ms < 1.0) {
    std::snprintf(buf, sizeof(buf), "%.3g µs", ms * 1000);
  } else if (ms < 1000.0) {
    std::snprintf(buf, sizeof(buf), "%.3g ms", ms);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g s", ms / 1000);
  }
  return buf;
}

namespace {

// The number of rows of the tables `placeholder` indexes: for every Gather
// whose indices are the placeholder (directly or through Cast or Identity)
// and whose data is a constant, the size of the gathered axis; the
// smallest of them, so that every index drawn is valid for every table.
// nullopt when the placeholder indexes no constant table.
std::optional<int64_t> IndexedRows(const GraphFile& file,
                                   const std::string& placeholder) {
  std::set<std::string> aliases = {placeholder};
  for (const NodeDef& node : file.graph.nodes()) {  // Nodes in graph order.
    if ((node.op == "Cast" || node.op == "Identity") && !node.inputs.empty() &&
        aliases.count(NodeOf(node.inputs[0]))) {
      aliases.insert(node.name);
    }
  }
  std::optional<int64_t> rows;
  for (const NodeDef& node : file.graph.nodes()) {
    if (node.op != "Gather" || node.inputs.size() < 2 ||
        !aliases.count(NodeOf(node.inputs[1]))) {
      continue;
    }
    const NodeDef* data = file.graph.FindNode(NodeOf(node.inputs[0]));
    if (data == nullptr || data->op != "Const") continue;
    auto value = data->attrs.find("value");
    const Tensor* table =
        value == data->attrs.end() ? nullptr : value->second.get_if<Tensor>();
    if (table == nullptr || table->shape().rank() < 1) continue;
    int64_t axis = 0;
    if (auto a = node.attrs.find("axis"); a != node.attrs.end()) {
      if (const int64_t* given = a->second.get_if<int64_t>()) axis = *given;
    }
    if (axis < 0) axis += table->shape().rank();
    if (axis < 0 || axis >= table->shape().rank()) continue;
    const int64_t size = table->shape().dim(axis);
    rows = rows ? std::min(*rows, size) : size;
  }
  return rows;
}

}  // namespace

Status AddRandomFeeds(const GraphFile& file,
                      const std::vector<std::string>& fetches,
                      NamedTensors* feeds) {
  for (const NodeDef* node : NeededPlaceholders(file, fetches, *feeds)) {
    auto dtype_it = node->attrs.find("dtype");
    auto shape_it = node->attrs.find("shape");
    const DataType* dtype = dtype_it == node->attrs.end()
                                ? nullptr
                                : dtype_it->second.get_if<DataType>();
    const PartialShape* shape = shape_it == node->attrs.end()
                                    ? nullptr
                                    : shape_it->second.get_if<PartialShape>();
    if (dtype == nullptr || shape == nullptr || !shape->IsFullyDefined()) {
      return InvalidArgumentError(
          "placeholder '" + node->name +
          "' has no fully known shape and dtype to draw random values for; "
          "pass --feed " +
          node->name + "=FILE.npy");
    }
    // Numbers and bools only: random text, sequences or bfloat16 would say
    // little about a model; such inputs come from files.
    if (IsListedOnlyType(*dtype) || IsContainerType(*dtype)) {
      return InvalidArgumentError(
          "placeholder '" + node->name + "' is " + DataTypeName(*dtype) +
          ", which --random-feeds does not draw; pass --feed " + node->name +
          "=FILE.pb (an ONNX TensorProto, SequenceProto or OptionalProto)");
    }
    WEFT_ASSIGN_OR_RETURN(Tensor value,
                          Tensor::Create(*dtype, shape->ToShape()));
    // Integer ids that index a table (an embedding lookup) are drawn as
    // valid rows of it, [0, rows), not as numbers that may be negative.
    const std::optional<int64_t> rows =
        IsIntegerDtype(*dtype) ? IndexedRows(file, node->name) : std::nullopt;
    uint64_t state = 0x5EED;  // Fixed: every configuration sees the same data.
    for (char c : node->name) state = state * 131 + static_cast<uint8_t>(c);
    auto next = [&state] {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      return state;
    };
    for (int64_t i = 0; i < value.NumElements(); ++i) {
      const double unit = static_cast<double>(next() >> 11) * 0x1p-53;
      // Floats in [-1, 1), integers in [-100, 100) ([0, 200) unsigned).
      DispatchDtype(*dtype, [&](auto zero) {
        using T = decltype(zero);
        T& out = value.data<T>()[i];
        if constexpr (std::is_same_v<T, bool>) {
          out = unit < 0.5;
        } else if constexpr (std::is_integral_v<T>) {
          out = rows ? static_cast<T>(static_cast<int64_t>(unit * *rows))
                     : static_cast<T>(static_cast<int64_t>(unit * 200) -
                                      (std::is_signed_v<T> ? 100 : 0));
        } else {
          out = static_cast<T>(unit * 2 - 1);
        }
      });
    }
    const std::string distribution =
        *dtype == DataType::kBool ? "true or false, even odds"
        : IsFloatDtype(*dtype)    ? "uniform in [-1, 1)"
        : rows ? "uniform row indices in [0, " + std::to_string(*rows) +
                     "), valid for the table it indexes (Gather)"
               : "uniform integers in [-100, 100) ([0, 200) unsigned)";
    std::fprintf(stderr,
                 "weft: placeholder '%s' (%s %s) filled with random values: "
                 "%s, xorshift64 seeded with 0x5EED and the name\n",
                 node->name.c_str(), DataTypeName(*dtype),
                 shape->ToString().c_str(), distribution.c_str());
    feeds->emplace_back(node->name, std::move(value));
  }
  return Status::OK();
}

std::string ContentHash(const Tensor& tensor) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      h ^= p[i];
      h *= 0x100000001b3ull;
    }
  };
  const std::string dtype = DataTypeName(tensor.dtype());
  mix(dtype.data(), dtype.size());
  if (IsContainerType(tensor.dtype())) {  // The items' hashes, in order.
    for (const Tensor& item : ContainerItems(tensor)) {
      const std::string item_hash = ContentHash(item);
      mix(item_hash.data(), item_hash.size());
    }
  } else if (tensor.dtype() == DataType::kString) {
    for (int64_t d : tensor.shape().dims()) mix(&d, sizeof(d));
    for (int64_t i = 0; i < tensor.NumElements(); ++i) {
      const std::string& s = tensor.data<std::string>()[i];
      const uint64_t size = s.size();  // Delimits: ["ab"] != ["a", "b"].
      mix(&size, sizeof(size));
      mix(s.data(), s.size());
    }
  } else {
    for (int64_t d : tensor.shape().dims()) mix(&d, sizeof(d));
    mix(tensor.raw_data(), tensor.size_bytes());
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, h);
  return buf;
}

std::string FirstValues(const Tensor& tensor, int count) {
  if (IsContainerType(tensor.dtype())) {
    const std::vector<Tensor>& items = ContainerItems(tensor);
    std::string out =
        std::to_string(items.size()) + " item" + (items.size() == 1 ? "" : "s");
    if (!items.empty()) {
      out += ", the first " + items[0].DebugString() + " " +
             FirstValues(items[0], count);
    }
    return out;
  }
  std::ostringstream out;
  out << "[";
  const int64_t n = std::min<int64_t>(tensor.NumElements(), count);
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) out << ", ";
    if (tensor.dtype() == DataType::kString) {
      out << '"' << tensor.data<std::string>()[i] << '"';
    } else if (tensor.dtype() == DataType::kBool) {
      out << (tensor.data<bool>()[i] ? "true" : "false");
    } else if (tensor.dtype() == DataType::kInt64) {
      out << tensor.data<int64_t>()[i];  // Exact past 2^53.
    } else if (tensor.dtype() == DataType::kUInt64) {
      out << tensor.data<uint64_t>()[i];
    } else {
      out << tensor.ValueAsDouble(i);
    }
  }
  if (tensor.NumElements() > n) out << ", ...";
  out << "]";
  return out.str();
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::optional<int64_t> ParseIntInRange(std::string_view text, int64_t lo,
                                       int64_t hi) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < lo ||
      value > hi) {
    return std::nullopt;
  }
  return value;
}

StatusOr<std::vector<int>> ParseIntList(const std::string& flag,
                                        const std::string& text, int lowest) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const std::optional<int64_t> value =
        ParseIntInRange(part, lowest, kMaxThreads);
    if (!value) {
      return InvalidArgumentError(
          flag + " '" + text + "': every entry must be an integer from " +
          std::to_string(lowest) + " to " + std::to_string(kMaxThreads) +
          (lowest < 0 ? " (-1: the caller's thread, 0: auto)" : " (0: auto)"));
    }
    out.push_back(static_cast<int>(*value));
  }
  if (out.empty()) return InvalidArgumentError(flag + " is empty");
  for (int threads : std::set<int>(out.begin(), out.end())) {
    WEFT_RETURN_IF_ERROR(CheckThreadCount(flag, threads));
  }
  return out;
}

namespace {
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

ProgressLine::ProgressLine(std::string what, int total)
    : what_(std::move(what)),
      total_(total),
      terminal_(isatty(STDERR_FILENO) != 0),
      start_ns_(NowNs()) {}

void ProgressLine::Update(int done, double median_ms) {
  const double elapsed_s = (NowNs() - start_ns_) / 1e9;
  if (!terminal_ || elapsed_s < 2.0 || done >= total_) return;
  const double left_s = elapsed_s / done * (total_ - done);
  std::fprintf(stderr, "\r%s %d/%d, median %s, about %s left   ", what_.c_str(),
               done, total_, FormatMs(median_ms).c_str(),
               FormatMs(left_s * 1000).c_str());
  drawn_ = true;
}

void ProgressLine::Clear() {
  if (drawn_) std::fprintf(stderr, "\r%70s\r", "");
  drawn_ = false;
}

Status CheckThreadCount(const std::string& flag, int threads) {
  const int budget = AutoCpuBudget().threads;
  const int cap = std::max(kMinThreadCap, kThreadsPerBudgetCoreCap * budget);
  const std::string given = flag + " " + std::to_string(threads);
  const std::string cores =
      std::to_string(budget) + (budget == 1 ? " core" : " cores");
  if (threads > cap) {
    return InvalidArgumentError(
        given + ": more than " + std::to_string(cap) +
        " threads, the cap here (" + std::to_string(kThreadsPerBudgetCoreCap) +
        " per core of the " + cores + " weft may use, at least " +
        std::to_string(kMinThreadCap) +
        "): that many would only take turns on those cores");
  }
  if (threads <= budget) return Status::OK();
  const bool inter = flag.find("inter") != std::string::npos;
  EmitWarning(
      WarningCategory::kThreading,
      given + " is more threads than the " + cores +
          " weft may use here (its core budget, weft info): " +
          (inter ? "they help only nodes that wait (queues, py_function, "
                   "I/O); nodes that compute take turns on the " +
                       cores + " and run no sooner"
                 : "an op split " + std::to_string(threads) +
                       " ways takes turns on the " + cores +
                       ", runs no faster than split " + std::to_string(budget) +
                       " ways, and pays for the switching"));
  return Status::OK();
}

std::vector<int> DefaultGrid() {
  const int auto_threads = AutoCpuBudget().threads;
  std::vector<int> grid;
  for (int n = 1; n < auto_threads; n *= 2) grid.push_back(n);
  grid.push_back(auto_threads);
  return grid;
}

}  // namespace weft::cli
