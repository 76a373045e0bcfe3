#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

#include "weft/serve.h"

namespace weft::serve {
namespace {

using ::testing::HasSubstr;

std::string MlpPath() { return std::string(WEFT_TEST_DATA) + "/mlp.onnx"; }

// Every split of the core budget is timed at every batch size, the choice
// is the most throughput within the target, and the options it returns are
// the ones it explains.
TEST(ServingTuneTest, ChoosesTheMostThroughputWithinTheTarget) {
  ServingTuneOptions options;
  options.cores = 2;
  options.max_batch_size = 4;
  options.runs = 3;
  options.latency_target_ms = 1000;
  auto result = TuneServing(MlpPath(), options);
  ASSERT_TRUE(result.ok()) << result.status();
  std::set<std::tuple<int, int, int>> seen;
  for (const ServingCandidate& c : result->candidates) {
    EXPECT_LE(c.runners * c.intra, 2);
    EXPECT_GT(c.run_ms, 0);
    EXPECT_DOUBLE_EQ(c.throughput_rps, c.runners * c.batch * 1000 / c.run_ms);
    seen.insert({c.runners, c.intra, c.batch});
  }
  // (1, 1), (2, 1), (1, 2) at batches 1, 2, 4.
  EXPECT_EQ(seen.size(), 9u);
  const ServingCandidate& best =
      result->candidates[static_cast<size_t>(result->best)];
  for (const ServingCandidate& c : result->candidates) {
    if (c.p99_ms <= options.latency_target_ms) {
      EXPECT_LE(c.throughput_rps, best.throughput_rps);
    }
  }
  EXPECT_EQ(result->session.inter_op_parallelism_threads, best.runners);
  EXPECT_EQ(result->session.intra_op_parallelism_threads, best.intra);
  EXPECT_EQ(result->batching.max_batch_size, best.batch > 1 ? best.batch : 0);
  EXPECT_THAT(result->explanation,
              HasSubstr("batches of " + std::to_string(best.batch)));
}

// A target no setting meets: the lowest p99, said to be over the target.
TEST(ServingTuneTest, SaysWhenNoSettingMeetsTheTarget) {
  ServingTuneOptions options;
  options.cores = 1;
  options.max_batch_size = 2;
  options.runs = 3;
  options.latency_target_ms = 1e-9;
  auto result = TuneServing(MlpPath(), options);
  ASSERT_TRUE(result.ok()) << result.status();
  const ServingCandidate& best =
      result->candidates[static_cast<size_t>(result->best)];
  for (const ServingCandidate& c : result->candidates) {
    EXPECT_GE(c.p99_ms, best.p99_ms);
  }
  EXPECT_THAT(result->explanation, HasSubstr("no setting is within"));
}

TEST(ServingTuneTest, RefusesBadOptionsAndModels) {
  ServingTuneOptions options;
  options.latency_target_ms = 0;
  EXPECT_THAT(TuneServing(MlpPath(), options).status().message(),
              HasSubstr("latency target must be above 0"));
  options.latency_target_ms = 10;
  EXPECT_FALSE(TuneServing("/nonexistent/model.onnx", options).ok());
}

}  // namespace
}  // namespace weft::serve
