#include "cli_args.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>

#include "cli_util.h"
#include "weft/suggest.h"

namespace weft::cli {
namespace {

// An integer in [lo, hi] from `text`, or an error naming the flag.
StatusOr<int64_t> ParseFlag(const char* flag, const std::string& text,
                            int64_t lo, int64_t hi, const char* meaning = "") {
  const std::optional<int64_t> value = ParseIntInRange(text, lo, hi);
  if (!value) {
    return InvalidArgumentError(
        std::string(flag) + " " + text + ": must be an integer from " +
        std::to_string(lo) + " to " + std::to_string(hi) + meaning);
  }
  return *value;
}

Status ParseInto(const char* flag, const std::string& text, int64_t lo,
                 int64_t hi, int* out, const char* meaning = "") {
  if (text.empty()) return Status::OK();
  WEFT_ASSIGN_OR_RETURN(int64_t value, ParseFlag(flag, text, lo, hi, meaning));
  *out = static_cast<int>(value);
  return Status::OK();
}

const char* const kCommands[] = {"info",     "ops",  "run",       "bench",
                                 "tune",     "demo", "test-onnx", "serve",
                                 "quantize", "help"};

std::string CommandList() {
  std::string out;
  for (const char* c : kCommands)
    out += (out.empty() ? "" : ", ") + std::string(c);
  return out;
}

std::string Trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// "x = a.npy" -> "x=a.npy".
std::string TrimAroundEquals(const std::string& s) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos) return Trim(s);
  return Trim(s.substr(0, eq)) + "=" + Trim(s.substr(eq + 1));
}

}  // namespace

namespace {

// --inter and --intra, as run and predict take them.
Status ApplyThreadFlags(const FlagText& flags, std::optional<int>* inter_out,
                        std::optional<int>* intra_out) {
  if (!flags.inter.empty()) {
    int inter = 0;
    WEFT_RETURN_IF_ERROR(ParseInto("--inter", flags.inter, -1, kMaxThreads,
                                   &inter,
                                   " (-1: every node on the calling thread)"));
    WEFT_RETURN_IF_ERROR(CheckThreadCount("--inter", inter));
    *inter_out = inter;
  }
  if (!flags.intra.empty()) {
    int intra = 0;
    WEFT_RETURN_IF_ERROR(ParseInto("--intra", flags.intra, 0, kMaxThreads,
                                   &intra, " (0: auto)"));
    WEFT_RETURN_IF_ERROR(CheckThreadCount("--intra", intra));
    *intra_out = intra;
  }
  return Status::OK();
}

}  // namespace

Status ApplyFlags(const FlagText& flags, PredictArgs* args) {
  WEFT_RETURN_IF_ERROR(ApplyThreadFlags(flags, &args->inter, &args->intra));
  if (!flags.batch.empty()) {
    WEFT_ASSIGN_OR_RETURN(args->batch,
                          ParseFlag("--batch", flags.batch, 1, 65536));
  }
  return Status::OK();
}

Status ApplyFlags(const FlagText& flags, RunArgs* args) {
  WEFT_RETURN_IF_ERROR(ApplyThreadFlags(flags, &args->inter, &args->intra));
  WEFT_RETURN_IF_ERROR(
      ParseInto("--repeat", flags.repeat, 1, 1'000'000, &args->repeat));
  if (!flags.timeout_ms.empty()) {
    WEFT_ASSIGN_OR_RETURN(args->timeout_ms,
                          ParseFlag("--timeout-ms", flags.timeout_ms, 0,
                                    int64_t{1} << 40, " (0: none)"));
  }
  return Status::OK();
}

