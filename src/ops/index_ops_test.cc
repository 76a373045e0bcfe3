// TopK's order: larger (or smaller) values first, equal values by index,
// and NaN ranked above every number, whatever k and wherever NaN stands.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test_support/session_util.h"

namespace weft {
namespace {

struct TopKResult {
  std::vector<float> values;
  std::vector<int64_t> indices;
};

TopKResult TopK(const std::vector<float>& x, int64_t k, bool largest) {
  Graph g;
  auto in = g.Const(
      "x", Tensor::FromVector<float>({static_cast<int64_t>(x.size())}, x));
  auto kk = g.Const("k", Tensor::FromVector<int64_t>({1}, {k}));
  test::MustAdd(g, {"top",
                    "TopK",
                    {in, kk},
                    {{"largest", AttrValue(int64_t{largest ? 1 : 0})}},
                    ""});
  auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
  const std::vector<Tensor> out = test::MustRun(*session, {"top:0", "top:1"});
  return {test::Values<float>(out[0]), test::Values<int64_t>(out[1])};
}

TEST(TopKTest, NaNRanksAboveEveryNumber) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {1, nan, 3, 2, nan, 3};
  const TopKResult largest = TopK(x, 4, true);
  EXPECT_EQ(largest.indices, (std::vector<int64_t>{1, 4, 2, 5}));
  EXPECT_TRUE(std::isnan(largest.values[0]) && std::isnan(largest.values[1]));
  EXPECT_EQ(largest.values[2], 3);
  EXPECT_EQ(largest.values[3], 3);
  const TopKResult smallest = TopK(x, 5, false);
  EXPECT_EQ(smallest.indices, (std::vector<int64_t>{0, 3, 2, 5, 1}));
  EXPECT_EQ(smallest.values[0], 1);
  EXPECT_TRUE(std::isnan(smallest.values[4]));
}

TEST(TopKTest, EqualValuesKeepTheLowerIndexFirst) {
  const TopKResult top = TopK({2, 5, 5, 1, 5}, 3, true);
  EXPECT_EQ(top.indices, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(top.values, (std::vector<float>{5, 5, 5}));
}

}  // namespace
}  // namespace weft
