// A model's queue of accepted requests and the dynamic batcher over it
// (Triton's dynamic_batching, docs/serving.md): the threads that run the
// model take whole batches from it.
//
// A batch is formed from the oldest request of the highest priority level
// and the queued requests that can be stacked with it (same dims past the
// first), in priority then arrival order, up to max_batch_size rows. It is
// handed out as soon as it is full, or reaches a preferred size, or its
// oldest request has waited max_queue_delay_us, or the queue is closing.
// Where several runners take from the queue, a batch handed out takes at
// most a fair share of the rows queued and running, ceil((queued +
// running) / runners), and leaves the rest queued for the others: one free
// runner taking all eight queued requests while the other waits runs at
// half the throughput of four and four.
// A request whose deadline passes while queued is answered with
// DeadlineExceeded and never runs.
#ifndef WEFT_SRC_SERVE_REQUEST_QUEUE_H_
#define WEFT_SRC_SERVE_REQUEST_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "weft/serve.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::serve {

using Clock = std::chrono::steady_clock;

// One accepted request, from the network thread that parsed it to the
// thread that runs it and back.
struct PendingRequest {
  std::vector<Tensor> inputs;        // One per model input, in signature order.
  std::vector<std::string> fetches;  // Output names, in the order sent.
  int64_t rows = 1;        // First dimension of its inputs (when batching).
  int priority_level = 1;  // 1 is the highest.
  Clock::time_point arrival;
  std::optional<Clock::time_point> deadline;
  uint64_t sequence = 0;  // Arrival order at the model.
  // Called once, from whichever thread finishes the request, with one
  // tensor per fetch on success.
  std::function<void(Status, std::vector<Tensor>)> done;
};

using Batch = std::vector<std::shared_ptr<PendingRequest>>;

class RequestQueue {
 public:
  // `stackable`: the model's inputs all have an open first dimension, so
  // requests may be joined along it (only then does max_batch_size > 0
  // batch). `runners`: how many threads take batches from it.
  RequestQueue(const BatchingOptions& options, bool stackable, int runners = 1);

  // Queues the request, resolving its priority level. Fails with
  // ResourceExhausted when max_queue_size requests wait already,
  // InvalidArgument when it has more rows than max_batch_size, and
  // Unavailable-like FailedPrecondition once closed.
  Status Push(std::shared_ptr<PendingRequest> request);

  // Blocks until a batch is ready and returns it; an empty batch once the
  // queue is closed and empty. Expired requests met on the way are answered
  // (outside the lock) and dropped.
  Batch NextBatch();
  // A runner has finished a batch NextBatch gave it: its rows no longer
  // count towards the fair share.
  void Finished(const Batch& batch);

  // Refuses new requests; NextBatch hands out what is queued at once, then
  // empty batches.
  void Close();
  // Removes and returns every queued request (a drain that ran out of
  // time).
  Batch TakeAll();

  size_t size() const;
  bool batching() const { return max_rows_ > 0; }

 private:
  // Where each queued request could go in the batch led by the oldest
  // request of the highest level, and whether that batch is ready now;
  // sets *wake_at when not.
  Batch FormLocked(Clock::time_point now, bool* ready,
                   Clock::time_point* wake_at);
  Batch TakeExpiredLocked(Clock::time_point now);
  bool IsPreferred(int64_t rows) const;
  size_t QueuedLocked() const;

  const BatchingOptions options_;
  const int64_t max_rows_;  // 0: every request alone.
  const int runners_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // One queue per priority level, [0] the highest.
  std::vector<std::deque<std::shared_ptr<PendingRequest>>> levels_;
  int64_t running_rows_ = 0;  // Handed out by NextBatch, not yet Finished.
  bool closed_ = false;
};

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_REQUEST_QUEUE_H_
