#include "serve/request_queue.h"

#include <algorithm>
#include <utility>

#include "weft/tensor_rows.h"

namespace weft::serve {
namespace {

bool Stackable(const PendingRequest& a, const PendingRequest& b) {
  if (a.inputs.size() != b.inputs.size()) return false;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    if (!SameRowShape(a.inputs[i], b.inputs[i])) return false;
  }
  return true;
}

int64_t RowsOf(const Batch& batch) {
  int64_t rows = 0;
  for (const auto& request : batch) rows += request->rows;
  return rows;
}

void AnswerExpired(const Batch& expired) {
  for (const auto& request : expired) {
    request->done(DeadlineExceededError(
                      "the request's timeout passed while it was queued; it "
                      "did not run"),
                  {});
  }
}

}  // namespace

RequestQueue::RequestQueue(const BatchingOptions& options, bool stackable,
                           int runners)
    : options_(options),
      max_rows_(stackable ? options.max_batch_size : 0),
      runners_(std::max(1, runners)),
      levels_(std::max(1, options.priority_levels)) {}

Status RequestQueue::Push(std::shared_ptr<PendingRequest> request) {
  if (max_rows_ > 0 && request->rows > max_rows_) {
    return InvalidArgumentError(
        "the request has " + std::to_string(request->rows) +
        " rows (its inputs' first dimension); the model's max_batch_size is " +
        std::to_string(max_rows_));
  }
  const int levels = static_cast<int>(levels_.size());
  int level = request->priority_level;
  if (level == 0) {
    level = options_.default_priority_level > 0
                ? options_.default_priority_level
                : levels;
  }
  if (level > levels) {
    return InvalidArgumentError("priority " + std::to_string(level) +
                                " is past the model's priority_levels (" +
                                std::to_string(levels) + ")");
  }
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      return FailedPreconditionError(
          "the model is unloading or the server "
          "is stopping");
    }
    if (QueuedLocked() >= static_cast<size_t>(options_.max_queue_size)) {
      return ResourceExhaustedError(
          "the model's queue is full (max_queue_size " +
          std::to_string(options_.max_queue_size) + ")");
    }
    request->priority_level = level;
    levels_[level - 1].push_back(std::move(request));
  }
  changed_.notify_all();
  return Status::OK();
}

size_t RequestQueue::QueuedLocked() const {
  size_t count = 0;
  for (const auto& level : levels_) count += level.size();
  return count;
}

size_t RequestQueue::size() const {
  std::lock_guard lock(mutex_);
  return QueuedLocked();
}

bool RequestQueue::IsPreferred(int64_t rows) const {
  return std::find(options_.preferred_batch_size.begin(),
                   options_.preferred_batch_size.end(),
                   rows) != options_.preferred_batch_size.end();
}

Batch RequestQueue::TakeExpiredLocked(Clock::time_point now) {
  Batch expired;
  for (auto& level : levels_) {
    for (auto it = level.begin(); it != level.end();) {
      if ((*it)->deadline && *(*it)->deadline <= now) {
        expired.push_back(std::move(*it));
        it = level.erase(it);
      } else {
        ++it;
      }
    }
  }
  return expired;
}

Batch RequestQueue::FormLocked(Clock::time_point now, bool* ready,
                               Clock::time_point* wake_at) {
  auto level = std::find_if(levels_.begin(), levels_.end(),
                            [](const auto& q) { return !q.empty(); });
  *ready = false;
  if (level == levels_.end()) return {};
  const std::shared_ptr<PendingRequest> head = level->front();
  if (max_rows_ == 0) {
    *ready = true;
    level->pop_front();
    return {head};
  }
  // This batch's share of the rows queued and running (the head always
  // goes, whatever its size).
  int64_t queued_rows = 0;
  for (size_t l = level - levels_.begin(); l < levels_.size(); ++l) {
    for (const auto& request : levels_[l]) queued_rows += request->rows;
  }
  const int64_t fair_share =
      (queued_rows + running_rows_ + runners_ - 1) / runners_;
  const int64_t limit = std::min(max_rows_, std::max(head->rows, fair_share));
  // Whether the batch is ready is decided on every request that could join
  // the head (in priority then arrival order, up to max_batch_size); what
  // it takes is those within the fair share.
  std::vector<std::pair<size_t, size_t>> members;  // (level, index)
  int64_t could_join = 0;
  int64_t rows = 0;
  for (size_t l = level - levels_.begin(); l < levels_.size(); ++l) {
    for (size_t i = 0; i < levels_[l].size(); ++i) {
      const PendingRequest& candidate = *levels_[l][i];
      if (could_join + candidate.rows > max_rows_) continue;
      if (!Stackable(*head, candidate)) continue;
      could_join += candidate.rows;
      if (rows + candidate.rows > limit) continue;
      rows += candidate.rows;
      members.emplace_back(l, i);
    }
  }
  const Clock::time_point due =
      head->arrival + std::chrono::microseconds(options_.max_queue_delay_us);
  *ready = could_join == max_rows_ || IsPreferred(could_join) || now >= due ||
           closed_;
  if (!*ready) {
    *wake_at = due;
    return {};
  }
  Batch batch;
  // Erase from the back so earlier indices stay valid.
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    auto& queue = levels_[it->first];
    batch.push_back(std::move(queue[it->second]));
    queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(it->second));
  }
  std::reverse(batch.begin(), batch.end());
  return batch;
}

Batch RequestQueue::NextBatch() {
  std::unique_lock lock(mutex_);
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (Batch expired = TakeExpiredLocked(now); !expired.empty()) {
      lock.unlock();
      AnswerExpired(expired);
      lock.lock();
      continue;
    }
    bool ready = false;
    Clock::time_point wake_at = Clock::time_point::max();
    Batch batch = FormLocked(now, &ready, &wake_at);
    if (ready) {
      running_rows_ += RowsOf(batch);
      return batch;
    }
    if (closed_ && QueuedLocked() == 0) return {};
    // Wake for the batching delay or the nearest deadline, whichever first.
    for (const auto& level : levels_) {
      for (const auto& request : level) {
        if (request->deadline) wake_at = std::min(wake_at, *request->deadline);
      }
    }
    if (wake_at == Clock::time_point::max()) {
      changed_.wait(lock);
    } else {
      changed_.wait_until(lock, wake_at);
    }
  }
}

void RequestQueue::Finished(const Batch& batch) {
  {
    std::lock_guard lock(mutex_);
    running_rows_ -= RowsOf(batch);
  }
  // A smaller fair share may make a waiting batch ready.
  changed_.notify_all();
}

void RequestQueue::Close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

Batch RequestQueue::TakeAll() {
  Batch all;
  {
    std::lock_guard lock(mutex_);
    for (auto& level : levels_) {
      for (auto& request : level) all.push_back(std::move(request));
      level.clear();
    }
  }
  changed_.notify_all();
  return all;
}

}  // namespace weft::serve
