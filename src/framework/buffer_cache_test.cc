#include "framework/buffer_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

namespace weft::internal {
namespace {

constexpr size_t kKiB = 1024;

void* Block(size_t bytes) { return std::malloc(bytes); }

TEST(BufferCacheTest, SizeClassesFrom128KiBAreEighthsOfAPowerOfTwo) {
  EXPECT_EQ(BufferSizeClass(1000), 1000u);  // Below 128 KiB: as asked.
  EXPECT_EQ(BufferSizeClass(128 * kKiB - 1), 128 * kKiB - 1);
  EXPECT_EQ(BufferSizeClass(128 * kKiB), 128 * kKiB);
  EXPECT_EQ(BufferSizeClass(128 * kKiB + 1), 144 * kKiB);  // Steps of 16 KiB
  EXPECT_EQ(BufferSizeClass(300 * kKiB), 320 * kKiB);      // of 32 KiB
  EXPECT_EQ(BufferSizeClass(320 * kKiB), 320 * kKiB);
  EXPECT_EQ(BufferSizeClass(1024 * kKiB + 1), 1152 * kKiB);
  for (size_t bytes = 128 * kKiB; bytes < 64 * kKiB * kKiB; bytes += 4099) {
    const size_t size_class = BufferSizeClass(bytes);
    ASSERT_GE(size_class, bytes);
    ASSERT_LE(size_class - bytes, bytes / 8);  // At most 12.5% more.
    ASSERT_EQ(BufferSizeClass(size_class), size_class);
  }
  const size_t huge = std::numeric_limits<size_t>::max() - 3;
  EXPECT_EQ(BufferSizeClass(huge), huge);  // Never wraps to a small size.
}

TEST(BufferCacheTest, GivesBackTheNewestBufferOfTheExactSize) {
  BufferCache cache(128 * kKiB, 4096 * kKiB);
  void* a = Block(256 * kKiB);
  void* b = Block(256 * kKiB);
  cache.Give(a, 256 * kKiB);
  cache.Give(b, 256 * kKiB);
  EXPECT_EQ(cache.Take(512 * kKiB), nullptr);  // No buffer of that size.
  EXPECT_EQ(cache.Take(256 * kKiB), b);
  EXPECT_EQ(cache.Take(256 * kKiB), a);
  EXPECT_EQ(cache.Take(256 * kKiB), nullptr);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  std::free(a);
  std::free(b);
}

TEST(BufferCacheTest, KeepsNothingBelowItsMinimumOrAboveItsMaximum) {
  BufferCache cache(128 * kKiB, 1024 * kKiB);
  cache.Give(Block(64 * kKiB), 64 * kKiB);      // Freed: too small.
  cache.Give(Block(2048 * kKiB), 2048 * kKiB);  // Freed: past the bound.
  EXPECT_EQ(cache.cached_buffers(), 0u);
  EXPECT_EQ(cache.Take(64 * kKiB), nullptr);
}

// Past its bound, the buffers given back longest ago go first, whatever
// their size: the cache follows the sizes in use (before 2026-12-03 it
// refused new buffers instead, and kept the first sizes forever).
TEST(BufferCacheTest, PastItsBoundTheOldestBuffersAreFreed) {
  BufferCache cache(128 * kKiB, 1024 * kKiB);
  void* old_a = Block(384 * kKiB);
  void* old_b = Block(256 * kKiB);
  void* kept = Block(256 * kKiB);
  cache.Give(old_a, 384 * kKiB);
  cache.Give(old_b, 256 * kKiB);
  cache.Give(kept, 256 * kKiB);
  EXPECT_EQ(cache.cached_bytes(), 896 * kKiB);
  void* fresh = Block(640 * kKiB);
  cache.Give(fresh, 640 * kKiB);  // Frees old_a (384) and old_b (256).
  EXPECT_EQ(cache.cached_bytes(), 896 * kKiB);
  EXPECT_EQ(cache.cached_buffers(), 2u);
  EXPECT_EQ(cache.Take(384 * kKiB), nullptr);
  EXPECT_EQ(cache.Take(256 * kKiB), kept);
  EXPECT_EQ(cache.Take(256 * kKiB), nullptr);
  EXPECT_EQ(cache.Take(640 * kKiB), fresh);
  std::free(kept);
  std::free(fresh);
}

// Freed buffers: every one the cache does not keep, and at its end every
// one it kept, goes to its deallocator with the size it was given with
// (tensor buffers are mappings whose unmapping needs their length).
std::vector<std::pair<void*, size_t>>& FreedBuffers() {
  static std::vector<std::pair<void*, size_t>> freed;
  return freed;
}

void RecordFree(void* p, size_t bytes) {
  FreedBuffers().emplace_back(p, bytes);
  std::free(p);
}

TEST(BufferCacheTest, WhatItDoesNotKeepGoesToItsDeallocatorWithItsSize) {
  std::vector<std::pair<void*, size_t>>& freed = FreedBuffers();
  freed.clear();
  void* small = Block(64 * kKiB);
  void* old = Block(512 * kKiB);
  void* newer = Block(384 * kKiB);
  {
    BufferCache cache(128 * kKiB, 1024 * kKiB, &RecordFree);
    cache.Give(small, 64 * kKiB);  // Below the minimum.
    cache.Give(old, 512 * kKiB);
    cache.Give(newer, 384 * kKiB);
    cache.Give(Block(256 * kKiB), 256 * kKiB);  // Pushes out `old`.
    ASSERT_EQ(freed.size(), 2u);
    EXPECT_EQ(freed[0], std::make_pair(small, 64 * kKiB));
    EXPECT_EQ(freed[1], std::make_pair(old, 512 * kKiB));
  }
  // The cache's end freed the two it kept.
  ASSERT_EQ(freed.size(), 4u);
  EXPECT_EQ(
      std::count(freed.begin(), freed.end(), std::make_pair(newer, 384 * kKiB)),
      1);
}

TEST(BufferCacheTest, ThreadsGiveAndTakeWithoutLosingABuffer) {
  BufferCache cache(128 * kKiB, 64 * 1024 * kKiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      const size_t bytes = (128 + 64 * static_cast<size_t>(t % 2)) * kKiB;
      for (int i = 0; i < 500; ++i) {
        void* p = cache.Take(bytes);
        if (p == nullptr) p = Block(bytes);
        static_cast<char*>(p)[bytes - 1] = static_cast<char>(i);
        cache.Give(p, bytes);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Each thread holds at most one buffer at a time, so at most four exist.
  EXPECT_LE(cache.cached_buffers(), 4u);
  EXPECT_GE(cache.cached_buffers(), 1u);
}

}  // namespace
}  // namespace weft::internal
