#include "weft/file_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace weft {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Bytes 0..255 over and over, `size` of them.
std::string Pattern(size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 7 % 251);
  return bytes;
}

TEST(ReadFileBytesTest, ARegularFileIsReadWholeAndExactly) {
  const fs::path path = fs::path(::testing::TempDir()) / "weft_read_bytes";
  for (size_t size : {size_t{0}, size_t{1}, size_t{65536}, size_t{3} << 20}) {
    SCOPED_TRACE(size);
    const std::string bytes = Pattern(size);
    std::ofstream(path, std::ios::binary) << bytes;
    auto read = ReadFileBytes(path.string(), "reading");
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_TRUE(*read == bytes);
  }
  fs::remove(path);
}

TEST(ReadFileBytesTest, APipeIsReadToItsEnd) {
  // stat gives no size for a pipe: it is read piece by piece.
  const fs::path path = fs::path(::testing::TempDir()) / "weft_read_fifo";
  fs::remove(path);
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  const std::string bytes = Pattern(200000);
  std::thread writer([&] { std::ofstream(path, std::ios::binary) << bytes; });
  auto read = ReadFileBytes(path.string(), "reading");
  writer.join();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(*read == bytes);
  fs::remove(path);
}

TEST(ReadFileBytesTest, MissingFilesAndFoldersAreErrorsWithTheSystemsReason) {
  auto missing = ReadFileBytes("/nonexistent/weft", "reading the model");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("reading the model: No such file or directory"));
  auto folder = ReadFileBytes(::testing::TempDir(), "reading the model");
  EXPECT_EQ(folder.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(folder.status().message(), HasSubstr("Is a directory"));
}

}  // namespace
}  // namespace weft
