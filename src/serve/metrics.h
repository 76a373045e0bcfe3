// The server's counters, rendered in Prometheus' text exposition format
// for GET /metrics: requests and failures by model and reason, queue and
// compute time, batch sizes, requests in flight.
#ifndef WEFT_SRC_SERVE_METRICS_H_
#define WEFT_SRC_SERVE_METRICS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "weft/status.h"

namespace weft::serve {

// The failure label of /metrics for an error: "bad_request", "queue_full",
// "deadline", "unavailable", "not_found" or "failed".
const char* FailureReason(const Status& status);

// Cumulative buckets with fixed upper bounds, as Prometheus histograms.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  // "name_bucket{labels,le=...} n" lines, then _sum and _count.
  void Render(const std::string& name, const std::string& labels,
              std::string* out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t>
      counts_;  // counts_[i]: values <= bounds_[i]; +Inf last.
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();

  void RequestSucceeded(const std::string& model, double queue_us,
                        double compute_us);
  // `reason`: "bad_request", "queue_full", "deadline", "unavailable",
  // "failed", "not_found", "unauthorized", "too_large".
  void RequestFailed(const std::string& model, const std::string& reason);
  void BatchRan(const std::string& model, int64_t rows);
  void InFlight(const std::string& model, int delta);

  // The exposition text, with gauges the caller samples now.
  std::string Render(int core_budget, int threads_computing,
                     int inter_op_threads, int intra_op_threads) const;

 private:
  struct ModelCounters {
    uint64_t success = 0;
    std::map<std::string, uint64_t> failures;
    Histogram queue_us;
    Histogram compute_us;
    Histogram batch_rows;
    int64_t in_flight = 0;
    ModelCounters();
  };

  mutable std::mutex mutex_;
  std::map<std::string, ModelCounters> models_;
  std::map<std::string, uint64_t> unrouted_failures_;  // No model named.
};

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_METRICS_H_
