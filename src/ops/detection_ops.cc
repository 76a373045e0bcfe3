// Object-detection post-processing (ONNX names): NonMaxSuppression. Per
// batch entry and class, boxes are taken in order of falling score (ties
// by index) and kept unless one kept already overlaps them by more than
// iou_threshold; at most max_output_boxes_per_class per class. Runs on one
// thread in that fixed order, so results do not depend on the thread count.
#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// A box as [y_min, x_min, y_max, x_max] whatever corners or centre form
// it came in.
using Box = std::array<float, 4>;

Box Normalize(const float* b, bool center_point_box) {
  if (center_point_box) {  // [x_center, y_center, width, height]
    const float half_w = b[2] / 2, half_h = b[3] / 2;
    return {b[1] - half_h, b[0] - half_w, b[1] + half_h, b[0] + half_w};
  }
  // [y1, x1, y2, x2], either diagonal.
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]),
          std::max(b[1], b[3])};
}

float IntersectionOverUnion(const Box& a, const Box& b) {
  const float area_a = (a[2] - a[0]) * (a[3] - a[1]);
  const float area_b = (b[2] - b[0]) * (b[3] - b[1]);
  if (area_a <= 0 || area_b <= 0) return 0;
  const float h = std::max(0.f, std::min(a[2], b[2]) - std::max(a[0], b[0]));
  const float w = std::max(0.f, std::min(a[3], b[3]) - std::max(a[1], b[1]));
  const float intersection = h * w;
  return intersection / (area_a + area_b - intersection);
}

class NonMaxSuppressionKernel : public OpKernel {
 public:
  explicit NonMaxSuppressionKernel(const KernelConstruction& c)
      : center_point_box_(c.attr<int64_t>("center_point_box") != 0) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& boxes = ctx.input(0);
    const Tensor& scores = ctx.input(1);
    if (boxes.shape().rank() != 3 || boxes.shape().dim(2) != 4) {
      return InvalidArgumentError("boxes must be [batches, boxes, 4], got " +
                                  boxes.shape().ToString());
    }
    const int64_t batches = boxes.shape().dim(0);
    const int64_t count = boxes.shape().dim(1);
    if (scores.shape().rank() != 3 || scores.shape().dim(0) != batches ||
        scores.shape().dim(2) != count) {
      return InvalidArgumentError(
          "scores must be [batches, classes, boxes] = [" +
          std::to_string(batches) + ", classes, " + std::to_string(count) +
          "], got " + scores.shape().ToString());
    }
    const int64_t classes = scores.shape().dim(1);
    int64_t max_per_class = 0;
    float iou_threshold = 0;
    bool has_score_threshold = false;
    float score_threshold = 0;
    if (ctx.num_inputs() > 2) {
      WEFT_ASSIGN_OR_RETURN(max_per_class, ScalarInt(ctx.input(2)));
    }
    if (ctx.num_inputs() > 3) {
      WEFT_ASSIGN_OR_RETURN(iou_threshold,
                            ScalarFloat(ctx.input(3), "iou_threshold"));
      if (!(iou_threshold >= 0 && iou_threshold <= 1)) {
        return InvalidArgumentError("iou_threshold " +
                                    std::to_string(iou_threshold) +
                                    " is outside [0, 1]");
      }
    }
    if (ctx.num_inputs() > 4) {
      WEFT_ASSIGN_OR_RETURN(score_threshold,
                            ScalarFloat(ctx.input(4), "score_threshold"));
      has_score_threshold = true;
    }
    if (ctx.num_inputs() > 5) {
      return InvalidArgumentError("takes at most 5 inputs");
    }
    const float* box_data = boxes.data<float>();
    const float* score_data = scores.data<float>();
    std::vector<std::array<int64_t, 3>> selected;
    std::vector<int64_t> order;
    std::vector<Box> kept;
    for (int64_t batch = 0; batch < batches; ++batch) {
      for (int64_t cls = 0; cls < classes; ++cls) {
        const float* s = score_data + (batch * classes + cls) * count;
        order.clear();
        for (int64_t i = 0; i < count; ++i) {
          if (!has_score_threshold || s[i] > score_threshold) {
            order.push_back(i);
          }
        }
        // Highest score first; a NaN score last.
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return LessNaNLast(-s[a], -s[b]);
        });
        kept.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
          const Box box =
              Normalize(box_data + (batch * count + i) * 4, center_point_box_);
          const bool suppressed =
              std::any_of(kept.begin(), kept.end(), [&](const Box& k) {
                return IntersectionOverUnion(k, box) > iou_threshold;
              });
          if (suppressed) continue;
          kept.push_back(box);
          selected.push_back({batch, cls, i});
        }
      }
    }
    WEFT_ASSIGN_OR_RETURN(
        Tensor * y, ctx.AllocateOutputUninitialized(
                        0, Shape{static_cast<int64_t>(selected.size()), 3}));
    int64_t* out = y->data<int64_t>();
    for (size_t r = 0; r < selected.size(); ++r) {
      std::copy(selected[r].begin(), selected[r].end(), out + 3 * r);
    }
    return Status::OK();
  }

 private:
  static StatusOr<int64_t> ScalarInt(const Tensor& t) {
    if (t.NumElements() != 1 || t.dtype() != DataType::kInt64) {
      return InvalidArgumentError(
          "max_output_boxes_per_class must be one int64, got " +
          std::string(DataTypeName(t.dtype())) + " " + t.shape().ToString());
    }
    return std::max<int64_t>(*t.data<int64_t>(), 0);
  }
  static StatusOr<float> ScalarFloat(const Tensor& t, const char* what) {
    if (t.NumElements() != 1 || t.dtype() != DataType::kFloat32) {
      return InvalidArgumentError(
          std::string(what) + " must be one float32, got " +
          DataTypeName(t.dtype()) + " " + t.shape().ToString());
    }
    return *t.data<float>();
  }

  const bool center_point_box_;
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"NonMaxSuppression",
     "indices of the boxes kept by greedy non-maximum suppression"},
};

}  // namespace

void RegisterDetectionOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("NonMaxSuppression")
          .Input(ArgDef::Fixed("boxes", DataType::kFloat32))
          .Input(ArgDef::Fixed("scores", DataType::kFloat32))
          // max_output_boxes_per_class, iou_threshold, score_threshold:
          // each optional, in that order.
          .Input(ArgDef::AnyList("limits"))
          .Output(ArgDef::Fixed("selected_indices", DataType::kInt64))
          .Attr("center_point_box", AttrType::kInt, int64_t{0})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, PartialShape({-1, 3}));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "NonMaxSuppression", KernelFactoryFor<NonMaxSuppressionKernel>()));
}

}  // namespace weft::internal
