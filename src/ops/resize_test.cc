// ONNX Resize's opset-18 attributes. Most cases run in the newer-opset
// suite against ONNX Runtime (tests/onnx/newer_opsets); these are the ones
// where weft follows the ONNX reference instead, with its values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// Resize of X [1, 8] along its last axis at `scale`, align_corners, with
// antialias.
StatusOr<Tensor> AntialiasedAlignCorners(const std::string& mode, float scale) {
  const Tensor x = Tensor::FromVector<float>({1, 8}, {1, 4, 2, 8, 5, 7, 3, 6});
  return test::RunOneOutput(
      "Resize", {x, Tensor::FromVector<float>({2}, {1.0f, scale})},
      {{"has_scales", true},
       {"mode", mode},
       {"antialias", int64_t{1}},
       {"coordinate_transformation_mode", std::string("align_corners")}});
}

// The values of onnx/reference/ops/op_resize.py (onnx f75469120) for these
// inputs, in double. (ONNX Runtime 1.30 gives others with align_corners.)
TEST(ResizeTest, AntialiasWithAlignCornersIsTheOnnxReferences) {
  struct Case {
    const char* mode;
    float scale;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {"linear", 0.5f, {1.75, 4.58333333, 5.75, 5.25}},
      {"linear", 0.375f, {1.77272727, 5.69047619, 5.40909091}},
      {"cubic", 0.5f, {1.5625, 4.78530093, 5.91840278, 5.15625}},
      {"cubic", 0.375f, {1.58829982, 5.97782822, 5.22815356}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.mode) + " " + std::to_string(c.scale));
    auto y = AntialiasedAlignCorners(c.mode, c.scale);
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->NumElements(), static_cast<int64_t>(c.want.size()));
    for (size_t i = 0; i < c.want.size(); ++i) {
      EXPECT_NEAR(y->data<float>()[i], c.want[i], 1e-6) << i;
    }
  }
}

TEST(ResizeTest, Opset18AttributesAreChecked) {
  const Tensor x = Tensor::FromVector<float>({1, 4}, {1, 2, 3, 4});
  const Tensor scales = Tensor::FromVector<float>({2}, {1.0f, 0.5f});
  EXPECT_THAT(test::RunOneOutput("Resize", {x, scales},
                                 {{"has_scales", true},
                                  {"mode", std::string("nearest")},
                                  {"antialias", int64_t{1}}})
                  .status()
                  .message(),
              HasSubstr("antialias applies to linear and cubic"));
  EXPECT_THAT(
      test::RunOneOutput("Resize", {x, scales},
                         {{"has_scales", true},
                          {"keep_aspect_ratio_policy", std::string("fit")}})
          .status()
          .message(),
      HasSubstr("keep_aspect_ratio_policy \"fit\""));
  EXPECT_THAT(test::RunOneOutput(
                  "Resize", {x, scales},
                  {{"has_scales", true}, {"axes", std::vector<int64_t>{1, -1}}})
                  .status()
                  .message(),
              HasSubstr("axes lists axis 1 twice"));
  // One axis listed: its scale alone, the other axis kept.
  auto y = test::RunOneOutput(
      "Resize", {x, Tensor::FromVector<float>({1}, {0.5f})},
      {{"has_scales", true}, {"axes", std::vector<int64_t>{-1}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 2}));
}

}  // namespace
}  // namespace weft
