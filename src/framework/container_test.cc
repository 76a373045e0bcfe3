#include "weft/container.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace weft {
namespace {

using ::testing::HasSubstr;

TEST(ContainerTypeTest, FlagsComposeAndNamesRoundTrip) {
  const DataType seq = SequenceOf(DataType::kInt64);
  const DataType opt_seq = OptionalOf(seq);
  EXPECT_TRUE(IsSequenceType(seq));
  EXPECT_FALSE(IsOptionalType(seq));
  EXPECT_TRUE(IsOptionalType(opt_seq));
  EXPECT_FALSE(IsSequenceType(opt_seq));
  EXPECT_FALSE(IsContainerType(DataType::kInt64));
  EXPECT_EQ(ContainedType(opt_seq), seq);
  EXPECT_EQ(ContainedType(seq), DataType::kInt64);
  EXPECT_STREQ(DataTypeName(seq), "sequence(int64)");
  EXPECT_STREQ(DataTypeName(opt_seq), "optional(sequence(int64))");
  for (DataType t : kAllDataTypes) {
    for (DataType c :
         {SequenceOf(t), OptionalOf(t), OptionalOf(SequenceOf(t))}) {
      EXPECT_EQ(DataTypeFromName(DataTypeName(c)), c) << DataTypeName(c);
    }
  }
  EXPECT_STREQ(DataTypeName(SequenceOf(DataType::kString)), "sequence(string)");
  EXPECT_EQ(DataTypeFromName("sequence(sequence(int64))"), std::nullopt);
}

TEST(ContainerTest, SequenceHoldsItemsAndComparesThem) {
  Tensor a = Tensor::FromVector<float>({2}, {1, 2});
  Tensor b = Tensor::FromVector<float>({1}, {3});
  auto seq = MakeSequence(DataType::kFloat32, {a, b});
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(seq->dtype(), SequenceOf(DataType::kFloat32));
  ASSERT_EQ(SequenceItems(*seq).size(), 2u);
  EXPECT_EQ(SequenceItems(*seq)[1].data<float>(), b.data<float>());  // Shared.
  EXPECT_EQ(seq->DebugString(), "sequence(float32) of 2 items");

  auto same = MakeSequence(DataType::kFloat32,
                           {a, Tensor::FromVector<float>({1}, {3})});
  auto other = MakeSequence(DataType::kFloat32, {a});
  EXPECT_TRUE(seq->BitwiseEqual(*same));
  EXPECT_FALSE(seq->BitwiseEqual(*other));
}

TEST(ContainerTest, RefusesItemsOfAnotherDtypeAndNestedContainers) {
  auto mixed = MakeSequence(DataType::kFloat32, {Tensor::Scalar<float>(1),
                                                 Tensor::Scalar<int64_t>(2)});
  ASSERT_FALSE(mixed.ok());
  EXPECT_THAT(mixed.status().message(),
              HasSubstr("sequence item 1 is int64, expected float32"));
  auto empty = MakeSequence(DataType::kFloat32, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(MakeSequence(SequenceOf(DataType::kFloat32), {*empty}).ok());
  EXPECT_FALSE(MakeOptional(OptionalOf(DataType::kFloat32), std::nullopt).ok());
  EXPECT_FALSE(MakeOptional(DataType::kInt64, Tensor::Scalar<float>(1)).ok());
}

TEST(ContainerTest, OptionalIsEmptyOrHoldsItsValue) {
  auto none = MakeOptional(DataType::kFloat32, std::nullopt);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(OptionalValue(*none), nullptr);
  auto seq = MakeSequence(DataType::kInt32, {Tensor::Scalar<int32_t>(7)});
  auto some = MakeOptional(seq->dtype(), *seq);
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->dtype(), OptionalOf(SequenceOf(DataType::kInt32)));
  ASSERT_NE(OptionalValue(*some), nullptr);
  EXPECT_EQ(*SequenceItems(*OptionalValue(*some))[0].data<int32_t>(), 7);
}

TEST(ContainerTest, ContainerDtypesAreNotAllocated) {
  auto t = Tensor::Create(SequenceOf(DataType::kFloat32), Shape{});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("is made from its contents"));
}

}  // namespace
}  // namespace weft
