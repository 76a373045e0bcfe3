// weft: run, benchmark and inspect dataflow graphs.
//   weft info | ops | run GRAPH | bench GRAPH | tune GRAPH | demo | test-onnx
//   | serve MODEL... | quantize MODEL
//   | help
// Exit codes: 0 success, 1 the run failed, 2 bad usage or bad input.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_args.h"
#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"

int main(int argc, char** argv) {
  using namespace weft::cli;
  CLI::App app{
      "weft: dataflow graphs of tensor ops on two cooperating thread pools"};
  app.require_subcommand(1);
  // --version is answered before parsing (HandleHelpAndUnknownCommands);
  // declared here so that --help lists it.
  app.add_flag("--version")->description("print weft's version");

  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(MakeInfoCommandLine());
  commands.push_back(MakeOpsCommandLine());
  commands.push_back(MakeRunCommandLine());
  commands.push_back(MakeBenchCommandLine());
  commands.push_back(MakeTuneCommandLine());
  commands.push_back(MakeDemoCommandLine());
  commands.push_back(MakeTestOnnxCommandLine());
  commands.push_back(MakeServeCommandLine());
  commands.push_back(MakeQuantizeCommandLine());
  commands.push_back(MakePredictCommandLine());
  commands.push_back(MakeDataStatsCommandLine());
  std::vector<CLI::App*> subcommands;
  for (const auto& command : commands) {
    subcommands.push_back(command->Declare(app));
  }

  std::vector<std::string> args = NormalizeArgs(argc, argv);
  if (int code = 0; HandleHelpAndUnknownCommands(app, args, &code)) {
    return code;
  }
  if (std::string message; FindUnknownOption(app, args, &message)) {
    return Fail(kExitBadInput, message);
  }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Fail(kExitBadInput,
                DescribeParseError(e, args) + " (weft help for usage)");
  }
  for (size_t i = 0; i < commands.size(); ++i) {
    if (!*subcommands[i]) continue;
    // docs/cli-json.md: with --json, errors are JSON on stdout too.
    if (commands[i]->json()) EnableJsonErrors();
    return commands[i]->Run();
  }
  return kExitBadInput;
}
