// A program outside the weft tree, built against the installed package.
#include <atomic>
#include <cstdio>

#include "weft/parallel_for.h"
#include "weft/thread_pool.h"
#include "weft/threading.h"

int main() {
  weft::ThreadPoolOptions options;
  options.name = "consumer";
  options.num_threads = 2;
  weft::ThreadPool pool(options);
  std::atomic<int64_t> sum{0};
  weft::ParallelForFixedBlocks(&pool, 1000, 7, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) sum += i;
  });
  const int threads = weft::AutoCpuBudget().threads;
  std::printf("sum=%lld auto_threads=%d\n", static_cast<long long>(sum.load()),
              threads);
  return sum.load() == 999 * 1000 / 2 && threads >= 1 ? 0 : 1;
}
