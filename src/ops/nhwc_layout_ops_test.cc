// NchwToNhwc and NhwcToNchw: every element where Transpose puts it, for
// the few-channel images (1 to 4 channels, moved pixel by pixel) and for
// more channels, float32 and uint8, and back again to the input.
#include <gtest/gtest.h>

#include "test_support/session_util.h"

namespace weft {
namespace {

TEST(NhwcLayoutOpsTest, BothDirectionsMatchTransposeForEveryChannelCount) {
  for (DataType dtype : {DataType::kFloat32, DataType::kUInt8}) {
    for (int64_t channels : {1, 2, 3, 4, 5, 17}) {
      const Shape shape{2, channels, 5, 67};
      Tensor values(DataType::kFloat32, shape);
      for (int64_t i = 0; i < values.NumElements(); ++i) {
        values.data<float>()[i] = static_cast<float>(i % 251);
      }
      Graph g;
      g.Placeholder("values", DataType::kFloat32, shape);
      test::MustAdd(g, {"x", "Cast", {"values"}, {{"to", dtype}}, ""});
      test::MustAdd(g, {"nhwc", "NchwToNhwc", {"x"}, {}, ""});
      test::MustAdd(g, {"transposed",
                        "Transpose",
                        {"x"},
                        {{"perm", std::vector<int64_t>{0, 2, 3, 1}}},
                        ""});
      test::MustAdd(g, {"back", "NhwcToNchw", {"nhwc"}, {}, ""});
      for (int threads : {1, 2}) {
        auto session =
            test::MustCreate(g, test::PerSessionOptions(threads, threads));
        const std::vector<Tensor> out =
            test::MustRun(*session, {"x", "nhwc", "transposed", "back"},
                          {{"values", values}});
        const std::string where = std::string(DataTypeName(dtype)) + ", " +
                                  std::to_string(channels) + " channels, " +
                                  std::to_string(threads) + " threads";
        EXPECT_EQ(out[1].shape(), (Shape{2, 5, 67, channels})) << where;
        EXPECT_TRUE(out[1].BitwiseEqual(out[2])) << where;
        EXPECT_TRUE(out[3].BitwiseEqual(out[0])) << where;
      }
    }
  }
}

}  // namespace
}  // namespace weft
