#include "data/dataset_node.h"

#include <utility>

#include "session/pools.h"

namespace weft::data::internal {
namespace {

using Clock = std::chrono::steady_clock;

class FunctionNode final : public DatasetNode {
 public:
  FunctionNode(std::string name,
               std::vector<std::shared_ptr<const DatasetNode>> inputs,
               StageMaker maker)
      : DatasetNode(std::move(name), std::move(inputs)),
        maker_(std::move(maker)) {}

 protected:
  StatusOr<std::unique_ptr<StageIterator>> MakeStage(
      const IteratorEnv& env,
      std::vector<std::unique_ptr<StageIterator>> inputs) const override {
    return maker_(env, std::move(inputs));
  }

 private:
  StageMaker maker_;
};

}  // namespace

StageStats StageCounters::Snapshot(const std::string& stage) const {
  StageStats stats;
  stats.stage = stage;
  stats.elements = elements_.load(std::memory_order_relaxed);
  stats.busy_seconds = static_cast<double>(busy_ns_.load()) * 1e-9;
  stats.wait_seconds = static_cast<double>(wait_ns_.load()) * 1e-9;
  stats.parallelism = parallelism_.load();
  stats.skipped = skipped_.load(std::memory_order_relaxed);
  stats.autotuned = autotuned_.load();
  return stats;
}

Status StageIterator::GetNext(Element* out, bool* end_of_sequence) {
  *end_of_sequence = false;
  excluded_ = std::chrono::nanoseconds{0};
  const Clock::time_point start = Clock::now();
  Status status = DoGetNext(out, end_of_sequence);
  const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(
      Clock::now() - start);
  if (elapsed > excluded_) counters_->AddBusy(elapsed - excluded_);
  if (status.ok() && !*end_of_sequence) counters_->AddElement();
  return status;
}

std::vector<StageStats> StageIterator::Stats() const {
  std::vector<StageStats> stats;
  weft::internal::MutexLock lock(inputs_mu_);
  for (const auto& input : inputs_) {
    std::vector<StageStats> upstream = input->Stats();
    stats.insert(stats.end(), upstream.begin(), upstream.end());
  }
  stats.push_back(counters_->Snapshot(stage_));
  return stats;
}

Status StageIterator::InputNext(size_t i, Element* out, bool* end_of_sequence) {
  const Clock::time_point start = Clock::now();
  Status status = inputs_[i]->GetNext(out, end_of_sequence);
  excluded_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
      Clock::now() - start);
  return status;
}

void StageIterator::ReportWait(std::chrono::nanoseconds ns) {
  excluded_ += ns;
  counters_->AddWait(ns);
}

}  // namespace weft::data::internal

namespace weft::data {

StatusOr<std::unique_ptr<internal::StageIterator>> DatasetNode::MakeIterator(
    const internal::IteratorEnv& env) const {
  std::vector<std::unique_ptr<internal::StageIterator>> inputs;
  inputs.reserve(inputs_.size());
  for (const auto& input : inputs_) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<internal::StageIterator> it,
                          input->MakeIterator(env));
    inputs.push_back(std::move(it));
  }
  return MakeStage(env, std::move(inputs));
}

}  // namespace weft::data

namespace weft::data::internal {

std::shared_ptr<const DatasetNode> MakeNode(
    std::string name, std::vector<std::shared_ptr<const DatasetNode>> inputs,
    StageMaker maker) {
  return std::make_shared<FunctionNode>(std::move(name), std::move(inputs),
                                        std::move(maker));
}

StatusOr<std::shared_ptr<ThreadPool>> DefaultPipelinePool(
    const SessionOptions& options) {
  WEFT_ASSIGN_OR_RETURN(weft::internal::SessionPools pools,
                        weft::internal::AcquireSessionPools(options));
  return pools.inter.empty() ? nullptr : pools.inter[0].pool;
}

}  // namespace weft::data::internal
