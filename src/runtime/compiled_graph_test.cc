// Every compile-time rule: each error is a Status naming the node.
#include "runtime/compiled_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/gemm_tile.h"
#include "ops/dnnl_matmul.h"
#include "weft/prepared_weights.h"
#include "weft/session.h"

namespace weft::internal {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

Status CompileStatus(const Graph& graph, const CompileOptions& options = {}) {
  return CompiledGraph::Compile(graph, options).status();
}

Tensor CompiledGraphFloats(const Shape& shape) {
  return Tensor(DataType::kFloat32, shape);
}

TEST(CompiledGraphTest, ValidGraphCompiles) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {2, 3});
  auto w = g.Const("w", CompiledGraphFloats({3, 4}));
  g.MatMul("y", x, w);
  auto compiled = CompiledGraph::Compile(g, {});
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const CompiledGraph& cg = **compiled;
  const CompiledNode& y = cg.node(cg.FindNode("y"));
  ASSERT_EQ(y.output_dtypes.size(), 1u);
  EXPECT_EQ(y.output_dtypes[0], DataType::kFloat32);
  EXPECT_EQ(y.output_shapes[0], PartialShape({2, 4}));
  EXPECT_EQ(y.device(), "/cpu:0");
}

// The graph passes' compiles (prepare_constants = false) build kernels that
// prepare nothing: a constant weight is packed by the session's compile
// alone. The shapes are the same either way.
TEST(CompiledGraphTest, ACompileForShapesPreparesNoConstant) {
  Graph g;
  auto x = g.Placeholder("x", DataType::kFloat32, {64, 32});
  auto w = g.Const("w", CompiledGraphFloats({32, 48}));
  g.MatMul("y", x, w);
  CompileOptions for_shapes;
  for_shapes.prepare_constants = false;
  auto session = CompiledGraph::Compile(g, {});
  auto shapes = CompiledGraph::Compile(g, for_shapes);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  const CompiledNode& packed = (*session)->node((*session)->FindNode("y"));
  const CompiledNode& plain = (*shapes)->node((*shapes)->FindNode("y"));
  EXPECT_EQ(packed.kernel->prepared_bytes() > 0,
            DnnlMatMulAvailable() || ActiveGemmKernel() == GemmKernel::kBlis);
  EXPECT_EQ(plain.kernel->prepared_bytes(), 0);
  EXPECT_EQ(plain.output_shapes[0], packed.output_shapes[0]);
}

// With batch invariance every product against a constant B takes the
// micro-kernel's packing, which does not depend on A's rows: compiles for
// other rows (a session's graphs for other batch sizes) take the packing
// the first made from the session's PreparedWeights.
TEST(CompiledGraphTest, CompilesForOtherRowCountsShareThePackedWeight) {
  const Tensor w = CompiledGraphFloats({32, 48});
  CompileOptions options;
  options.batch_invariant = true;
  options.prepared_weights = std::make_shared<PreparedWeights>();
  for (int64_t rows : {64, 8, 64}) {
    Graph g;
    auto x = g.Placeholder("x", DataType::kFloat32, {rows, 32});
    g.MatMul("y", x, g.Const("w", w));
    auto compiled = CompiledGraph::Compile(g, options);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_GT(
        (*compiled)->node((*compiled)->FindNode("y")).kernel->prepared_bytes(),
        0);
  }
  EXPECT_EQ(options.prepared_weights->size(), 1);
  EXPECT_EQ(options.prepared_weights->reuses(), 2);
}

TEST(CompiledGraphTest, UnknownOp) {
  Graph g;
  ASSERT_TRUE(g.AddNode({"n", "NoSuchOp", {}, {}, ""}).ok());
  Status s = CompileStatus(g);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("node 'n'"), HasSubstr("unknown op 'NoSuchOp'")));
}

TEST(CompiledGraphTest, DuplicateName) {
  Graph g;
  g.Const("c", CompiledGraphFloats({1}));
  Status s = g.AddNode({"c", "Const", {}, {}, ""});
  EXPECT_THAT(s.message(), HasSubstr("duplicate node name 'c'"));
  EXPECT_THAT(CompileStatus(g).message(), HasSubstr("duplicate node name 'c'"));
  // And through a Session.
  auto session = Session::Create(g, {});
  EXPECT_FALSE(session.ok());
  EXPECT_THAT(session.status().message(), HasSubstr("duplicate node name"));
}

