// weft test-onnx PATH...: the ONNX backend test runner (as ONNX Runtime's
// onnx_test_runner). A case is a folder with model.onnx and
// test_data_set_N/{input_K.pb, output_K.pb}; PATH is a case or a folder of
// cases. Each case is passed, failed (output, worst element, expected and
// actual values, tolerance) or skipped (weft recognised, before running,
// something it does not implement, and names it). Every case runs at
// (inter, intra) in {1, 2}^2 and all four results must be bitwise equal.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_args.h"
#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"
#include "weft/container.h"
#include "weft/file_status.h"
#include "weft/onnx.h"

namespace weft::cli {
namespace {

namespace fs = std::filesystem;

// The ONNX backend tests' tolerance (onnx.backend.test.runner): an element
// passes when |actual - expected| <= kAtol + kRtol * |expected|; integer and
// bool outputs must be exact.
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

// Every case runs at each of these (inter, intra) settings; the outputs of
// all of them must be bitwise equal.
struct ThreadSetting {
  int inter, intra;
};
constexpr ThreadSetting kSettings[] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}};

enum class Outcome { kPassed, kFailed, kSkipped };

struct CaseResult {
  std::string name;
  Outcome outcome = Outcome::kPassed;
  std::string message;
};

struct DataSet {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
};

// A case's outcome for a status: Unimplemented is "weft lacks this", any
// other error is a failure.
CaseResult FromStatus(const std::string& name, const Status& s,
                      const char* stage) {
  CaseResult r{name, Outcome::kFailed,
               std::string(stage) + ": " + s.ToString()};
  if (s.code() == StatusCode::kUnimplemented) {
    r.outcome = Outcome::kSkipped;
    r.message = "unsupported: " + s.message();
  }
  return r;
}

std::vector<fs::path> SortedEntries(const fs::path& dir, const char* prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) {
      out.push_back(e.path());
    }
  }
  // input_10 after input_9: order by the number after the last '_'.
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    auto number = [](const fs::path& p) {
      const std::string s = p.stem().string();
      return std::atoll(s.c_str() + s.rfind('_') + 1);
    };
    return number(a) < number(b);
  });
  return out;
}

// Reads the files of a data set: as the model declares each input and
// output (a tensor, sequence or optional), a TensorProto when it does not.
StatusOr<DataSet> ReadDataSet(const fs::path& dir, const OnnxModel& model) {
  DataSet set;
  auto read = [](const std::vector<fs::path>& files,
                 const std::vector<OnnxValueInfo>& declared,
                 std::vector<Tensor>* out) -> Status {
    for (size_t i = 0; i < files.size(); ++i) {
      const std::optional<DataType> dtype =
          i < declared.size() ? declared[i].dtype : std::nullopt;
      WEFT_ASSIGN_OR_RETURN(Tensor t,
                            dtype ? LoadOnnxValue(files[i].string(), *dtype)
                                  : LoadOnnxTensor(files[i].string()));
      out->push_back(std::move(t));
    }
    return Status::OK();
  };
  WEFT_RETURN_IF_ERROR(
      read(SortedEntries(dir, "input_"), model.inputs, &set.inputs));
  WEFT_RETURN_IF_ERROR(
      read(SortedEntries(dir, "output_"), model.outputs, &set.outputs));
  return set;
}

