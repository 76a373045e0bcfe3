#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

StatusOr<Tensor> SequenceIndexOpsRunOne(const std::string& op, Tensor x,
                                        AttrMap attrs = {}) {
  return test::RunOneOutput(op, {std::move(x)}, std::move(attrs));
}

TEST(SequenceIndexOpsTest, NonZeroListsIndicesInRowMajorOrder) {
  auto y = SequenceIndexOpsRunOne(
      "NonZero", Tensor::FromVector<int32_t>({2, 3}, {0, 5, 0, 7, 0, 9}));
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->shape(), (Shape{2, 3}));
  EXPECT_EQ(test::Values<int64_t>(*y),
            (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));
  auto none =
      SequenceIndexOpsRunOne("NonZero", Tensor::FromVector<float>({2}, {0, 0}));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->shape(), (Shape{1, 0}));
}

TEST(SequenceIndexOpsTest, ReverseSequenceReversesEachPrefix) {
  Graph g;
  const std::string x =
      g.Const("x", Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  const std::string lens =
      g.Const("lens", Tensor::FromVector<int64_t>({2}, {3, 2}));
  ASSERT_TRUE(
      g.AddNode({"y",
                 "ReverseSequence",
                 {x, lens},
                 {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}},
                 ""})
          .ok());
  auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
  auto out = test::MustRun(*session, {"y"});
  EXPECT_EQ(test::Values<float>(out[0]),
            (std::vector<float>{3, 2, 1, 5, 4, 6}));

  Graph bad;
  const std::string bx =
      bad.Const("x", Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}));
  const std::string bl =
      bad.Const("lens", Tensor::FromVector<int64_t>({2}, {3, 1}));
  ASSERT_TRUE(bad.AddNode({"y", "ReverseSequence", {bx, bl}, {}, ""}).ok());
  auto bad_session = test::MustCreate(bad, test::PerSessionOptions(1, 1));
  std::vector<Tensor> unused;
  EXPECT_THAT(bad_session->Run({}, {"y"}, {}, &unused).message(),
              HasSubstr("sequence_lens[0] = 3 is outside [0, 2]"));
}

// NumPy's unique with every return_*: sorted, or in order of first
// occurrence; along an axis, whole slices compare lexicographically.
TEST(SequenceIndexOpsTest, UniqueValuesFirstIndicesInverseAndCounts) {
  Graph g;
  const std::string x =
      g.Const("x", Tensor::FromVector<float>({6}, {2, 1, 1, 3, 4, 3}));
  const std::string m =
      g.Const("m", Tensor::FromVector<int32_t>({3, 2}, {1, 0, 0, 1, 1, 0}));
  ASSERT_TRUE(
      g.AddNode({"sorted", "Unique", {x}, {{"has_axis", int64_t{0}}}, ""})
          .ok());
  ASSERT_TRUE(g.AddNode({"seen",
                         "Unique",
                         {x},
                         {{"has_axis", int64_t{0}}, {"sorted", int64_t{0}}},
                         ""})
                  .ok());
  ASSERT_TRUE(
      g.AddNode({"rows", "Unique", {m}, {{"axis", int64_t{0}}}, ""}).ok());
  auto session = test::MustCreate(g, test::PerSessionOptions(2, 2));
  auto out = test::MustRun(
      *session, {"sorted", "sorted:1", "sorted:2", "sorted:3", "seen", "seen:1",
                 "seen:2", "rows", "rows:2", "rows:3"});
  EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(test::Values<int64_t>(out[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(test::Values<int64_t>(out[2]),
            (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(test::Values<int64_t>(out[3]), (std::vector<int64_t>{2, 1, 2, 1}));
  EXPECT_EQ(test::Values<float>(out[4]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(test::Values<int64_t>(out[5]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(test::Values<int64_t>(out[6]),
            (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  // Rows [1, 0], [0, 1], [1, 0]: two distinct, [0, 1] first when sorted.
  EXPECT_EQ(out[7].shape(), (Shape{2, 2}));
  EXPECT_EQ(test::Values<int32_t>(out[7]), (std::vector<int32_t>{0, 1, 1, 0}));
  EXPECT_EQ(test::Values<int64_t>(out[8]), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(test::Values<int64_t>(out[9]), (std::vector<int64_t>{1, 2}));
}

// NaNs are one value, after every number (NumPy's unique, equal_nan=True).
TEST(SequenceIndexOpsTest, UniqueTakesNaNsAsOneValueAfterTheNumbers) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Graph g;
  const std::string x =
      g.Const("x", Tensor::FromVector<float>({6}, {2, nan, 1, nan, 2, 0}));
  ASSERT_TRUE(
      g.AddNode({"u", "Unique", {x}, {{"has_axis", int64_t{0}}}, ""}).ok());
  auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
  auto out = test::MustRun(*session, {"u", "u:1", "u:2", "u:3"});
  const std::vector<float> y = test::Values<float>(out[0]);
  ASSERT_EQ(y.size(), 4u);
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(y[1], 1);
  EXPECT_EQ(y[2], 2);
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(test::Values<int64_t>(out[1]), (std::vector<int64_t>{5, 2, 0, 1}));
  EXPECT_EQ(test::Values<int64_t>(out[2]),
            (std::vector<int64_t>{2, 3, 1, 3, 2, 0}));
  EXPECT_EQ(test::Values<int64_t>(out[3]), (std::vector<int64_t>{1, 1, 2, 2}));
}

}  // namespace
}  // namespace weft
