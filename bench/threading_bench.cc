// Threading layer benchmarks: ParallelFor fork/join overhead side by side
// with OpenMP (libgomp) in the same binary and thread count, Schedule()
// throughput, wake-up latency of a parked pool, and what copying bytes that
// another core wrote, or into lines another core holds, costs.
//
//   build/bin/weft_threading_bench --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
//
// "threads" always counts the calling thread: weft's pool has threads - 1
// workers (the caller of ParallelFor works too), OpenMP gets num_threads.
#include <benchmark/benchmark.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "weft/parallel_for.h"
#include "weft/thread_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

// Burns about `ns` of CPU with a dependent arithmetic chain the compiler
// cannot remove; calibrated once against the clock.
class BusyWork {
 public:
  static BusyWork& Get() {
    static BusyWork instance;
    return instance;
  }
  void Burn(double ns) const {
    uint64_t x = 0x12345678;
    const int64_t rounds = static_cast<int64_t>(ns * rounds_per_ns_);
    for (int64_t i = 0; i < rounds; ++i) x = x * 6364136223846793005ull + 1;
    benchmark::DoNotOptimize(x);
  }

 private:
  BusyWork() {
    constexpr int64_t kRounds = 20'000'000;
    double best = 1e30;
    for (int trial = 0; trial < 5; ++trial) {
      uint64_t x = 1;
      const auto start = Clock::now();
      for (int64_t i = 0; i < kRounds; ++i) x = x * 6364136223846793005ull + 1;
      benchmark::DoNotOptimize(x);
      best = std::min(
          best, std::chrono::duration<double, std::nano>(Clock::now() - start)
                    .count());
    }
    rounds_per_ns_ = kRounds / best;
  }
  double rounds_per_ns_ = 1;
};

weft::ThreadPool& PoolWithThreads(int threads) {
  // One pool per size for the whole run, like a session's intra-op pool.
  static std::vector<std::unique_ptr<weft::ThreadPool>> pools(65);
  auto& pool = pools[threads];
  if (!pool) {
    weft::ThreadPoolOptions options;
    options.name = "bench";
    options.num_threads = threads - 1;
    pool = std::make_unique<weft::ThreadPool>(options);
  }
  return *pool;
}

constexpr double kForceSplit = 1e9;  // Cost per unit that always splits.

// --- Fork/join with an empty body: pure overhead. ---------------------------

void BM_ForkJoinEmpty_Weft(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  weft::ThreadPool& pool = PoolWithThreads(threads);
  for (auto _ : state) {
    weft::ParallelFor(&pool, threads, kForceSplit, [](int64_t b, int64_t e) {
      benchmark::DoNotOptimize(b + e);
    });
  }
}

void BM_ForkJoinEmpty_OpenMP(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int i = 0; i < threads; ++i) benchmark::DoNotOptimize(i);
  }
}

// --- Fork/join of 2 blocks of ~2 us each. ------------------------------------

constexpr double kBlockNs = 2000;

// The measured duration of one Burn(kBlockNs): the ideal time of a region
// running two such blocks on two threads. Median of many, taken just before
// use so that it sees the same clock speed as the region.
double MeasuredBlockNs() {
  const BusyWork& work = BusyWork::Get();
  std::vector<double> samples(301);
  for (double& sample : samples) {
    const auto start = Clock::now();
    work.Burn(kBlockNs);
    sample =
        std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  }
  std::nth_element(samples.begin(), samples.begin() + 150, samples.end());
  return samples[150];
}

// Reports fork/join overhead: wall time per region beyond one block's time.
template <class Loop>
void TimeTwoBlockRegions(benchmark::State& state, Loop loop) {
  const double ideal_ns = MeasuredBlockNs();
  const auto start = Clock::now();
  for (auto _ : state) loop();
  const double per_region =
      std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
      static_cast<double>(state.iterations());
  state.counters["overhead_ns"] = per_region - ideal_ns;
}

void BM_ForkJoin2x2us_Weft(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  weft::ThreadPool& pool = PoolWithThreads(threads);
  const BusyWork& work = BusyWork::Get();
  TimeTwoBlockRegions(state, [&] {
    weft::ParallelFor(&pool, 2, kBlockNs, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) work.Burn(kBlockNs);
    });
  });
}

void BM_ForkJoin2x2us_OpenMP(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const BusyWork& work = BusyWork::Get();
  TimeTwoBlockRegions(state, [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int i = 0; i < 2; ++i) work.Burn(kBlockNs);
  });
}