// "" when `actual` matches `expected` within the tolerance (uint8 and int8
// elements within `quantized_steps` of it); else what differs, with the
// worst element.
std::string Compare(const std::string& output, const Tensor& expected,
                    const Tensor& actual, int64_t quantized_steps) {
  if (expected.dtype() != actual.dtype()) {
    return "output '" + output + "': dtype " + DataTypeName(actual.dtype()) +
           ", expected " + DataTypeName(expected.dtype());
  }
  if (IsContainerType(expected.dtype())) {  // Item by item.
    const std::vector<Tensor>& e = ContainerItems(expected);
    const std::vector<Tensor>& a = ContainerItems(actual);
    if (e.size() != a.size()) {
      return "output '" + output + "': " + std::to_string(a.size()) +
             " items, expected " + std::to_string(e.size());
    }
    for (size_t i = 0; i < e.size(); ++i) {
      std::string diff = Compare(output + "[" + std::to_string(i) + "]", e[i],
                                 a[i], quantized_steps);
      if (!diff.empty()) return diff;
    }
    return "";
  }
  if (!(expected.shape() == actual.shape())) {
    return "output '" + output + "': shape " + actual.shape().ToString() +
           ", expected " + expected.shape().ToString();
  }
  if (expected.dtype() == DataType::kString) {  // Exact.
    const std::string* e = expected.data<std::string>();
    const std::string* a = actual.data<std::string>();
    for (int64_t i = 0; i < expected.NumElements(); ++i) {
      if (e[i] != a[i]) {
        return "output '" + output + "': element " + std::to_string(i) +
               " is \"" + a[i] + "\", expected \"" + e[i] + "\"";
      }
    }
    return "";
  }
  const bool exact = expected.dtype() != DataType::kFloat32 &&
                     expected.dtype() != DataType::kFloat64 &&
                     expected.dtype() != DataType::kFloat16 &&
                     expected.dtype() != DataType::kBFloat16;
  const bool quantized = expected.dtype() == DataType::kUInt8 ||
                         expected.dtype() == DataType::kInt8;
  const double exact_allowed =
      quantized ? static_cast<double>(quantized_steps) : 0;
  int64_t worst = -1;
  double worst_excess = 0;
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    const double e = expected.ValueAsDouble(i), a = actual.ValueAsDouble(i);
    if (std::isnan(e) && std::isnan(a)) continue;
    if (e == a) continue;  // Also equal infinities.
    const double allowed = exact ? exact_allowed : kAtol + kRtol * std::fabs(e);
    const double excess = std::isnan(e - a) || std::isinf(e - a)
                              ? INFINITY
                              : std::fabs(e - a) - allowed;
    if (excess > 0 && (worst < 0 || excess > worst_excess)) {
      worst = i;
      worst_excess = excess;
    }
  }
  if (worst < 0) return "";
  const std::string tolerance =
      !exact ? "rtol 1e-3, atol 1e-7"
      : exact_allowed > 0
          ? "within " + std::to_string(quantized_steps) + " quantisation steps"
          : "exact";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "output '%s': element %lld is %.9g, expected %.9g (%s)",
                output.c_str(), static_cast<long long>(worst),
                actual.ValueAsDouble(worst), expected.ValueAsDouble(worst),
                tolerance.c_str());
  return buf;
}

// Whether the graph draws random numbers. ONNX's expected outputs for such
// a model come from NumPy's generator, which no other implementation
// reproduces (the test cases say so), so its outputs are checked for dtype,
// shape and finite values only; the four settings must still agree bit for
// bit, since weft's generators are seeded and counter-based.
bool DrawsRandomNumbers(const Graph& graph) {
  static const std::set<std::string> kRandomOps = {
      "RandomUniform",    "RandomNormal", "RandomUniformLike",
      "RandomNormalLike", "Bernoulli",    "TrainingDropout"};
  for (const NodeDef& node : graph.nodes()) {
    if (kRandomOps.count(node.op)) return true;
  }
  return false;
}

// Compare for a random output: "" when dtype and shape match and every
// value is finite.
std::string CompareRandom(const std::string& output, const Tensor& expected,
                          const Tensor& actual, int64_t quantized_steps) {
  if (expected.dtype() != actual.dtype() ||
      !(expected.shape() == actual.shape()) ||
      IsContainerType(actual.dtype()) || actual.dtype() == DataType::kString) {
    return Compare(output, expected, actual, quantized_steps);
  }
  for (int64_t i = 0; i < actual.NumElements(); ++i) {
    if (!std::isfinite(actual.ValueAsDouble(i))) {
      return "output '" + output + "': element " + std::to_string(i) +
             " is not finite";
    }
  }
  return "";
}

// "" when every input of the data set fits the shape the model declares
// for it (fixed dimensions equal, the rank when known); else which does
// not.
std::string DataContradictsModel(const OnnxModel& model, const DataSet& data) {
  for (size_t i = 0; i < data.inputs.size() && i < model.inputs.size(); ++i) {
    const OnnxValueInfo& info = model.inputs[i];
    const Tensor& given = data.inputs[i];
    if (!info.rank_known || IsContainerType(given.dtype())) continue;
    bool fits = given.shape().rank() == static_cast<int>(info.dims.size());
    for (int d = 0; fits && d < given.shape().rank(); ++d) {
      fits = !info.dims[d].fixed() || info.dims[d].size == given.shape().dim(d);
    }
    if (!fits) {
      return "input '" + info.name + "' has shape " + given.shape().ToString() +
             ", the model declares " + info.ShapeString();
    }
  }
  return "";
}

