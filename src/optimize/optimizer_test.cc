// The graph passes: what each rewrites, that results keep their bits (or
// stay within tolerance where a pass rounds differently), that thread
// settings still agree bitwise, and that every name stays usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "test_support/session_util.h"
#include "weft/graph_passes.h"

namespace weft {
namespace {

Tensor OptimizerRandom(const Shape& shape, uint32_t seed) {
  return test::SeededFloats(shape, seed);
}

Tensor OptimizerScalar(float v) { return Tensor::Scalar<float>(v); }

std::string OpOf(const Graph& graph, const std::string& name) {
  const NodeDef* node = graph.FindNode(name);
  return node ? node->op : "(none)";
}

using test::Ops;

// These tests are of the passes that rewrite the graph in its own layout;
// nhwc-layout has its own (nhwc_layout_test.cc) and is off here, so that
// the fused nodes these tests look for stay as they are on every CPU.
SessionOptions OptimizerOptions(int inter, int intra, bool optimize) {
  SessionOptions options = test::PerSessionOptions(inter, intra);
  options.optimize_graph = optimize;
  options.disabled_graph_passes = {"nhwc-layout"};
  return options;
}

StatusOr<OptimizedGraph> Optimize(const Graph& graph,
                                  GraphPassOptions options = {}) {
  options.disabled.push_back("nhwc-layout");
  return OptimizeGraph(graph, options);
}

// The fetch's value with the passes off, and with them on at (1, 1) and
// (2, 2); the last two must agree bit for bit.
struct Outcome {
  Tensor unoptimized, optimized;
};
Outcome RunBothWays(const Graph& graph, const std::string& fetch,
                    const NamedTensors& feeds) {
  Outcome out;
  auto plain = test::MustCreate(graph, OptimizerOptions(1, 1, false));
  out.unoptimized = test::MustRun(*plain, {fetch}, feeds).at(0);
  auto serial = test::MustCreate(graph, OptimizerOptions(1, 1, true));
  out.optimized = test::MustRun(*serial, {fetch}, feeds).at(0);
  auto wide = test::MustCreate(graph, OptimizerOptions(2, 2, true));
  const Tensor parallel = test::MustRun(*wide, {fetch}, feeds).at(0);
  EXPECT_EQ(0, std::memcmp(out.optimized.raw_data(), parallel.raw_data(),
                           parallel.size_bytes()))
      << "thread settings disagree";
  return out;
}

bool OptimizerSameBits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.size_bytes()) == 0;
}

double OptimizerMaxRelativeError(const Tensor& got, const Tensor& want) {
  double worst = 0;
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    const double w = want.ValueAsDouble(i), g = got.ValueAsDouble(i);
    worst = std::max(worst, std::abs(g - w) / std::max(1.0, std::abs(w)));
  }
  return worst;
}

NodeDef ConvNode(const std::string& name, std::vector<std::string> inputs,
                 int64_t group = 1, int64_t pad = 1) {
  return {
      name,
      "Conv",
      std::move(inputs),
      {{"group", group}, {"pads", std::vector<int64_t>{pad, pad, pad, pad}}},
      ""};
}

TEST(GraphPassesTest, ListsEveryPassOnceInPipelineOrder) {
  std::set<std::string> names;
  for (const GraphPassInfo& pass : GraphPasses()) {
    EXPECT_FALSE(pass.summary.empty()) << pass.name;
    EXPECT_TRUE(names.insert(pass.name).second) << pass.name;
  }
  EXPECT_EQ(GraphPasses().front().name, "identity-elimination");
  EXPECT_EQ(GraphPasses().back().name, "nhwc-layout");
}

TEST(GraphPassesTest, AnUnknownPassNameIsAnErrorWithASuggestion) {
  Graph g;
  g.Relu("y", g.Placeholder("x", DataType::kFloat32, {2}));
  GraphPassOptions options;
  options.disabled = {"activation-fusoin"};
  auto optimized = OptimizeGraph(g, options);
  ASSERT_FALSE(optimized.ok());
  EXPECT_NE(optimized.status().message().find("activation-fusion"),
            std::string::npos)
      << optimized.status();
  SessionOptions session = OptimizerOptions(1, 1, true);
  session.disabled_graph_passes = {"constant-foldin"};
  auto created = Session::Create(g, session);
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().message().find("'constant-folding'"),
            std::string::npos)
      << created.status();
}

