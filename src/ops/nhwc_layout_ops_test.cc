// NchwToNhwc and NhwcToNchw: every element where Transpose puts it, for
// the few-channel images (1 to 4 channels, moved pixel by pixel) and for
// more channels (bytes in 16 x 16 tiles and the rest), float32 and uint8,
// and back again to the input.
// NhwcMaxPool: MaxPool's result, channels-last, for every channel count its
// blocks split differently (whole blocks of four vectors, single vectors,
// the channels past them), for windows wholly inside the plane (their taps
// at fixed offsets) and over its edges (only the taps inside).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "test_support/session_util.h"

namespace weft {
namespace {

TEST(NhwcLayoutOpsTest, BothDirectionsMatchTransposeForEveryChannelCount) {
  for (DataType dtype : {DataType::kFloat32, DataType::kUInt8}) {
    // 16, 33 and 64 channels: whole 16 x 16 byte tiles, and tiles with
    // channels and pixels (335 a plane, 64 a block) left over.
    for (int64_t channels : {1, 2, 3, 4, 5, 16, 17, 33, 64}) {
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

// The window shapes the models use (3 x 3 stride 2 padded, ResNet's) and
// the unusual ones: ceil_mode's partial windows, dilation, a 1-wide kernel.
struct PoolWindow {
  std::vector<int64_t> kernel, strides, pads, dilations;
  int64_t ceil_mode;
};

TEST(NhwcLayoutOpsTest, NhwcMaxPoolMatchesMaxPoolForEveryChannelCount) {
  const PoolWindow windows[] = {{{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0},
                                {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},
                                {{2, 3}, {1, 2}, {1, 0, 0, 1}, {2, 1}, 0},
                                {{1, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 0}};
  for (DataType dtype :
       {DataType::kFloat32, DataType::kUInt8, DataType::kInt8}) {
    for (int64_t channels : {1, 3, 16, 17, 64, 100, 259}) {
      const Shape shape{2, channels, 7, 9};
      Tensor values(DataType::kFloat32, shape);
      float* v = values.data<float>();
      for (int64_t i = 0; i < values.NumElements(); ++i) {
        v[i] = static_cast<float>((i * 7919) % 251) - 125.0f;
      }
      if (dtype == DataType::kFloat32) {
        // Every image's top row -inf: the windows inside it (the 1 x 2
        // kernel's) have -inf as their maximum, not the lowest float.
        for (int64_t i = 0; i < values.NumElements(); ++i) {
          if ((i / shape.dim(3)) % shape.dim(2) == 0) {
            v[i] = -std::numeric_limits<float>::infinity();
          }
        }
      }
      for (const PoolWindow& win : windows) {
        const AttrMap attrs = {{"kernel_shape", win.kernel},
                               {"strides", win.strides},
                               {"pads", win.pads},
                               {"dilations", win.dilations},
                               {"ceil_mode", win.ceil_mode}};
        const std::vector<int64_t> to_nhwc = {0, 2, 3, 1};
        Graph g;
        g.Placeholder("values", DataType::kFloat32, shape);
        test::MustAdd(g, {"x", "Cast", {"values"}, {{"to", dtype}}, ""});
        test::MustAdd(g,
                      {"x_nhwc", "Transpose", {"x"}, {{"perm", to_nhwc}}, ""});
        test::MustAdd(g, {"got", "NhwcMaxPool", {"x_nhwc"}, attrs, ""});
        test::MustAdd(g, {"pooled", "MaxPool", {"x"}, attrs, ""});
        test::MustAdd(
            g, {"want", "Transpose", {"pooled"}, {{"perm", to_nhwc}}, ""});
        for (int threads : {1, 2}) {
          SessionOptions options = test::PerSessionOptions(threads, threads);
          options.disabled_graph_passes = {"nhwc-layout"};
          auto session = test::MustCreate(g, options);
          const std::vector<Tensor> out =
              test::MustRun(*session, {"got", "want"}, {{"values", values}});
          const std::string where =
              std::string(DataTypeName(dtype)) + ", " +
              std::to_string(channels) + " channels, kernel " +
              std::to_string(win.kernel[0]) + "x" +
              std::to_string(win.kernel[1]) + ", ceil_mode " +
              std::to_string(win.ceil_mode) + ", " + std::to_string(threads) +
              " threads";
          ASSERT_EQ(out[0].shape(), out[1].shape()) << where;
          EXPECT_TRUE(out[0].BitwiseEqual(out[1])) << where;
          if (dtype == DataType::kFloat32 && win.kernel[0] == 1) {
            const std::vector<float> got = test::Values<float>(out[0]);
            EXPECT_EQ(std::count(got.begin(), got.end(),
                                 -std::numeric_limits<float>::infinity()),
                      2 * channels * 8)  // 2 images, 8 windows on row 0.
                << where;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft
