// The per-opset differences the ONNX importer honours: the same computation
// written the way each opset writes it must give the same values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <limits>

#include "test_support/session_util.h"
#include "weft/onnx.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// One node of `op` at `opset` over float input "x" (shape x_dims, values
// 0, 1, 2, ...), with int64 or float initializers as further inputs ("" for
// an omitted one) and attributes; the output is "y".
class OneNodeModel {
 public:
  OneNodeModel(const std::string& op, int64_t opset,
               std::vector<int64_t> x_dims)
      : x_dims_(std::move(x_dims)) {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(opset);
    model_.mutable_graph()->add_node()->set_op_type(op);
    node()->add_input("x");
    auto* in = model_.mutable_graph()->add_input();
    in->set_name("x");
    auto* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : x_dims_) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  OneNodeModel& Ints(const std::string& name,
                     const std::vector<int64_t>& values) {
    auto* init = model_.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(onnx::TensorProto::INT64);
    init->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) init->add_int64_data(v);
    node()->add_input(name);
    return *this;
  }
  OneNodeModel& FloatScalar(const std::string& name, float value) {
    auto* init = model_.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_float_data(value);
    node()->add_input(name);
    return *this;
  }
  OneNodeModel& Floats(const std::string& name,
                       const std::vector<float>& values) {
    auto* init = model_.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_dims(static_cast<int64_t>(values.size()));
    for (float v : values) init->add_float_data(v);
    node()->add_input(name);
    return *this;
  }
  // x as doubles, fed these values (one per element) in place of 0, 1, ...
  OneNodeModel& DoubleInput(std::vector<double> values) {
    model_.mutable_graph()
        ->mutable_input(0)
        ->mutable_type()
        ->mutable_tensor_type()
        ->set_elem_type(onnx::TensorProto::DOUBLE);
    doubles_ = std::move(values);
    return *this;
  }
  OneNodeModel& DoubleScalar(const std::string& name, double value) {
    auto* init = model_.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(onnx::TensorProto::DOUBLE);
    init->add_double_data(value);
    node()->add_input(name);
    return *this;
  }
  OneNodeModel& Omitted() {
    node()->add_input("");
    return *this;
  }
  OneNodeModel& AttrInts(const std::string& name,
                         const std::vector<int64_t>& v) {
    auto* a = node()->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }
  OneNodeModel& AttrInt(const std::string& name, int64_t v) {
    auto* a = node()->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
    return *this;
  }
  OneNodeModel& AttrFloat(const std::string& name, float v) {
    auto* a = node()->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
    return *this;
  }
  OneNodeModel& AttrString(const std::string& name, const std::string& v) {
    auto* a = node()->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
    return *this;
  }
  OneNodeModel& Outputs(int n) {
    for (int i = 0; i < n; ++i) {
      const std::string name = i == 0 ? "y" : "y" + std::to_string(i);
      node()->add_output(name);
      model_.mutable_graph()->add_output()->set_name(name);
    }
    return *this;
  }

  // Runs the model on x = 0, 1, 2, ...; returns output `index`.
  StatusOr<Tensor> Run(int index = 0) {
    if (node()->output_size() == 0) Outputs(1);
    WEFT_ASSIGN_OR_RETURN(OnnxModel m,
                          ParseOnnxModel(model_.SerializeAsString(), "."));
    int64_t n = 1;
    for (int64_t d : x_dims_) n *= d;
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i);
    WEFT_ASSIGN_OR_RETURN(
        auto session,
        Session::Create(m.file.graph, test::PerSessionOptions(1, 1)));
    std::vector<Tensor> out;
    WEFT_RETURN_IF_ERROR(session->Run(
        {{m.inputs[0].tensor,
          doubles_.empty()
              ? Tensor::FromVector<float>(Shape(x_dims_), x)
              : Tensor::FromVector<double>(Shape(x_dims_), doubles_)}},
        {m.outputs[index].tensor}, {}, &out));
    return out[0];
  }

 private:
  // The node, looked up each time: the builder is copied by value.
  onnx::NodeProto* node() { return model_.mutable_graph()->mutable_node(0); }

  onnx::ModelProto model_;
  std::vector<int64_t> x_dims_;
  std::vector<double> doubles_;
};