// A ResNet basic block's tail: Conv, residual Add, Relu.
Graph ResidualBlock() {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {1, 8, 9, 9});
  g.Const("w", OptimizerRandom({8, 8, 3, 3}, 2));
  g.Const("b", OptimizerRandom({8}, 3));
  EXPECT_TRUE(g.AddNode(ConvNode("conv", {"x", "w", "b"})).ok());
  g.Add("add", "conv", "x");
  g.Relu("relu", "add");
  return g;
}

TEST(GraphPassesTest, ConvResidualAndReluBecomeOneFusedConvWithTheSameBits) {
  const Graph g = ResidualBlock();
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(OpOf(optimized->graph, "relu"), "FusedConv");
  EXPECT_EQ(optimized->graph.FindNode("conv"), nullptr);
  EXPECT_EQ(optimized->graph.FindNode("add"), nullptr);
  EXPECT_EQ(optimized->removed.at("conv").replaced_by, "add");
  EXPECT_EQ(optimized->removed.at("add").replaced_by, "relu");
  const NamedTensors feeds = {{"x", OptimizerRandom({1, 8, 9, 9}, 1)}};
  const Outcome out = RunBothWays(g, "relu", feeds);
  EXPECT_TRUE(OptimizerSameBits(out.optimized, out.unoptimized));
}

TEST(GraphPassesTest, DepthwiseConvWithoutBiasFusesClipFromConstantBounds) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {2, 4, 7, 7});
  g.Const("w", OptimizerRandom({4, 1, 3, 3}, 2));
  ASSERT_TRUE(g.AddNode(ConvNode("dw", {"x", "w"}, /*group=*/4)).ok());
  g.Const("lo", OptimizerScalar(0.0f));
  g.Const("hi", OptimizerScalar(0.25f));
  ASSERT_TRUE(g.AddNode({"relu6", "Clip", {"dw", "lo", "hi"}, {}, ""}).ok());
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(OpOf(optimized->graph, "relu6"), "FusedConv");
  // The bounds went with the Clip; the zero bias made for FusedConv came.
  EXPECT_EQ(optimized->graph.FindNode("lo"), nullptr);
  const Outcome out =
      RunBothWays(g, "relu6", {{"x", OptimizerRandom({2, 4, 7, 7}, 1)}});
  EXPECT_TRUE(OptimizerSameBits(out.optimized, out.unoptimized));
}

TEST(GraphPassesTest, OneDimensionalConvFusesLeakyRelu) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {1, 3, 20});
  g.Const("w", OptimizerRandom({5, 3, 3}, 2));
  g.Const("b", OptimizerRandom({5}, 3));
  ASSERT_TRUE(g.AddNode({"conv", "Conv", {"x", "w", "b"}, {}, ""}).ok());
  ASSERT_TRUE(
      g.AddNode({"act", "LeakyRelu", {"conv"}, {{"alpha", 0.2}}, ""}).ok());
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(OpOf(optimized->graph, "act"), "FusedConv");
  const Outcome out =
      RunBothWays(g, "act", {{"x", OptimizerRandom({1, 3, 20}, 1)}});
  EXPECT_TRUE(OptimizerSameBits(out.optimized, out.unoptimized));
}

TEST(GraphPassesTest, BatchNormFoldsIntoTheConvBeforeIt) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {1, 3, 8, 8});
  g.Const("w", OptimizerRandom({6, 3, 3, 3}, 2));
  ASSERT_TRUE(g.AddNode(ConvNode("conv", {"x", "w"})).ok());
  g.Const("scale", OptimizerRandom({6}, 4));
  g.Const("shift", OptimizerRandom({6}, 5));
  g.Const("mean", OptimizerRandom({6}, 6));
  Tensor var = OptimizerRandom({6}, 7);
  for (int i = 0; i < 6; ++i) var.data<float>()[i] += 1.0f;  // Positive.
  g.Const("var", var);
  ASSERT_TRUE(g.AddNode({"bn",
                         "BatchNormalization",
                         {"conv", "scale", "shift", "mean", "var"},
                         {{"epsilon", 1e-3}},
                         ""})
                  .ok());
  g.Relu("relu", "bn");
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(Ops(optimized->graph).count("BatchNormalization"), 0u);
  EXPECT_EQ(OpOf(optimized->graph, "relu"), "FusedConv");
  EXPECT_EQ(optimized->graph.FindNode("mean"), nullptr);  // Swept.
  const Outcome out =
      RunBothWays(g, "relu", {{"x", OptimizerRandom({1, 3, 8, 8}, 1)}});
  EXPECT_LT(OptimizerMaxRelativeError(out.optimized, out.unoptimized), 1e-5);
}

