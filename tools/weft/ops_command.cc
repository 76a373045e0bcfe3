// weft ops [NAME] [--markdown]: the op reference, from the registry itself.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <string>

#include "cli_args.h"
#include "cli_util.h"
#include "commands.h"
#include "weft/suggest.h"

namespace weft::cli {
namespace {

std::string ArgText(const ArgDef& arg) {
  switch (arg.kind) {
    case ArgDef::Kind::kFixed:
      return DataTypeName(arg.fixed_type);
    case ArgDef::Kind::kTypeAttr:
      return arg.type_attr;
    case ArgDef::Kind::kRepeated:
      return arg.number_attr + " x " + arg.type_attr;
    case ArgDef::Kind::kTypeListAttr:
      return "one per entry of " + arg.type_attr;
    case ArgDef::Kind::kAnyList:
      return "any number, any dtype";
    case ArgDef::Kind::kSequenceOf:
      return "sequence(" + arg.type_attr + ")";
    case ArgDef::Kind::kOptionalOf:
      return "optional(" + arg.type_attr + ")";
    case ArgDef::Kind::kContainedIn:
      return "what " + arg.type_attr + " holds";
    case ArgDef::Kind::kOptionalValue:
      return "what " + arg.type_attr + " holds if an optional, else " +
             arg.type_attr;
  }
  return "";
}

std::string LowerCase(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string DtypeList(const std::vector<DataType>& dtypes) {
  if (dtypes.empty()) return "any";
  std::string out;
  for (DataType d : dtypes)
    out += (out.empty() ? "" : ", ") + std::string(DataTypeName(d));
  return out;
}

std::string AttrText(const AttrDef& attr) {
  std::string out = AttrTypeName(attr.type);
  out += attr.default_value ? ", default " + attr.default_value->DebugString()
                            : ", required";
  if (attr.type == AttrType::kType || attr.type == AttrType::kListType) {
    out += "; allowed: " + DtypeList(attr.allowed_types);
  }
  return out;
}

// The full entry of one op, as plain text or as a Markdown section.
std::string Describe(const OpDef& op, bool markdown) {
  const std::string bullet = markdown ? "- " : "  ";
  const auto code = [&](const std::string& s) {
    return markdown ? "`" + s + "`" : s;
  };
  std::string out = markdown ? "### " + op.name + "\n\n" + op.summary + "\n\n"
                             : op.name + ": " + op.summary + "\n";
  const auto section = [&](const char* title) {
    out += markdown ? std::string("**") + title + "**\n\n"
                    : std::string(title) + ":\n";
  };
  const auto args = [&](const char* title, const std::vector<ArgDef>& list) {
    section(title);
    if (list.empty()) out += bullet + "none\n";
    for (const ArgDef& arg : list) {
      out += bullet + code(arg.name) + ": " + ArgText(arg) + "\n";
    }
    if (markdown) out += "\n";
  };
  args("inputs", op.inputs);
  args("outputs", op.outputs);
  section("attributes");
  if (op.attrs.empty()) out += bullet + "none\n";
  for (const AttrDef& attr : op.attrs) {
    out += bullet + code(attr.name) + ": " + AttrText(attr) + "\n";
  }
  if (markdown) out += "\n";
  const std::string blocking =
      op.blocking ? "yes (waits; runs on the blocking pool)" : "no";
  const std::string stateful = op.stateful ? "yes" : "no";
  out += markdown ? "blocking: " + blocking + "; stateful: " + stateful + "\n"
                  : "blocking: " + blocking + "\nstateful: " + stateful + "\n";
  return out;
}

}  // namespace

int OpsCommand(const OpsArgs& args) {
  const std::vector<const OpDef*> ops = RegisteredOps();
  if (!args.name.empty()) {
    const OpDef* op = FindOpDef(args.name);
    if (op == nullptr) {
      return Fail(kExitBadInput, "unknown op '" + args.name + "'" +
                                     SuggestOp(args.name) +
                                     " (weft ops lists them all)");
    }
    std::printf("%s", Describe(*op, args.markdown).c_str());
    return kExitOk;
  }
  if (args.markdown) {
    std::printf(
        "# Op reference\n\n"
        "Generated from weft's op registry by `weft ops --markdown` (the\n"
        "`ops_doc` build target writes this file; CI checks that it is\n"
        "current). %zu ops. Dtype lists name what each type attribute\n"
        "allows; `weft ops NAME` prints the same entry.\n\n",
        ops.size());
    for (const OpDef* op : ops) {
      std::printf("- [%s](#%s): %s\n", op->name.c_str(),
                  LowerCase(op->name).c_str(), op->summary.c_str());
    }
    std::printf("\n");
    for (const OpDef* op : ops) {
      std::printf("%s\n", Describe(*op, /*markdown=*/true).c_str());
    }
    return kExitOk;
  }
  size_t width = 0;
  for (const OpDef* op : ops) width = std::max(width, op->name.size());
  for (const OpDef* op : ops) {
    std::printf("%-*s  %s\n", static_cast<int>(width), op->name.c_str(),
                op->summary.c_str());
  }
  std::printf("%zu ops; weft ops NAME for inputs, outputs and attributes\n",
              ops.size());
  return kExitOk;
}

namespace {

// `weft ops`: its flags; OpsCommand does the work.
class OpsCommandLine final : public CommandWithArgs<OpsArgs, OpsCommand> {
 public:
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command = app.add_subcommand(
        "ops", "list every op, or describe one: inputs, outputs, attributes");
    command->add_option("NAME", args_.name, "an op to describe");
    command->add_flag("--markdown", args_.markdown,
                      "print the reference as Markdown (docs/args_.md)");
    return command;
  }
  bool json() const override { return false; }
  int Run() override { return OpsCommand(args_); }

 private:
  OpsArgs args_;
};

}  // namespace

std::unique_ptr<Command> MakeOpsCommandLine() {
  return std::make_unique<OpsCommandLine>();
}

}  // namespace weft::cli
