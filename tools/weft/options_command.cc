// `weft info --options`: the SessionOptions fields from their one table
// (weft/option_fields.h): as text, as JSON, or as the Markdown table
// docs/configuration.md carries (a test keeps the two the same).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_json.h"
#include "commands.h"
#include "weft/option_fields.h"

namespace weft::cli {
namespace {

void PrintOptionsJson() {
  nlohmann::json fields = nlohmann::json::array();
  for (const SessionOptionField& field : SessionOptionFields()) {
    fields.push_back({{"name", field.name},
                      {"config_name", field.config_name},
                      {"kind", OptionKindName(field.kind)},
                      {"range", RangeText(field)},
                      {"default", DefaultValueText(field)},
                      {"zero_means", field.zero_means},
                      {"summary", field.summary}});
  }
  PrintJson(nlohmann::json{{"session_options", fields}});
}

void PrintMarkdown() {
  std::printf(
      "| field | in --config | kind | range | default | 0 means | what it "
      "does |\n|---|---|---|---|---|---|---|\n");
  for (const SessionOptionField& field : SessionOptionFields()) {
    const std::string config = field.config_name == field.name
                                   ? "same"
                                   : "`" + std::string(field.config_name) + "`";
    std::printf("| `%s` | %s | %s | %s | `%s` | %s | %s |\n",
                std::string(field.name).c_str(), config.c_str(),
                std::string(OptionKindName(field.kind)).c_str(),
                RangeText(field).c_str(), DefaultValueText(field).c_str(),
                std::string(field.zero_means).c_str(),
                std::string(field.summary).c_str());
  }
}

void PrintText() {
  for (const SessionOptionField& field : SessionOptionFields()) {
    std::string facts = std::string(OptionKindName(field.kind));
    if (!RangeText(field).empty()) facts += ", " + RangeText(field);
    facts += ", default " + DefaultValueText(field);
    if (!field.zero_means.empty()) {
      facts += ", 0: " + std::string(field.zero_means);
    }
    std::printf("%-30s %s\n", std::string(field.name).c_str(), facts.c_str());
    std::printf("%-30s %s\n", "", std::string(field.summary).c_str());
    if (field.config_name != field.name) {
      std::printf("%-30s in --config / --set: %s\n", "",
                  std::string(field.config_name).c_str());
    }
  }
}

}  // namespace

int OptionsCommand(bool json, bool markdown) {
  if (json) {
    PrintOptionsJson();
  } else if (markdown) {
    PrintMarkdown();
  } else {
    PrintText();
  }
  return 0;
}

}  // namespace weft::cli