TEST(GraphPassesTest, BatchNormFoldsIntoAGemmWithTransposedWeights) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {4, 5});
  g.Const("w", OptimizerRandom({3, 5}, 2));
  g.Const("c", OptimizerRandom({3}, 3));
  ASSERT_TRUE(g.AddNode({"gemm",
                         "Gemm",
                         {"x", "w", "c"},
                         {{"transB", int64_t{1}}, {"beta", 0.5}},
                         ""})
                  .ok());
  for (const char* name : {"scale", "shift", "mean"}) {
    g.Const(name, OptimizerRandom({3}, name[0]));
  }
  g.Const("var", Tensor::FromVector<float>({3}, {1.0f, 2.0f, 0.5f}));
  ASSERT_TRUE(g.AddNode({"bn",
                         "BatchNormalization",
                         {"gemm", "scale", "shift", "mean", "var"},
                         {},
                         ""})
                  .ok());
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(OpOf(optimized->graph, "bn"), "Gemm");
  const Outcome out = RunBothWays(g, "bn", {{"x", OptimizerRandom({4, 5}, 1)}});
  EXPECT_LT(OptimizerMaxRelativeError(out.optimized, out.unoptimized), 1e-5);
}

// x W + b, then GELU in the Erf form torch exports before opset 20.
Graph LinearGelu() {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {6, 16});
  g.Const("w", OptimizerRandom({16, 12}, 2));
  g.Const("b", OptimizerRandom({12}, 3));
  g.MatMul("mm", "x", "w");
  g.Add("lin", "mm", "b");
  g.Const("sqrt2", OptimizerScalar(1.4142135f));
  g.Div("scaled", "lin", "sqrt2");
  EXPECT_TRUE(g.AddNode({"erf", "Erf", {"scaled"}, {}, ""}).ok());
  g.Const("one", OptimizerScalar(1.0f));
  g.Add("sum", "erf", "one");
  g.Mul("prod", "lin", "sum");
  g.Const("half", OptimizerScalar(0.5f));
  g.Mul("gelu", "prod", "half");
  return g;
}

TEST(GraphPassesTest, MatMulAddAndErfGeluBecomeOneFusedGemm) {
  const Graph g = LinearGelu();
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(OpOf(optimized->graph, "gelu"), "FusedGemm");
  EXPECT_EQ(Ops(optimized->graph),
            (std::multiset<std::string>{"Placeholder", "Const", "Const",
                                        "FusedGemm"}));
  const Outcome out =
      RunBothWays(g, "gelu", {{"x", OptimizerRandom({6, 16}, 1)}});
  EXPECT_LT(OptimizerMaxRelativeError(out.optimized, out.unoptimized), 1e-6);
}

TEST(GraphPassesTest, MatMulAddAloneBecomesGemmWithTheSameBits) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {7, 9});
  g.Const("w", OptimizerRandom({9, 5}, 2));
  g.Const("b", OptimizerRandom({1, 5}, 3));
  g.MatMul("mm", "x", "w");
  g.Add("y", "b", "mm");
  g.Relu("out", "y");
  GraphPassOptions options;
  options.disabled = {"activation-fusion"};
  auto optimized = Optimize(g, options);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(OpOf(optimized->graph, "y"), "Gemm");
  EXPECT_EQ(OpOf(optimized->graph, "out"), "Relu");
  const Outcome out =
      RunBothWays(g, "out", {{"x", OptimizerRandom({7, 9}, 1)}});
  EXPECT_TRUE(OptimizerSameBits(out.optimized, out.unoptimized));
}

