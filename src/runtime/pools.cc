#include "runtime/pools.h"

#include <algorithm>
#include <map>
#include <optional>

#include "threading/process_threading.h"

namespace weft::internal {
namespace {

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

// Returns the process-wide pool in `slot`, creating it with `threads` if
// there is none. REQUIRES: the process-wide state's mu held.
std::shared_ptr<ThreadPool> ShareOrCreate(std::optional<SharedPool>& slot,
                                          int threads, int workers,
                                          const char* name, int spin_us,
                                          const std::vector<int>& pin_cpus,
                                          bool explicitly_requested) {
  if (!slot) {
    slot = SharedPool{MakePool(name, workers, spin_us, pin_cpus), threads};
  } else if (explicitly_requested && slot->threads != threads) {
    WarnThreading(
        std::string("session asked for ") + std::to_string(threads) + " " +
        name + "-op threads, but shares the process-wide " + name +
        "-op pool of " + std::to_string(slot->threads) +
        " (created by an earlier session; set use_per_session_threads for "
        "pools of its own)");
  }
  return slot->pool;
}

}  // namespace

StatusOr<SessionPools> AcquireSessionPools(const SessionOptions& options) {
  // Session::Create validated the options (ValidateSessionOptions).
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);

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

}  // namespace weft::internal
