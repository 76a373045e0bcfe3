#include "serve/request_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace weft::serve {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// A request of `rows` rows of width `width`, recording how it was answered.
struct Probe {
  std::atomic<int> answers{0};
  Status status;
};

std::shared_ptr<PendingRequest> Request(int64_t rows, Probe* probe,
                                        int64_t width = 2) {
  auto request = std::make_shared<PendingRequest>();
  request->inputs.emplace_back(DataType::kFloat32, Shape{rows, width});
  request->rows = rows;
  request->arrival = Clock::now();
  request->done = [probe](Status status, const std::vector<Tensor>&) {
    probe->status = std::move(status);
    ++probe->answers;
  };
  return request;
}

BatchingOptions Batching(int max_batch_size, int64_t delay_us) {
  BatchingOptions options;
  options.max_batch_size = max_batch_size;
  options.max_queue_delay_us = delay_us;
  return options;
}

int64_t Rows(const Batch& batch) {
  int64_t rows = 0;
  for (const auto& request : batch) rows += request->rows;
  return rows;
}

TEST(RequestQueueTest, WithoutBatchingEachRequestIsItsOwnBatch) {
  RequestQueue queue(Batching(0, 0), /*stackable=*/true);
  Probe probe;
  ASSERT_TRUE(queue.Push(Request(3, &probe)).ok());
  ASSERT_TRUE(queue.Push(Request(3, &probe)).ok());
  EXPECT_EQ(queue.NextBatch().size(), 1u);
  EXPECT_EQ(queue.NextBatch().size(), 1u);
}

TEST(RequestQueueTest, AFullBatchLeavesWithoutWaitingForTheDelay) {
  RequestQueue queue(Batching(4, 60'000'000), true);
  Probe probe;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  const Batch batch = queue.NextBatch();  // Would block a minute if wrong.
  EXPECT_EQ(Rows(batch), 4);
  EXPECT_EQ(queue.size(), 1u);
}

TEST(RequestQueueTest, APreferredSizeLeavesAtOnce) {
  BatchingOptions options = Batching(8, 60'000'000);
  options.preferred_batch_size = {2};
  RequestQueue queue(options, true);
  Probe probe;
  ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  EXPECT_EQ(Rows(queue.NextBatch()), 2);
}

TEST(RequestQueueTest, APartialBatchWaitsForTheDelayThenLeaves) {
  // The delay is wide (half a second) because the late request comes from a
  // thread that has to start first: at 20 ms, a loaded CI machine under
  // ThreadSanitizer once started it after the batch had left.
  constexpr int64_t kDelayUs = 500'000;
  RequestQueue queue(Batching(8, kDelayUs), true);
  Probe probe;
  const auto start = Clock::now();
  ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  std::thread late([&] {
    std::this_thread::sleep_for(milliseconds(5));
    ASSERT_TRUE(queue.Push(Request(2, &probe)).ok());
  });
  const Batch batch = queue.NextBatch();
  late.join();
  EXPECT_GE(Clock::now() - start, microseconds(kDelayUs));
  EXPECT_EQ(Rows(batch), 3);  // The late request joined within the delay.
}

TEST(RequestQueueTest, RequestsOfOtherRowShapesWaitForTheirOwnBatch) {
  RequestQueue queue(Batching(8, 0), true);
  Probe probe;
  ASSERT_TRUE(queue.Push(Request(1, &probe, 2)).ok());
  ASSERT_TRUE(queue.Push(Request(1, &probe, 3)).ok());
  ASSERT_TRUE(queue.Push(Request(1, &probe, 2)).ok());
  EXPECT_EQ(Rows(queue.NextBatch()), 2);  // The two of width 2.
  EXPECT_EQ(Rows(queue.NextBatch()), 1);
}

TEST(RequestQueueTest, RefusesPastMaxQueueSizeAndPastMaxBatchSize) {
  BatchingOptions options = Batching(4, 0);
  options.max_queue_size = 2;
  RequestQueue queue(options, true);
  Probe probe;
  ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  const Status full = queue.Push(Request(1, &probe));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("max_queue_size 2"), std::string::npos);
  const Status wide = queue.Push(Request(5, &probe));
  EXPECT_EQ(wide.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(probe.answers, 0);  // A refused request is never answered later.
}