// A transformer's projection: rows of a batch times one weight, a bias,
// then GELU.
Graph BatchedProjection(PartialShape x_shape) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, std::move(x_shape));
  g.Const("w", OptimizerRandom({9, 5}, 2));
  g.Const("b", OptimizerRandom({5}, 3));
  g.MatMul("mm", "x", "w");
  g.Add("y", "mm", "b");
  EXPECT_TRUE(g.AddNode({"act", "Gelu", {"y"}, {}, ""}).ok());
  return g;
}

TEST(GraphPassesTest, ABatchedProjectionBecomesOneFusedGemmOverItsRows) {
  const Graph g = BatchedProjection(PartialShape({2, 7, 9}));
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  // Reshape (no copy) to [14, 9], FusedGemm with the GELU, Reshape back.
  EXPECT_EQ(OpOf(optimized->graph, "act"), "Reshape");
  EXPECT_EQ(Ops(optimized->graph).count("FusedGemm"), 1u);
  EXPECT_EQ(Ops(optimized->graph).count("MatMul"), 0u);
  const Outcome out =
      RunBothWays(g, "act", {{"x", OptimizerRandom({2, 7, 9}, 1)}});
  EXPECT_EQ(out.optimized.shape(), (Shape{2, 7, 5}));
  EXPECT_LT(OptimizerMaxRelativeError(out.optimized, out.unoptimized), 1e-6);
  // "y" (now fused away) is still fetched without the GELU.
  auto session = test::MustCreate(g, OptimizerOptions(1, 1, true));
  auto plain = test::MustCreate(g, OptimizerOptions(1, 1, false));
  const NamedTensors feeds = {{"x", OptimizerRandom({2, 7, 9}, 1)}};
  EXPECT_TRUE(OptimizerSameBits(test::MustRun(*session, {"y"}, feeds).at(0),
                                test::MustRun(*plain, {"y"}, feeds).at(0)));
}

TEST(GraphPassesTest, ABatchedProjectionOfOpenShapeWaitsForTheFeedShape) {
  auto optimized = Optimize(BatchedProjection(PartialShape({-1, 7, 9})));
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(OpOf(optimized->graph, "mm"), "MatMul");
  EXPECT_EQ(OpOf(optimized->graph, "y"), "Add");
}

TEST(GraphPassesTest, DecomposedLayerNormBecomesLayerNormalization) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {3, 4, 8});
  auto last_axis = [](const std::string& name, const std::string& in) {
    return NodeDef{
        name, "ReduceMean", {in}, {{"axes", std::vector<int64_t>{-1}}}, ""};
  };
  ASSERT_TRUE(g.AddNode(last_axis("mean", "x")).ok());
  g.Sub("d", "x", "mean");
  g.Const("two", OptimizerScalar(2.0f));
  ASSERT_TRUE(g.AddNode({"sq", "Pow", {"d", "two"}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode(last_axis("var", "sq")).ok());
  g.Const("eps", OptimizerScalar(1e-5f));
  g.Add("ve", "var", "eps");
  ASSERT_TRUE(g.AddNode({"sd", "Sqrt", {"ve"}, {}, ""}).ok());
  g.Div("norm", "d", "sd");
  g.Const("gamma", OptimizerRandom({8}, 2));
  g.Const("beta", OptimizerRandom({8}, 3));
  g.Mul("scaled", "norm", "gamma");
  g.Add("y", "scaled", "beta");
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(OpOf(optimized->graph, "y"), "LayerNormalization");
  EXPECT_EQ(Ops(optimized->graph),
            (std::multiset<std::string>{"Placeholder", "Const", "Const",
                                        "LayerNormalization"}));
  const Outcome out =
      RunBothWays(g, "y", {{"x", OptimizerRandom({3, 4, 8}, 1)}});
  EXPECT_LT(OptimizerMaxRelativeError(out.optimized, out.unoptimized), 1e-5);
}

TEST(GraphPassesTest, IdentityAndInferenceDropoutAreRemovedButStayFetchable) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {4});
  g.Identity("id", "x");
  ASSERT_TRUE(g.AddNode({"drop", "Dropout", {"id"}, {}, ""}).ok());
  g.Relu("y", "drop");
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(optimized->graph.FindNode("id"), nullptr);
  EXPECT_EQ(optimized->graph.FindNode("drop"), nullptr);
  EXPECT_EQ(optimized->graph.FindNode("y")->inputs,
            std::vector<std::string>{"x"});
  auto session = test::MustCreate(g, OptimizerOptions(1, 1, true));
  const Tensor x = Tensor::FromVector<float>({4}, {-1, 2, -3, 4});
  const auto out = test::MustRun(*session, {"y", "drop", "id"}, {{"x", x}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].data<float>()[1], 2.0f);
  EXPECT_EQ(out[1].data<float>()[0], -1.0f);  // The graph as given.
  EXPECT_EQ(out[2].data<float>()[2], -3.0f);
}

