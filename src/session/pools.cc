#include "session/pools.h"

#include <algorithm>
#include <map>
#include <optional>

#include "threading/cpu_info.h"
#include "threading/process_threading.h"

namespace weft::internal {
namespace {

// What a session asks of one pool, resolved against the process defaults,
// and which fields it set itself (only those warn when a shared pool was
// made otherwise).
struct PoolRequest {
  const char* kind;  // "inter" or "intra": names the options' fields.
  int threads = 1;   // As users count them.
  int workers = 0;
  int spin_us = 0;
  // "= {}" lets PoolRequest{kind} leave it out without GCC's
  // -Wmissing-field-initializers.
  std::vector<int> pin_cpus = {};
  bool threads_explicit = false, spin_explicit = false, pin_explicit = false;
};

// One pool's request: each field the session's option when it sets one
// (a non-zero count, a spin window >= 0, a pin list), else the default.
PoolRequest Request(const char* kind, int threads, int default_threads,
                    int spin_us, int default_spin_us,
                    const std::vector<int>& pin_cpus,
                    const std::vector<int>& default_pin_cpus) {
  PoolRequest request{kind};
  request.threads_explicit = threads != 0;
  request.threads = request.threads_explicit ? threads : default_threads;
  request.workers = request.threads;
  request.spin_explicit = spin_us >= 0;
  request.spin_us = request.spin_explicit ? spin_us : default_spin_us;
  request.pin_explicit = !pin_cpus.empty();
  request.pin_cpus = request.pin_explicit ? pin_cpus : default_pin_cpus;
  return request;
}

std::shared_ptr<ThreadPool> MakePool(const std::string& name,
                                     const PoolRequest& request, int workers) {
  if (workers <= 0) return nullptr;
  ThreadPoolOptions options;
  options.name = name;
  options.num_threads = workers;
  options.spin_us = request.spin_us;
  options.pin_cpus = request.pin_cpus;
  return std::make_shared<ThreadPool>(options);
}

std::string CpusText(const std::vector<int>& cpus) {
  return cpus.empty() ? "none" : FormatCpuList(cpus);
}

// One warning naming every field the session set that the shared pool it
// joins does not have: the requested and the effective value.
void WarnAboutDifferences(const PoolRequest& request, const SharedPool& pool) {
  const std::string prefix = std::string(request.kind) + "_op_";
  std::string fields;
  const auto add = [&](const std::string& field, const std::string& asked,
                       const std::string& effective) {
    fields += (fields.empty() ? "" : "; ") + prefix + field + " " + asked +
              " requested, " + effective + " effective";
  };
  if (request.threads_explicit && pool.threads != request.threads) {
    add("parallelism_threads", std::to_string(request.threads),
        std::to_string(pool.threads));
  }
  if (request.spin_explicit && pool.spin_us != request.spin_us) {
    add("spin_us", std::to_string(request.spin_us),
        std::to_string(pool.spin_us));
  }
  if (request.pin_explicit && pool.pin_cpus != request.pin_cpus) {
    add("pin_cpus", CpusText(request.pin_cpus), CpusText(pool.pin_cpus));
  }
  if (fields.empty()) return;
  WarnThreading("this session shares the process-wide " +
                std::string(request.kind) +
                "-op pool, made by an earlier session: " + fields +
                " (set use_per_session_threads for pools of its own)");
}

// The process-wide pool in `slot`, made for `request` if there is none.
// REQUIRES: the process-wide state's mu held.
const SharedPool& ShareOrCreate(std::optional<SharedPool>& slot,
                                const PoolRequest& request) {
  if (!slot) {
    slot = SharedPool{MakePool(request.kind, request, request.workers),
                      request.threads, request.spin_us, request.pin_cpus};
  } else {
    WarnAboutDifferences(request, *slot);
  }
  return *slot;
}

}  // namespace

StatusOr<SessionPools> AcquireSessionPools(const SessionOptions& options) {
  // Session::Create validated the options (ValidateSessionOptions).
  ProcessThreading& state = ProcessThreading::Get();
  MutexLock lock(state.mu);
  WEFT_ASSIGN_OR_RETURN(ProcessDefaults defaults,
                        ResolveProcessDefaults(state));

  const PoolRequest inter_request =
      Request("inter", options.inter_op_parallelism_threads, defaults.inter,
              options.inter_op_spin_us, defaults.inter_spin_us,
              options.inter_op_pin_cpus, defaults.inter_pin_cpus);
  PoolRequest intra_request =
      Request("intra", options.intra_op_parallelism_threads, defaults.intra,
              options.intra_op_spin_us, defaults.intra_spin_us,
              options.intra_op_pin_cpus, defaults.intra_pin_cpus);
  // A pool of n intra-op threads has n - 1 workers (the op's thread works).
  intra_request.threads = std::max(1, intra_request.threads);
  intra_request.workers = intra_request.threads - 1;

  SessionPools pools;
  const bool shared = !options.use_per_session_threads;
  if (shared) {
    const SharedPool& intra = ShareOrCreate(state.intra, intra_request);
    pools.intra = intra.pool;
    pools.intra_threads = intra.threads;
    pools.intra_spin_us = intra.spin_us;
    pools.intra_pin_cpus = intra.pin_cpus;
  } else {
    pools.intra = MakePool("intra", intra_request, intra_request.workers);
    pools.intra_threads = intra_request.threads;
    pools.intra_spin_us = intra_request.spin_us;
    pools.intra_pin_cpus = intra_request.pin_cpus;
  }
  pools.inter_spin_us = inter_request.spin_us;
  pools.inter_pin_cpus = inter_request.pin_cpus;

  const int inter = inter_request.threads;
  if (!options.session_inter_op_thread_pools.empty()) {
    for (size_t i = 0; i < options.session_inter_op_thread_pools.size(); ++i) {
      const ThreadPoolSpec& spec = options.session_inter_op_thread_pools[i];
      const int threads =
          spec.num_threads > 0 ? spec.num_threads : std::max(inter, 1);
      if (spec.global_name.empty()) {
        const std::string name = "inter" + std::to_string(i);
        pools.inter.push_back(
            {MakePool(name, inter_request, threads), name, threads});
        continue;
      }
      auto it = state.named.find(spec.global_name);
      if (it == state.named.end()) {
        it = state.named
                 .emplace(spec.global_name,
                          SharedPool{MakePool(spec.global_name, inter_request,
                                              threads),
                                     threads, inter_request.spin_us,
                                     inter_request.pin_cpus})
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
    const SharedPool& pool = ShareOrCreate(state.inter, inter_request);
    pools.inter.push_back({pool.pool, "inter", pool.threads});
    pools.inter_spin_us = pool.spin_us;
    pools.inter_pin_cpus = pool.pin_cpus;
  } else {
    pools.inter.push_back(
        {MakePool("inter", inter_request, inter), "inter", inter});
  }
  return pools;
}

}  // namespace weft::internal
