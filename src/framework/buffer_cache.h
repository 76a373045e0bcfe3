// Freed tensor buffers kept for reuse, by exact size (src/framework/
// tensor.cc rounds its sizes to BufferSizeClass first). A fresh allocation of
// 128 KiB or more may be an mmap whose every page faults when first written
// (and is zeroed by the kernel); a buffer taken from here has its pages mapped.
//
// Bounded: buffers below min_bytes are not kept, and together the kept
// ones never exceed max_bytes. When a buffer given back would pass that,
// the buffers given back longest ago are freed first, so the cache follows
// the sizes in use (a server whose shapes change does not keep the first
// sizes it saw forever). Thread-safe.
#ifndef WEFT_SRC_FRAMEWORK_BUFFER_CACHE_H_
#define WEFT_SRC_FRAMEWORK_BUFFER_CACHE_H_

#include <cstddef>
#include <deque>
#include <list>
#include <unordered_map>

#include "threading/mutex.h"

namespace weft::internal {

// `bytes` rounded up to its size class: from 128 KiB, a multiple of an
// eighth of the largest power of two not above it (at most 12.5% more), so
// that buffers of nearby sizes (images of varying sides, sequences of
// varying lengths) are kept as one size and reused; below, `bytes` itself.
size_t BufferSizeClass(size_t bytes);

class BufferCache {
 public:
  // What frees a buffer the cache does not keep: `bytes` is the size it
  // was given back with.
  using FreeFunction = void (*)(void* p, size_t bytes);

  // Buffers go to `free_buffer` (std::free's by default) when not kept.
  BufferCache(size_t min_bytes, size_t max_bytes,
              FreeFunction free_buffer = &FreeWithStdFree)
      : min_bytes_(min_bytes), max_bytes_(max_bytes), free_(free_buffer) {}
  ~BufferCache();
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;

  // A kept buffer of exactly `bytes` (the one given back last), or null.
  void* Take(size_t bytes) WEFT_EXCLUDES(mu_);
  // Keeps `p` (`bytes` long, from the allocator free_buffer matches) or
  // frees it.
  void Give(void* p, size_t bytes) WEFT_EXCLUDES(mu_);

  size_t cached_bytes() const WEFT_EXCLUDES(mu_);
  size_t cached_buffers() const WEFT_EXCLUDES(mu_);

 private:
  struct Kept {
    void* p;
    size_t bytes;
  };
  using Order = std::list<Kept>;  // Oldest first.

  static void FreeWithStdFree(void* p, size_t bytes);

  const size_t min_bytes_;
  const size_t max_bytes_;
  const FreeFunction free_;
  mutable Mutex mu_;
  Order order_ WEFT_GUARDED_BY(mu_);
  // By size, each size's buffers oldest first.
  std::unordered_map<size_t, std::deque<Order::iterator>> by_size_
      WEFT_GUARDED_BY(mu_);
  size_t cached_bytes_ WEFT_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_FRAMEWORK_BUFFER_CACHE_H_