TEST(CompiledGraphTest, DanglingInput) {
  Graph g;
  g.Identity("y", "missing");
  Status s = CompileStatus(g);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("node 'y'"), HasSubstr("'missing'"),
                                 HasSubstr("does not exist")));
}

TEST(CompiledGraphTest, DanglingControlInput) {
  Graph g;
  ASSERT_TRUE(g.AddNode({"c",
                         "Const",
                         {"^ghost"},
                         {{"value", CompiledGraphFloats({1})},
                          {"dtype", DataType::kFloat32}},
                         ""})
                  .ok());
  EXPECT_THAT(CompileStatus(g).message(), HasSubstr("'ghost'"));
}

TEST(CompiledGraphTest, CycleNamesANodeOnIt) {
  Graph g;
  g.Identity("a", "c");
  g.Identity("b", "a");
  g.Identity("c", "b");
  g.Const("lonely", CompiledGraphFloats({1}));
  Status s = CompileStatus(g);
  EXPECT_THAT(s.message(), HasSubstr("cycle through node '"));
  const bool names_cycle_node = s.message().find("'a'") != std::string::npos ||
                                s.message().find("'b'") != std::string::npos ||
                                s.message().find("'c'") != std::string::npos;
  EXPECT_TRUE(names_cycle_node) << s;
}

TEST(CompiledGraphTest, SelfLoopIsACycle) {
  Graph g;
  g.Identity("a", "a");
  EXPECT_THAT(CompileStatus(g).message(), HasSubstr("cycle through node 'a'"));
}

TEST(CompiledGraphTest, WrongArity) {
  Graph g;
  auto c = g.Const("c", CompiledGraphFloats({1}));
  ASSERT_TRUE(g.AddNode({"add", "Add", {c}, {}, ""}).ok());
  Status s = CompileStatus(g);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("node 'add' (op Add)"),
                                 HasSubstr("expects 2 inputs (A, B), got 1")));
}

TEST(CompiledGraphTest, DtypeMismatch) {
  Graph g;
  auto a = g.Const("a", CompiledGraphFloats({2}));
  auto b = g.Const("b", Tensor(DataType::kFloat64, {2}));
  g.Add("sum", a, b);
  Status s = CompileStatus(g);
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("node 'sum'"), HasSubstr("dtype mismatch"),
                    HasSubstr("float64"), HasSubstr("float32")));
}

TEST(CompiledGraphTest, ShapeMismatchFromShapeInference) {
  Graph g;
  auto a = g.Const("a", CompiledGraphFloats({2, 3}));
  auto b = g.Const("b", CompiledGraphFloats({4, 5}));
  g.MatMul("mm", a, b);
  Status s = CompileStatus(g);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("node 'mm' (op MatMul)"),
                                 HasSubstr("inner dimensions do not match"),
                                 HasSubstr("[2, 3]"), HasSubstr("[4, 5]")));
  Graph g2;
  auto x = g2.Const("x", CompiledGraphFloats({2, 3}));
  auto y = g2.Const("y", CompiledGraphFloats({4, 3}));
  g2.Add("bad_add", x, y);
  EXPECT_THAT(
      CompileStatus(g2).message(),
      AllOf(HasSubstr("node 'bad_add'"), HasSubstr("cannot be broadcast")));
}

TEST(CompiledGraphTest, MissingAttribute) {
  Graph g;
  ASSERT_TRUE(g.AddNode({"p", "Placeholder", {}, {}, ""}).ok());
  EXPECT_THAT(CompileStatus(g).message(),
              AllOf(HasSubstr("node 'p'"),
                    HasSubstr("missing required attribute 'dtype'")));
}

TEST(CompiledGraphTest, MistypedAttribute) {
  Graph g;
  ASSERT_TRUE(
      g.AddNode({"s", "Spin", {}, {{"micros", std::string("ten")}}, ""}).ok());
  EXPECT_THAT(CompileStatus(g).message(),
              AllOf(HasSubstr("node 's' (op Spin)"),
                    HasSubstr("attribute 'micros' must be a int")));
}

TEST(CompiledGraphTest, UnknownAttribute) {
  Graph g;
  ASSERT_TRUE(
      g.AddNode({"s", "Spin", {}, {{"micros", 1}, {"speed", 2}}, ""}).ok());
  EXPECT_THAT(CompileStatus(g).message(),
              HasSubstr("unknown attribute 'speed'"));
}

