#include "runtime/pools.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "weft/threading.h"

namespace weft::internal {
namespace {

constexpr int kMaxThreads = 4096;

struct SharedPool {
  std::shared_ptr<ThreadPool> pool;
  int threads = 0;  // As the user counts them (intra: including the caller).
};

// Process-wide threading state. Guarded by mu.
struct ProcessThreading {
  std::mutex mu;
  int inter_setting = 0;  // 0: not set.
  int intra_setting = 0;
  std::optional<SharedPool> inter;
  std::optional<SharedPool> intra;
  std::map<std::string, SharedPool> named;
};

ProcessThreading& State() {
  static ProcessThreading* state = new ProcessThreading();  // Never freed.
  return *state;
}

void Warn(const std::string& message) {
  std::fprintf(stderr, "weft: warning: %s\n", message.c_str());
}

// Reads WEFT_NUM_*_THREADS: nullopt when unset; an error when not a number.
StatusOr<std::optional<int>> ReadEnvThreads(const char* variable) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return std::optional<int>();
  int value = 0;
  const char* end = text + std::char_traits<char>::length(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end || value > kMaxThreads || value < -1) {
    return InvalidArgumentError(std::string("environment variable ") +
                                variable + "='" + text +
                                "' is not a thread count (an integer from -1 "
                                "to 4096)");
  }
  return std::optional<int>(value);
}

int AutoThreads() { return AutoCpuBudget().threads; }

// setter > environment > auto. REQUIRES: state.mu held.
StatusOr<int> ProcessDefault(int setting, const char* variable) {
  if (setting != 0) return setting;
  WEFT_ASSIGN_OR_RETURN(std::optional<int> env, ReadEnvThreads(variable));
  if (env && *env != 0) return *env;
  return AutoThreads();
}

std::shared_ptr<ThreadPool> MakePool(const std::string& name, int workers,
                                     int spin_us,
                                     const std::vector<int>& pin_cpus) {
  if (workers <= 0) return nullptr;
  ThreadPoolOptions options;
  options.name = name;
  options.num_threads = workers;
  options.spin_us = spin_us;
  options.pin_cpus = pin_cpus;
  return std::make_shared<ThreadPool>(options);
}

Status ValidateOptions(const SessionOptions& o) {
  auto range = [](int value, int lo, int hi, const char* field) -> Status {
    if (value < lo || value > hi) {
      return InvalidArgumentError(std::string("SessionOptions.") + field +
                                  " = " + std::to_string(value) +
                                  " is out of range [" + std::to_string(lo) +
                                  ", " + std::to_string(hi) + "]");
    }
    return Status::OK();
  };
  WEFT_RETURN_IF_ERROR(range(o.inter_op_parallelism_threads, -kMaxThreads,
                             kMaxThreads, "inter_op_parallelism_threads"));
  WEFT_RETURN_IF_ERROR(range(o.intra_op_parallelism_threads, 0, kMaxThreads,
                             "intra_op_parallelism_threads"));
  WEFT_RETURN_IF_ERROR(
      range(o.inter_op_spin_us, 0, 1'000'000, "inter_op_spin_us"));
  WEFT_RETURN_IF_ERROR(
      range(o.intra_op_spin_us, 0, 1'000'000, "intra_op_spin_us"));
  const std::vector<int>& allowed = AutoCpuBudget().allowed_cpus;
  for (const auto* list : {&o.inter_op_pin_cpus, &o.intra_op_pin_cpus}) {
    for (int cpu : *list) {
      if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) {
        return InvalidArgumentError("SessionOptions pin CPU " +
                                    std::to_string(cpu) +
                                    " is not in this process's affinity mask");
      }
    }
  }
  for (size_t i = 0; i < o.session_inter_op_thread_pools.size(); ++i) {
    const ThreadPoolSpec& spec = o.session_inter_op_thread_pools[i];
    if (spec.num_threads < 0 || spec.num_threads > kMaxThreads) {
      return InvalidArgumentError(
          "SessionOptions.session_inter_op_thread_pools[" + std::to_string(i) +
          "].num_threads = " + std::to_string(spec.num_threads) +
          " is out of range [0, 4096]");
    }
  }
  return Status::OK();
}

// Returns the process-wide pool in `slot`, creating it with `threads` if
// there is none. REQUIRES: state.mu held.
std::shared_ptr<ThreadPool> ShareOrCreate(std::optional<SharedPool>& slot,
                                          int threads, int workers,
                                          const char* name, int spin_us,
                                          const std::vector<int>& pin_cpus,
                                          bool explicitly_requested) {
  if (!slot) {
    slot = SharedPool{MakePool(name, workers, spin_us, pin_cpus), threads};
  } else if (explicitly_requested && slot->threads != threads) {
    Warn(std::string("session asked for ") + std::to_string(threads) + " " +
         name + "-op threads, but shares the process-wide " + name +
         "-op pool of " + std::to_string(slot->threads) +
         " (created by an earlier session; set use_per_session_threads for "
         "pools of its own)");
  }
  return slot->pool;
}

}  // namespace

