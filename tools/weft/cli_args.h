// The command line before and around CLI11: arguments normalised, `help`
// and unknown commands, numeric flags checked with errors that name the
// flag as typed, and CLI11's parse errors said as sentences.
#ifndef WEFT_TOOLS_WEFT_CLI_ARGS_H_
#define WEFT_TOOLS_WEFT_CLI_ARGS_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "weft/status.h"

namespace weft::cli {

// The numeric flags as typed ("" when absent), checked by ApplyFlags.
struct FlagText {
  std::string inter, intra, repeat, warmup, timeout_ms, cores, batch;
};

// Checks the flags a command took and stores them in its arguments. Errors
// name the flag and value: "--inter 100000: must be an integer from -1 to
// 4096". The ranges are the ones docs/configuration.md lists for every
// way of setting a thread count.
Status ApplyFlags(const FlagText& flags, RunArgs* args);
Status ApplyFlags(const FlagText& flags, BenchArgs* args);
Status ApplyFlags(const FlagText& flags, DemoArgs* args);
Status ApplyFlags(const FlagText& flags, TestOnnxArgs* args);
Status ApplyFlags(const FlagText& flags, TuneArgs* args);
Status ApplyFlags(const FlagText& flags, PredictArgs* args);

// argv as strings (argv[0] first), with the spellings of --feed that a
// shell splits rejoined: "--feed x = a.npy", "--feed x= a.npy", "--feed x
// =a.npy" and "--feed 'x = a.npy'" all become "--feed x=a.npy".
std::vector<std::string> NormalizeArgs(int argc, char** argv);

// A subcommand whose work is `Work(args)`: the flags fill an Args struct,
// its numeric ones read as text (FlagText) and checked by ApplyFlags before
// the work runs, where the command has such flags. A command supplies only
// Declare.
template <class Args, int (*Work)(const Args&)>
class CommandWithArgs : public Command {
 public:
  bool json() const override {
    if constexpr (requires { args_.json; }) {
      return args_.json;
    } else {
      return false;
    }
  }
  int Run() override {
    if constexpr (requires { ApplyFlags(flags_, &args_); }) {
      if (Status s = ApplyFlags(flags_, &args_); !s.ok()) {
        return Fail(kExitBadInput, s.message());
      }
    }
    return Work(args_);
  }

 protected:
  Args args_;
  FlagText flags_;
};

// --feed and --random-feeds, as run, bench and tune take them.
void AddFeedFlags(CLI::App* command, std::vector<std::string>* feeds,
                  bool* random_feeds);

// --precision P, as run, bench and serve take it: the same as --set
// precision=P, after the other --set settings. `also` ends the help text.
void AddPrecisionFlag(CLI::App* command, std::vector<std::string>* settings,
                      const std::string& also = "");

// An option (a "--name" or "--name=value" argument) that the command named
// by args[1] does not take: sets *message to "weft run: unknown option
// '--feeds' — did you mean '--feed'? (weft help run lists its options)"
// and returns true. Checked before CLI11 parses, which would call it an
// unexpected argument.
bool FindUnknownOption(CLI::App& app, const std::vector<std::string>& args,
                       std::string* message);

// `weft --version`, `weft help [COMMAND]` and a first argument that names
// no command: prints
// the help, or an error listing the commands, sets *exit_code and returns
// true. Returns false when CLI11 should parse the arguments.
bool HandleHelpAndUnknownCommands(CLI::App& app,
                                  const std::vector<std::string>& args,
                                  int* exit_code);

// A CLI11 parse error as a sentence ("run needs a GRAPH file",
// "unexpected argument 'x'", "GRAPH takes one file, got 2").
std::string DescribeParseError(const CLI::ParseError& error,
                               const std::vector<std::string>& args);

}  // namespace weft::cli

#endif  // WEFT_TOOLS_WEFT_CLI_ARGS_H_
