// matmul-integer-fusion: quantize_dynamic's MatMulInteger -> Cast -> Mul
// [-> Add] becomes FusedMatMulInteger, with the graph's bits, and what is
// left as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "test_support/session_util.h"
#include "weft/graph_passes.h"

namespace weft {
namespace {

using test::Ops;

struct IntegerProductFusionForm {
  const char* name;
  bool bias = true;  // Add(bias, .) after the Mul
  bool scale_per_column = true;
  bool b_zero = false;    // B's zero point not 0 (no direct tiles)
  bool wide_add = false;  // Add of a full tensor: not a bias
  bool gelu = false;      // a Gelu after y (activation-fusion takes it in)
  bool residual = false;  // Add(., z) of a full tensor after the bias
};

constexpr int64_t kRows = 5, kK = 24, kN = 70;

// x [2, 5, 24] float -> DynamicQuantizeLinear -> MatMulInteger with a
// constant int8 B [24, 70] -> Cast -> Mul(., x_scale * B's scale) [-> Add].
Graph DynamicProduct(const IntegerProductFusionForm& form) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({2, kRows, kK}));
  test::MustAdd(g, {"q", "DynamicQuantizeLinear", {"x"}, {}, ""});
  g.Const("b", test::SeededBytes<int8_t>(Shape{kK, kN}, 7));
  g.Const("bz",
          form.b_zero ? Tensor::Scalar<int8_t>(3) : Tensor::Scalar<int8_t>(0));
  test::MustAdd(
      g, {"product", "MatMulInteger", {"q:0", "b", "q:2", "bz"}, {}, ""});
  test::MustAdd(g, {"cast",
                    "Cast",
                    {"product"},
                    {{"to", AttrValue(DataType::kFloat32)}},
                    ""});
  std::vector<float> b_scale;
  for (int64_t j = 0; j < kN; ++j) {
    b_scale.push_back(0.01f + 0.0007f * static_cast<float>(j));
  }
  g.Const("b_scale", form.scale_per_column
                         ? Tensor::FromVector<float>({kN}, b_scale)
                         : Tensor::Scalar<float>(0.013f));
  test::MustAdd(g, {"scale", "Mul", {"q:1", "b_scale"}, {}, ""});
  test::MustAdd(g, {"scaled", "Mul", {"cast", "scale"}, {}, ""});
  if (form.bias) {
    std::vector<float> bias;
    for (int64_t j = 0; j < kN; ++j) {
      bias.push_back(0.3f * static_cast<float>(j % 7) - 1.0f);
    }
    g.Const("bias", Tensor::FromVector<float>({kN}, bias));
    if (form.residual) {
      g.Placeholder("z", DataType::kFloat32, PartialShape({2, kRows, kN}));
      test::MustAdd(g, {"biased", "Add", {"bias", "scaled"}, {}, ""});
      test::MustAdd(g, {"y", "Add", {"z", "biased"}, {}, ""});
    } else {
      test::MustAdd(g, {"y", "Add", {"bias", "scaled"}, {}, ""});
    }
  } else if (form.wide_add) {
    g.Placeholder("z", DataType::kFloat32, PartialShape({2, kRows, kN}));
    test::MustAdd(g, {"y", "Add", {"scaled", "z"}, {}, ""});
  } else {
    test::MustAdd(g, {"y", "Identity", {"scaled"}, {}, ""});
  }
  test::MustAdd(g, {"out", form.gelu ? "Gelu" : "Identity", {"y"}, {}, ""});
  return g;
}

NamedTensors IntegerProductFusionFeeds(const IntegerProductFusionForm& form) {
  NamedTensors feeds = {{"x", test::SeededFloats(Shape{2, kRows, kK}, 3)}};
  if (form.wide_add || form.residual) {
    feeds.push_back({"z", test::SeededFloats(Shape{2, kRows, kN}, 4)});
  }
  return feeds;
}