TEST(GraphPassesTest, ShapeArithmeticOverAStaticShapeFoldsToAConstant) {
  // Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): what
  // exporters write for x.view(x.size(0), -1).
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {2, 3, 4});
  ASSERT_TRUE(g.AddNode({"shape", "Shape", {"x"}, {}, ""}).ok());
  g.Const("zero", Tensor::Scalar<int64_t>(0));
  ASSERT_TRUE(g.AddNode({"dim0", "Gather", {"shape", "zero"}, {}, ""}).ok());
  g.Const("axes", Tensor::FromVector<int64_t>({1}, {0}));
  ASSERT_TRUE(g.AddNode({"dim0v", "Unsqueeze", {"dim0", "axes"}, {}, ""}).ok());
  g.Const("rest", Tensor::FromVector<int64_t>({1}, {-1}));
  ASSERT_TRUE(
      g.AddNode(
           {"target", "Concat", {"dim0v", "rest"}, {{"axis", int64_t{0}}}, ""})
          .ok());
  ASSERT_TRUE(g.AddNode({"flat", "Reshape", {"x", "target"}, {}, ""}).ok());
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(Ops(optimized->graph),
            (std::multiset<std::string>{"Placeholder", "Const", "Reshape"}));
  const Tensor* target =
      optimized->graph.FindNode("target")->attrs.at("value").get_if<Tensor>();
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->data<int64_t>()[0], 2);
  EXPECT_EQ(target->data<int64_t>()[1], -1);
  const Outcome out =
      RunBothWays(g, "flat", {{"x", OptimizerRandom({2, 3, 4}, 1)}});
  EXPECT_TRUE(OptimizerSameBits(out.optimized, out.unoptimized));
  EXPECT_EQ(out.optimized.shape(), (Shape{2, 12}));
}

TEST(GraphPassesTest, FoldingKeepsOutputsPlaceholdersAndRandomOps) {
  Graph g;
  g.Const("a", OptimizerScalar(2.0f));
  g.Const("b", OptimizerScalar(3.0f));
  g.Add("sum", "a", "b");                      // Folds; a sink, kept by name.
  g.Const("unused", OptimizerScalar(1.0f));    // An output: kept.
  g.Placeholder("p", DataType::kFloat32, {});  // Unread: kept.
  g.RandomUniform("r", DataType::kFloat32, {3}, 7);
  g.Relu("rr", "r");  // Reads a random op: not folded.
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(OpOf(optimized->graph, "sum"), "Const");
  EXPECT_EQ(optimized->graph.FindNode("a"), nullptr);
  EXPECT_EQ(OpOf(optimized->graph, "unused"), "Const");
  EXPECT_EQ(OpOf(optimized->graph, "p"), "Placeholder");
  EXPECT_EQ(OpOf(optimized->graph, "r"), "RandomUniform");
  EXPECT_EQ(OpOf(optimized->graph, "rr"), "Relu");
  auto session = test::MustCreate(g, OptimizerOptions(1, 1, true));
  EXPECT_EQ(test::MustRun(*session, {"sum"}).at(0).data<float>()[0], 5.0f);
  // A folded-away constant is still there to fetch, from the graph as given.
  EXPECT_EQ(test::MustRun(*session, {"a"}).at(0).data<float>()[0], 2.0f);
}

TEST(GraphPassesTest, AFusedAwayNodeIsFetchedFromTheGraphAsGiven) {
  const Graph g = ResidualBlock();
  auto session = test::MustCreate(g, OptimizerOptions(1, 1, true));
  auto plain = test::MustCreate(g, OptimizerOptions(1, 1, false));
  const NamedTensors feeds = {{"x", OptimizerRandom({1, 8, 9, 9}, 1)}};
  const Tensor conv = test::MustRun(*session, {"conv"}, feeds).at(0);
  EXPECT_TRUE(
      OptimizerSameBits(conv, test::MustRun(*plain, {"conv"}, feeds).at(0)));
  // Feeding an intermediate runs the graph as given too: the Relu sees the
  // fed Add, not the fused convolution.
  const Tensor add = OptimizerRandom({1, 8, 9, 9}, 5);
  const Tensor relu = test::MustRun(*session, {"relu"}, {{"add", add}}).at(0);
  EXPECT_EQ(relu.data<float>()[0], std::max(add.data<float>()[0], 0.0f));
}

