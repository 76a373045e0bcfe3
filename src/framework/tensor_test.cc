#include "weft/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "weft/status.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

TEST(TensorTest, ScalarsVectorsAndZeroSize) {
  Tensor s = Tensor::Scalar<double>(2.5);
  EXPECT_EQ(s.dtype(), DataType::kFloat64);
  EXPECT_EQ(s.shape().rank(), 0);
  EXPECT_EQ(s.NumElements(), 1);
  EXPECT_EQ(s.data<double>()[0], 2.5);
  Tensor z(DataType::kInt64, {3, 0});
  EXPECT_EQ(z.NumElements(), 0);
  EXPECT_TRUE(z.IsInitialized());
  EXPECT_EQ(z.DebugString(), "int64[3, 0]");
}

TEST(TensorTest, BuffersAre64ByteAlignedAndZeroed) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64,
                         DataType::kInt32, DataType::kInt64, DataType::kBool}) {
    Tensor t(dtype, {7, 3});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
    const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
    for (size_t i = 0; i < t.size_bytes(); ++i) ASSERT_EQ(bytes[i], 0);
  }
}

TEST(TensorTest, CopiesShareTheBuffer) {
  Tensor a(DataType::kFloat32, {4});
  Tensor b = a;
  a.data<float>()[0] = 3;
  EXPECT_EQ(b.data<float>()[0], 3);
  EXPECT_TRUE(a.BitwiseEqual(b));
}

TEST(TensorTest, BadShapesAreErrorsNotCrashes) {
  auto negative = Tensor::Create(DataType::kFloat32, {2, -1});
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  auto overflow = Tensor::Create(DataType::kFloat32, {big, 4});
  EXPECT_FALSE(overflow.ok());
  auto too_large = Tensor::Create(DataType::kFloat64, {big});
  EXPECT_FALSE(too_large.ok());
  EXPECT_THAT(too_large.status().message(), HasSubstr("too large"));
}

TEST(TensorTest, DataTypeNames) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64,
                         DataType::kInt32, DataType::kInt64, DataType::kBool}) {
    EXPECT_EQ(DataTypeFromName(DataTypeName(dtype)), dtype);
  }
  EXPECT_EQ(DataTypeFromName("float16"), std::nullopt);
}

TEST(TensorTest, PartialShapes) {
  PartialShape p({2, -1});
  EXPECT_EQ(p.ToString(), "[2, ?]");
  EXPECT_TRUE(p.IsCompatibleWith(Shape{2, 9}));
  EXPECT_FALSE(p.IsCompatibleWith(Shape{3, 9}));
  EXPECT_FALSE(p.IsCompatibleWith(Shape{2}));
  EXPECT_TRUE(PartialShape::UnknownRank().IsCompatibleWith(Shape{1, 2, 3}));
}

TEST(StatusTest, CodesMessagesAndContext) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.ToString(), "OK");
  Status s = NotFoundError("no such node").WithContext("fetch 'x'");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: fetch 'x': no such node");
  StatusOr<int> value = 3;
  EXPECT_EQ(*value, 3);
  StatusOr<int> error = InvalidArgumentError("bad");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().message(), "bad");
}

}  // namespace
}  // namespace weft
