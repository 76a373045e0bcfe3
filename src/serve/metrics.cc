#include "serve/metrics.h"

#include <cstdio>
#include <utility>

namespace weft::serve {
namespace {

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string ModelLabel(const std::string& model) {
  std::string escaped;
  for (char c : model) {
    if (c == '\\' || c == '"') escaped += '\\';
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    escaped += c;
  }
  return "model=\"" + escaped + "\"";
}

void Help(std::string* out, const char* name, const char* type,
          const char* help) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name +
          " " + type + "\n";
}

std::vector<double> Exponential(double first, double factor, int count) {
  std::vector<double> bounds;
  for (double b = first; count-- > 0; b *= factor) bounds.push_back(b);
  return bounds;
}

}  // namespace

const char* FailureReason(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return "bad_request";
    case StatusCode::kResourceExhausted:
      return "queue_full";
    case StatusCode::kDeadlineExceeded:
      return "deadline";
    case StatusCode::kFailedPrecondition:
    case StatusCode::kCancelled:
      return "unavailable";
    case StatusCode::kNotFound:
      return "not_found";
    default:
      return "failed";
  }
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::Render(const std::string& name, const std::string& labels,
                       std::string* out) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? Number(bounds_[i]) : "+Inf";
    *out += name + "_bucket{" + labels + ",le=\"" + le + "\"} " +
            std::to_string(cumulative) + "\n";
  }
  *out += name + "_sum{" + labels + "} " + Number(sum_) + "\n";
  *out += name + "_count{" + labels + "} " + std::to_string(count_) + "\n";
}

Metrics::ModelCounters::ModelCounters()
    : queue_us(Exponential(50, 2, 16)),
      compute_us(Exponential(100, 2, 16)),
      batch_rows({1, 2, 4, 8, 16, 32, 64, 128, 256}) {}

Metrics::Metrics() = default;

void Metrics::RequestSucceeded(const std::string& model, double queue_us,
                               double compute_us) {
  std::lock_guard lock(mutex_);
  ModelCounters& counters = models_[model];
  ++counters.success;
  counters.queue_us.Observe(queue_us);
  counters.compute_us.Observe(compute_us);
}

void Metrics::RequestFailed(const std::string& model,
                            const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (model.empty()) {
    ++unrouted_failures_[reason];
  } else {
    ++models_[model].failures[reason];
  }
}

void Metrics::BatchRan(const std::string& model, int64_t rows) {
  std::lock_guard lock(mutex_);
  models_[model].batch_rows.Observe(static_cast<double>(rows));
}

void Metrics::InFlight(const std::string& model, int delta) {
  std::lock_guard lock(mutex_);
  models_[model].in_flight += delta;
}

std::string Metrics::Render(int core_budget, int threads_computing,
                            int inter_op_threads, int intra_op_threads) const {
  std::lock_guard lock(mutex_);
  std::string out;
  Help(&out, "weft_inference_requests_success_total", "counter",
       "Inference requests answered with outputs.");
  for (const auto& [model, c] : models_) {
    out += "weft_inference_requests_success_total{" + ModelLabel(model) + "} " +
           std::to_string(c.success) + "\n";
  }
  Help(&out, "weft_inference_requests_failure_total", "counter",
       "Requests answered with an error, by reason.");
  for (const auto& [model, c] : models_) {
    for (const auto& [reason, n] : c.failures) {
      out += "weft_inference_requests_failure_total{" + ModelLabel(model) +
             ",reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
    }
  }
  for (const auto& [reason, n] : unrouted_failures_) {
    out += "weft_inference_requests_failure_total{model=\"\",reason=\"" +
           reason + "\"} " + std::to_string(n) + "\n";
  }
  Help(&out, "weft_inference_queue_microseconds", "histogram",
       "Time a request waited in its model's queue.");
  for (const auto& [model, c] : models_) {
    c.queue_us.Render("weft_inference_queue_microseconds", ModelLabel(model),
                      &out);
  }
  Help(&out, "weft_inference_compute_microseconds", "histogram",
       "Time of the Run that computed a request (its whole batch).");
  for (const auto& [model, c] : models_) {
    c.compute_us.Render("weft_inference_compute_microseconds",
                        ModelLabel(model), &out);
  }
  Help(&out, "weft_inference_batch_size", "histogram",
       "Rows of each Run the batcher formed.");
  for (const auto& [model, c] : models_) {
    c.batch_rows.Render("weft_inference_batch_size", ModelLabel(model), &out);
  }
  Help(&out, "weft_inference_in_flight", "gauge",
       "Requests accepted and not yet answered.");
  for (const auto& [model, c] : models_) {
    out += "weft_inference_in_flight{" + ModelLabel(model) + "} " +
           std::to_string(c.in_flight) + "\n";
  }
  Help(&out, "weft_core_budget", "gauge",
       "Cores every request together may compute on.");
  out += "weft_core_budget " + std::to_string(core_budget) + "\n";
  Help(&out, "weft_threads_computing", "gauge",
       "Threads running a kernel now.");
  out += "weft_threads_computing " + std::to_string(threads_computing) + "\n";
  Help(&out, "weft_inter_op_threads", "gauge", "Threads of the inter-op pool.");
  out += "weft_inter_op_threads " + std::to_string(inter_op_threads) + "\n";
  Help(&out, "weft_intra_op_threads", "gauge",
       "Intra-op threads, counting the thread that runs the op.");
  out += "weft_intra_op_threads " + std::to_string(intra_op_threads) + "\n";
  return out;
}

}  // namespace weft::serve
