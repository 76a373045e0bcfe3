#include "data/autotune.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace weft::data::internal {
namespace {

// Over the mean need, for the spread of the calls' times: an in-order
// parallel Map hands out its oldest call, so one slow call holds the rest.
constexpr double kNeedMargin = 1.25;

// How often the knobs are set: at least this long and this many elements
// since the last time, so that a period's means are worth acting on.
constexpr std::chrono::milliseconds kTunePeriod{50};
constexpr int64_t kTuneMinElements = 4;

using Clock = std::chrono::steady_clock;

class TunedIterator final : public Iterator {
 public:
  TunedIterator(std::unique_ptr<StageIterator> root,
                std::shared_ptr<Autotuner> tuner)
      : root_(std::move(root)), tuner_(std::move(tuner)) {}

  Status GetNext(Element* out, bool* end_of_sequence) override {
    const Clock::time_point called = Clock::now();
    if (returned_.has_value()) {
      const auto own = called - *returned_;
      consumer_ns_.fetch_add(
          std::chrono::duration_cast<std::chrono::nanoseconds>(own).count(),
          std::memory_order_relaxed);
      period_consumer_ += own;
    } else {
      period_start_ = called;
    }
    Status status = root_->GetNext(out, end_of_sequence);
    returned_ = Clock::now();
    if (status.ok() && !*end_of_sequence) {
      consumed_.fetch_add(1, std::memory_order_relaxed);
      ++period_elements_;
    }
    if (period_elements_ >= kTuneMinElements &&
        *returned_ - period_start_ >= kTunePeriod) {
      tuner_->Tune(period_elements_,
                   std::chrono::duration<double>(period_consumer_).count());
      period_elements_ = 0;
      period_consumer_ = Clock::duration::zero();
      period_start_ = *returned_;
    }
    return status;
  }

  std::vector<StageStats> Stats() const override {
    std::vector<StageStats> stats = root_->Stats();
    const int64_t consumed = consumed_.load(std::memory_order_relaxed);
    const double per_element =
        consumed > 0 ? 1e-9 *
                           static_cast<double>(
                               consumer_ns_.load(std::memory_order_relaxed)) /
                           static_cast<double>(consumed)
                     : 0;
    MarkBottleneck(&stats, tuner_->budget(), per_element);
    return stats;
  }

 private:
  std::unique_ptr<StageIterator> root_;
  std::shared_ptr<Autotuner> tuner_;
  // The consumer's thread alone calls GetNext and owns the period's
  // figures; Stats() may be called from another thread, hence the atomics.
  std::optional<Clock::time_point> returned_;
  Clock::time_point period_start_;
  Clock::duration period_consumer_{0};
  int64_t period_elements_ = 0;
  std::atomic<int64_t> consumer_ns_{0}, consumed_{0};
};

}  // namespace

std::vector<int> PlanParallelism(const std::vector<StageLoad>& stages,
                                 double consumer_seconds, int budget) {
  budget = std::max(budget, 1);
  std::vector<int> plan(stages.size(), 1);
  if (stages.empty()) return plan;

  // What each stage needs so that the consumer never waits.
  if (consumer_seconds > 0) {
    int64_t needed = 0;
    for (size_t i = 0; i < stages.size(); ++i) {
      const double need =
          std::ceil(kNeedMargin * std::max(stages[i].work_per_output, 0.0) /
                    consumer_seconds);
      plan[i] = static_cast<int>(
          std::clamp<double>(need, 1, std::max(1, stages[i].max_parallelism)));
      needed += plan[i];
    }
    if (needed <= budget) return plan;
  }

  // Not enough threads: each stage's share of the budget in proportion to
  // its work, at least 1, the remainder to the largest fractions.
  double total_work = 0;
  for (const StageLoad& s : stages) {
    total_work += std::max(s.work_per_output, 0.0);
  }
  std::vector<double> exact(stages.size(), 0);
  int given = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    exact[i] =
        total_work > 0
            ? budget * std::max(stages[i].work_per_output, 0.0) / total_work
            : static_cast<double>(budget) / static_cast<double>(stages.size());
    plan[i] = std::clamp(static_cast<int>(exact[i]), 1,
                         std::max(1, stages[i].max_parallelism));
    given += plan[i];
  }
  std::vector<size_t> order(stages.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return exact[a] - std::floor(exact[a]) > exact[b] - std::floor(exact[b]);
  });
  for (size_t i : order) {
    if (given >= budget) break;
    if (plan[i] < stages[i].max_parallelism && plan[i] < exact[i] + 1) {
      ++plan[i];
      ++given;
    }
  }
  return plan;
}

