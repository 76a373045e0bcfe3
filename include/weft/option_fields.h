// The fields of SessionOptions as data: one table, the only place a
// field's name, kind, range, default and one-line description are written.
// Validation (Session::Create), the command's --config / --set, `weft info
// --options`, the Python bindings and the table in docs/configuration.md
// (checked by a test) all read it, so a field added to SessionOptions and
// to this table reaches every one of them.
#ifndef WEFT_OPTION_FIELDS_H_
#define WEFT_OPTION_FIELDS_H_

#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "weft/options.h"
#include "weft/status.h"

namespace weft {

// How a field's value is written and checked.
enum class OptionKind {
  kInt,          // int, within [min, max].
  kInt64,        // int64_t, within [min, max].
  kBool,         // bool.
  kDouble,       // double: finite, within [min, max].
  kCpuList,      // std::vector<int>: CPUs of this process's affinity mask.
  kNameList,     // std::vector<std::string>: graph pass names.
  kDeviceCount,  // std::map<std::string, int>: {"CPU": n}.
  kThreadPools,  // std::vector<ThreadPoolSpec>.
  kChoice,       // std::string: one of the field's choices.
};

// "int", "int64", "bool", "double", "cpu list", "name list", "device count",
// "thread pools", "choice".
std::string_view OptionKindName(OptionKind kind);

// Where the field lives in SessionOptions: the member pointer of its kind.
using OptionMember =
    std::variant<int SessionOptions::*, int64_t SessionOptions::*,
                 bool SessionOptions::*, double SessionOptions::*,
                 std::vector<int> SessionOptions::*,
                 std::vector<std::string> SessionOptions::*,
                 std::map<std::string, int> SessionOptions::*,
                 std::vector<ThreadPoolSpec> SessionOptions::*,
                 std::string SessionOptions::*>;

struct SessionOptionField {
  std::string_view name;  // The member's name, in C++, Python and docs.
  // The name in --config / --set files: TensorFlow's ConfigProto spelling
  // where it differs (operation_timeout_in_ms, session_inter_op_thread_pool).
  std::string_view config_name;
  OptionKind kind;
  OptionMember member;
  // The range, inclusive, of a kInt, kInt64 or kDouble field's value, of
  // kDeviceCount's CPU count and of each kThreadPools pool's num_threads;
  // max is int64_t's largest where there is no upper bound.
  int64_t min = 0;
  int64_t max = std::numeric_limits<int64_t>::max();
  // What 0 means where it means something special ("no limit"), for error
  // messages and docs; empty otherwise.
  std::string_view zero_means;
  std::string_view summary;  // One line.
  // The values a kChoice field takes, the default first.
  std::span<const std::string_view> choices = {};
};

// Every SessionOptions field, in the order of its declaration.
std::span<const SessionOptionField> SessionOptionFields();

// The field whose name or config_name is `name`; null if none.
const SessionOptionField* FindSessionOptionField(std::string_view name);

// The field's default value (a default SessionOptions'), as `weft info
// --options` and the docs show it: "0", "true", "5000", "[]", "{}".
std::string DefaultValueText(const SessionOptionField& field);

// The range of a numeric field as the docs show it ("-1 to 4096", ">= 0");
// empty for other kinds.
std::string RangeText(const SessionOptionField& field);

// Whether `value` is in a numeric field's range: InvalidArgument naming
// the field, the value and the range otherwise
// ("SessionOptions.intra_op_parallelism_threads = 5000 is out of range
// [0, 4096]"). `what` names the value where it is not the field itself
// ("session_inter_op_thread_pools[1].num_threads").
Status CheckOptionRange(const SessionOptionField& field, double value,
                        std::string_view what = {});

}  // namespace weft

#endif  // WEFT_OPTION_FIELDS_H_