TEST(RequestQueueTest, ARequestWhoseDeadlinePassesInTheQueueNeverRuns) {
  RequestQueue queue(Batching(0, 0), true);
  Probe expired, kept;
  auto doomed = Request(1, &expired);
  doomed->deadline = Clock::now() - microseconds(1);
  ASSERT_TRUE(queue.Push(doomed).ok());
  ASSERT_TRUE(queue.Push(Request(1, &kept)).ok());
  const Batch batch = queue.NextBatch();
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_NE(batch[0], doomed);
  EXPECT_EQ(expired.answers, 1);
  EXPECT_EQ(expired.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(kept.answers, 0);
}

TEST(RequestQueueTest, HigherPriorityLevelsLeaveFirst) {
  BatchingOptions options = Batching(0, 0);
  options.priority_levels = 2;
  RequestQueue queue(options, true);
  Probe probe;
  auto low = Request(1, &probe);
  low->priority_level = 2;
  auto high = Request(1, &probe);
  high->priority_level = 1;
  ASSERT_TRUE(queue.Push(low).ok());
  ASSERT_TRUE(queue.Push(high).ok());
  EXPECT_EQ(queue.NextBatch()[0], high);
  EXPECT_EQ(queue.NextBatch()[0], low);
  auto beyond = Request(1, &probe);
  beyond->priority_level = 3;
  EXPECT_EQ(queue.Push(beyond).code(), StatusCode::kInvalidArgument);
}

TEST(RequestQueueTest, CloseHandsOutWhatIsQueuedThenEmptyBatches) {
  RequestQueue queue(Batching(8, 60'000'000), true);
  Probe probe;
  ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  queue.Close();
  EXPECT_EQ(queue.Push(Request(1, &probe)).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(Rows(queue.NextBatch()), 1);  // Not held for the delay.
  EXPECT_TRUE(queue.NextBatch().empty());
}

TEST(RequestQueueTest, FreeRunnersShareWhatIsQueued) {
  // Eight clients, two runners, batches of up to 8: four each, not eight on
  // one runner while the other waits.
  RequestQueue queue(Batching(8, 0), true, /*runners=*/2);
  Probe probe;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  const Batch first = queue.NextBatch();
  EXPECT_EQ(Rows(first), 4);
  const Batch second = queue.NextBatch();
  EXPECT_EQ(Rows(second), 4);
  EXPECT_EQ(queue.size(), 0u);
}

TEST(RequestQueueTest, RowsStillRunningCountTowardsTheShare) {
  RequestQueue queue(Batching(8, 0), true, /*runners=*/2);
  Probe probe;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  const Batch running = queue.NextBatch();
  ASSERT_EQ(Rows(running), 1);  // The other row is the other runner's.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  // Five queued, one running: a share of three.
  EXPECT_EQ(Rows(queue.NextBatch()), 3);
  queue.Finished(running);
  // Two queued, three running (not yet finished): the rest fits the share.
  EXPECT_EQ(Rows(queue.NextBatch()), 2);
}

TEST(RequestQueueTest, TheShareNeverSendsAPartialBatchBeforeItsDelay) {
  RequestQueue queue(Batching(8, 20'000), true, /*runners=*/2);
  Probe probe;
  const auto start = Clock::now();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  const Batch batch = queue.NextBatch();
  EXPECT_GE(Clock::now() - start, microseconds(20'000));
  EXPECT_EQ(Rows(batch), 2);
  EXPECT_EQ(queue.size(), 2u);
}

TEST(RequestQueueTest, ARequestLargerThanItsShareStillLeavesWhole) {
  RequestQueue queue(Batching(8, 0), true, /*runners=*/4);
  Probe probe;
  ASSERT_TRUE(queue.Push(Request(6, &probe)).ok());
  ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  EXPECT_EQ(Rows(queue.NextBatch()), 6);
  EXPECT_EQ(Rows(queue.NextBatch()), 1);
}

TEST(RequestQueueTest, OneRunnerTakesEverythingThatFits) {
  RequestQueue queue(Batching(8, 0), true, /*runners=*/1);
  Probe probe;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(queue.Push(Request(1, &probe)).ok());
  EXPECT_EQ(Rows(queue.NextBatch()), 6);
}

}  // namespace
}  // namespace weft::serve
