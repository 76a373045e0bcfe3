#include "weft/prepared_weights.h"

#include <map>
#include <tuple>
#include <utility>

#include "threading/mutex.h"

namespace weft {

struct PreparedWeights::Impl {
  // What tells one constant from another: its buffer, dtype and shape (a
  // view of the same buffer with another shape is another constant).
  using Key = std::tuple<const void*, DataType, std::string, std::string>;
  struct Entry {
    Tensor source;  // Keeps the buffer, and so its address, taken.
    std::shared_ptr<const void> form;
    int64_t bytes = 0;
  };

  mutable internal::Mutex mu;
  std::map<Key, Entry> entries WEFT_GUARDED_BY(mu);
  int64_t bytes WEFT_GUARDED_BY(mu) = 0;
  int64_t reuses WEFT_GUARDED_BY(mu) = 0;
};

PreparedWeights::PreparedWeights() : impl_(std::make_unique<Impl>()) {}
PreparedWeights::~PreparedWeights() = default;

std::shared_ptr<const void> PreparedWeights::GetOrMakeErased(
    const Tensor& source, const std::string& recipe,
    const std::function<Made()>& make) {
  Impl::Key key{source.raw_data(), source.dtype(), source.shape().ToString(),
                recipe};
  internal::MutexLock lock(impl_->mu);
  if (auto it = impl_->entries.find(key); it != impl_->entries.end()) {
    ++impl_->reuses;
    return it->second.form;
  }
  // Under the lock: two compiles that want the same form make it once.
  Made made = make();
  if (made.form == nullptr) return nullptr;
  impl_->bytes += made.bytes;
  return impl_->entries
      .emplace(std::move(key), Impl::Entry{source, made.form, made.bytes})
      .first->second.form;
}

int64_t PreparedWeights::size() const {
  internal::MutexLock lock(impl_->mu);
  return static_cast<int64_t>(impl_->entries.size());
}

int64_t PreparedWeights::bytes() const {
  internal::MutexLock lock(impl_->mu);
  return impl_->bytes;
}

int64_t PreparedWeights::reuses() const {
  internal::MutexLock lock(impl_->mu);
  return impl_->reuses;
}

}  // namespace weft
