#include "weft/config_file.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "weft/file_status.h"
#include "weft/json_depth.h"
#include "weft/option_fields.h"
#include "weft/suggest.h"

namespace weft {
namespace {

// RunOptions fields a config file may set, by TensorFlow's names.
constexpr const char* kRunFields[] = {"timeout_in_ms", "inter_op_thread_pool",
                                      "trace_level"};

// How deep a configuration may nest. ConfigProto's fields nest three levels
// at most (a pool list of messages); the parsers below recurse once per
// level, so a text that nests without end would otherwise overflow the
// stack.
constexpr int kMaxConfigDepth = 32;

struct Field;

// A parsed value of either syntax, with where it started.
struct Value {
  enum class Kind { kScalar, kString, kList, kMessage };
  Kind kind = Kind::kScalar;
  std::string text;          // A scalar's token, or a string's contents.
  std::vector<Value> items;  // kList.
  // kMessage, in order. A named struct rather than std::pair: a pair of an
  // incomplete type is undefined, and clang with libstdc++ refuses it.
  std::vector<Field> fields;
  int line = 1, column = 1;
};

struct Field {
  std::string name;
  Value value;
};

std::string At(const std::string& source, int line, int column = 0) {
  // Appended piece by piece: GCC 12 warns (-Wstringop-overflow, a false
  // alarm) on `":" + std::to_string(column)` once AtByte inlines this.
  std::string at = source + ":" + std::to_string(line);
  if (column > 0) {
    at += ':';
    at += std::to_string(column);
  }
  return at;
}

// --- TensorFlow's text format (the subset ConfigProto needs). -------------

class TextParser {
 public:
  TextParser(const std::string& text, std::string source)
      : text_(text), source_(std::move(source)) {}

  StatusOr<Value> ParseMessageBody(char closing) {
    Value message;
    message.kind = Value::Kind::kMessage;
    message.line = line_;
    message.column = column_;
    for (;;) {
      SkipSpace();
      if (AtEnd()) {
        if (closing == 0) return message;
        return Error("the message opened here is not closed: expected '" +
                     std::string(1, closing) + "'");
      }
      if (Peek() == closing) {
        Advance();
        return message;
      }
      const int line = line_, column = column_;
      std::string name = Identifier();
      if (name.empty()) {
        return Error(std::string("expected a field name, got '") + Peek() +
                     "'");
      }
      SkipSpace();
      bool colon = false;
      if (!AtEnd() && Peek() == ':') {
        Advance();
        colon = true;
        SkipSpace();
      }
      if (AtEnd()) return Error("field '" + name + "' has no value");
      Value value;
      if (Peek() == '{' || Peek() == '<') {
        const char close = Peek() == '{' ? '}' : '>';
        WEFT_RETURN_IF_ERROR(Nest());
        Advance();
        WEFT_ASSIGN_OR_RETURN(value, ParseMessageBody(close));
        --depth_;
      } else if (!colon) {
        return Error("expected ':' after field '" + name + "'");
      } else {
        WEFT_ASSIGN_OR_RETURN(value, ParseScalarOrList());
      }
      value.line = line;
      value.column = column;
      message.fields.push_back({std::move(name), std::move(value)});
      SkipSpace();
      if (!AtEnd() && (Peek() == ',' || Peek() == ';')) Advance();
    }
  }

