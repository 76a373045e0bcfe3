// weft quantize MODEL -o OUT.onnx (--calibrate DIR | --dynamic): a float
// ONNX model to its int8 form, static (QDQ, calibrated) or dynamic.
//
// The work is weft.quantize, the Python package's (python/weft/_quantize.py:
// the model is read and written with the onnx package, the calibration runs
// on weft): one implementation, which this command runs with Debian's
// python3, as `weft tune --plot` runs its plotting script. The package is
// taken from the build tree beside this executable (<build>/python, for a
// weft run from <build>/bin) or, installed, from python3's own path.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_args.h"
#include "cli_util.h"
#include "commands.h"

namespace weft::cli {
namespace {

struct QuantizeArgs {
  std::string model;
  std::string output;
  std::string calibrate;
  bool dynamic = false;
  std::string method = "minmax";
  double percentile = 99.999;
  std::vector<std::string> exclude_nodes;
  std::vector<std::string> exclude_ops;
};

// The build tree's Python package beside this executable, or "" (then
// python3 finds an installed one, or says it cannot).
std::string BuildTreePythonPath() {
  std::error_code error;
  const std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "";
  const std::filesystem::path python =
      exe.parent_path().parent_path() / "python";
  return access((python / "weft" / "__init__.py").c_str(), R_OK) == 0
             ? python.string()
             : "";
}

// What the flags say, checked before Python starts.
Status CheckArgs(const QuantizeArgs& args) {
  if (access(args.model.c_str(), R_OK) != 0) {
    return InvalidArgumentError("MODEL " + args.model + ": " + ErrnoText());
  }
  if (args.output.empty()) {
    return InvalidArgumentError("-o OUT.onnx: where to write the model");
  }
  WEFT_RETURN_IF_ERROR(CheckOutputFile("-o", args.output));
  if (args.dynamic == !args.calibrate.empty()) {
    return InvalidArgumentError(
        args.dynamic ? "--dynamic quantizes activations at run time: it takes "
                       "no --calibrate"
                     : "static quantization needs --calibrate DIR (NAME.npy "
                       "or NAME.K.npy per input), or --dynamic");
  }
  if (!args.calibrate.empty() &&
      !std::filesystem::is_directory(args.calibrate)) {
    return InvalidArgumentError("--calibrate " + args.calibrate +
                                ": not a directory");
  }
  if (args.method != "minmax" && args.method != "percentile") {
    return InvalidArgumentError("--method " + args.method +
                                ": minmax or percentile");
  }
  return Status::OK();
}

int QuantizeCommand(const QuantizeArgs& args) {
  if (Status s = CheckArgs(args); !s.ok()) {
    return Fail(kExitBadInput, s.message());
  }
  std::vector<std::string> argv = {
      WEFT_PLOT_PYTHON,
      "-c",
      "import sys\n"
      "try:\n"
      "    from weft._quantize import command_main\n"
      "except ImportError as e:\n"
      "    sys.exit('weft: error: weft quantize runs weft.quantize, and "
      "python3 cannot import weft (' + str(e) + '): build it (cmake "
      "--build) or install it (cmake --install)')\n"
      "sys.exit(command_main(sys.argv[1:]))\n",
      args.model,
      "-o",
      args.output,
      "--method",
      args.method,
      "--percentile",
      std::to_string(args.percentile)};
  if (args.dynamic) argv.push_back("--dynamic");
  if (!args.calibrate.empty()) {
    argv.push_back("--calibrate");
    argv.push_back(args.calibrate);
  }
  for (const std::string& node : args.exclude_nodes) {
    argv.push_back("--exclude-node");
    argv.push_back(node);
  }
  for (const std::string& op : args.exclude_ops) {
    argv.push_back("--exclude-op");
    argv.push_back(op);
  }
  const ChildExit end = RunChildProcess(std::move(argv), BuildTreePythonPath());
  if (!end.started) {
    return Fail(kExitRunFailed, "cannot start python3: " + ErrnoText());
  }
  return end.exited ? end.code : kExitRunFailed;
}

class QuantizeCommandLine final
    : public CommandWithArgs<QuantizeArgs, QuantizeCommand> {
 public:
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command = app.add_subcommand(
        "quantize",
        "quantize a float ONNX model to int8: static (QDQ, --calibrate) or "
        "--dynamic");
    command->add_option("MODEL", args_.model, "the float ONNX model")
        ->required();
    command->add_option("-o,--output", args_.output,
                        "where to write the quantized model");
    command->add_option("--calibrate", args_.calibrate,
                        "a directory of NAME.npy or NAME.K.npy feeds, one "
                        "per input (per batch K)");
    command->add_flag("--dynamic", args_.dynamic,
                      "MatMul/Gemm weights int8, activations quantized at "
                      "run time (DynamicQuantizeLinear + MatMulInteger)");
    command->add_option("--method", args_.method,
                        "activation ranges: minmax (default) or percentile");
    command->add_option("--percentile", args_.percentile,
                        "with --method percentile: the percentile kept "
                        "(default 99.999)");
    command
        ->add_option("--exclude-node", args_.exclude_nodes,
                     "a node left in float (repeatable)")
        ->allow_extra_args(false);
    command
        ->add_option("--exclude-op", args_.exclude_ops,
                     "an op type left in float (repeatable)")
        ->allow_extra_args(false);
    return command;
  }
};

}  // namespace

std::unique_ptr<Command> MakeQuantizeCommandLine() {
  return std::make_unique<QuantizeCommandLine>();
}

}  // namespace weft::cli
