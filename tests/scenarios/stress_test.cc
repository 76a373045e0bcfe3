// Stress: 8 client threads x 2,000 Runs on one session, a mix of fetch
// signatures and random feeds, every result checked against a reference
// computed here; resident memory after 4,000 and after 16,000 Runs within
// 5% of each other. Under the sanitizers a smaller version (no memory
// check: their allocators keep freed memory on purpose).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>

#include "test_support/sanitizers.h"
#include "test_support/session_util.h"

namespace weft {
namespace {

constexpr int kRunsPerThread = test::kUnderSanitizer ? 150 : 2000;
// A sanitizer's allocator keeps freed memory in quarantine: resident memory
// grows there whatever weft does.
constexpr bool kCheckMemory = !test::kUnderSanitizer;
constexpr int kThreads = 8;
constexpr int64_t kN = 16;  // x is [kN], m is [kN, kN].

int64_t ResidentBytes() {
  long total = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &total, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

// y = relu(x - 0.5) * 2, s = sum(x * x), p = m · w (w fixed).
Graph StressGraph(const Tensor& w) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {kN});
  auto m = g.Placeholder("m", DataType::kFloat32, {kN, kN});
  auto half = g.Const(
      "half", Tensor::FromVector<float>({kN}, std::vector<float>(kN, 0.5f)));
  auto two = g.Const(
      "two", Tensor::FromVector<float>({kN}, std::vector<float>(kN, 2.0f)));
  g.Mul("y", g.Relu("r", g.Sub("d", x, half)), two);
  g.ReduceSum("s", g.Mul("xx", x, x), {}, false);
  g.MatMul("p", m, g.Const("w", w));
  return g;
}

Tensor RandomTensor(std::mt19937& rng, const Shape& shape) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(DataType::kFloat32, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

TEST(StressTest, EightThreadsOfRunsOnOneSessionStayCorrectAndBounded) {
  std::mt19937 setup(7);
  const Tensor w = RandomTensor(setup, {kN, kN});
  auto session = test::MustCreate(StressGraph(w), SessionOptions{});
  std::atomic<int> runs_done{0};
  std::atomic<int64_t> rss_at_quarter{0};
  std::atomic<int> failures{0};

  auto client = [&](int thread) {
    std::mt19937 rng(100 + thread);
    for (int i = 0; i < kRunsPerThread && failures.load() == 0; ++i) {
      const Tensor x = RandomTensor(rng, {kN});
      const Tensor m = RandomTensor(rng, {kN, kN});
      std::vector<std::string> fetches;
      switch (rng() % 4) {
        case 0:
          fetches = {"y"};
          break;
        case 1:
          fetches = {"s", "y"};
          break;
        case 2:
          fetches = {"p"};
          break;
        default:
          fetches = {"p", "s", "y"};
          break;
      }
      std::vector<Tensor> out;
      const Status status =
          session->Run({{"x", x}, {"m", m}}, fetches, {}, &out);
      if (!status.ok()) {
        ADD_FAILURE() << "thread " << thread << " run " << i << ": " << status;
        ++failures;
        return;
      }
      for (size_t f = 0; f < fetches.size(); ++f) {
        const float* got = out[f].data<float>();
        if (fetches[f] == "y") {
          for (int64_t k = 0; k < kN; ++k) {
            const float expected =
                std::max(x.data<float>()[k] - 0.5f, 0.0f) * 2.0f;
            if (got[k] != expected) ++failures;
          }
        } else if (fetches[f] == "s") {
          double expected = 0;
          for (int64_t k = 0; k < kN; ++k) {
            expected += double{x.data<float>()[k]} * x.data<float>()[k];
          }
          if (std::abs(got[0] - expected) > 1e-5 * std::max(1.0, expected)) {
            ++failures;
          }
        } else {
          for (int64_t r = 0; r < kN; ++r) {
            for (int64_t c = 0; c < kN; ++c) {
              double expected = 0;
              for (int64_t k = 0; k < kN; ++k) {
                expected += double{m.data<float>()[r * kN + k]} *
                            w.data<float>()[k * kN + c];
              }
              if (std::abs(got[r * kN + c] - expected) > 1e-4) ++failures;
            }
          }
        }
      }
      if (++runs_done == kThreads * kRunsPerThread / 4) {
        rss_at_quarter = ResidentBytes();
      }
    }
  };
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t) clients.emplace_back(client, t);
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(runs_done.load(), kThreads * kRunsPerThread);
  if (kCheckMemory) {
    const int64_t at_end = ResidentBytes();
    const double growth = static_cast<double>(at_end - rss_at_quarter.load()) /
                          static_cast<double>(rss_at_quarter.load());
    EXPECT_LT(std::abs(growth), 0.05)
        << "resident memory after " << kThreads * kRunsPerThread / 4
        << " Runs: " << rss_at_quarter.load() << " bytes, after "
        << kThreads * kRunsPerThread << ": " << at_end;
    RecordProperty("rss_growth_permille", static_cast<int>(growth * 1000));
  }
}

}  // namespace
}  // namespace weft
