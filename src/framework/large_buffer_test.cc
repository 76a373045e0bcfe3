#include "framework/large_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "test_support/page_faults.h"

namespace weft::internal {
namespace {

constexpr size_t kOneMiB = size_t{1} << 20;

TEST(LargeBufferTest, BuffersOfEverySizeAreAlignedAndWritableWhole) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, 2 * kOneMiB - 1,
                       2 * kOneMiB, 5 * kOneMiB + 3}) {
    SCOPED_TRACE(bytes);
    LargeBuffer buffer(bytes);
    ASSERT_NE(buffer.data(), nullptr);
    EXPECT_EQ(buffer.size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % 64, 0u);
    EXPECT_EQ(buffer.mapped(), LargeBuffer::Maps(bytes));
    if (bytes == 0) continue;
    std::memset(buffer.data(), 0x5a, bytes);
    EXPECT_EQ(buffer.data()[bytes - 1], 0x5a);
  }
}

TEST(LargeBufferTest, FromTwoMiBABufferIsAHugePageAlignedMappingOfItsOwn) {
  EXPECT_FALSE(LargeBuffer::Maps(2 * kOneMiB - 1));
  if (!LargeBuffer::Maps(2 * kOneMiB)) {
    GTEST_SKIP() << "a sanitizer build: every buffer is the allocator's";
  }
  LargeBuffer buffer(3 * kOneMiB);
  ASSERT_TRUE(buffer.mapped());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % (2 * kOneMiB), 0u);
  if (test::TransparentHugePagesOff()) {
    GTEST_SKIP() << "transparent huge pages are off on this machine";
  }
  const int eligible = test::HugePageEligible(buffer.data());
  if (eligible < 0) GTEST_SKIP() << "smaps has no THPeligible line here";
  EXPECT_EQ(eligible, 1);
}

TEST(LargeBufferTest, MovedAndReleasedBuffersAreFreedOnce) {
  LargeBuffer first(4 * kOneMiB);
  char* const data = first.data();
  LargeBuffer second(std::move(first));
  EXPECT_EQ(first.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(second.data(), data);
  LargeBuffer third(100);
  third = std::move(second);  // Frees third's 100 bytes.
  EXPECT_EQ(third.data(), data);
  const bool mapped = third.mapped();
  const size_t size = third.size();
  char* released = third.Release();
  EXPECT_EQ(released, data);
  EXPECT_EQ(third.data(), nullptr);
  LargeBuffer::Free(released, size, mapped);
}

}  // namespace
}  // namespace weft::internal
