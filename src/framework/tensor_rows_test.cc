#include "weft/tensor_rows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft {
namespace {

using ::testing::HasSubstr;

TEST(TensorRowsTest, JoinedRowsCutBackGiveTheSameBits) {
  const Tensor a = Tensor::FromVector<float>({1, 3}, {1.5f, -0.0f, 3.0f});
  const Tensor b = Tensor::FromVector<float>({2, 3}, {4, 5, 6, 7, 8, 9});
  StatusOr<Tensor> joined = ConcatRows({&a, &b});
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->shape(), Shape({3, 3}));
  EXPECT_TRUE(SliceRows(*joined, 0, 1).BitwiseEqual(a));  // -0 kept
  EXPECT_TRUE(SliceRows(*joined, 1, 3).BitwiseEqual(b));
  EXPECT_EQ(SliceRows(*joined, 2, 2).shape(), Shape({0, 3}));
}

TEST(TensorRowsTest, StringsAreCopiedElementByElement) {
  const Tensor a = Tensor::FromVector<std::string>({1}, {"first"});
  const Tensor b = Tensor::FromVector<std::string>({2}, {"", "third"});
  StatusOr<Tensor> joined = ConcatRows({&a, &b});
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(SliceRows(*joined, 2, 3).data<std::string>()[0], "third");
}

TEST(TensorRowsTest, RowsOfOtherShapesOrTypesAreNotJoined) {
  const Tensor a = Tensor::FromVector<float>({1, 3}, {1, 2, 3});
  const Tensor wide = Tensor::FromVector<float>({1, 4}, {1, 2, 3, 4});
  const Tensor ints = Tensor::FromVector<int32_t>({1, 3}, {1, 2, 3});
  EXPECT_TRUE(SameRowShape(a, a));
  EXPECT_FALSE(SameRowShape(a, wide));
  EXPECT_FALSE(SameRowShape(a, ints));
  EXPECT_FALSE(
      SameRowShape(Tensor::Scalar<float>(1), Tensor::Scalar<float>(1)));
  StatusOr<Tensor> joined = ConcatRows({&a, &wide});
  ASSERT_FALSE(joined.ok());
  EXPECT_THAT(joined.status().message(), HasSubstr("[1, 3] and [1, 4]"));
  EXPECT_FALSE(ConcatRows({}).ok());
}

}  // namespace
}  // namespace weft
