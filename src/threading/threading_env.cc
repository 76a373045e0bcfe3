#include "threading/threading_env.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <string_view>
#include <utility>

#include "threading/cpu_info.h"
#include "weft/options.h"

namespace weft::internal {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

std::string Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t") - b + 1));
}

std::vector<std::string> SplitOn(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find(sep, start);
    out.push_back(Trim(std::string_view(s).substr(
        start, end == std::string::npos ? std::string::npos : end - start)));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::optional<int64_t> ParseInteger(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// What one variable offers for one setting: a value, or why not.
template <class T>
struct Offer {
  std::optional<T> value;
  std::string effect;  // For the table when the value is used.
  // Non-empty: not understood. "= {}" lets a success leave it out
  // without GCC's -Wmissing-field-initializers.
  std::string problem = {};
};

// The variables of one setting, in precedence order: the first that is set
// and understood gives the value; the rest are noted as shadowed.
template <class T>
struct Setting {
  struct Source {
    const char* name;
    bool strict;  // weft's own: a bad value is an error, not a warning.
    std::function<Offer<T>(const std::string&)> parse;
  };
  std::vector<Source> sources;
};

template <class T>
std::optional<T> Resolve(const Setting<T>& setting, const GetEnvFn& getenv,
                         ThreadingEnvironment* env) {
  std::optional<T> chosen;
  std::string chosen_from;
  for (const auto& source : setting.sources) {
    const char* raw = getenv(source.name);
    if (raw == nullptr || *raw == '\0') continue;
    EnvReading reading{source.name, raw, "", true};
    if (chosen) {
      reading.effect = "not used: " + chosen_from + " takes precedence";
      env->seen.push_back(std::move(reading));
      continue;
    }
    Offer<T> offer = source.parse(Trim(raw));
    if (!offer.problem.empty()) {
      reading.understood = false;
      reading.effect = "not understood (" + offer.problem + "); ignored";
      if (source.strict && env->error.ok()) {
        env->error = InvalidArgumentError(std::string("environment variable ") +
                                          source.name + "='" + raw + "' " +
                                          offer.problem);
        reading.effect = "invalid (" + offer.problem + ")";
      }
      env->seen.push_back(std::move(reading));
      continue;
    }
    chosen = offer.value;
    chosen_from = source.name;
    reading.effect = offer.effect;
    env->seen.push_back(std::move(reading));
  }
  return chosen;
}

Offer<int> ThreadCount(const std::string& text, int lowest, const char* what) {
  const auto value = ParseInteger(text);
  if (!value || *value < lowest || *value > kMaxThreads) {
    return {std::nullopt, "",
            "is not a thread count (an integer from " + std::to_string(lowest) +
                " to " + std::to_string(kMaxThreads) + ")"};
  }
  const int n = static_cast<int>(*value);
  return {n, std::string(what) + " threads: " +
                 (n == 0 ? "auto"
                         : (n < 0 ? "-1 (the caller's thread)"
                                  : std::to_string(n)))};
}

// OMP_NUM_THREADS: a list per nesting level ("4,2"); the first is ours.
Offer<int> OmpNumThreads(const std::string& text) {
  const std::string first = SplitOn(text, ',').front();
  Offer<int> offer = ThreadCount(first, 1, "intra-op");
  if (offer.value && first != text) {
    offer.effect += " (the first level of '" + text + "')";
  }
  return offer;
}

Offer<int> SpinMicros(const std::string& text) {
  const auto value = ParseInteger(text);
  if (!value || *value < 0 || *value > kMaxSpinUs) {
    return {
        std::nullopt, "",
        "is not a spin window in µs (0 to " + std::to_string(kMaxSpinUs) + ")"};
  }
  return {static_cast<int>(*value),
          "spin window: " + std::to_string(*value) + " µs (both pools)"};
}

// KMP_BLOCKTIME: milliseconds, or "infinite".
Offer<int> KmpBlocktime(const std::string& text) {
  if (Lower(text) == "infinite") {
    return {kMaxSpinUs, "spin window: " + std::to_string(kMaxSpinUs) +
                            " µs, weft's longest (infinite asked)"};
  }
  const auto ms = ParseInteger(text);
  if (!ms || *ms < 0) {
    return {std::nullopt, "", "is not a time in ms or 'infinite'"};
  }
  const int64_t us = std::min<int64_t>(*ms * 1000, kMaxSpinUs);
  std::string effect = "spin window: " + std::to_string(us) + " µs";
  if (*ms * 1000 > kMaxSpinUs) effect += " (capped: weft's longest)";
  return {static_cast<int>(us), effect + " (both pools)"};
}

// "pinning: worker i to CPU list[i % n] of 0,4,1,5".
std::string PinText(const std::vector<int>& cpus) {
  if (cpus.empty()) return "pinning: none";
  std::string order;
  for (int cpu : cpus)
    order += (order.empty() ? "" : ",") + std::to_string(cpu);
  return "pinning: worker i to CPU list[i % n] of " + order;
}

Offer<std::vector<int>> PinCpuList(const std::string& text,
                                   const CpuBudget& budget) {
  const auto cpus = ParseCpuList(text);
  if (!cpus) return {std::nullopt, "", "is not a CPU list such as 0-3,8"};
  for (int cpu : *cpus) {
    if (std::find(budget.allowed_cpus.begin(), budget.allowed_cpus.end(),
                  cpu) == budget.allowed_cpus.end()) {
      return {std::nullopt, "",
              "names CPU " + std::to_string(cpu) +
                  ", which is not in this process's affinity mask"};
    }
  }
  return {*cpus, PinText(*cpus)};
}

// KMP_AFFINITY: [modifiers,]type[,permute][,offset].
Offer<std::vector<int>> KmpAffinity(const std::string& text,
                                    const CpuBudget& budget) {
  std::optional<std::string> type;
  std::vector<int64_t> numbers;
  for (const std::string& token : SplitOn(Lower(text), ',')) {
    if (token.rfind("granularity=", 0) == 0 || token == "verbose" ||
        token == "noverbose" || token == "respect" || token == "norespect" ||
        token == "warnings" || token == "nowarnings") {
      continue;  // Modifiers that do not change where workers go.
    }
    if (token == "compact" || token == "scatter" || token == "balanced" ||
        token == "none" || token == "disabled") {
      if (type) return {std::nullopt, "", "names two affinity types"};
      type = token;
      continue;
    }
    if (const auto n = ParseInteger(token); n && type) {
      numbers.push_back(*n);
      continue;
    }
    return {std::nullopt, "",
            "has '" + token +
                "', which weft does not take (it takes compact, scatter, "
                "balanced, none, disabled, granularity=..., permute and "
                "offset)"};
  }
  if (!type) return {std::nullopt, "", "names no affinity type"};
  if (*type == "none" || *type == "disabled") {
    return {std::vector<int>{}, "pinning: none"};
  }
  // compact with a permute of 1 or more spreads over cores first (Intel's
  // recommended granularity=fine,compact,1,0); scatter and balanced too.
  const bool cores_first =
      *type != "compact" || (!numbers.empty() && numbers[0] >= 1);
  std::vector<int> cpus =
      PinOrder(cores_first ? PinForm::kCoresFirst : PinForm::kCompact, budget);
  if (numbers.size() >= 2 && !cpus.empty()) {  // offset: rotate the start.
    const size_t offset = static_cast<size_t>(numbers[1]) % cpus.size();
    std::rotate(cpus.begin(), cpus.begin() + offset, cpus.end());
  }
  return {cpus, PinText(cpus)};
}

// OMP_PROC_BIND with OMP_PLACES (read together: one setting).
Offer<std::vector<int>> OmpProcBind(const std::string& bind_text,
                                    const char* places_raw,
                                    const CpuBudget& budget) {
  const std::string bind = Lower(SplitOn(bind_text, ',').front());
  const std::string places = places_raw ? Lower(Trim(places_raw)) : "";
  if (bind == "false") return {std::vector<int>{}, "pinning: none"};
  if (bind != "true" && bind != "close" && bind != "spread" &&
      bind != "master" && bind != "primary") {
    return {std::nullopt, "",
            "is not one of true, false, close, spread, master, primary"};
  }
  PinForm form = bind == "spread" ? PinForm::kCoresFirst : PinForm::kCompact;
  if (places == "cores") {
    form = PinForm::kOnePerCore;
  } else if (!places.empty() && places != "threads") {
    return {std::nullopt, "",
            "comes with OMP_PLACES='" + places +
                "', which weft does not take (it takes threads and cores)"};
  }
  std::vector<int> cpus = PinOrder(form, budget);
  return {cpus, PinText(cpus) +
                    (places.empty() ? "" : " (OMP_PLACES=" + places + ")")};
}

bool IsTrue(const char* raw) {
  if (raw == nullptr) return false;
  const std::string v = Lower(Trim(raw));
  return v == "1" || v == "true" || v == "yes" || v == "on" || v == "verbose";
}

}  // namespace

const std::vector<const char*>& ThreadingVariableNames() {
  static const std::vector<const char*> names = {"WEFT_NUM_INTEROP_THREADS",
                                                 "TF_NUM_INTEROP_THREADS",
                                                 "WEFT_NUM_INTRAOP_THREADS",
                                                 "TF_NUM_INTRAOP_THREADS",
                                                 "OMP_NUM_THREADS",
                                                 "WEFT_SPIN_US",
                                                 "KMP_BLOCKTIME",
                                                 "WEFT_PIN_CPUS",
                                                 "KMP_AFFINITY",
                                                 "OMP_PROC_BIND",
                                                 "OMP_PLACES",
                                                 "KMP_SETTINGS",
                                                 "OMP_DISPLAY_ENV"};
  return names;
}

std::vector<int> PinOrder(PinForm form, const CpuBudget& budget) {
  // (sibling rank within its core, core, cpu) orders cores first;
  // (core, cpu) orders a core's siblings together.
  std::map<int, int> seen_per_core;
  struct Entry {
    int rank, core, cpu;
  };
  std::vector<Entry> entries;
  for (size_t i = 0; i < budget.allowed_cpus.size(); ++i) {
    const int core = i < budget.core_of_cpu.size() ? budget.core_of_cpu[i]
                                                   : static_cast<int>(i);
    entries.push_back({seen_per_core[core]++, core, budget.allowed_cpus[i]});
  }
  if (form == PinForm::kOnePerCore) {
    std::erase_if(entries, [](const Entry& e) { return e.rank > 0; });
  }
  std::sort(entries.begin(), entries.end(),
            [&](const Entry& a, const Entry& b) {
              if (form == PinForm::kCompact) {
                return std::tie(a.core, a.cpu) < std::tie(b.core, b.cpu);
              }
              return std::tie(a.rank, a.core, a.cpu) <
                     std::tie(b.rank, b.core, b.cpu);
            });
  std::vector<int> cpus;
  for (const Entry& e : entries) cpus.push_back(e.cpu);
  return cpus;
}

ThreadingEnvironment ReadThreadingEnvironment(const GetEnvFn& getenv,
                                              const CpuBudget& budget) {
  ThreadingEnvironment env;
  Setting<int> inter{{
      {"WEFT_NUM_INTEROP_THREADS", true,
       [](const std::string& t) {
         return ThreadCount(t, kMinInterOpThreads, "inter-op");
       }},
      {"TF_NUM_INTEROP_THREADS", false,
       [](const std::string& t) {
         return ThreadCount(t, kMinInterOpThreads, "inter-op");
       }},
  }};
  Setting<int> intra{{
      {"WEFT_NUM_INTRAOP_THREADS", true,
       [](const std::string& t) { return ThreadCount(t, 0, "intra-op"); }},
      {"TF_NUM_INTRAOP_THREADS", false,
       [](const std::string& t) { return ThreadCount(t, 0, "intra-op"); }},
      {"OMP_NUM_THREADS", false, OmpNumThreads},
  }};
  Setting<int> spin{{
      {"WEFT_SPIN_US", true, SpinMicros},
      {"KMP_BLOCKTIME", false, KmpBlocktime},
  }};
  const char* places = getenv("OMP_PLACES");
  Setting<std::vector<int>> pin{{
      {"WEFT_PIN_CPUS", true,
       [&](const std::string& t) { return PinCpuList(t, budget); }},
      {"KMP_AFFINITY", false,
       [&](const std::string& t) { return KmpAffinity(t, budget); }},
      {"OMP_PROC_BIND", false,
       [&](const std::string& t) { return OmpProcBind(t, places, budget); }},
  }};
  env.inter = Resolve(inter, getenv, &env);
  env.intra = Resolve(intra, getenv, &env);
  env.spin_us = Resolve(spin, getenv, &env);
  const bool bind_set = getenv("OMP_PROC_BIND") != nullptr;
  env.pin_cpus = Resolve(pin, getenv, &env);
  if (places != nullptr && *places != '\0' && !bind_set) {
    // OMP_PLACES alone binds as OMP_PROC_BIND=true would (libgomp's rule).
    Setting<std::vector<int>> places_only{{
        {"OMP_PLACES", false,
         [&](const std::string&) {
           return OmpProcBind("true", places, budget);
         }},
    }};
    if (env.pin_cpus) {
      env.seen.push_back({"OMP_PLACES", places,
                          "not used: an earlier pinning variable takes "
                          "precedence",
                          true});
    } else {
      env.pin_cpus = Resolve(places_only, getenv, &env);
    }
  } else if (places != nullptr && *places != '\0') {
    env.seen.push_back(
        {"OMP_PLACES", places, "read with OMP_PROC_BIND (above)", true});
  }
  for (const char* name : {"KMP_SETTINGS", "OMP_DISPLAY_ENV"}) {
    if (const char* raw = getenv(name); raw != nullptr && *raw != '\0') {
      const bool on = IsTrue(raw);
      env.display |= on;
      env.seen.push_back({name, raw,
                          on ? "prints the effective settings once, at the "
                               "first session"
                             : "off",
                          true});
    }
  }
  return env;
}

}  // namespace weft::internal
