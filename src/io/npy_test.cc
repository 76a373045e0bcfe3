#include "weft/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace weft::internal {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

template <class T>
Tensor Filled(const Shape& shape) {
  Tensor t(DataTypeOf<T>(), shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    t.data<T>()[i] = static_cast<T>(i % 7);
  }
  return t;
}

TEST(NpyTest, RoundTripsEveryDtypeAndRank) {
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{2, 0, 4}}) {
    for (const Tensor& t :
         {Filled<float>(shape), Filled<double>(shape), Filled<int32_t>(shape),
          Filled<int64_t>(shape), Filled<bool>(shape)}) {
      const std::string bytes = SerializeNpy(t);
      EXPECT_EQ((bytes.size() - t.size_bytes()) % 64, 0u);  // Aligned header.
      auto back = ParseNpy(bytes);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_TRUE(back->BitwiseEqual(t)) << t.DebugString();
    }
  }
}

TEST(NpyTest, WritesNumpyCompatibleHeader) {
  const std::string bytes = SerializeNpy(Filled<float>({2, 3}));
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  EXPECT_THAT(bytes, HasSubstr("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (2, 3), }"));
  EXPECT_THAT(SerializeNpy(Filled<int64_t>({4})), HasSubstr("'shape': (4,)"));
}

std::string WithHeader(const std::string& header, size_t data_bytes) {
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size());
  out += '\x00';
  out += header;
  out.append(data_bytes, '\0');
  return out;
}

TEST(NpyTest, MalformedFilesAreClearErrors) {
  EXPECT_THAT(ParseNpy("").status().message(), HasSubstr("bad magic"));
  EXPECT_THAT(ParseNpy("hello world, not numpy").status().message(),
              HasSubstr("bad magic"));
  EXPECT_THAT(ParseNpy(std::string("\x93NUMPY\x07\x00\x10\x00", 10) + "x")
                  .status()
                  .message(),
              HasSubstr("unsupported .npy version 7"));
  EXPECT_THAT(ParseNpy(WithHeader("{'descr': '<f4'}", 0)).status().message(),
              HasSubstr("needs 'descr', 'fortran_order' and 'shape'"));
  EXPECT_THAT(
      ParseNpy(
          WithHeader(
              "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 8))
          .status()
          .message(),
      AllOf(HasSubstr("unsupported .npy dtype '<c8'"), HasSubstr("|u1"),
            HasSubstr("<f2")));  // Every dtype read.
  EXPECT_THAT(
      ParseNpy(
          WithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
                     4))
          .status()
          .message(),
      HasSubstr("Fortran order"));
  EXPECT_THAT(
      ParseNpy(
          WithHeader(
              "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8))
          .status()
          .message(),
      HasSubstr("has 8 bytes"));
  EXPECT_THAT(
      ParseNpy(
          WithHeader(
              "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", 0))
          .status()
          .message(),
      HasSubstr("bad dimension '-3'"));
  EXPECT_THAT(ParseNpy(WithHeader("{'descr': '<f8', 'fortran_order': False, "
                                  "'shape': (9223372036854775807, 4), }",
                                  0))
                  .status()
                  .message(),
              HasSubstr("overflows"));
  EXPECT_THAT(ParseNpy(WithHeader("{'descr': '<f8', 'fortran_order': False, "
                                  "'shape': (4000000000000,), }",
                                  0))
                  .status()
                  .message(),
              HasSubstr("too large"));
  std::string truncated = SerializeNpy(Filled<float>({4}));
  truncated.resize(20);
  EXPECT_FALSE(ParseNpy(truncated).ok());
  EXPECT_EQ(ReadNpy("/nonexistent/x.npy").status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::internal