std::vector<float> FloatsOf(const StatusOr<Tensor>& t) {
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return {};
  return test::Values<float>(*t);
}

TEST(OnnxVersionsTest, SqueezeAndUnsqueezeAxesAreAttributesBefore13) {
  auto unsq11 = OneNodeModel("Unsqueeze", 11, {3}).AttrInts("axes", {0}).Run();
  auto unsq13 = OneNodeModel("Unsqueeze", 13, {3}).Ints("axes", {0}).Run();
  ASSERT_TRUE(unsq11.ok() && unsq13.ok());
  EXPECT_EQ(unsq11->shape(), (Shape{1, 3}));
  EXPECT_EQ(unsq13->shape(), (Shape{1, 3}));
  auto sq11 =
      OneNodeModel("Squeeze", 11, {1, 3, 1}).AttrInts("axes", {2}).Run();
  auto sq13 = OneNodeModel("Squeeze", 13, {1, 3, 1}).Ints("axes", {2}).Run();
  ASSERT_TRUE(sq11.ok() && sq13.ok());
  EXPECT_EQ(sq11->shape(), (Shape{1, 3}));
  EXPECT_EQ(sq13->shape(), (Shape{1, 3}));
  // No axes: every 1 goes.
  auto all = OneNodeModel("Squeeze", 13, {1, 3, 1}).Run();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->shape(), (Shape{3}));
}

TEST(OnnxVersionsTest, SplitSizesAreAnAttributeBefore13) {
  auto v11 =
      OneNodeModel("Split", 11, {5}).AttrInts("split", {2, 3}).Outputs(2);
  auto v13 = OneNodeModel("Split", 13, {5}).Ints("split", {2, 3}).Outputs(2);
  EXPECT_EQ(FloatsOf(v11.Run(1)), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(FloatsOf(v13.Run(1)), (std::vector<float>{2, 3, 4}));
}

TEST(OnnxVersionsTest, ClipBoundsAreAttributesBefore11AndInputsFrom11) {
  const std::vector<float> want = {1, 1, 2, 3, 3};
  EXPECT_EQ(FloatsOf(OneNodeModel("Clip", 7, {5})
                         .AttrFloat("min", 1)
                         .AttrFloat("max", 3)
                         .Run()),
            want);
  EXPECT_EQ(FloatsOf(OneNodeModel("Clip", 11, {5})
                         .FloatScalar("lo", 1)
                         .FloatScalar("hi", 3)
                         .Run()),
            want);
  // An omitted min before a given max.
  EXPECT_EQ(
      FloatsOf(
          OneNodeModel("Clip", 13, {5}).Omitted().FloatScalar("hi", 2).Run()),
      (std::vector<float>{0, 1, 2, 2, 2}));
}

// From opset 11 an omitted bound is the input type's own limit: a double
// beyond float's range passes a Clip without bounds, or with only a max,
// unchanged (opset 6's defaults were float's range).
TEST(OnnxVersionsTest, AnOmittedClipBoundIsTheInputTypesOwnLimit) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x = {-1e300, -inf, 0.5, 1e300, inf};
  auto unbounded = OneNodeModel("Clip", 13, {5}).DoubleInput(x).Run();
  ASSERT_TRUE(unbounded.ok()) << unbounded.status();
  EXPECT_EQ(
      test::Values<double>(*unbounded),
      (std::vector<double>{-1e300, std::numeric_limits<double>::lowest(), 0.5,
                           1e300, std::numeric_limits<double>::max()}));
  auto max_only = OneNodeModel("Clip", 13, {5})
                      .DoubleInput(x)
                      .Omitted()
                      .DoubleScalar("hi", 0)
                      .Run();
  ASSERT_TRUE(max_only.ok()) << max_only.status();
  EXPECT_EQ(test::Values<double>(*max_only),
            (std::vector<double>{-1e300, std::numeric_limits<double>::lowest(),
                                 0, 0, 0}));
}