CaseResult RunCase(const fs::path& dir, int64_t timeout_ms,
                   int64_t quantized_steps) {
  const std::string name = dir.filename().string();
  auto model = LoadOnnxModel((dir / "model.onnx").string());
  if (!model.ok()) return FromStatus(name, model.status(), "load");
  std::vector<std::string> fetches;
  for (const OnnxValueInfo& out : model->outputs) fetches.push_back(out.tensor);

  const std::vector<fs::path> sets = SortedEntries(dir, "test_data_set_");
  if (sets.empty()) return {name, Outcome::kFailed, "no test_data_set_N"};
  std::vector<std::unique_ptr<Session>> sessions;
  for (const ThreadSetting& s : kSettings) {
    SessionOptions options;
    options.inter_op_parallelism_threads = s.inter;
    options.intra_op_parallelism_threads = s.intra;
    options.use_per_session_threads = true;
    auto session = Session::Create(model->file.graph, options);
    if (!session.ok()) return FromStatus(name, session.status(), "compile");
    sessions.push_back(std::move(session).value());
  }
  RunOptions run_options;
  run_options.timeout_ms = timeout_ms;
  const bool random = DrawsRandomNumbers(model->file.graph);
  for (const fs::path& set_dir : sets) {
    const std::string set_name = set_dir.filename().string();
    auto data = ReadDataSet(set_dir, *model);
    if (!data.ok()) return FromStatus(name, data.status(), set_name.c_str());
    if (data->inputs.size() != model->inputs.size() ||
        data->outputs.size() != model->outputs.size()) {
      return {name, Outcome::kFailed,
              set_name + ": " + std::to_string(data->inputs.size()) +
                  " inputs and " + std::to_string(data->outputs.size()) +
                  " outputs for a model of " +
                  std::to_string(model->inputs.size()) + " and " +
                  std::to_string(model->outputs.size())};
    }
    // A data set that contradicts the model's declared input shapes is the
    // case's fault, not weft's (onnx 1.12's CastLike bfloat16 cases, as
    // generated, declare 'like' as [3, 4] and feed [1]): reported apart,
    // before running.
    if (std::string clash = DataContradictsModel(*model, *data);
        !clash.empty()) {
      return {name, Outcome::kSkipped,
              "invalid test data: " + set_name + ": " + clash};
    }
    NamedTensors feeds;
    for (size_t i = 0; i < data->inputs.size(); ++i) {
      feeds.emplace_back(model->inputs[i].tensor, data->inputs[i]);
    }
    std::vector<Tensor> first;
    for (size_t s = 0; s < sessions.size(); ++s) {
      std::vector<Tensor> outputs;
      RunMetadata metadata;
      Status status = sessions[s]->Run(run_options, feeds, fetches, {},
                                       &outputs, &metadata);
      if (!status.ok()) return FromStatus(name, status, set_name.c_str());
      if (s == 0) {
        for (size_t k = 0; k < outputs.size(); ++k) {
          std::string diff = (random ? CompareRandom : Compare)(
              model->outputs[k].name, data->outputs[k], outputs[k],
              quantized_steps);
          if (!diff.empty()) {
            return {name, Outcome::kFailed, set_name + ": " + diff};
          }
        }
        first = std::move(outputs);
        continue;
      }
      for (size_t k = 0; k < outputs.size(); ++k) {
        if (!outputs[k].BitwiseEqual(first[k])) {
          return {name, Outcome::kFailed,
                  set_name + ": output '" + model->outputs[k].name +
                      "' at (inter " + std::to_string(kSettings[s].inter) +
                      ", intra " + std::to_string(kSettings[s].intra) +
                      ") differs bitwise from (1, 1)"};
        }
      }
    }
  }
  return {
      name, Outcome::kPassed,
      random ? "random output: dtype, shape and finite values checked" : ""};
}

// The case folders under `path`: itself when it holds model.onnx, else its
// subfolders that do, in name order.
std::vector<fs::path> FindCases(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path / "model.onnx", ec)) return {path};
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx", ec)) {
      cases.push_back(e.path());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

