#include "framework/large_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <utility>

namespace weft::internal {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerAllocator = true;
#else
constexpr bool kSanitizerAllocator = false;
#endif
#else
constexpr bool kSanitizerAllocator = false;
#endif

constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;

size_t RoundUp(size_t bytes, size_t step) {
  return (bytes + step - 1) / step * step;
}

// The length of the mapping behind a mapped buffer of `bytes`: whole pages,
// not whole huge pages. The kernel backs the 2 MiB ranges the mapping
// covers with huge pages and the rest with small ones, so a buffer of
// 2.3 MiB stays 2.3 MiB resident, not 4.
size_t MappedLength(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return RoundUp(bytes, page);
}

// A mapping of `length` bytes (whole pages) starting on a multiple of
// 2 MiB, or null: 2 MiB more mapped, then the unaligned head and what is
// past `length` unmapped.
char* MapHugeAligned(size_t length) {
  void* mapped = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = RoundUp(start, kHugePage);
  const size_t head = aligned - start;
  if (head > 0) munmap(mapped, head);
  if (kHugePage - head > 0) {
    munmap(reinterpret_cast<void*>(aligned + length), kHugePage - head);
  }
  // Advice: where transparent huge pages are off, the mapping still works,
  // in 4 KiB pages.
  madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  return reinterpret_cast<char*>(aligned);
}

}  // namespace

bool LargeBuffer::Maps(size_t bytes) {
  return !kSanitizerAllocator && bytes >= kHugePage;
}

LargeBuffer::LargeBuffer(size_t bytes) : size_(bytes) {
  if (Maps(bytes)) {
    data_ = MapHugeAligned(MappedLength(bytes));
    mapped_ = data_ != nullptr;
  } else {
    data_ = static_cast<char*>(std::aligned_alloc(
        kAlignment, RoundUp(bytes > 0 ? bytes : 1, kAlignment)));
  }
  if (data_ == nullptr) size_ = 0;
}

LargeBuffer::~LargeBuffer() { Free(data_, size_, mapped_); }

LargeBuffer::LargeBuffer(LargeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)) {}

LargeBuffer& LargeBuffer::operator=(LargeBuffer&& other) noexcept {
  if (this != &other) {
    Free(data_, size_, mapped_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}

char* LargeBuffer::Release() {
  size_ = 0;
  mapped_ = false;
  return std::exchange(data_, nullptr);
}

void LargeBuffer::Free(char* p, size_t bytes, bool mapped) {
  if (p == nullptr) return;
  if (mapped) {
    munmap(p, MappedLength(bytes));
  } else {
    std::free(p);
  }
}

void* LargeBuffer::AllocateBlock(size_t bytes) {
  return LargeBuffer(bytes).Release();
}

void LargeBuffer::FreeBlock(void* p, size_t bytes) {
  // A block of `bytes` is a mapping exactly when Maps(bytes): the
  // constructor makes no other kind for that size.
  Free(static_cast<char*>(p), bytes, Maps(bytes));
}

}  // namespace weft::internal