TEST(OnnxVersionsTest, SoftmaxBefore13NormalisesEverythingFromTheAxisOn) {
  // [1, 2, 2]: opset 11 with axis 1 normalises all 4 values together; opset
  // 13 with axis 1 normalises pairs along that axis only.
  auto old = OneNodeModel("Softmax", 11, {1, 2, 2}).AttrInt("axis", 1).Run();
  auto now = OneNodeModel("Softmax", 13, {1, 2, 2}).AttrInt("axis", 1).Run();
  const std::vector<float> a = FloatsOf(old), b = FloatsOf(now);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_NEAR(a[0] + a[1] + a[2] + a[3], 1.0f, 1e-6);
  EXPECT_NEAR(b[0] + b[2], 1.0f, 1e-6);
  EXPECT_NEAR(b[1] + b[3], 1.0f, 1e-6);
  // Opset 11's default axis is 1, opset 13's is -1.
  auto old_default = OneNodeModel("Softmax", 11, {1, 2, 2}).Run();
  EXPECT_EQ(FloatsOf(old_default), a);
}

TEST(OnnxVersionsTest, HardmaxBefore13TakesOneMaximumFromTheAxisOn) {
  // x = 0, 1, 2, 3 as [1, 2, 2]: one 1 over all four before 13, one per
  // column along axis 1 from 13.
  EXPECT_EQ(
      FloatsOf(OneNodeModel("Hardmax", 11, {1, 2, 2}).AttrInt("axis", 1).Run()),
      (std::vector<float>{0, 0, 0, 1}));
  EXPECT_EQ(
      FloatsOf(OneNodeModel("Hardmax", 13, {1, 2, 2}).AttrInt("axis", 1).Run()),
      (std::vector<float>{0, 0, 1, 1}));
}

TEST(OnnxVersionsTest, ResizeOpset10IsAsymmetricNearestFloor) {
  // x = 0, 1, 2, 3 doubled to 8 values. Opset 10 (X, scales): source index
  // floor(o / 2). Opset 13 nearest with half_pixel and round_prefer_floor
  // gives the same here; linear differs and blends neighbours.
  const std::vector<float> nearest = {0, 0, 1, 1, 2, 2, 3, 3};
  EXPECT_EQ(FloatsOf(OneNodeModel("Resize", 10, {4}).Floats("s", {2}).Run()),
            nearest);
  EXPECT_EQ(
      FloatsOf(
          OneNodeModel("Resize", 13, {4}).Omitted().Floats("s", {2}).Run()),
      nearest);
  EXPECT_EQ(FloatsOf(OneNodeModel("Resize", 13, {4})
                         .Omitted()
                         .Omitted()
                         .Ints("sizes", {8})
                         .AttrString("mode", "linear")
                         .Run()),
            (std::vector<float>{0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3}));
}

// tf_crop_and_resize reads its roi as coordinates: a value that is not
// finite is refused, naming it (it once reached an integer conversion C++
// leaves undefined).
TEST(OnnxVersionsTest, ResizeRefusesARoiThatIsNotFinite) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto resized =
      OneNodeModel("Resize", 13, {4})
          .Floats("roi", {nan, 1})
          .Omitted()
          .Ints("sizes", {3})
          .AttrString("coordinate_transformation_mode", "tf_crop_and_resize")
          .Run();
  ASSERT_FALSE(resized.ok());
  EXPECT_NE(resized.status().message().find("roi[0] is nan"), std::string::npos)
      << resized.status();
}

