#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// NonMaxSuppression over boxes, scores and the optional limits, at one
// and two threads (bitwise equal).
StatusOr<Tensor> Nms(Tensor boxes, Tensor scores, std::vector<Tensor> limits,
                     int64_t center_point_box = 0) {
  std::vector<Tensor> inputs = {std::move(boxes), std::move(scores)};
  for (Tensor& limit : limits) inputs.push_back(std::move(limit));
  return test::RunOneOutput("NonMaxSuppression", std::move(inputs),
                            {{"center_point_box", center_point_box}});
}

// Three boxes: 0 and 1 overlap by IoU 0.81 (the second given with its
// corners flipped), 2 is apart. By score 1 (0.9) goes first and
// suppresses 0 (0.8); 2 (0.3) stays unless the score threshold drops it.
TEST(DetectionOpsTest, NonMaxSuppressionKeepsTheBestOfOverlappingBoxes) {
  const Tensor boxes = Tensor::FromVector<float>(
      {1, 3, 4}, {0, 0, 10, 10, 10, 10, 1, 1, 20, 20, 30, 30});
  const Tensor scores =
      Tensor::FromVector<float>({1, 1, 3}, {0.8f, 0.9f, 0.3f});
  auto kept = Nms(boxes, scores,
                  {test::Scalar<int64_t>(10), test::Scalar<float>(0.5f),
                   test::Scalar<float>(0.0f)});
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->shape(), (Shape{2, 3}));
  EXPECT_EQ(test::Values<int64_t>(*kept),
            (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
  // A threshold above both overlaps keeps all three, best first.
  auto loose = Nms(boxes, scores,
                   {test::Scalar<int64_t>(10), test::Scalar<float>(0.9f)});
  ASSERT_TRUE(loose.ok());
  EXPECT_EQ(test::Values<int64_t>(*loose),
            (std::vector<int64_t>{0, 0, 1, 0, 0, 0, 0, 0, 2}));
  // The score threshold and the per-class limit.
  auto scored = Nms(boxes, scores,
                    {test::Scalar<int64_t>(10), test::Scalar<float>(0.5f),
                     test::Scalar<float>(0.5f)});
  ASSERT_TRUE(scored.ok());
  EXPECT_EQ(test::Values<int64_t>(*scored), (std::vector<int64_t>{0, 0, 1}));
  auto none = Nms(boxes, scores, {});  // max_output_boxes_per_class 0.
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->shape(), (Shape{0, 3}));
}

// A NaN score ranks below every number: its box comes last, after the
// boxes it would otherwise have been sorted among.
TEST(DetectionOpsTest, NonMaxSuppressionTakesANaNScoreLast) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor boxes = Tensor::FromVector<float>(
      {1, 4, 4}, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7});
  const Tensor scores =
      Tensor::FromVector<float>({1, 1, 4}, {0.2f, nan, 0.9f, 0.5f});
  auto kept = Nms(boxes, scores,
                  {test::Scalar<int64_t>(10), test::Scalar<float>(0.5f)});
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(test::Values<int64_t>(*kept),
            (std::vector<int64_t>{0, 0, 2, 0, 0, 3, 0, 0, 0, 0, 0, 1}));
}

TEST(DetectionOpsTest, NonMaxSuppressionCentreFormAndBadInputs) {
  // Centre form [x, y, w, h]: the same two overlapping boxes.
  auto kept = Nms(
      Tensor::FromVector<float>({1, 2, 4}, {5, 5, 10, 10, 5.5f, 5.5f, 9, 9}),
      Tensor::FromVector<float>({1, 1, 2}, {0.5f, 0.6f}),
      {test::Scalar<int64_t>(5), test::Scalar<float>(0.5f)}, 1);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(test::Values<int64_t>(*kept), (std::vector<int64_t>{0, 0, 1}));

  EXPECT_THAT(Nms(Tensor::FromVector<float>({1, 4}, {0, 0, 1, 1}),
                  Tensor::FromVector<float>({1, 1, 1}, {1}), {})
                  .status()
                  .message(),
              HasSubstr("boxes must be [batches, boxes, 4]"));
  EXPECT_THAT(Nms(Tensor::FromVector<float>({1, 1, 4}, {0, 0, 1, 1}),
                  Tensor::FromVector<float>({1, 1, 2}, {1, 1}), {})
                  .status()
                  .message(),
              HasSubstr("scores must be [batches, classes, boxes]"));
  EXPECT_THAT(Nms(Tensor::FromVector<float>({1, 1, 4}, {0, 0, 1, 1}),
                  Tensor::FromVector<float>({1, 1, 1}, {1}),
                  {test::Scalar<int64_t>(1), test::Scalar<float>(2)})
                  .status()
                  .message(),
              HasSubstr("iou_threshold 2.000000 is outside [0, 1]"));
}

}  // namespace
}  // namespace weft
