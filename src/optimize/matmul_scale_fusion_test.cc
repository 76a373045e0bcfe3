// matmul-scale-fusion: attention's 1 / sqrt(d) goes into the MatMul with
// the same bits; what would change them stays.
#include <gtest/gtest.h>

#include <cstring>

#include "test_support/session_util.h"
#include "weft/graph_passes.h"

namespace weft {
namespace {

SessionOptions MatmulScaleFusionOptions(int inter, int intra, bool optimize) {
  SessionOptions options = test::PerSessionOptions(inter, intra);
  options.optimize_graph = optimize;
  return options;
}

const NodeDef& NodeOf(const Graph& graph, const std::string& name) {
  const NodeDef* node = graph.FindNode(name);
  EXPECT_NE(node, nullptr) << name;
  static const NodeDef kNone{};
  return node ? *node : kNone;
}

double AlphaOf(const NodeDef& node) {
  StatusOr<const double*> found = FindAttr<double>(node.attrs, "alpha");
  EXPECT_TRUE(found.ok()) << node.name;
  return found.ok() ? **found : 0.0;
}

// `fetch` with the passes off at (1, 1) and on at (1, 1) and (2, 2): the
// same bits all three ways.
void MatmulScaleFusionExpectSameBits(const Graph& g, const std::string& fetch,
                                     const NamedTensors& feeds) {
  const Tensor want =
      test::MustRun(*test::MustCreate(g, MatmulScaleFusionOptions(1, 1, false)),
                    {fetch}, feeds)
          .at(0);
  for (int threads : {1, 2}) {
    const Tensor got =
        test::MustRun(*test::MustCreate(
                          g, MatmulScaleFusionOptions(threads, threads, true)),
                      {fetch}, feeds)
            .at(0);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(0,
              std::memcmp(got.raw_data(), want.raw_data(), want.size_bytes()))
        << "at " << threads << " threads";
  }
}

// Attention's scores as torch exports them: Q K^T / sqrt(depth), Softmax.
Graph AttentionScores(float divisor) {
  Graph g;
  g.Placeholder("q", DataType::kFloat32, {1, 4, 8, 16});
  g.Placeholder("kt", DataType::kFloat32, {1, 4, 16, 8});
  g.MatMul("qk", "q", "kt");
  g.Const("root_depth", Tensor::Scalar<float>(divisor));
  g.Div("scores", "qk", "root_depth");
  EXPECT_TRUE(g.AddNode({"probs", "Softmax", {"scores"}, {}, ""}).ok());
  return g;
}

const NamedTensors& AttentionFeeds() {
  static const NamedTensors feeds = {
      {"q", test::SeededFloats({1, 4, 8, 16}, 1)},
      {"kt", test::SeededFloats({1, 4, 16, 8}, 2)}};
  return feeds;
}

TEST(MatMulScaleFusionTest, AttentionScoresTakeTheScaleWithTheSameBits) {
  const Graph g = AttentionScores(4.0f);
  auto optimized = OptimizeGraph(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(test::Ops(optimized->graph).count("Div"), 0u);
  const NodeDef& scores = NodeOf(optimized->graph, "scores");
  EXPECT_EQ(scores.op, "MatMul");
  EXPECT_EQ(scores.inputs, (std::vector<std::string>{"q", "kt"}));
  EXPECT_EQ(AlphaOf(scores), 0.25);
  MatmulScaleFusionExpectSameBits(g, "probs", AttentionFeeds());
  // The product before the scale is still fetched as the graph computes it.
  MatmulScaleFusionExpectSameBits(g, "qk", AttentionFeeds());
}

TEST(MatMulScaleFusionTest, AScalarMulEitherWayRoundBecomesAlpha) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {5, 7});
  g.Placeholder("w", DataType::kFloat32, {7, 6});
  g.MatMul("mm", "x", "w");
  g.Const("third", Tensor::FromVector<float>({1, 1}, {1.0f / 3.0f}));
  g.Mul("y", "third", "mm");
  auto optimized = OptimizeGraph(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  const NodeDef& y = NodeOf(optimized->graph, "y");
  EXPECT_EQ(y.op, "MatMul");
  EXPECT_EQ(AlphaOf(y), static_cast<double>(1.0f / 3.0f));
  MatmulScaleFusionExpectSameBits(g, "y",
                                  {{"x", test::SeededFloats({5, 7}, 3)},
                                   {"w", test::SeededFloats({7, 6}, 4)}});
}

TEST(MatMulScaleFusionTest, ScaledProductAndBiasBecomeAGemmWithThatAlpha) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {5, 7});
  g.Const("w", test::SeededFloats({7, 6}, 5));
  g.Const("b", test::SeededFloats({6}, 6));
  g.MatMul("mm", "x", "w");
  g.Const("two", Tensor::Scalar<float>(2.0f));
  g.Mul("scaled", "mm", "two");
  g.Add("y", "scaled", "b");
  auto optimized = OptimizeGraph(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  const NodeDef& y = NodeOf(optimized->graph, "y");
  EXPECT_EQ(y.op, "Gemm");
  EXPECT_EQ(AlphaOf(y), 2.0);
  MatmulScaleFusionExpectSameBits(g, "y",
                                  {{"x", test::SeededFloats({5, 7}, 7)}});
}

TEST(MatMulScaleFusionTest, WhatWouldChangeTheBitsStays) {
  // x / 3 is not x times any float.
  auto divided = OptimizeGraph(AttentionScores(3.0f));
  ASSERT_TRUE(divided.ok()) << divided.status();
  EXPECT_EQ(NodeOf(divided->graph, "scores").op, "Div");

  Graph g;
  g.Placeholder("x", DataType::kFloat32, {3, 4, 5});
  g.Placeholder("w", DataType::kFloat32, {5, 6});
  g.MatMul("mm", "x", "w");
  // One factor per column is not a scalar; a product read twice is not
  // the MatMul's alone to change; a factor of higher rank broadcasts up.
  g.Const("per_column", test::SeededFloats({6}, 7));
  g.Mul("y", "mm", "per_column");
  g.MatMul("mm2", "x", "w");
  g.Const("half", Tensor::Scalar<float>(0.5f));
  g.Mul("y2", "mm2", "half");
  g.Relu("mm2_relu", "mm2");
  g.MatMul("mm3", "x", "w");
  g.Const("half_4d", Tensor::FromVector<float>({1, 1, 1, 1}, {0.5f}));
  g.Mul("y3", "mm3", "half_4d");
  auto optimized = OptimizeGraph(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  for (const char* name : {"y", "y2", "y3"}) {
    EXPECT_EQ(NodeOf(optimized->graph, name).op, "Mul") << name;
  }
}

TEST(MatMulScaleFusionTest, DisabledItLeavesTheDivAsWritten) {
  GraphPassOptions options;
  options.disabled = {"matmul-scale-fusion"};
  auto optimized = OptimizeGraph(AttentionScores(4.0f), options);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(NodeOf(optimized->graph, "scores").op, "Div");
}

}  // namespace
}  // namespace weft
