// How long a cache line takes to go from one CPU to another and back:
//
//   weft_cpu_pair_latency [CPU_A CPU_B]   (default: the first two CPUs this
//                                          process may run on)
//
// prints "round trip N ns between CPUs A and B", N the median over batches
// of ping-pongs on one line. On the 2-vCPU KVM guests CI runs on, the host
// moves the two vCPUs between cores that share an L3 cache (about 50 ns
// here) and cores that do not (about 340 ns), from minute to minute; every
// two-thread Run of weft or ONNX Runtime is slower in the second case
// (docs/BENCHMARKS.md, "The two vCPUs' distance"). The bench scripts call
// this before each turn to say which case a figure was taken in.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

bool Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// The first two CPUs of this process's mask, or -1.
std::pair<int, int> FirstTwoCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {-1, -1};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  if (cpus.size() < 2) return {-1, -1};
  return {cpus[0], cpus[1]};
}

// The line both threads write: the ping-pong's only shared state.
alignas(64) std::atomic<int64_t> turn{0};

constexpr int kBatches = 21;
constexpr int kTripsPerBatch = 5000;

}  // namespace

int main(int argc, char** argv) {
  auto [a, b] = FirstTwoCpus();
  if (argc == 3) {
    a = std::atoi(argv[1]);
    b = std::atoi(argv[2]);
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [CPU_A CPU_B]\n", argv[0]);
    return 2;
  }
  if (a < 0 || b < 0 || a == b) {
    std::fprintf(stderr,
                 "weft_cpu_pair_latency: needs two different CPUs (this "
                 "process may run on fewer)\n");
    return 2;
  }
  const int64_t total = int64_t{kBatches} * kTripsPerBatch;
  bool partner_pinned = false;  // Read after the join.
  // The partner answers each odd value with the next even one.
  std::thread partner([&] {
    partner_pinned = Pin(b);
    for (int64_t i = 0; i < total; ++i) {
      while (turn.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      turn.store(2 * i + 2, std::memory_order_release);
    }
  });
  const bool pinned = Pin(a);
  std::vector<double> batch_ns;
  int64_t i = 0;
  for (int batch = 0; batch < kBatches; ++batch) {
    const auto start = std::chrono::steady_clock::now();
    for (int trip = 0; trip < kTripsPerBatch; ++trip, ++i) {
      turn.store(2 * i + 1, std::memory_order_release);
      while (turn.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    const auto end = std::chrono::steady_clock::now();
    batch_ns.push_back(
        std::chrono::duration<double, std::nano>(end - start).count() /
        kTripsPerBatch);
  }
  partner.join();
  if (!pinned || !partner_pinned) {
    std::fprintf(stderr,
                 "weft_cpu_pair_latency: could not pin to CPUs %d and %d\n", a,
                 b);
    return 1;
  }
  std::nth_element(batch_ns.begin(), batch_ns.begin() + kBatches / 2,
                   batch_ns.end());
  std::printf("round trip %.0f ns between CPUs %d and %d\n",
              batch_ns[kBatches / 2], a, b);
  return 0;
}