// The deprecated names: Upsample-9 is Resize-10, Scatter is
// ScatterElements.
TEST(OnnxVersionsTest, UpsampleAndScatterAreReadUnderTheirOldNames) {
  EXPECT_EQ(FloatsOf(OneNodeModel("Upsample", 9, {4}).Floats("s", {2}).Run()),
            (std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_THAT(OneNodeModel("Upsample", 8, {4}).Run().status().message(),
              HasSubstr("Upsample before opset 9"));
  EXPECT_EQ(FloatsOf(OneNodeModel("Scatter", 10, {4})
                         .Ints("indices", {3, 0})
                         .Floats("updates", {9, 8})
                         .Run()),
            (std::vector<float>{8, 1, 2, 9}));
}

TEST(OnnxVersionsTest, SliceBoundsAreAttributesBefore10) {
  const std::vector<float> want = {1, 2};
  EXPECT_EQ(FloatsOf(OneNodeModel("Slice", 9, {4})
                         .AttrInts("starts", {1})
                         .AttrInts("ends", {3})
                         .Run()),
            want);
  EXPECT_EQ(FloatsOf(OneNodeModel("Slice", 13, {4})
                         .Ints("starts", {1})
                         .Ints("ends", {3})
                         .Run()),
            want);
  EXPECT_EQ(FloatsOf(OneNodeModel("Slice", 13, {4})
                         .Ints("starts", {-1})
                         .Ints("ends", {-5})
                         .Ints("axes", {0})
                         .Ints("steps", {-2})
                         .Run()),
            (std::vector<float>{3, 1}));
}

// Below opset 7, an op is read when its definition did not change between
// the model's opset and 7 (Elu-6, Softsign-1, Slice-1), and refused with the
// reason when it did (Elu-1 had consumed_inputs; Add-7 broadcasts
// differently from Add-6).
TEST(OnnxVersionsTest, OpsetsBelow7ReadOnlyOpsDefinedThereAsAt7) {
  EXPECT_EQ(FloatsOf(OneNodeModel("Elu", 6, {2}).Run()),
            (std::vector<float>{0, 1}));
  EXPECT_EQ(FloatsOf(OneNodeModel("Softsign", 1, {2}).Run()),
            (std::vector<float>{0, 0.5f}));
  EXPECT_EQ(FloatsOf(OneNodeModel("Slice", 1, {4})
                         .AttrInts("starts", {1})
                         .AttrInts("ends", {3})
                         .Run()),
            (std::vector<float>{1, 2}));
  for (const auto& [op, opset] :
       {std::pair<std::string, int64_t>{"Elu", 5}, {"Add", 6}, {"Gemm", 6}}) {
    OneNodeModel model(op, opset, {2});
    if (op == "Add") model.FloatScalar("b", 1);
    const Status s = model.Run().status();
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << op;
    EXPECT_THAT(s.message(),
                HasSubstr("(ONNX " + op + "): opset " + std::to_string(opset) +
                          " defines it differently from opset 7"));
  }
  // Opsets past the newest weft reads are still refused as a whole.
  EXPECT_THAT(OneNodeModel("Elu", 99, {2}).Run().status().message(),
              HasSubstr("opset 99 of the default domain is not supported"));
}

TEST(OnnxVersionsTest, PadIsAttributesBefore11AndInputsFrom11) {
  const std::vector<float> want = {7, 0, 1, 2, 7, 7};
  EXPECT_EQ(FloatsOf(OneNodeModel("Pad", 10, {3})
                         .AttrInts("pads", {1, 2})
                         .AttrFloat("value", 7)
                         .Run()),
            want);
  EXPECT_EQ(FloatsOf(OneNodeModel("Pad", 13, {3})
                         .Ints("pads", {1, 2})
                         .FloatScalar("v", 7)
                         .Run()),
            want);
  EXPECT_EQ(FloatsOf(OneNodeModel("Pad", 13, {3})
                         .Ints("pads", {2, 1})
                         .AttrString("mode", "reflect")
                         .Run()),
            (std::vector<float>{2, 1, 0, 1, 2, 1}));
}

TEST(OnnxVersionsTest, BatchNormalizationTrainingModeAndSpatial) {
  // Opset 14's training_mode runs on batch statistics: x = 0, 1 in one
  // channel has mean 0.5 and variance 0.25, so y = -1, 1. Opset 7's
  // spatial = 0 is refused by name.
  OneNodeModel training("BatchNormalization", 14, {1, 1, 2});
  training.Floats("s", {1})
      .Floats("b", {0})
      .Floats("m", {0})
      .Floats("v", {1})
      .AttrFloat("epsilon", 0)
      .AttrInt("training_mode", 1);
  auto t = training.Run();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(test::Values<float>(*t), (std::vector<float>{-1, 1}));
  OneNodeModel spatial("BatchNormalization", 7, {1, 2, 1});
  spatial.FloatScalar("s", 1)
      .FloatScalar("b", 0)
      .FloatScalar("m", 0)
      .FloatScalar("v", 1)
      .AttrInt("spatial", 0);
  auto sp = spatial.Run();
  ASSERT_FALSE(sp.ok());
  EXPECT_THAT(sp.status().message(), HasSubstr("spatial = 0"));
}

// QuantizeLinear's precision (opset 23): float32, the division weft does,
// gives the same bytes as no precision; another type is refused naming it.
TEST(OnnxVersionsTest, QuantizePrecisionFloat32IsReadAndOthersRefused) {
  auto plain =
      OneNodeModel("QuantizeLinear", 23, {4}).FloatScalar("scale", 0.5f).Run();
  auto float32 = OneNodeModel("QuantizeLinear", 23, {4})
                     .FloatScalar("scale", 0.5f)
                     .AttrInt("precision", onnx::TensorProto::FLOAT)
                     .Run();
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(float32.ok()) << float32.status();
  EXPECT_TRUE(plain->BitwiseEqual(*float32));
  auto half = OneNodeModel("QuantizeLinear", 23, {4})
                  .FloatScalar("scale", 0.5f)
                  .AttrInt("precision", onnx::TensorProto::FLOAT16)
                  .Run();
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(half.status().message(),
              HasSubstr("precision 10 (an ONNX element type) is not "
                        "supported: weft divides x by y_scale in float32"));
}

TEST(OnnxVersionsTest, AFeedContradictingAFixedDimensionNamesIt) {
  auto model = ParseOnnxModel(
      [] {
        onnx::ModelProto p;
        p.set_ir_version(8);
        p.add_opset_import()->set_version(13);
        auto* g = p.mutable_graph();
        auto* in = g->add_input();
        in->set_name("x");
        auto* t = in->mutable_type()->mutable_tensor_type();
        t->set_elem_type(onnx::TensorProto::FLOAT);
        t->mutable_shape()->add_dim()->set_dim_param("batch");
        t->mutable_shape()->add_dim()->set_dim_value(3);
        auto* n = g->add_node();
        n->set_op_type("Relu");
        n->add_input("x");
        n->add_output("y");
        g->add_output()->set_name("y");
        return p.SerializeAsString();
      }(),
      ".");
  ASSERT_TRUE(model.ok()) << model.status();
  auto session =
      test::MustCreate(model->file.graph, test::PerSessionOptions(1, 1));
  std::vector<Tensor> out;
  for (int64_t batch : {1, 5}) {  // The symbolic dimension takes any size.
    EXPECT_TRUE(session
                    ->Run({{"x", Tensor(DataType::kFloat32, Shape{batch, 3})}},
                          {"y"}, {}, &out)
                    .ok());
  }
  Status s = session->Run({{"x", Tensor(DataType::kFloat32, Shape{2, 4})}},
                          {"y"}, {}, &out);
  EXPECT_THAT(s.message(), HasSubstr("feed 'x' has shape [2, 4]: dimension 1 "
                                     "is 4, the graph declares 3"));
}

}  // namespace
}  // namespace weft