StatusOr<std::vector<std::string>> ReadCaseList(const std::string& path) {
  WEFT_RETURN_IF_ERROR(
      CheckReadableFile(path, path + ": cannot open the case list"));
  std::ifstream in(path);
  if (!in) return ErrnoToStatus(errno, path + ": cannot open the case list");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (!line.empty() && line[0] != '#') names.push_back(line);
  }
  return names;
}

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPassed:
      return "passed";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kSkipped:
      return "skipped";
  }
  return "";
}

}  // namespace

int TestOnnxCommand(const TestOnnxArgs& args) {
  std::vector<fs::path> cases;
  for (const std::string& p : args.paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      return Fail(kExitBadInput, p + ": not a folder (a test case or a "
                                     "folder of test cases)");
    }
    std::vector<fs::path> found = FindCases(p);
    if (found.empty()) {
      return Fail(kExitBadInput, p + ": no test case (a folder with "
                                     "model.onnx) found");
    }
    cases.insert(cases.end(), found.begin(), found.end());
  }
  std::vector<std::string> must_pass;
  if (!args.must_pass_file.empty()) {
    auto list = ReadCaseList(args.must_pass_file);
    if (!list.ok()) return Fail(kExitBadInput, list.status().ToString());
    must_pass = *std::move(list);
  }

  std::vector<CaseResult> results;
  int counts[3] = {0, 0, 0};
  for (const fs::path& dir : cases) {
    CaseResult r;
    try {
      r = RunCase(dir, args.timeout_ms, args.quantized_steps);
    } catch (const std::exception& e) {
      r = {dir.filename().string(), Outcome::kFailed,
           std::string("exception: ") + e.what()};
    }
    ++counts[static_cast<int>(r.outcome)];
    if (!args.json) {
      std::printf("%-7s %s%s%s\n", OutcomeName(r.outcome), r.name.c_str(),
                  r.message.empty() ? "" : ": ", r.message.c_str());
      std::fflush(stdout);
    }
    results.push_back(std::move(r));
  }

  std::set<std::string> passed;
  for (const CaseResult& r : results) {
    if (r.outcome == Outcome::kPassed) passed.insert(r.name);
  }
  std::vector<std::string> regressions;
  for (const std::string& name : must_pass) {
    if (!passed.count(name)) regressions.push_back(name);
  }

  if (args.json) {
    nlohmann::json j;
    j["cases"] = nlohmann::json::array();
    for (const CaseResult& r : results) {
      j["cases"].push_back({{"name", r.name},
                            {"result", OutcomeName(r.outcome)},
                            {"message", r.message}});
    }
    j["settings"] = nlohmann::json::array();
    for (const ThreadSetting& s : kSettings) {
      nlohmann::json setting;
      AddThreadCounts(setting, s.inter, s.intra);
      j["settings"].push_back(std::move(setting));
    }
    j["passed"] = counts[0];
    j["failed"] = counts[1];
    j["skipped"] = counts[2];
    j["must_pass_missing"] = regressions;
    PrintJson(j);
  } else {
    for (const std::string& name : regressions) {
      std::printf("must pass, did not: %s\n", name.c_str());
    }
    std::printf("%d passed, %d failed, %d skipped\n", counts[0], counts[1],
                counts[2]);
  }
  return counts[1] > 0 || !regressions.empty() ? kExitRunFailed : kExitOk;
}

namespace {

// `weft test-onnx`: its flags; TestOnnxCommand does the work.
class TestOnnxCommandLine final
    : public CommandWithArgs<TestOnnxArgs, TestOnnxCommand> {
 public:
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command = app.add_subcommand(
        "test-onnx",
        "run ONNX backend test cases (model.onnx + test_data_set_N)");
    command
        ->add_option("PATH", args_.paths,
                     "a test case folder, or a folder of them")
        ->required();
    command->add_option("--must-pass", args_.must_pass_file,
                        "file listing cases that must pass (one per line)");
    command->add_option("--timeout-ms", flags_.timeout_ms,
                        "deadline per Run (default 60000)");
    command
        ->add_option("--quantized-steps", args_.quantized_steps,
                     "uint8/int8 outputs may differ from the expected "
                     "ones by this many steps (default 0: exact)")
        ->check(CLI::NonNegativeNumber);
    command->add_flag("--json", args_.json, "print one JSON object");
    return command;
  }
};

}  // namespace

std::unique_ptr<Command> MakeTestOnnxCommandLine() {
  return std::make_unique<TestOnnxCommandLine>();
}

}  // namespace weft::cli