StatusOr<SessionPools> AcquireSessionPools(const SessionOptions& options) {
  WEFT_RETURN_IF_ERROR(ValidateOptions(options));
  ProcessThreading& state = State();
  std::lock_guard<std::mutex> lock(state.mu);

  WEFT_ASSIGN_OR_RETURN(
      int inter_default,
      ProcessDefault(state.inter_setting, "WEFT_NUM_INTEROP_THREADS"));
  WEFT_ASSIGN_OR_RETURN(
      int intra_default,
      ProcessDefault(state.intra_setting, "WEFT_NUM_INTRAOP_THREADS"));
  const bool inter_explicit = options.inter_op_parallelism_threads != 0;
  const bool intra_explicit = options.intra_op_parallelism_threads != 0;
  const int inter =
      inter_explicit ? options.inter_op_parallelism_threads : inter_default;
  const int intra = std::max(
      1, intra_explicit ? options.intra_op_parallelism_threads : intra_default);

  SessionPools pools;
  pools.intra_threads = intra;
  const bool shared = !options.use_per_session_threads;
  if (shared) {
    // A shared intra pool of size n has n - 1 workers (the op's thread works).
    pools.intra = ShareOrCreate(state.intra, intra, intra - 1, "intra",
                                options.intra_op_spin_us,
                                options.intra_op_pin_cpus, intra_explicit);
    pools.intra_threads = state.intra->threads;
  } else {
    pools.intra = MakePool("intra", intra - 1, options.intra_op_spin_us,
                           options.intra_op_pin_cpus);
  }

  if (!options.session_inter_op_thread_pools.empty()) {
    for (size_t i = 0; i < options.session_inter_op_thread_pools.size(); ++i) {
      const ThreadPoolSpec& spec = options.session_inter_op_thread_pools[i];
      const int threads =
          spec.num_threads > 0 ? spec.num_threads : std::max(inter, 1);
      if (spec.global_name.empty()) {
        const std::string name = "inter" + std::to_string(i);
        pools.inter.push_back({MakePool(name, threads, options.inter_op_spin_us,
                                        options.inter_op_pin_cpus),
                               name, threads});
        continue;
      }
      auto it = state.named.find(spec.global_name);
      if (it == state.named.end()) {
        it = state.named
                 .emplace(spec.global_name,
                          SharedPool{MakePool(spec.global_name, threads,
                                              options.inter_op_spin_us,
                                              options.inter_op_pin_cpus),
                                     threads})
                 .first;
      } else if (it->second.threads != threads) {
        return InvalidArgumentError(
            "session_inter_op_thread_pools[" + std::to_string(i) +
            "]: the process-wide pool '" + spec.global_name + "' has " +
            std::to_string(it->second.threads) +
            " threads; this session asks for " + std::to_string(threads));
      }
      pools.inter.push_back({it->second.pool, spec.global_name, threads});
    }
    return pools;
  }

  if (inter < 0) {
    pools.inter.push_back({nullptr, "caller", -1});
  } else if (shared) {
    auto pool = ShareOrCreate(state.inter, inter, inter, "inter",
                              options.inter_op_spin_us,
                              options.inter_op_pin_cpus, inter_explicit);
    pools.inter.push_back({pool, "inter", state.inter->threads});
  } else {
    pools.inter.push_back({MakePool("inter", inter, options.inter_op_spin_us,
                                    options.inter_op_pin_cpus),
                           "inter", inter});
  }
  return pools;
}

void ResetProcessThreadingForTest() {
  ProcessThreading& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  state.inter_setting = 0;
  state.intra_setting = 0;
  state.inter.reset();
  state.intra.reset();
  state.named.clear();
}

}  // namespace weft::internal

namespace weft::threading {
namespace {

using internal::ProcessThreading;

// The effective value for a getter: the live pool's size, else what a new
// one would get. Invalid environment values count as unset (with a warning).
int Effective(const std::optional<internal::SharedPool>& pool, int setting,
              const char* variable) {
  if (pool) return pool->threads;
  auto value = internal::ProcessDefault(setting, variable);
  if (!value.ok()) {
    internal::Warn(value.status().message() + "; using auto");
    return internal::AutoThreads();
  }
  return *value;
}

}  // namespace

void SetInterOpParallelismThreads(int n) {
  ProcessThreading& state = internal::State();
  std::lock_guard<std::mutex> lock(state.mu);
  state.inter_setting = n;
  // Running sessions keep the pool they hold; later sessions get a new one.
  if (state.inter && state.inter->threads != n) state.inter.reset();
}

int GetInterOpParallelismThreads() {
  ProcessThreading& state = internal::State();
  std::lock_guard<std::mutex> lock(state.mu);
  return Effective(state.inter, state.inter_setting,
                   "WEFT_NUM_INTEROP_THREADS");
}

void SetIntraOpParallelismThreads(int n) {
  ProcessThreading& state = internal::State();
  std::lock_guard<std::mutex> lock(state.mu);
  state.intra_setting = n < 0 ? 0 : n;
  if (state.intra && state.intra->threads != n) state.intra.reset();
}

int GetIntraOpParallelismThreads() {
  ProcessThreading& state = internal::State();
  std::lock_guard<std::mutex> lock(state.mu);
  return std::max(1, Effective(state.intra, state.intra_setting,
                               "WEFT_NUM_INTRAOP_THREADS"));
}

}  // namespace weft::threading
