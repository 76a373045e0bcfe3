#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "test_support/serve_data.h"
#include "weft/serve.h"

namespace weft::serve {
namespace {

using ::testing::HasSubstr;

// Every split of the core budget, the server's default among them, is
// timed at every batch size; the choice is within the target, keeps a lone
// request within 1.10x + 1 ms of the quickest split's, and is within 10% of
// the most throughput of such settings, the default split where one is that
// close, then the smallest batch; and the options it returns are the ones
// it explains.
TEST(ServingTuneTest, ChoosesTheDefaultSplitAndSmallestBatchNearTheMost) {
  ServingTuneOptions options;
  options.cores = 2;
  options.max_batch_size = 4;
  options.runs = 3;
  options.latency_target_ms = 1000;
  auto result = TuneServing(test::ServeTestMlpPath(), options);
  ASSERT_TRUE(result.ok()) << result.status();
  const std::set<std::pair<int, int>> splits = {{2, 1}, {1, 2}, {2, 2}};
  std::set<std::tuple<int, int, int>> seen;
  for (const ServingCandidate& c : result->candidates) {
    EXPECT_TRUE(splits.count({c.runners, c.intra}))
        << c.runners << " runners x " << c.intra << " intra";
    EXPECT_GT(c.run_ms, 0);
    EXPECT_GT(c.throughput_rps, 0);
    EXPECT_DOUBLE_EQ(c.p99_ms, 2 * c.run_ms);
    seen.insert({c.runners, c.intra, c.batch});
  }
  // Two runners of one thread, one Run of both cores, and the server's
  // default (two runners free to use both cores under the budget), at
  // batches 1, 2 and 4.
  EXPECT_EQ(seen.size(), 9u);
  EXPECT_EQ(result->candidates.size(), 9u);

  // A lone request's time: without batching the split's batch-1 Run (on
  // the default split, one Run of both cores); with batching a batch-1 Run
  // alone on the batch-invariant session, one figure per split.
  // (The quickest of those Runs, so at most their median.)
  const auto candidate = [&](int runners, int intra,
                             int batch) -> const ServingCandidate* {
    for (const ServingCandidate& c : result->candidates) {
      if (c.runners == runners && c.intra == intra && c.batch == batch) {
        return &c;
      }
    }
    return nullptr;
  };
  double quickest_alone = 1e30;
  for (const ServingCandidate& c : result->candidates) {
    const bool default_split = c.runners == 2 && c.intra == 2;
    if (c.batch == 1) {
      EXPECT_GT(c.alone_ms, 0);
      if (default_split) {
        const ServingCandidate* every_core = candidate(1, 2, 1);
        ASSERT_NE(every_core, nullptr);
        EXPECT_DOUBLE_EQ(c.alone_ms, every_core->alone_ms);
      } else {
        EXPECT_LE(c.alone_ms, c.run_ms);
      }
    } else {
      EXPECT_GT(c.alone_ms, 0);
      for (const ServingCandidate& other : result->candidates) {
        if (other.runners == c.runners && other.intra == c.intra &&
            other.batch > 1) {
          EXPECT_DOUBLE_EQ(other.alone_ms, c.alone_ms);
        }
      }
    }
    quickest_alone = std::min(quickest_alone, c.alone_ms);
  }
  const auto eligible = [&](const ServingCandidate& c) {
    return c.p99_ms <= options.latency_target_ms &&
           c.alone_ms <= 1.10 * quickest_alone + 1.0;
  };

  const ServingCandidate& best =
      result->candidates[static_cast<size_t>(result->best)];
  EXPECT_TRUE(eligible(best));
  double most = 0;
  for (const ServingCandidate& c : result->candidates) {
    if (eligible(c)) most = std::max(most, c.throughput_rps);
  }
  EXPECT_GE(best.throughput_rps * 1.10, most);
  const auto is_default = [](const ServingCandidate& c) {
    return c.runners == 2 && c.intra == 2;
  };
  for (const ServingCandidate& c : result->candidates) {
    if (!eligible(c) || c.throughput_rps * 1.10 < most) continue;
    if (is_default(c)) EXPECT_TRUE(is_default(best));
    if (is_default(c) == is_default(best)) EXPECT_LE(best.batch, c.batch);
  }
  EXPECT_EQ(result->session.inter_op_parallelism_threads, best.runners);
  EXPECT_EQ(result->session.intra_op_parallelism_threads, best.intra);
  EXPECT_EQ(result->batching.max_batch_size, best.batch > 1 ? best.batch : 0);
  EXPECT_EQ(result->batching.max_queue_delay_us, 0);
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
  auto result = TuneServing(test::ServeTestMlpPath(), options);
  ASSERT_TRUE(result.ok()) << result.status();
  const ServingCandidate& best =
      result->candidates[static_cast<size_t>(result->best)];
  for (const ServingCandidate& c : result->candidates) {
    EXPECT_GE(c.p99_ms, best.p99_ms);
    // One core: one split.
    EXPECT_EQ(c.runners, 1);
    EXPECT_EQ(c.intra, 1);
  }
  EXPECT_THAT(result->explanation, HasSubstr("no setting is within"));
}

// A typical request is what the tuner times: stacked b times for a batch
// of b. One that names no input of the model, or a scalar, is refused.
TEST(ServingTuneTest, TimesTheRequestGivenAndRefusesOneThatDoesNotFit) {
  ServingTuneOptions options;
  options.cores = 1;
  options.max_batch_size = 2;
  options.runs = 1;
  options.rounds = 1;
  options.latency_target_ms = 1000;
  auto two_rows = Tensor::Create(DataType::kFloat32, Shape({2, 4}));
  ASSERT_TRUE(two_rows.ok());
  options.request = {{"x", *two_rows}};
  auto result = TuneServing(test::ServeTestMlpPath(), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->candidates.size(), 2u);  // Batches of 1 and 2.
  EXPECT_THAT(result->explanation, ::testing::Not(HasSubstr("length 1")));
  // The batcher counts rows: two requests of two rows are four.
  const ServingCandidate& best =
      result->candidates[static_cast<size_t>(result->best)];
  EXPECT_EQ(result->batching.max_batch_size, best.batch > 1 ? 4 : 0);

  options.request = {{"nope", *two_rows}};
  EXPECT_THAT(TuneServing(test::ServeTestMlpPath(), options).status().message(),
              HasSubstr("the request names 'nope', which is not an input"));
  auto scalar = Tensor::Create(DataType::kFloat32, Shape({}));
  ASSERT_TRUE(scalar.ok());
  options.request = {{"x", *scalar}};
  EXPECT_THAT(TuneServing(test::ServeTestMlpPath(), options).status().message(),
              HasSubstr("is a scalar"));
}

TEST(ServingTuneTest, RefusesBadOptionsAndModels) {
  ServingTuneOptions options;
  options.latency_target_ms = 0;
  EXPECT_THAT(TuneServing(test::ServeTestMlpPath(), options).status().message(),
              HasSubstr("latency target must be above 0"));
  options.latency_target_ms = 10;
  EXPECT_FALSE(TuneServing("/nonexistent/model.onnx", options).ok());
  options.rounds = 0;
  EXPECT_THAT(TuneServing(test::ServeTestMlpPath(), options).status().message(),
              HasSubstr("rounds"));
}

}  // namespace
}  // namespace weft::serve
