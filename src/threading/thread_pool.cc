#include "weft/thread_pool.h"

#include <utility>

#include "threading/thread_pool_internal.h"

namespace weft {
namespace {

class FunctionTask final : public internal::Task {
 public:
  explicit FunctionTask(std::function<void()> fn) : fn_(std::move(fn)) {}
  void Run() override {
    std::unique_ptr<FunctionTask> self(this);  // Freed even if fn_ throws.
    fn_();
  }

 private:
  std::function<void()> fn_;
};

}  // namespace

ThreadPool::ThreadPool(ThreadPoolOptions options)
    : core_(std::make_unique<Core>(std::move(options))) {}

ThreadPool::~ThreadPool() = default;

void ThreadPool::Schedule(std::function<void()> fn) {
  core_->Schedule(new FunctionTask(std::move(fn)));
}

int ThreadPool::NumThreads() const { return core_->NumThreads(); }

int ThreadPool::CurrentThreadIndex() const {
  return core_->CurrentThreadIndex();
}

const ThreadPoolOptions& ThreadPool::options() const {
  return core_->options();
}

}  // namespace weft
