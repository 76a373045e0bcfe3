// Memory for large buffers: a model file's bytes while they are
// parsed, the weights copied out of them and packed from them, and the arena
// a Run's planned tensors share (runtime/memory_plan.h). From 2 MiB
// a buffer is an anonymous mapping of its own, aligned to 2 MiB and offered
// to transparent huge pages, so that its first writing takes a page fault
// per 2 MiB rather than per 4 KiB: on the Zen 5 KVM guest of 2026-12-03, a
// page fault cost about 11 us, and loading ResNet-18 (45 MB of weights)
// spent most of its time in them (docs/BENCHMARKS.md, "Loading a model").
//
// Tensor buffers too (AllocateBlock): a freed one goes to weft's buffer
// cache (framework/buffer_cache.h) and serves the next tensor of its size
// class without faulting, so a mapping is made once per buffer the cache
// keeps. A Dask worker's 5 MB result blocks took 1,251 faults each in
// 4 KiB pages (docs/BENCHMARKS.md, thirtieth session).
//
// Below 2 MiB, and in AddressSanitizer and ThreadSanitizer builds (whose
// allocators guard a block's edges), the memory is std::aligned_alloc's.
#ifndef WEFT_SRC_FRAMEWORK_LARGE_BUFFER_H_
#define WEFT_SRC_FRAMEWORK_LARGE_BUFFER_H_

#include <cstddef>

namespace weft::internal {

class LargeBuffer {
 public:
  LargeBuffer() = default;
  // `bytes` bytes, 64-byte aligned, contents unspecified; empty (data()
  // null) when the system has no memory for them.
  explicit LargeBuffer(size_t bytes);
  ~LargeBuffer();
  LargeBuffer(LargeBuffer&& other) noexcept;
  LargeBuffer& operator=(LargeBuffer&& other) noexcept;
  LargeBuffer(const LargeBuffer&) = delete;
  LargeBuffer& operator=(const LargeBuffer&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }
  // Whether the buffer is a mapping offered to huge pages.
  bool mapped() const { return mapped_; }
  // Whether a buffer of `bytes` is one (when the system has the memory).
  static bool Maps(size_t bytes);

  // Gives up ownership: the caller frees the memory with Free(p, size,
  // mapped) (for a tensor's release).
  char* Release();
  static void Free(char* p, size_t bytes, bool mapped);

  // The memory of a buffer of `bytes` without the object, for owners that
  // keep its size themselves (tensor buffers): null when the system has no
  // memory for it; freed by FreeBlock(p, bytes).
  static void* AllocateBlock(size_t bytes);
  static void FreeBlock(void* p, size_t bytes);

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_FRAMEWORK_LARGE_BUFFER_H_
