#include "runtime/run_cancellation.h"

#include <algorithm>
#include <vector>

#include "runtime/run_state.h"
#include "threading/mutex.h"

namespace weft {

struct RunCancellation::State {
  mutable internal::Mutex mu;
  bool cancelled WEFT_GUARDED_BY(mu) = false;
  // Runs executing now. Each unregisters before its RunState is released,
  // so Cancel() aborts only live ones.
  std::vector<internal::RunState*> runs WEFT_GUARDED_BY(mu);
};

RunCancellation::RunCancellation() : state_(std::make_unique<State>()) {}

RunCancellation::~RunCancellation() = default;

void RunCancellation::Cancel() {
  internal::MutexLock lock(state_->mu);
  state_->cancelled = true;
  for (internal::RunState* run : state_->runs) {
    // Abort takes the RunState's own lock, never this one: no cycle.
    run->Abort(CancelledError("the Run was cancelled (RunCancellation)"));
  }
}

void RunCancellation::Reset() {
  internal::MutexLock lock(state_->mu);
  state_->cancelled = false;
}

bool RunCancellation::cancelled() const {
  internal::MutexLock lock(state_->mu);
  return state_->cancelled;
}

bool RunCancellationInternal::Register(RunCancellation& cancellation,
                                       internal::RunState* run) {
  RunCancellation::State& state = *cancellation.state_;
  internal::MutexLock lock(state.mu);
  if (state.cancelled) return false;
  state.runs.push_back(run);
  return true;
}

void RunCancellationInternal::Unregister(RunCancellation& cancellation,
                                         internal::RunState* run) {
  RunCancellation::State& state = *cancellation.state_;
  internal::MutexLock lock(state.mu);
  auto it = std::find(state.runs.begin(), state.runs.end(), run);
  if (it != state.runs.end()) state.runs.erase(it);
}

}  // namespace weft