  StatusOr<Value> ParseScalarOrList() {
    Value value;
    value.line = line_;
    value.column = column_;
    if (Peek() == '[') {
      WEFT_RETURN_IF_ERROR(Nest());
      Advance();
      value.kind = Value::Kind::kList;
      for (;;) {
        SkipSpace();
        if (AtEnd()) return Error("the list is not closed: expected ']'");
        if (Peek() == ']') {
          Advance();
          --depth_;
          return value;
        }
        WEFT_ASSIGN_OR_RETURN(Value item, ParseScalarOrList());
        value.items.push_back(std::move(item));
        SkipSpace();
        if (!AtEnd() && Peek() == ',') Advance();
      }
    }
    if (Peek() == '"' || Peek() == '\'') {
      const char quote = Peek();
      Advance();
      value.kind = Value::Kind::kString;
      while (!AtEnd() && Peek() != quote) {
        if (Peek() == '\n') return Error("a string runs past the line end");
        if (Peek() == '\\') Advance();
        if (!AtEnd()) value.text += Advance();
      }
      if (AtEnd()) return Error("a string is not closed");
      Advance();
      return value;
    }
    while (!AtEnd() &&
           (std::isalnum(static_cast<unsigned char>(Peek())) || Peek() == '-' ||
            Peek() == '+' || Peek() == '.' || Peek() == '_')) {
      value.text += Advance();
    }
    if (value.text.empty()) {
      return Error(std::string("expected a value, got '") + Peek() + "'");
    }
    return value;
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  void SkipSpace() {
    while (!AtEnd()) {
      if (Peek() == '#') {
        while (!AtEnd() && Peek() != '\n') Advance();
      } else if (std::isspace(static_cast<unsigned char>(Peek()))) {
        Advance();
      } else {
        return;
      }
    }
  }

 private:
  char Peek() const { return text_[pos_]; }
  char Advance() {
    const char c = text_[pos_++];
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    return c;
  }
  std::string Identifier() {
    std::string out;
    while (!AtEnd() && (std::isalnum(static_cast<unsigned char>(Peek())) ||
                        Peek() == '_')) {
      out += Advance();
    }
    return out;
  }
  // One more level of messages and lists, refused past kMaxConfigDepth
  // (the caller steps back out with --depth_ once the level is parsed).
  Status Nest() {
    if (++depth_ > kMaxConfigDepth) {
      return Error("messages and lists nest deeper than " +
                   std::to_string(kMaxConfigDepth) + " levels");
    }
    return Status::OK();
  }
  Status Error(const std::string& what) const {
    return InvalidArgumentError(At(source_, line_, column_) +
                                ": syntax error: " + what);
  }

  const std::string& text_;
  const std::string source_;
  size_t pos_ = 0;
  int line_ = 1, column_ = 1;
  int depth_ = 0;  // Messages and lists open around pos_.
};

// --- JSON, into the same Value. --------------------------------------------

// The line of the first `"key"` at or after `from` (JSON keeps no
// positions; keys are found in the text, in order).
int LineOfKey(const std::string& text, const std::string& key, size_t* from) {
  const size_t at = text.find("\"" + key + "\"", *from);
  if (at == std::string::npos) return 0;
  *from = at + key.size() + 2;
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
}

Value FromJson(const nlohmann::json& j, const std::string& text, size_t* from,
               int line) {
  Value v;
  v.line = line;
  if (j.is_object()) {
    v.kind = Value::Kind::kMessage;
    for (const auto& [key, item] : j.items()) {
      const int key_line = LineOfKey(text, key, from);
      v.fields.push_back({key, FromJson(item, text, from, key_line)});
    }
  } else if (j.is_array()) {
    v.kind = Value::Kind::kList;
    for (const auto& item : j)
      v.items.push_back(FromJson(item, text, from, line));
  } else if (j.is_string()) {
    v.kind = Value::Kind::kString;
    v.text = j.get<std::string>();
  } else {
    v.text = j.dump();  // Numbers, true, false, null.
  }
  return v;
}

// "SOURCE:LINE:COLUMN" of the character at 1-based position `byte` of
// `text` (nlohmann::json's parse_error::byte).
std::string AtByte(const std::string& source, const std::string& text,
                   size_t byte) {
  byte = std::min(byte, text.size());
  const int line =
      1 + static_cast<int>(std::count(text.begin(), text.begin() + byte, '\n'));
  const size_t line_start = text.rfind('\n', byte == 0 ? 0 : byte - 1);
  const int column = static_cast<int>(
      line_start == std::string::npos ? byte : byte - line_start - 1);
  return At(source, line, std::max(1, column));
}

StatusOr<Value> ParseJson(const std::string& text, const std::string& source) {
  // FromJson recurses once per level: the depth is checked on the text
  // first.
  if (const std::optional<size_t> at =
          FindJsonNestingPast(text, kMaxConfigDepth)) {
    return InvalidArgumentError(
        AtByte(source, text, *at + 1) +
        ": syntax error: objects and arrays nest deeper than " +
        std::to_string(kMaxConfigDepth) + " levels");
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) {
      return InvalidArgumentError(source +
                                  ": a configuration is a JSON object");
    }
    size_t from = 0;
    return FromJson(j, text, &from, 1);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgumentError(AtByte(source, text, e.byte) +
                                ": syntax error: not valid JSON");
  } catch (const nlohmann::json::out_of_range& e) {
    // A number past a double's range (1e400): nlohmann::json says which
    // ("number overflow parsing '1e400'") but not where.
    std::string what = e.what();
    const size_t message = what.find("] ");
    if (message != std::string::npos) what.erase(0, message + 2);
    return InvalidArgumentError(source + ": " + what +
                                ": the number is past a double's range");
  }
}

// --- Fields. ----------------------------------------------------------------

class Applier {
 public:
  Applier(std::string source, RunConfig* config)
      : source_(std::move(source)), config_(config) {}