// The same 2 x 2 us done serially: subtract it to get the fork/join cost.
void BM_ForkJoin2x2us_Serial(benchmark::State& state) {
  const BusyWork& work = BusyWork::Get();
  for (auto _ : state) {
    for (int i = 0; i < 2; ++i) work.Burn(kBlockNs);
  }
}

// --- Nested fork/join: every thread of an outer region calls inner ones. ---
//
// The pool's workers call the inner regions too, and their helper entries
// go to their own deques, where (every thread being busy) nobody takes them:
// the caller runs every inner block and takes the entries back. Reports the
// time per inner region.

constexpr int kInnerRegions = 64;

void BM_NestedForkJoin_Weft(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  weft::ThreadPool& pool = PoolWithThreads(threads);
  const BusyWork& work = BusyWork::Get();
  for (auto _ : state) {
    weft::ParallelFor(&pool, threads, kForceSplit, [&](int64_t, int64_t) {
      for (int r = 0; r < kInnerRegions; ++r) {
        weft::ParallelFor(&pool, 2, kBlockNs, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) work.Burn(kBlockNs / 4);
        });
      }
    });
  }
  state.SetItemsProcessed(state.iterations() * threads * kInnerRegions);
}

// --- Schedule() throughput: 1M tiny tasks. ---------------------------------

constexpr int kScheduledTasks = 1'000'000;

// Times rounds of kScheduledTasks tasks that each decrement a counter;
// schedule_all(decrement) must get all of them scheduled on the pool.
template <class ScheduleAll>
void TimeScheduleRounds(benchmark::State& state, ScheduleAll schedule_all) {
  for (auto _ : state) {
    std::atomic<int> remaining{kScheduledTasks};
    schedule_all(
        [&remaining] { remaining.fetch_sub(1, std::memory_order_relaxed); });
    while (remaining.load(std::memory_order_acquire) != 0) {
      std::this_thread::yield();
    }
  }
  state.SetItemsProcessed(state.iterations() * kScheduledTasks);
}

weft::ThreadPoolOptions WorkerOptions(const benchmark::State& state,
                                      const char* name) {
  weft::ThreadPoolOptions options;
  options.name = name;
  options.num_threads = static_cast<int>(state.range(0));
  return options;
}

void BM_Schedule1M_FromOutside(benchmark::State& state) {
  weft::ThreadPool pool(WorkerOptions(state, "sched"));
  TimeScheduleRounds(state, [&](auto decrement) {
    for (int i = 0; i < kScheduledTasks; ++i) pool.Schedule(decrement);
  });
}

void BM_Schedule1M_FromWorker(benchmark::State& state) {
  weft::ThreadPool pool(WorkerOptions(state, "sched"));
  TimeScheduleRounds(state, [&](auto decrement) {
    // A worker fans out: tasks land in its deque and get stolen.
    pool.Schedule([&pool, decrement] {
      for (int i = 0; i < kScheduledTasks; ++i) pool.Schedule(decrement);
    });
  });
}

// --- Wake-up latency: Schedule() on a parked pool until the task runs. ------

void BM_WakeupLatencyParked(benchmark::State& state) {
  weft::ThreadPoolOptions options = WorkerOptions(state, "wake");
  options.spin_us = 0;  // Park at once: measure the wake path only.
  weft::ThreadPool pool(options);
  for (auto _ : state) {
    state.PauseTiming();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::atomic<int64_t> started_ns{0};
    state.ResumeTiming();
    const auto scheduled = Clock::now();
    pool.Schedule([&] {
      started_ns.store((Clock::now() - scheduled).count(),
                       std::memory_order_release);
    });
    while (started_ns.load(std::memory_order_acquire) == 0) {
    }
    state.SetIterationTime(started_ns.load() / 1e9);
  }
}

// --- Outside threads beside idle spinners. -----------------------------------
//
// Two pools (as a session's inter-op and intra-op pools) with as many workers
// as the machine has CPUs. Each round hands every worker of both a trivial
// task, waits for them (their workers then go idle and spin for the window),
// and burns 2 ms on this thread, outside the pools (as a Run's caller
// waiting to return, or a network thread, works beside them). Reports the
// round's wall time over those 2 ms: 1.0 when the spinners give way. Arg:
// the spin window in µs. On 2 CPUs (Intel Xeon, KVM), spinners that did
// not yield read 3.7 at 5,000 µs (7.5 ms a round) and 1.1 at 50 µs; 1.05
// and 1.04 once they yielded.

