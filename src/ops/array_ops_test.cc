// CheckInRange: an integer tensor passed on when every element lies within
// its bounds, else an error naming what it is and which element is out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// x checked against [low, high]: the Run's status and, when it passed,
// the output.
Status CheckInRange(const Tensor& x, int64_t low, int64_t high,
                    Tensor* out = nullptr) {
  Graph g;
  g.Placeholder("x", x.dtype(), PartialShape(x.shape()));
  g.Const("low", Tensor::Scalar<int64_t>(low));
  g.Const("high", Tensor::Scalar<int64_t>(high));
  test::MustAdd(g, {"checked",
                    "CheckInRange",
                    {"x", "low", "high"},
                    {{"what", std::string("the widget counts")}},
                    ""});
  auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
  std::vector<Tensor> outputs;
  Status status = session->Run({{"x", x}}, {"checked"}, {}, &outputs);
  if (status.ok() && out != nullptr) *out = outputs[0];
  return status;
}

TEST(CheckInRangeTest, PassesItsInputOnOrSaysWhichElementIsOut) {
  const Tensor x = Tensor::FromVector<int32_t>({2, 2}, {0, 3, 1, 2});
  Tensor out;
  ASSERT_TRUE(CheckInRange(x, 0, 3, &out).ok());
  EXPECT_EQ(out.shape(), x.shape());
  EXPECT_TRUE(out.BitwiseEqual(x));

  const Status above = CheckInRange(x, 0, 2);
  EXPECT_EQ(above.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(above.message(),
              HasSubstr("the widget counts: element 1 is 3, outside [0, 2]"));
  const Status below =
      CheckInRange(Tensor::FromVector<int64_t>({3}, {5, 4, -1}), 0, 9);
  EXPECT_THAT(below.message(), HasSubstr("element 2 is -1, outside [0, 9]"));
  EXPECT_TRUE(CheckInRange(Tensor::FromVector<int64_t>({0}, {}), 1, 0).ok());
}

TEST(CheckInRangeTest, ABoundMustBeOneValue) {
  Graph g;
  g.Const("x", Tensor::FromVector<int64_t>({1}, {1}));
  g.Const("low", Tensor::FromVector<int64_t>({2}, {0, 0}));
  g.Const("high", Tensor::Scalar<int64_t>(4));
  test::MustAdd(g, {"checked", "CheckInRange", {"x", "low", "high"}, {}, ""});
  SessionOptions options = test::PerSessionOptions(1, 1);
  options.optimize_graph = false;
  auto session = test::MustCreate(g, options);
  std::vector<Tensor> outputs;
  const Status status = session->Run({}, {"checked"}, {}, &outputs);
  EXPECT_THAT(status.message(),
              HasSubstr("low must hold one value, got shape [2]"));
}

}  // namespace
}  // namespace weft
