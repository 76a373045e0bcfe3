// After a Run, an idle session costs (almost) no CPU: workers spin for a
// bounded window, then park.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <thread>

#include "test_support/sanitizers.h"
#include "test_support/session_util.h"

namespace weft {
namespace {

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) +
           1e-6 * static_cast<double>(t.tv_usec);
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

TEST(IdleTimingTest, AnIdleSessionUsesUnderOnePercentOfACpu) {
  // Default options: auto-sized, process-wide pools, default spin windows.
  Graph g;
  auto a = g.RandomUniform("a", DataType::kFloat32, {256, 256}, 1);
  auto b = g.RandomUniform("b", DataType::kFloat32, {256, 256}, 2);
  g.MatMul("c", g.Relu("ra", a), g.Relu("rb", b));
  auto session = test::MustCreate(g, SessionOptions{});
  for (int i = 0; i < 3; ++i) test::MustRun(*session, {"c"});  // Both pools.

  const double before = ProcessCpuSeconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double used = ProcessCpuSeconds() - before;
  // 1% of one CPU over one second is 10 ms; the spin windows account for
  // well under 1 ms, so the test asserts half of that. The sanitizers'
  // runtimes have background threads of their own, hence their allowance.
  constexpr double kLimitSeconds = test::kUnderSanitizer ? 0.05 : 0.005;
  EXPECT_LT(used, kLimitSeconds)
      << "the idle process used " << used * 1e3 << " ms of CPU in one second";
  RecordProperty("idle_cpu_us", static_cast<int>(used * 1e6));
}

}  // namespace
}  // namespace weft