  Status ApplyTop(const Value& message) {
    for (const auto& [name, value] : message.fields) {
      WEFT_RETURN_IF_ERROR(ApplyField(name, value));
    }
    return Status::OK();
  }

 private:
  Status Where(const Value& v, const std::string& what) const {
    return InvalidArgumentError(At(source_, v.line) + ": " + what);
  }

  StatusOr<int64_t> Int(const std::string& field, const Value& v, int64_t lo,
                        int64_t hi) const {
    int64_t out = 0;
    const char* end = v.text.data() + v.text.size();
    auto [ptr, ec] = std::from_chars(v.text.data(), end, out);
    if (v.kind != Value::Kind::kScalar || v.text.empty() || ptr != end ||
        (ec != std::errc() && ec != std::errc::result_out_of_range)) {
      return Where(v, field + " must be an integer, got " + Shown(v));
    }
    if (ec == std::errc::result_out_of_range || out < lo || out > hi) {
      if (hi == std::numeric_limits<int64_t>::max()) {
        return Where(
            v, field + " = " + v.text + " must be >= " + std::to_string(lo));
      }
      return Where(v, field + " = " + v.text + " is out of range [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return out;
  }

  StatusOr<double> Number(const std::string& field, const Value& v) const {
    double out = 0;
    const char* end = v.text.data() + v.text.size();
    auto [ptr, ec] = std::from_chars(v.text.data(), end, out);
    if (v.kind != Value::Kind::kScalar || ptr != end || ec != std::errc() ||
        out < 0) {
      return Where(v, field + " must be a number >= 0, got " + Shown(v));
    }
    return out;
  }

  StatusOr<bool> Bool(const std::string& field, const Value& v) const {
    if (v.kind == Value::Kind::kScalar && (v.text == "true" || v.text == "1")) {
      return true;
    }
    if (v.kind == Value::Kind::kScalar &&
        (v.text == "false" || v.text == "0")) {
      return false;
    }
    return Where(v, field + " must be true or false, got " + Shown(v));
  }

  // One of a kChoice field's values, quoted or not (precision: bf16).
  StatusOr<std::string> Choice(const SessionOptionField& field,
                               const std::string& name, const Value& v) const {
    std::vector<std::string> choices(field.choices.begin(),
                                     field.choices.end());
    if (v.kind == Value::Kind::kScalar || v.kind == Value::Kind::kString) {
      if (std::find(choices.begin(), choices.end(), v.text) != choices.end()) {
        return v.text;
      }
    }
    return Where(
        v, name + " must be one of " + RangeText(field) + ", got " + Shown(v) +
               (v.kind == Value::Kind::kList || v.kind == Value::Kind::kMessage
                    ? ""
                    : DidYouMean(v.text, choices)));
  }

  StatusOr<std::string> String(const std::string& field, const Value& v) const {
    if (v.kind != Value::Kind::kString) {
      return Where(v, field + " must be a string, got " + Shown(v));
    }
    return v.text;
  }

  StatusOr<std::vector<int>> Cpus(const std::string& field,
                                  const Value& v) const {
    std::vector<int> out;
    const std::vector<Value> single = {v};
    const std::vector<Value>& items =
        v.kind == Value::Kind::kList ? v.items : single;
    for (const Value& item : items) {
      WEFT_ASSIGN_OR_RETURN(int64_t cpu, Int(field, item, 0, 1 << 20));
      out.push_back(static_cast<int>(cpu));
    }
    return out;
  }

  static std::string Shown(const Value& v) {
    switch (v.kind) {
      case Value::Kind::kString:
        return "\"" + v.text + "\"";
      case Value::Kind::kList:
        return "a list";
      case Value::Kind::kMessage:
        return "a message";
      case Value::Kind::kScalar:
        return v.text;
    }
    return v.text;
  }

  // session_inter_op_thread_pool { num_threads: 2 global_name: "x" }, one
  // per pool (a list of them in JSON).
  Status ApplyPool(const Value& v) {
    if (v.kind == Value::Kind::kList) {
      for (const Value& item : v.items) WEFT_RETURN_IF_ERROR(ApplyPool(item));
      return Status::OK();
    }
    if (v.kind != Value::Kind::kMessage) {
      return Where(
          v, "session_inter_op_thread_pool must be a message, got " + Shown(v));
    }
    ThreadPoolSpec spec;
    for (const auto& [name, field] : v.fields) {
      if (name == "num_threads") {
        WEFT_ASSIGN_OR_RETURN(int64_t n,
                              Int(name, field, 0, weft::kMaxThreads));
        spec.num_threads = static_cast<int>(n);
      } else if (name == "global_name") {
        WEFT_ASSIGN_OR_RETURN(spec.global_name, String(name, field));
      } else {
        return Where(field, "unknown field '" + name +
                                "' in session_inter_op_thread_pool (it has "
                                "num_threads and global_name)");
      }
    }
    config_->session.session_inter_op_thread_pools.push_back(spec);
    return Status::OK();
  }

  // Text: device_count { key: "CPU" value: 2 } (one per entry). JSON:
  // "device_count": {"CPU": 2}.
  Status ApplyDeviceCount(const Value& v) {
    if (v.kind != Value::Kind::kMessage) {
      return Where(v, "device_count must be a map, got " + Shown(v));
    }
    const bool entry = !v.fields.empty() && (v.fields.front().name == "key" ||
                                             v.fields.front().name == "value");
    if (!entry) {  // {"CPU": 2, ...}
      for (const auto& [device, count] : v.fields) {
        WEFT_ASSIGN_OR_RETURN(int64_t n, Int("device_count[\"" + device + "\"]",
                                             count, 0, weft::kMaxThreads));
        config_->session.device_count[device] = static_cast<int>(n);
      }
      return Status::OK();
    }
    std::string device;
    int64_t n = -1;
    for (const auto& [name, field] : v.fields) {
      if (name == "key") {
        WEFT_ASSIGN_OR_RETURN(device, String("device_count key", field));
      } else if (name == "value") {
        WEFT_ASSIGN_OR_RETURN(
            n, Int("device_count value", field, 0, weft::kMaxThreads));
      } else {
        return Where(field, "unknown field '" + name +
                                "' in device_count (it has key and value)");
      }
    }
    if (device.empty() || n < 0) {
      return Where(v, "device_count needs a key and a value");
    }
    config_->session.device_count[device] = static_cast<int>(n);
    return Status::OK();
  }

  Status ApplyField(const std::string& name, const Value& v) {
    // SessionOptions: by TensorFlow's spelling, or by weft's where it
    // differs (operation_timeout_ms).
    if (const SessionOptionField* field = FindSessionOptionField(name)) {
      return ApplySessionField(*field, name, v);
    }
    RunOptions& r = config_->run;
    const auto set_int = [&](int* out, int64_t lo, int64_t hi) -> Status {
      WEFT_ASSIGN_OR_RETURN(int64_t n, Int(name, v, lo, hi));
      *out = static_cast<int>(n);
      return Status::OK();
    };
    // RunOptions (TensorFlow's names).
    if (name == "timeout_in_ms") {
      WEFT_ASSIGN_OR_RETURN(
          r.timeout_ms, Int(name, v, 0, std::numeric_limits<int64_t>::max()));
      return Status::OK();
    }
    if (name == "inter_op_thread_pool") {
      return set_int(&r.inter_op_thread_pool, -1, kMaxThreads);
    }
    if (name == "trace_level") {
      const std::string level = v.text;
      if (level == "NO_TRACE" || level == "0") {
        r.trace_level = RunOptions::TraceLevel::kNone;
      } else if (level == "FULL_TRACE" || level == "3") {
        r.trace_level = RunOptions::TraceLevel::kFull;
      } else {
        return Where(v, "trace_level must be NO_TRACE or FULL_TRACE, got " +
                            Shown(v) +
                            " (SOFTWARE_TRACE and HARDWARE_TRACE are not "
                            "implemented)");
      }
      return Status::OK();
    }
    std::vector<std::string> names;
    for (const SessionOptionField& field : SessionOptionFields()) {
      names.emplace_back(field.config_name);
    }
    for (const char* run_field : kRunFields) names.emplace_back(run_field);
    std::string listed;
    for (const std::string& known : names) {
      listed += (listed.empty() ? "" : ", ") + known;
    }
    return Where(v, "unknown field '" + name + "'" + DidYouMean(name, names) +
                        " (weft takes " + listed + ")");
  }

  // One SessionOptions field, parsed as its kind in the table says.
  Status ApplySessionField(const SessionOptionField& field,
                           const std::string& name, const Value& v) {
    return std::visit(
        [&](auto member) -> Status {
          auto& out = config_->session.*member;
          using T = std::decay_t<decltype(out)>;
          if constexpr (std::is_same_v<T, bool>) {
            WEFT_ASSIGN_OR_RETURN(out, Bool(name, v));
          } else if constexpr (std::is_integral_v<T>) {
            WEFT_ASSIGN_OR_RETURN(int64_t n,
                                  Int(name, v, field.min, field.max));
            out = static_cast<T>(n);
          } else if constexpr (std::is_floating_point_v<T>) {
            WEFT_ASSIGN_OR_RETURN(out, Number(name, v));
          } else if constexpr (std::is_same_v<T, std::vector<int>>) {
            WEFT_ASSIGN_OR_RETURN(out, Cpus(name, v));
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            WEFT_ASSIGN_OR_RETURN(out, Names(name, v));
          } else if constexpr (std::is_same_v<T, std::string>) {
            WEFT_ASSIGN_OR_RETURN(out, Choice(field, name, v));
          } else if constexpr (std::is_same_v<T, std::map<std::string, int>>) {
            return ApplyDeviceCount(v);
          } else {
            return ApplyPool(v);
          }
          return Status::OK();
        },
        field.member);
  }

  // A list of names, or one text of comma-separated names (--set).
  StatusOr<std::vector<std::string>> Names(const std::string& field,
                                           const Value& v) const {
    std::vector<std::string> out;
    const std::vector<Value> single = {v};
    for (const Value& item : v.kind == Value::Kind::kList ? v.items : single) {
      if (item.kind == Value::Kind::kList ||
          item.kind == Value::Kind::kMessage) {
        return Where(item, field + " takes pass names, got " + Shown(item));
      }
      size_t begin = 0;
      while (begin <= item.text.size()) {
        const size_t end =
            std::min(item.text.find(',', begin), item.text.size());
        if (end > begin) out.push_back(item.text.substr(begin, end - begin));
        begin = end + 1;
      }
    }
    return out;
  }

  const std::string source_;
  RunConfig* config_;
};

}  // namespace

Status ApplyConfigText(const std::string& text, const std::string& source,
                       RunConfig* config) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  Value message;
  if (first != std::string::npos && text[first] == '{') {
    WEFT_ASSIGN_OR_RETURN(message, ParseJson(text, source));
  } else {
    TextParser parser(text, source);
    WEFT_ASSIGN_OR_RETURN(message, parser.ParseMessageBody(0));
  }
  return Applier(source, config).ApplyTop(message);
}

Status ApplyConfigFile(const std::string& path, RunConfig* config) {
  WEFT_ASSIGN_OR_RETURN(
      std::string text,
      ReadFileBytes(path, "--config " + path + ": cannot open the file"));
  return ApplyConfigText(text, path, config);
}

StatusOr<RunConfig> ReadRunConfig(const std::string& path,
                                  const std::vector<std::string>& settings) {
  RunConfig config;
  if (!path.empty()) WEFT_RETURN_IF_ERROR(ApplyConfigFile(path, &config));
  for (const std::string& setting : settings) {
    WEFT_RETURN_IF_ERROR(ApplySetting(setting, &config));
  }
  return config;
}

Status ApplySetting(const std::string& assignment, RunConfig* config) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgumentError("--set '" + assignment +
                                "' must be FIELD=VALUE");
  }
  const std::string field = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  // A message value is written without the colon in text format.
  const std::string text = field +
                           (value.find_first_not_of(' ') != std::string::npos &&
                                    value[value.find_first_not_of(' ')] == '{'
                                ? " "
                                : ": ") +
                           value;
  return ApplyConfigText(text, "--set " + assignment, config);
}

}  // namespace weft