void BM_OutsideThreadBesideSpinners(benchmark::State& state) {
  const BusyWork& work = BusyWork::Get();  // Calibrated before any spinner.
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<std::unique_ptr<weft::ThreadPool>> pools;
  for (const char* name : {"inter", "intra"}) {
    weft::ThreadPoolOptions options;
    options.name = name;
    options.num_threads = cpus;
    options.spin_us = static_cast<int>(state.range(0));
    pools.push_back(std::make_unique<weft::ThreadPool>(options));
  }
  constexpr double kWorkNs = 2e6;
  const auto start = Clock::now();
  for (auto _ : state) {
    for (auto& pool : pools) {
      std::atomic<int> left{cpus};
      for (int i = 0; i < cpus; ++i) pool->Schedule([&left] { --left; });
      while (left.load() > 0) std::this_thread::yield();
    }
    work.Burn(kWorkNs);
  }
  state.counters["stretch"] =
      std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
      static_cast<double>(state.iterations()) / kWorkNs;
}

// --- Copying what another core wrote, into lines another core holds. -------
//
// A 256 KiB copy, as a Concat or a layout move makes, by a thread pinned to
// the first allowed CPU. Before each copy, a thread pinned to the first CPU
// (0) or the next allowed one (1) writes the source (Arg 0) and another
// writes the destination (Arg 1): the destination's lines then sit in that
// core's cache as an arena buffer's do after an earlier node. An intra-op
// split that hands a node's rows to another core than the one that wrote
// its inputs, or its output buffer last, pays for those bytes: on a 2-vCPU
// AMD EPYC Zen 5 guest (KVM) 5.9 us with everything local, 11.5 and 11.3
// with the source or the destination from the other core, 21.2 with both
// (docs/BENCHMARKS.md, twentieth session).

// The calling thread's allowed CPUs, in order.
std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// Runs fn on a thread pinned to `cpu`, and waits for it.
template <class Fn>
void OnCpu(int cpu, Fn fn) {
  std::thread thread([&] {
    PinTo(cpu);
    fn();
  });
  thread.join();
}

void BM_CrossCoreCopy(benchmark::State& state) {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) {
    state.SkipWithError("needs two allowed CPUs");
    return;
  }
  const int copier = cpus[0];
  const int source_writer = state.range(0) == 0 ? cpus[0] : cpus[1];
  const int destination_writer = state.range(1) == 0 ? cpus[0] : cpus[1];
  constexpr size_t kBytes = 256 * 1024;
  std::vector<char> source(kBytes), destination(kBytes);
  char round = 0;
  for (auto _ : state) {
    ++round;
    OnCpu(destination_writer,
          [&] { std::memset(destination.data(), round, kBytes); });
    OnCpu(source_writer, [&] { std::memset(source.data(), round, kBytes); });
    double seconds = 0;
    OnCpu(copier, [&] {
      const auto start = Clock::now();
      std::memcpy(destination.data(), source.data(), kBytes);
      seconds = std::chrono::duration<double>(Clock::now() - start).count();
    });
    benchmark::DoNotOptimize(destination.data());
    state.SetIterationTime(seconds);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(kBytes));
}

BENCHMARK(BM_ForkJoinEmpty_Weft)->Arg(2)->UseRealTime();
BENCHMARK(BM_ForkJoinEmpty_OpenMP)->Arg(2)->UseRealTime();
BENCHMARK(BM_ForkJoin2x2us_Weft)->Arg(2)->UseRealTime();
BENCHMARK(BM_ForkJoin2x2us_OpenMP)->Arg(2)->UseRealTime();
BENCHMARK(BM_ForkJoin2x2us_Serial)->UseRealTime();
BENCHMARK(BM_NestedForkJoin_Weft)->Arg(2)->UseRealTime();
BENCHMARK(BM_Schedule1M_FromOutside)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Schedule1M_FromWorker)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OutsideThreadBesideSpinners)
    ->Arg(50)
    ->Arg(5000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WakeupLatencyParked)
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CrossCoreCopy)
    ->ArgNames({"source_other_core", "destination_other_core"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    // Each round starts three pinned threads: a fixed count keeps the
    // benchmark to a second where a time target would run a minute.
    ->Iterations(2000)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
