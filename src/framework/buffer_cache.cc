#include "framework/buffer_cache.h"

#include <bit>
#include <cstdlib>

namespace weft::internal {

size_t BufferSizeClass(size_t bytes) {
  constexpr size_t kFirstClass = size_t{128} << 10;
  if (bytes < kFirstClass) return bytes;
  const size_t step = std::bit_floor(bytes) / 8;
  const size_t rounded = (bytes + step - 1) / step * step;
  return rounded < bytes ? bytes : rounded;  // No wrap past SIZE_MAX.
}

void BufferCache::FreeWithStdFree(void* p, size_t /*bytes*/) { std::free(p); }

BufferCache::~BufferCache() {
  for (const Kept& kept : order_) free_(kept.p, kept.bytes);
}

void* BufferCache::Take(size_t bytes) {
  if (bytes < min_bytes_) return nullptr;
  MutexLock lock(mu_);
  auto it = by_size_.find(bytes);
  if (it == by_size_.end()) return nullptr;
  const Order::iterator newest = it->second.back();
  void* p = newest->p;
  it->second.pop_back();
  if (it->second.empty()) by_size_.erase(it);
  order_.erase(newest);
  cached_bytes_ -= bytes;
  return p;
}

void BufferCache::Give(void* p, size_t bytes) {
  if (bytes < min_bytes_ || bytes > max_bytes_) {
    free_(p, bytes);
    return;
  }
  MutexLock lock(mu_);
  while (cached_bytes_ + bytes > max_bytes_) {
    // The oldest buffer is the oldest of its size: the front of its list.
    const Kept oldest = order_.front();
    auto sized = by_size_.find(oldest.bytes);
    sized->second.pop_front();
    if (sized->second.empty()) by_size_.erase(sized);
    order_.pop_front();
    cached_bytes_ -= oldest.bytes;
    free_(oldest.p, oldest.bytes);
  }
  by_size_[bytes].push_back(order_.insert(order_.end(), Kept{p, bytes}));
  cached_bytes_ += bytes;
}

size_t BufferCache::cached_bytes() const {
  MutexLock lock(mu_);
  return cached_bytes_;
}

size_t BufferCache::cached_buffers() const {
  MutexLock lock(mu_);
  return order_.size();
}

}  // namespace weft::internal
