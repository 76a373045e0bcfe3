// MatMul: bitwise identical for every thread configuration, and no thread
// computes but weft's own.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "test_support/session_util.h"
#include "test_support/threads.h"

namespace weft {
namespace {

TEST(MatMulTest, BitwiseIdenticalForEveryThreadConfiguration) {
  // Sizes that are not multiples of the tile size, all transpose modes.
  struct Case {
    int64_t m, k, n;
    bool ta, tb;
  };
  const std::vector<Case> cases = {{131, 77, 301, false, false},
                                   {65, 300, 257, true, false},
                                   {200, 129, 70, false, true},
                                   {97, 513, 33, true, true}};
  for (const Case& c : cases) {
    Graph g;
    auto a = g.RandomUniform("a", DataType::kFloat32,
                             c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k}, 3);
    auto b = g.RandomUniform("b", DataType::kFloat32,
                             c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n}, 4);
    g.MatMul("c", a, b, c.ta, c.tb);
    Tensor reference;
    for (int inter : {-1, 1, 2, 4}) {
      for (int intra : {1, 2, 3, 4, 7, 8}) {
        auto session =
            test::MustCreate(g, test::PerSessionOptions(inter, intra));
        Tensor out = test::MustRun(*session, {"c"})[0];
        if (!reference.IsInitialized()) {
          reference = out;
        } else {
          ASSERT_TRUE(out.BitwiseEqual(reference))
              << c.m << "x" << c.k << "x" << c.n << " inter=" << inter
              << " intra=" << intra;
        }
      }
    }
  }
}

TEST(MatMulTest, OnlyWeftThreadsRunDuringALargeProduct) {
  Graph g;
  auto a = g.RandomUniform("a", DataType::kFloat32, {1024, 1024}, 1);
  g.MatMul("c", a, a);
  auto session = test::MustCreate(g, test::PerSessionOptions(1, 2));
  test::MustRun(*session, {"c"});  // Pools are up.
  // Main thread + 1 inter-op worker + 1 intra-op worker (+ this sampler).
  const int expected = test::CountProcessThreads() + 1;
  std::atomic<bool> done{false};
  std::atomic<int> most{0};
  std::thread sampler([&] {
    while (!done.load()) {
      most = std::max(most.load(), test::CountProcessThreads());
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  for (int i = 0; i < 3; ++i) test::MustRun(*session, {"c"});
  done = true;
  sampler.join();
  EXPECT_EQ(most.load(), expected);
}

}  // namespace
}  // namespace weft
