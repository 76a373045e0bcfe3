// One core budget for inter-op and intra-op parallelism.
//
// Every kernel running anywhere in the process counts against the budget
// while it computes (not while it waits in KernelContext::WaitFor). A
// kernel's ParallelFor may enlist as many intra-op helpers as the budget has
// cores left: budget - running kernels, at most the pool's workers. So with
// inter = 2 and intra = 2 on 2 cores, two concurrent MatMuls run one thread
// each, and a MatMul running alone gets both cores, instead of three threads
// time-slicing two cores.
//
// The budget is max(the process's CPU budget, the session's intra-op
// threads): a user who asks for more intra-op threads than cores still gets
// them for a lone kernel.
#ifndef WEFT_SRC_RUNTIME_CORE_BUDGET_H_
#define WEFT_SRC_RUNTIME_CORE_BUDGET_H_

#include <atomic>

namespace weft::internal {

class CoreBudget {
 public:
  // Marks the calling thread as computing a kernel for its lifetime.
  // Constructed and destroyed on the same thread (it also counts in
  // CountsHere()).
  class Running {
   public:
    Running() { EnterComputing(); }
    ~Running() { LeaveComputing(); }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
  };
  // Running's two halves, for a scope that decides at run time whether to
  // count (weft::ComputingScope). Paired, on one thread.
  static void EnterComputing() {
    running_.fetch_add(1, std::memory_order_relaxed);
    ++depth_here_;
  }
  // seq_cst: freeing a core pairs with a late helper's advertisement
  // (internal::ParallelForCapped).
  static void LeaveComputing() {
    --depth_here_;
    running_.fetch_sub(1, std::memory_order_seq_cst);
  }
  // The opposite, for a kernel that blocks: it gives its core back.
  class Waiting {
   public:
    Waiting() { GiveBackCore(); }
    ~Waiting() { TakeBackCore(); }
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;
  };
  // While it lives, a thread that counts gives its core back, and does not
  // count in CountsHere(): for code on such a thread that waits for work
  // that counts elsewhere (a map function running a weft graph, whose
  // kernels count themselves). A no-op on a thread that does not count.
  class PausedHere {
   public:
    PausedHere() : depth_(depth_here_) {
      if (depth_ > 0) {
        depth_here_ = 0;
        GiveBackCore();
      }
    }
    ~PausedHere() {
      if (depth_ > 0) {
        TakeBackCore();
        depth_here_ = depth_;
      }
    }
    PausedHere(const PausedHere&) = delete;
    PausedHere& operator=(const PausedHere&) = delete;

   private:
    const int depth_;
  };

  // Helpers a kernel on this thread may enlist now, from a pool of
  // `pool_workers` serving a session whose intra-op setting is
  // `intra_threads` (caller included).
  static int HelpersAllowed(int pool_workers, int intra_threads);

  static int running() { return running_.load(std::memory_order_seq_cst); }

  // Whether the calling thread counts now: inside a Running of its own.
  static bool CountsHere() { return depth_here_ > 0; }

 private:
  // The scope kernels use through runtime/kernel_services.h.
  friend class CoreReleasedWhileBlocked;
  // seq_cst, as ~Running: a core given back pairs with a late helper's
  // advertisement.
  static void GiveBackCore() {
    running_.fetch_sub(1, std::memory_order_seq_cst);
  }
  static void TakeBackCore() {
    running_.fetch_add(1, std::memory_order_relaxed);
  }

  static std::atomic<int> running_;
  // The Running scopes open on this thread (PausedHere sets it to 0).
  static thread_local int depth_here_;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_CORE_BUDGET_H_