int PlanBuffer(int current, int max, bool consumer_waited,
               bool producer_idled) {
  if (consumer_waited && producer_idled) {
    return std::min(max, std::max(1, current) * 2);
  }
  return current;
}

TunedStage::TunedStage(Kind kind, std::shared_ptr<StageCounters> counters,
                       int initial, int max)
    : kind(kind),
      counters(std::move(counters)),
      max(std::max(1, max)),
      value(std::clamp(initial, 1, std::max(1, max))) {
  this->counters->SetParallelism(value.load());
  this->counters->SetAutotuned();
}

Autotuner::Autotuner(int budget, bool enabled)
    : budget_(std::max(budget, 1)), enabled_(enabled) {}

std::shared_ptr<TunedStage> Autotuner::Register(
    TunedStage::Kind kind, std::shared_ptr<StageCounters> counters, int initial,
    int max) {
  auto stage =
      std::make_shared<TunedStage>(kind, std::move(counters), initial, max);
  weft::internal::MutexLock lock(mu_);
  entries_.push_back({stage, stage->counters->Snapshot(""), 0});
  return stage;
}

void Autotuner::Tune(int64_t elements, double consumer_seconds) {
  if (elements <= 0 || !enabled_) return;
  const double consumer_per_element =
      consumer_seconds / static_cast<double>(elements);
  weft::internal::MutexLock lock(mu_);
  // Stages gone with their pass's round are dropped.
  std::erase_if(entries_, [](const Entry& e) { return e.stage.expired(); });
  std::vector<std::shared_ptr<TunedStage>> parallel;
  std::vector<StageLoad> loads;
  for (Entry& entry : entries_) {
    std::shared_ptr<TunedStage> stage = entry.stage.lock();
    if (stage == nullptr) continue;
    const StageStats now = stage->counters->Snapshot("");
    const double busy = now.busy_seconds - entry.last.busy_seconds;
    const double waited = now.wait_seconds - entry.last.wait_seconds;
    const int64_t idle = stage->idle_ns.load(std::memory_order_relaxed);
    const bool idled = idle > entry.last_idle_ns;
    entry.last = now;
    entry.last_idle_ns = idle;
    if (stage->kind == TunedStage::Kind::kBuffer) {
      const int next =
          PlanBuffer(stage->value.load(), stage->max, waited > 0, idled);
      stage->value.store(next);
      stage->counters->SetParallelism(next);
      continue;
    }
    parallel.push_back(stage);
    loads.push_back(
        {std::max(busy, 0.0) / static_cast<double>(elements), stage->max});
  }
  const std::vector<int> plan =
      PlanParallelism(loads, consumer_per_element, budget_);
  for (size_t i = 0; i < parallel.size(); ++i) {
    parallel[i]->value.store(plan[i]);
    parallel[i]->counters->SetParallelism(plan[i]);
  }
}

void MarkBottleneck(std::vector<StageStats>* stats, int budget,
                    double consumer_seconds_per_element) {
  if (stats->empty() || stats->back().elements <= 0) return;
  const double consumed = static_cast<double>(stats->back().elements);
  StageStats* slowest = nullptr;
  double slowest_time = consumer_seconds_per_element;
  for (StageStats& s : *stats) {
    const int threads = std::clamp(s.parallelism, 1, std::max(budget, 1));
    const double time = s.busy_seconds / consumed / threads;
    if (time > slowest_time) {
      slowest_time = time;
      slowest = &s;
    }
  }
  if (slowest != nullptr) slowest->bottleneck = true;
}

}  // namespace weft::data::internal

namespace weft::data::internal {

std::unique_ptr<Iterator> MakeTunedIterator(std::unique_ptr<StageIterator> root,
                                            std::shared_ptr<Autotuner> tuner) {
  return std::make_unique<TunedIterator>(std::move(root), std::move(tuner));
}

}  // namespace weft::data::internal