// Every form the quantizer writes becomes one FusedMatMulInteger with the
// graph's bits (per-column or one scale, with and without the bias Add, B's
// zero point 0 (the direct tiles where the int8 kernel is VNNI) or not (the
// panels and the fused loop)), at one and two threads; an Add of a full
// tensor is not a bias and stays. A Gelu after it runs in the fused node
// (on each tile of the direct path, over the rows of the other), with the
// bits the Gelu node gives; so does an Add of a full tensor after the bias
// (conv-residual-fusion makes it the product's residual).
TEST(MatMulIntegerFusionTest, DynamicProductsFuseWithTheGraphsBits) {
  const IntegerProductFusionForm forms[] = {
      {"bias, scale per column"},
      {"no bias", false},
      {"one scale", true, false},
      {"B zero point 3", true, true, true},
      {"a full-tensor Add", false, true, false, true},
      {"bias, then Gelu", true, true, false, false, true},
      {"B zero point 3, then Gelu", true, true, true, false, true},
      {"bias, then a residual", true, true, false, false, false, true},
      {"B zero point 3, a residual, then Gelu", true, true, true, false, true,
       true},
  };
  for (const IntegerProductFusionForm& form : forms) {
    SCOPED_TRACE(form.name);
    const Graph graph = DynamicProduct(form);
    auto optimized = OptimizeGraph(graph);
    ASSERT_TRUE(optimized.ok()) << optimized.status();
    const auto ops = Ops(optimized->graph);
    EXPECT_EQ(ops.count("FusedMatMulInteger"), 1u);
    EXPECT_EQ(ops.count("MatMulInteger") + ops.count("Cast"), 0u);
    EXPECT_EQ(ops.count("Add"), form.wide_add ? 1u : 0u);
    EXPECT_EQ(ops.count("Gelu"), 0u);
    if (form.residual) {
      const NodeDef* fused = optimized->graph.FindNode(form.gelu ? "out" : "y");
      ASSERT_NE(fused, nullptr);
      EXPECT_EQ(fused->op, "FusedMatMulInteger");
      EXPECT_EQ(fused->inputs.size(), 7u);
      EXPECT_EQ(fused->inputs.back(), "z");
    }
    if (form.gelu) {
      const NodeDef* fused = optimized->graph.FindNode("out");
      ASSERT_NE(fused, nullptr);
      EXPECT_EQ(fused->op, "FusedMatMulInteger");
      EXPECT_EQ(*FindAttr<std::string>(fused->attrs, "activation").value(),
                "Gelu");
    }
    SessionOptions plain = test::PerSessionOptions(1, 1);
    plain.disabled_graph_passes = {"matmul-integer-fusion"};
    auto reference = test::MustCreate(graph, plain);
    ASSERT_NE(reference, nullptr);
    const Tensor want =
        test::MustRun(*reference, {"out"}, IntegerProductFusionFeeds(form))[0];
    for (int threads : {1, 2}) {
      auto session =
          test::MustCreate(graph, test::PerSessionOptions(threads, threads));
      ASSERT_NE(session, nullptr);
      const Tensor got =
          test::MustRun(*session, {"out"}, IntegerProductFusionFeeds(form))[0];
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_TRUE(got.BitwiseEqual(want)) << threads << " threads";
    }
  }
}

// The nodes the fusion removed can still be fetched: the Run computes them
// from the graph as given.
TEST(MatMulIntegerFusionTest, FusedAwayNodesAreStillFetchable) {
  const IntegerProductFusionForm form = {"bias, scale per column"};
  const Graph graph = DynamicProduct(form);
  SessionOptions plain = test::PerSessionOptions(1, 1);
  plain.disabled_graph_passes = {"matmul-integer-fusion"};
  auto reference = test::MustCreate(graph, plain);
  auto fused = test::MustCreate(graph, test::PerSessionOptions(1, 1));
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(fused, nullptr);
  for (const char* fetch : {"product", "cast", "scaled"}) {
    const Tensor want =
        test::MustRun(*reference, {fetch}, IntegerProductFusionFeeds(form))[0];
    const Tensor got =
        test::MustRun(*fused, {fetch}, IntegerProductFusionFeeds(form))[0];
    EXPECT_TRUE(got.BitwiseEqual(want)) << fetch;
  }
}

TEST(MatMulIntegerFusionTest, TheFusedOpNamesWhatIsWrong) {
  const Tensor a = test::SeededBytes<uint8_t>(Shape{3, 8}, 1);
  const Tensor b = test::SeededBytes<int8_t>(Shape{8, 5}, 2);
  auto bad_scale = test::RunOneNode(
      "FusedMatMulInteger",
      {a, b, Tensor::Scalar<uint8_t>(1), Tensor::Scalar<int8_t>(0),
       Tensor::FromVector<float>({4}, {1, 2, 3, 4})});
  ASSERT_FALSE(bad_scale.ok());
  EXPECT_THAT(bad_scale.status().message(),
              ::testing::HasSubstr("scale must be float32 of one value or "
                                   "[5]"));
  auto bad_bias = test::RunOneNode(
      "FusedMatMulInteger",
      {a, b, Tensor::Scalar<uint8_t>(1), Tensor::Scalar<int8_t>(0),
       Tensor::Scalar<float>(0.5f), Tensor::Scalar<float>(1)});
  ASSERT_FALSE(bad_bias.ok());
  EXPECT_THAT(bad_bias.status().message(),
              ::testing::HasSubstr("bias must be float32 [5]"));
  auto float_a = test::RunOneNode(
      "FusedMatMulInteger",
      {test::SeededFloats(Shape{3, 8}, 1), b, Tensor::Scalar<float>(0),
       Tensor::Scalar<int8_t>(0), Tensor::Scalar<float>(0.5f)});
  ASSERT_FALSE(float_a.ok());
  auto bad_residual = test::RunOneNode(
      "FusedMatMulInteger",
      {a, b, Tensor::Scalar<uint8_t>(1), Tensor::Scalar<int8_t>(0),
       Tensor::Scalar<float>(0.5f), test::SeededFloats(Shape{5}, 3),
       test::SeededFloats(Shape{5, 3}, 4)});
  ASSERT_FALSE(bad_residual.ok());
  EXPECT_THAT(bad_residual.status().message(),
              ::testing::HasSubstr("residual must be float32 [3, 5]"));
}

}  // namespace
}  // namespace weft