// Conv + Add of its input + Relu over a batch left open, as ONNX exports
// write it: the residual Add fuses only once the feed's shape is known.
Graph OpenBatchResidual() {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({-1, 8, 9, 9}));
  g.Const("w", OptimizerRandom({8, 8, 3, 3}, 2));
  g.Const("b", OptimizerRandom({8}, 3));
  EXPECT_TRUE(g.AddNode(ConvNode("conv", {"x", "w", "b"})).ok());
  g.Add("add", "conv", "x");
  g.Relu("relu", "add");
  return g;
}

TEST(GraphPassesTest, OpenPlaceholderShapesAreSpecialisedPerFeedShape) {
  const Graph g = OpenBatchResidual();
  auto general = Optimize(g);
  ASSERT_TRUE(general.ok()) << general.status();
  EXPECT_EQ(OpOf(general->graph, "add"), "Add");  // Shapes unknown here.
  auto session = test::MustCreate(g, OptimizerOptions(2, 2, true));
  auto plain = test::MustCreate(g, OptimizerOptions(1, 1, false));
  for (int64_t batch : {1, 3, 1}) {
    const NamedTensors feeds = {{"x", OptimizerRandom({batch, 8, 9, 9}, 1)}};
    const RunMetadata metadata = test::MustRunTraced(*session, {"relu"}, feeds);
    std::multiset<std::string> ops;
    for (const NodeExecStats& s : metadata.node_stats) ops.insert(s.op);
    EXPECT_EQ(ops, std::multiset<std::string>{"FusedConv"}) << batch;
    EXPECT_TRUE(
        OptimizerSameBits(test::MustRun(*session, {"relu"}, feeds).at(0),
                          test::MustRun(*plain, {"relu"}, feeds).at(0)))
        << batch;
  }
}

// Shapes that are new at Run after Run (a decoder's growing cache) stop
// the specialising: the fourth new shape in a row, and every new one after
// it, runs the general graph, while shapes specialised before keep their
// graph; each set of shapes runs on the same graph every time, so its bits
// do not change. A batch-invariant session specialises each new shape.
TEST(GraphPassesTest, ShapesNewAtEveryRunStopTheSpecialising) {
  const Graph g = OpenBatchResidual();
  auto plain = test::MustCreate(g, OptimizerOptions(1, 1, false));
  for (bool batch_invariant : {false, true}) {
    SessionOptions options = OptimizerOptions(1, 2, true);
    options.batch_invariant = batch_invariant;
    auto session = test::MustCreate(g, options);
    std::map<int64_t, Tensor> first;
    for (int64_t batch : {1, 2, 3, 4, 5, 1, 4, 5}) {
      SCOPED_TRACE(testing::Message()
                   << "batch " << batch << ", invariant " << batch_invariant);
      const NamedTensors feeds = {{"x", OptimizerRandom({batch, 8, 9, 9}, 1)}};
      // One Run a shape, traced: a second Run of the same shapes would
      // count as a shape seen before.
      RunOptions traced;
      traced.trace_level = RunOptions::TraceLevel::kFull;
      std::vector<Tensor> out;
      RunMetadata metadata;
      ASSERT_TRUE(
          session->Run(traced, feeds, {"relu"}, {}, &out, &metadata).ok());
      std::multiset<std::string> ops;
      for (const NodeExecStats& s : metadata.node_stats) ops.insert(s.op);
      const bool specialised = batch <= 3 || batch_invariant;
      EXPECT_EQ(ops.count("FusedConv") == 1 && ops.size() == 1, specialised);
      const Tensor y = out.at(0);
      EXPECT_TRUE(
          OptimizerSameBits(y, test::MustRun(*plain, {"relu"}, feeds).at(0)));
      if (auto it = first.find(batch); it != first.end()) {
        EXPECT_TRUE(y.BitwiseEqual(it->second));
      } else {
        first.emplace(batch, y);
      }
    }
  }
}