TEST(CompiledGraphTest, IntAcceptedWhereFloatDeclared) {
  Graph g;
  ASSERT_TRUE(g.AddNode({"r",
                         "RandomUniform",
                         {},
                         {{"shape", Shape{2}}, {"low", 1}, {"high", 3}},
                         ""})
                  .ok());
  EXPECT_TRUE(CompileStatus(g).ok());
}

TEST(CompiledGraphTest, OutputIndexOutOfRange) {
  Graph g;
  auto c = g.Const("c", CompiledGraphFloats({1}));
  g.Identity("i", c + ":1");
  EXPECT_THAT(CompileStatus(g).message(),
              AllOf(HasSubstr("node 'i'"), HasSubstr("'c:1' does not exist")));
}

TEST(CompiledGraphTest, DisallowedDtype) {
  Graph g;
  auto a = g.Const("a", Tensor(DataType::kBool, {2, 2}));
  g.MatMul("mm", a, a);
  EXPECT_THAT(
      CompileStatus(g).message(),
      AllOf(HasSubstr("node 'mm'"), HasSubstr("dtype bool is not allowed")));
}

TEST(CompiledGraphTest, DevicePlacement) {
  Graph g;
  auto c = g.Const("c", CompiledGraphFloats({1}));
  NodeDef node{"i", "Identity", {c}, {}, "/device:CPU:1"};
  ASSERT_TRUE(g.AddNode(node).ok());
  CompileOptions two_cpus;
  two_cpus.num_cpu_devices = 2;
  auto compiled = CompiledGraph::Compile(g, two_cpus);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_EQ((*compiled)->node((*compiled)->FindNode("i")).device(), "/cpu:1");

  // One CPU: /cpu:1 does not exist ...
  Status s = CompileStatus(g);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("node 'i'"),
                                 HasSubstr("device '/device:CPU:1'")));
  // ... unless soft placement moves it to /cpu:0.
  CompileOptions soft;
  soft.allow_soft_placement = true;
  compiled = CompiledGraph::Compile(g, soft);
  ASSERT_TRUE(compiled.ok());
  EXPECT_EQ((*compiled)->node((*compiled)->FindNode("i")).device(), "/cpu:0");
}

TEST(CompiledGraphTest, NonCpuDeviceNeedsSoftPlacement) {
  Graph g;
  ASSERT_TRUE(g.AddNode({"c",
                         "Const",
                         {},
                         {{"value", CompiledGraphFloats({1})},
                          {"dtype", DataType::kFloat32}},
                         "/gpu:0"})
                  .ok());
  EXPECT_THAT(CompileStatus(g).message(), HasSubstr("device '/gpu:0'"));
  CompileOptions soft;
  soft.allow_soft_placement = true;
  EXPECT_TRUE(CompileStatus(g, soft).ok());
}

TEST(CompiledGraphTest, ParseDeviceForms) {
  EXPECT_EQ(ParseCpuDevice(""), 0);
  EXPECT_EQ(ParseCpuDevice("/cpu:3"), 3);
  EXPECT_EQ(ParseCpuDevice("/device:CPU:2"), 2);
  EXPECT_EQ(ParseCpuDevice("/job:localhost/replica:0/task:0/device:CPU:1"), 1);
  EXPECT_EQ(ParseCpuDevice("/gpu:0"), std::nullopt);
  EXPECT_EQ(ParseCpuDevice("/cpu:x"), std::nullopt);
}

TEST(CompiledGraphTest, ParseInputForms) {
  auto plain = ParseInput("x");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->node, "x");
  EXPECT_EQ(plain->output, 0);
  auto indexed = ParseInput("x:2");
  ASSERT_TRUE(indexed.ok());
  EXPECT_EQ(indexed->output, 2);
  auto control = ParseInput("^x");
  ASSERT_TRUE(control.ok());
  EXPECT_TRUE(control->control);
  EXPECT_FALSE(ParseInput("x:").ok());
  EXPECT_FALSE(ParseInput("x:-1").ok());
  EXPECT_FALSE(ParseInput("^x:1").ok());
  EXPECT_FALSE(ParseInput(":1").ok());
}

}  // namespace
}  // namespace weft::internal