Status ApplyFlags(const FlagText& flags, BenchArgs* args) {
  WEFT_RETURN_IF_ERROR(
      ParseInto("--repeat", flags.repeat, 1, 100'000, &args->repeat));
  if (!flags.timeout_ms.empty()) {
    WEFT_ASSIGN_OR_RETURN(args->timeout_ms,
                          ParseFlag("--timeout-ms", flags.timeout_ms, 0,
                                    int64_t{1} << 40, " (0: none)"));
  }
  return ParseInto("--warmup", flags.warmup, 0, 100'000, &args->warmup);
}

Status ApplyFlags(const FlagText& flags, DemoArgs* args) {
  if (!flags.timeout_ms.empty()) {
    WEFT_ASSIGN_OR_RETURN(args->timeout_ms,
                          ParseFlag("--timeout-ms", flags.timeout_ms, 0,
                                    int64_t{1} << 40, " (0: none)"));
  }
  return ParseInto("--repeat", flags.repeat, 1, 1000, &args->repeat);
}

Status ApplyFlags(const FlagText& flags, TestOnnxArgs* args) {
  if (flags.timeout_ms.empty()) return Status::OK();
  WEFT_ASSIGN_OR_RETURN(
      args->timeout_ms,
      ParseFlag("--timeout-ms", flags.timeout_ms, 1, int64_t{1} << 40));
  return Status::OK();
}

Status ApplyFlags(const FlagText& flags, TuneArgs* args) {
  if (!flags.cores.empty()) {
    int cores = 0;
    WEFT_RETURN_IF_ERROR(ParseInto("--cores", flags.cores, 1, kMaxThreads,
                                   &cores, " (a machine's core count)"));
    args->cores = cores;
  }
  if (flags.timeout_ms.empty()) return Status::OK();
  WEFT_ASSIGN_OR_RETURN(
      args->timeout_ms,
      ParseFlag("--timeout-ms", flags.timeout_ms, 1, int64_t{1} << 40));
  return Status::OK();
}

std::vector<std::string> NormalizeArgs(int argc, char** argv) {
  std::vector<std::string> in(argv, argv + argc);
  std::vector<std::string> out;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string& arg = in[i];
    if (arg != "--feed" && arg.rfind("--feed=", 0) != 0) {
      out.push_back(arg);
      continue;
    }
    std::string value;
    if (arg == "--feed") {
      if (i + 1 == in.size()) {
        out.push_back(arg);  // CLI11 says the value is missing.
        continue;
      }
      value = in[++i];
    } else {
      value = arg.substr(7);
    }
    // Rejoin what the shell split at spaces around '='.
    const std::string trimmed = Trim(value);
    if (trimmed.find('=') == std::string::npos && i + 1 < in.size() &&
        !in[i + 1].empty() && in[i + 1][0] == '=') {
      value += in[++i];  // "x" "=a.npy" or "x" "=" ...
      if (Trim(value).back() == '=' && i + 1 < in.size()) value += in[++i];
    } else if (!trimmed.empty() && trimmed.back() == '=' && i + 1 < in.size() &&
               in[i + 1].rfind("--", 0) != 0) {
      value += in[++i];  // "x=" "a.npy"
    }
    out.push_back("--feed");
    out.push_back(TrimAroundEquals(value));
  }
  return out;
}

bool HandleHelpAndUnknownCommands(CLI::App& app,
                                  const std::vector<std::string>& args,
                                  int* exit_code) {
  if (args.size() < 2) return false;
  const std::string& first = args[1];
  if (first == "--version") {
    std::printf("weft %s\n", WEFT_VERSION);
    *exit_code = kExitOk;
    return true;
  }
  if (first == "help") {
    if (args.size() == 2) {
      std::printf("%s", app.help().c_str());
      *exit_code = kExitOk;
      return true;
    }
    for (CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == args[2]) {
        std::printf("%s", sub->help().c_str());
        *exit_code = kExitOk;
        return true;
      }
    }
    *exit_code =
        Fail(kExitBadInput, "no command '" + args[2] +
                                "'; the commands are: " + CommandList());
    return true;
  }
  if (first.empty() || first[0] == '-') return false;
  for (CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == first) return false;
  }
  *exit_code = Fail(kExitBadInput, "unknown command '" + first +
                                       "'; the commands are: " + CommandList());
  return true;
}

bool FindUnknownOption(CLI::App& app, const std::vector<std::string>& args,
                       std::string* message) {
  if (args.size() < 3) return false;
  CLI::App* command = nullptr;
  for (CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == args[1]) command = sub;
  }
  if (command == nullptr) return false;
  std::vector<std::string> known;
  for (const CLI::Option* option : command->get_options()) {
    for (const std::string& name : option->get_lnames()) {
      known.push_back("--" + name);
    }
  }
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;  // What follows is not an option.
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) continue;
    const std::string name = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    *message = "weft " + args[1] + ": unknown option '" + name + "'" +
               DidYouMean(name, known) + " (weft help " + args[1] +
               " lists its options)";
    return true;
  }
  return false;
}

std::string DescribeParseError(const CLI::ParseError& error,
                               const std::vector<std::string>& args) {
  // By type: CLI11 names some errors after the subcommand that threw them,
  // so get_name() does not tell them apart.
  std::string what = error.what();
  const std::string command = args.size() > 1 ? args[1] : "weft";
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    if (what.find("subcommand") != std::string::npos) {
      return "which command? the commands are: " + CommandList();
    }
    // "GRAPH is required" and the like.
    const std::string name = what.substr(0, what.find(' '));
    if (name == "GRAPH") return command + " needs a GRAPH file";
    if (name == "PATH") return command + " needs a PATH";
    return command + " needs " + name;
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    // "The following argument(s) were not expected: a b"
    const size_t colon = what.find(':');
    // weft parses the arguments reversed (main.cc), so CLI11 lists the
    // extras last first: put them back in the order typed.
    std::istringstream listed(
        colon == std::string::npos ? what : what.substr(colon + 1));
    std::vector<std::string> words;
    for (std::string word; listed >> word;) words.push_back(word);
    std::string extras;
    for (auto it = words.rbegin(); it != words.rend(); ++it) {
      extras += (extras.empty() ? "" : " ") + *it;
    }
    return command + ": unexpected argument '" + extras +
           "' (a command takes one GRAPH; options start with --)";
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    const std::string name = what.substr(0, what.find(':'));
    if (what.find("At Most") != std::string::npos ||
        what.find("Expected") != std::string::npos) {
      return command + ": " + name + " takes one value";
    }
    return command + ": " + name + " needs a value";
  }
  return what;
}

void AddFeedFlags(CLI::App* command, std::vector<std::string>* feeds,
                  bool* random_feeds) {
  command
      ->add_option("--feed", *feeds,
                   "NAME=FILE.npy or NAME=FILE.pb (repeatable)")
      ->allow_extra_args(false);
  command->add_flag("--random-feeds", *random_feeds,
                    "fill placeholders without --feed with seeded random "
                    "values (printed when used)");
}

void AddPrecisionFlag(CLI::App* command, std::vector<std::string>* settings,
                      const std::string& also) {
  command->add_option_function<std::string>(
      "--precision",
      [settings](const std::string& value) {
        settings->push_back("precision=" + value);
      },
      "fp32 or bf16: SessionOptions.precision (as --set precision=...)" + also);
}

}  // namespace weft::cli