// Two Adds of x and two equal constants are one Add once the constants
// are one; the Mul of the two becomes x' squared of one tensor. Random ops,
// even with the same seed, and a graph end stay; the results keep their
// bits.
TEST(GraphPassesTest, CommonSubexpressionsRunOnce) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({2, 3}));
  g.Const("c1", OptimizerRandom({3}, 5));
  g.Const("c2", OptimizerRandom({3}, 5));
  g.Const("c3", OptimizerRandom({3}, 6));
  g.Add("a", "x", "c1");
  g.Add("b", "x:0", "c2");
  g.Add("c", "x", "c3");  // Another constant: stays.
  test::MustAdd(g, {"y", "Mul", {"a", "b"}, {}, ""});
  test::MustAdd(g, {"z", "Mul", {"y", "c"}, {}, ""});
  g.Add("end", "x", "c1");  // Equal to a, but a graph end.
  const AttrMap random = {{"shape", PartialShape({2, 3})},
                          {"dtype", DataType::kFloat32},
                          {"seed", int64_t{3}}};
  test::MustAdd(g, {"r1", "RandomNormal", {}, random, ""});
  test::MustAdd(g, {"r2", "RandomNormal", {}, random, ""});
  test::MustAdd(g, {"rs", "Add", {"r1", "r2"}, {}, ""});
  GraphPassOptions only;
  only.disabled = {"constant-folding"};
  auto optimized = Optimize(g, only);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  const Graph& out = optimized->graph;
  EXPECT_EQ(out.FindNode("b"), nullptr);
  EXPECT_EQ(out.FindNode("c2"), nullptr);
  ASSERT_NE(out.FindNode("y"), nullptr);
  EXPECT_EQ(out.FindNode("y")->inputs, (std::vector<std::string>{"a", "a"}));
  EXPECT_NE(out.FindNode("c"), nullptr);
  EXPECT_NE(out.FindNode("end"), nullptr);
  EXPECT_NE(out.FindNode("r2"), nullptr);
  EXPECT_EQ(optimized->removed.at("b").replaced_by, "a");
  const NamedTensors feeds = {{"x", OptimizerRandom({2, 3}, 9)}};
  for (const char* fetch : {"z", "end", "rs", "b"}) {
    const Outcome outcome = RunBothWays(g, fetch, feeds);
    EXPECT_TRUE(OptimizerSameBits(outcome.unoptimized, outcome.optimized))
        << fetch;
  }
}

TEST(GraphPassesTest, DisabledPassesLeaveTheirPatternsAlone) {
  GraphPassOptions passes;
  passes.disabled = {"conv-residual-fusion", "activation-fusion"};
  auto optimized = Optimize(ResidualBlock(), passes);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(OpOf(optimized->graph, "conv"), "Conv");
  EXPECT_EQ(OpOf(optimized->graph, "relu"), "Relu");
  for (const GraphPassResult& ran : optimized->passes) {
    EXPECT_NE(ran.pass, "activation-fusion");
  }
}

TEST(GraphPassesTest, AGraphThatDoesNotCompileIsLeftForTheSessionToReport) {
  Graph g;
  g.Relu("y", "missing");
  auto optimized = Optimize(g);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_TRUE(optimized->passes.empty());
  auto session = Session::Create(g, OptimizerOptions(1, 1, true));
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("missing"), std::string::npos);
}

TEST(FusedKernelsTest, AnUnknownActivationIsAnErrorNamingIt) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, {1, 1, 3, 3});
  g.Const("w", OptimizerRandom({1, 1, 1, 1}, 2));
  g.Const("b", OptimizerRandom({1}, 3));
  ASSERT_TRUE(g.AddNode({"y",
                         "FusedConv",
                         {"x", "w", "b"},
                         {{"activation", std::string("Swish")}},
                         ""})
                  .ok());
  auto session = test::MustCreate(g, OptimizerOptions(1, 1, false));
  std::vector<Tensor> out;
  const Status s =
      session->Run({{"x", OptimizerRandom({1, 1, 3, 3}, 1)}}, {"y"}, {}, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Swish"), std::string::npos) << s;
}

}  // namespace
}  // namespace weft
