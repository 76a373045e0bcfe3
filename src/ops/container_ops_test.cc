// The sequence and optional ops, and SequenceMap, on graphs built by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_support/session_util.h"
#include "weft/container.h"

namespace weft {
namespace {

using test::Values;
using ::testing::HasSubstr;

Tensor ContainerOpsFloats(const Shape& shape,
                          const std::vector<float>& values) {
  return Tensor::FromVector<float>(shape, values);
}

// a = [1, 2], b = [3], c = [4, 5, 6] as constants.
Graph ThreeTensors() {
  Graph g;
  g.Const("a", ContainerOpsFloats({2}, {1, 2}));
  g.Const("b", ContainerOpsFloats({1}, {3}));
  g.Const("c", ContainerOpsFloats({3}, {4, 5, 6}));
  return g;
}

std::vector<std::vector<float>> ItemValues(const Tensor& seq) {
  std::vector<std::vector<float>> out;
  for (const Tensor& item : SequenceItems(seq)) {
    out.push_back(Values<float>(item));
  }
  return out;
}

TEST(SequenceOpsTest, ConstructInsertAtEraseAndLength) {
  Graph g = ThreeTensors();
  g.Const("one", Tensor::Scalar<int64_t>(1));
  g.Const("last", Tensor::Scalar<int32_t>(-1));
  test::MustAdd(g, {"s", "SequenceConstruct", {"a", "b"}, {}, ""});
  test::MustAdd(g, {"ins", "SequenceInsert", {"s", "c", "one"}, {}, ""});
  test::MustAdd(g, {"app", "SequenceInsert", {"s", "c"}, {}, ""});
  test::MustAdd(g, {"at", "SequenceAt", {"ins", "last"}, {}, ""});
  test::MustAdd(g, {"erased", "SequenceErase", {"ins", "one"}, {}, ""});
  test::MustAdd(g, {"popped", "SequenceErase", {"ins"}, {}, ""});
  test::MustAdd(g, {"len", "SequenceLength", {"ins"}, {}, ""});
  auto out = test::RunAtOneAndTwoThreads(
      g, {"ins", "app", "at", "erased", "popped", "len"});
  ASSERT_TRUE(out.ok()) << out.status();
  using V = std::vector<std::vector<float>>;
  EXPECT_EQ(ItemValues((*out)[0]), (V{{1, 2}, {4, 5, 6}, {3}}));
  EXPECT_EQ(ItemValues((*out)[1]), (V{{1, 2}, {3}, {4, 5, 6}}));
  EXPECT_EQ(Values<float>((*out)[2]), (std::vector<float>{3}));
  EXPECT_EQ(ItemValues((*out)[3]), (V{{1, 2}, {3}}));
  EXPECT_EQ(ItemValues((*out)[4]), (V{{1, 2}, {4, 5, 6}}));
  EXPECT_EQ(*(*out)[5].data<int64_t>(), 3);
}

TEST(SequenceOpsTest, PositionsOutOfRangeFailNamingTheRange) {
  Graph g = ThreeTensors();
  g.Const("far", Tensor::Scalar<int64_t>(3));
  test::MustAdd(g, {"s", "SequenceConstruct", {"a", "b"}, {}, ""});
  test::MustAdd(g, {"at", "SequenceAt", {"s", "far"}, {}, ""});
  auto out = test::RunAtOneAndTwoThreads(g, {"at"});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("position 3 is out of range for a sequence of 2 "
                        "items (allowed: -2 to 1)"));
}

TEST(SequenceOpsTest, SplitAndConcatAreInverse) {
  Graph g;
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i) values[i] = static_cast<float>(i);
  g.Const("x", ContainerOpsFloats({3, 4}, values));
  g.Const("lengths", Tensor::FromVector<int64_t>({2}, {1, 3}));
  g.Const("three", Tensor::Scalar<int64_t>(3));
  test::MustAdd(g, {"by_lengths",
                    "SplitToSequence",
                    {"x", "lengths"},
                    {{"axis", int64_t{1}}},
                    ""});
  test::MustAdd(g, {"by_three",
                    "SplitToSequence",
                    {"x", "three"},
                    {{"axis", int64_t{-1}}},
                    ""});
  test::MustAdd(
      g, {"rows", "SplitToSequence", {"x"}, {{"keepdims", int64_t{0}}}, ""});
  test::MustAdd(g, {"joined",
                    "ConcatFromSequence",
                    {"by_lengths"},
                    {{"axis", int64_t{1}}},
                    ""});
  test::MustAdd(g, {"stacked",
                    "ConcatFromSequence",
                    {"rows"},
                    {{"axis", int64_t{1}}, {"new_axis", int64_t{1}}},
                    ""});
  auto out = test::RunAtOneAndTwoThreads(
      g, {"by_lengths", "by_three", "rows", "joined", "stacked"});
  ASSERT_TRUE(out.ok()) << out.status();
  using V = std::vector<std::vector<float>>;
  EXPECT_EQ(ItemValues((*out)[0]),
            (V{{0, 4, 8}, {1, 2, 3, 5, 6, 7, 9, 10, 11}}));
  EXPECT_EQ(SequenceItems((*out)[1])[1].shape(), (Shape{3, 1}));  // Shorter.
  EXPECT_EQ(SequenceItems((*out)[2])[0].shape(), (Shape{4}));     // Squeezed.
  EXPECT_TRUE((*out)[3].BitwiseEqual(ContainerOpsFloats({3, 4}, values)));
  // Rows stacked along a new axis 1: the transpose.
  EXPECT_EQ((*out)[4].shape(), (Shape{4, 3}));
  EXPECT_EQ(Values<float>((*out)[4]),
            (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

TEST(SequenceOpsTest, SplitLengthsMustCoverTheAxis) {
  Graph g;
  g.Const("x", ContainerOpsFloats({4}, {1, 2, 3, 4}));
  g.Const("lengths", Tensor::FromVector<int64_t>({2}, {1, 2}));
  test::MustAdd(g, {"s", "SplitToSequence", {"x", "lengths"}, {}, ""});
  auto out = test::RunAtOneAndTwoThreads(g, {"s"});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("split lengths sum to 3, but the axis has 4"));
}

// More than 2^24 items is refused before any is made, whether the pieces
// are the axis's elements or a scalar split's.
TEST(SequenceOpsTest, SplittingIntoTooManyItemsIsRefused) {
  const int64_t extent = (int64_t{1} << 24) + 1;
  for (bool with_split : {false, true}) {
    Graph g;
    g.Placeholder("x", DataType::kUInt8, {extent});
    if (with_split) {
      g.Const("one", Tensor::Scalar<int64_t>(1));
      test::MustAdd(g, {"s", "SplitToSequence", {"x", "one"}, {}, ""});
    } else {
      test::MustAdd(g, {"s", "SplitToSequence", {"x"}, {}, ""});
    }
    auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
    ASSERT_NE(session, nullptr);
    std::vector<Tensor> out;
    const Status s = session->Run({{"x", Tensor(DataType::kUInt8, {extent})}},
                                  {"s"}, {}, &out);
    EXPECT_THAT(s.message(), HasSubstr("splitting makes 16777217 items; weft "
                                       "makes at most 16777216"));
  }
}

TEST(OptionalOpsTest, HasAndGetElement) {
  Graph g = ThreeTensors();
  test::MustAdd(g, {"some", "Optional", {"a"}, {}, ""});
  test::MustAdd(g,
                {"none", "EmptyOptional", {}, {{"V", DataType::kFloat32}}, ""});
  test::MustAdd(g, {"has_some", "OptionalHasElement", {"some"}, {}, ""});
  test::MustAdd(g, {"has_none", "OptionalHasElement", {"none"}, {}, ""});
  test::MustAdd(g, {"value", "OptionalGetElement", {"some"}, {}, ""});
  auto out = test::RunAtOneAndTwoThreads(g, {"has_some", "has_none", "value"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(*(*out)[0].data<bool>());
  EXPECT_FALSE(*(*out)[1].data<bool>());
  EXPECT_EQ(Values<float>((*out)[2]), (std::vector<float>{1, 2}));
}

// From ONNX opset 18 a tensor or a sequence may stand for an optional: it
// holds a value, and that value is itself (a sequence stays a sequence).
TEST(OptionalOpsTest, ATensorOrSequenceHoldsItself) {
  Graph g = ThreeTensors();
  test::MustAdd(g, {"s", "SequenceConstruct", {"a", "b"}, {}, ""});
  test::MustAdd(g, {"has_tensor", "OptionalHasElement", {"a"}, {}, ""});
  test::MustAdd(g, {"has_sequence", "OptionalHasElement", {"s"}, {}, ""});
  test::MustAdd(g, {"tensor", "OptionalGetElement", {"a"}, {}, ""});
  test::MustAdd(g, {"sequence", "OptionalGetElement", {"s"}, {}, ""});
  test::MustAdd(g, {"length", "SequenceLength", {"sequence"}, {}, ""});
  auto out = test::RunAtOneAndTwoThreads(
      g, {"has_tensor", "has_sequence", "tensor", "length"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(*(*out)[0].data<bool>());
  EXPECT_TRUE(*(*out)[1].data<bool>());
  EXPECT_EQ(Values<float>((*out)[2]), (std::vector<float>{1, 2}));
  EXPECT_EQ(*(*out)[3].data<int64_t>(), 2);
}

TEST(ContainerOpsTest, OpsThatTakeTensorsRefuseContainersAtCompile) {
  Graph g = ThreeTensors();
  test::MustAdd(g, {"s", "SequenceConstruct", {"a", "b"}, {}, ""});
  test::MustAdd(g, {"y", "Add", {"s", "s"}, {}, ""});
  auto out = test::RunAtOneAndTwoThreads(g, {"y"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(out.status().message(),
              HasSubstr("op Add does not take sequence(float32) values"));

  Graph h = ThreeTensors();
  h.Const("zero", Tensor::Scalar<int64_t>(0));
  test::MustAdd(h, {"y", "SequenceAt", {"a", "zero"}, {}, ""});
  out = test::RunAtOneAndTwoThreads(h, {"y"});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("input_sequence must be a sequence, got float32"));
}

// Kernels that copy bytes never see strings; ops whose any-type inputs do
// not say they take strings refuse them.
TEST(ContainerOpsTest, ByteCopyingOpsRefuseStrings) {
  Graph g;
  test::MustAdd(
      g,
      {"s", "Placeholder", {}, {{"dtype", SequenceOf(DataType::kString)}}, ""});
  test::MustAdd(g,
                {"y", "ConcatFromSequence", {"s"}, {{"axis", int64_t{0}}}, ""});
  auto session = Session::Create(g, test::PerSessionOptions(1, 1));
  ASSERT_FALSE(session.ok());
  EXPECT_THAT(session.status().message(),
              HasSubstr("ConcatFromSequence of strings is not supported"));

  Tensor text(DataType::kString, Shape{1});
  auto clipped =
      test::RunOneOutput("Clip", {Tensor::FromVector<float>({1}, {1}), text});
  ASSERT_FALSE(clipped.ok());
  EXPECT_THAT(clipped.status().message(),
              HasSubstr("does not take string values (for 'bounds[0]')"));
}

// A Loop may carry strings but not stack them as scan outputs (the
// stacking copies bytes).
TEST(ContainerOpsTest, LoopRefusesStringScanOutputs) {
  auto body = std::make_shared<Subgraph>();
  test::MustAdd(body->graph,
                {"i", "Placeholder", {}, {{"dtype", DataType::kInt64}}, ""});
  test::MustAdd(body->graph,
                {"c", "Placeholder", {}, {{"dtype", DataType::kBool}}, ""});
  body->graph.Const("word", Tensor(DataType::kString, Shape{1}));
  body->inputs = {"i", "c"};
  body->outputs = {"c", "word"};
  Graph g;
  g.Const("m", Tensor::Scalar<int64_t>(2));
  test::MustAdd(g, {"loop",
                    "Loop",
                    {"m"},
                    {{"body", SubgraphPtr(body)},
                     {"has_trip_count", true},
                     {"Tout", std::vector<DataType>{DataType::kString}}},
                    ""});
  auto session = Session::Create(g, test::PerSessionOptions(1, 1));
  ASSERT_FALSE(session.ok());
  EXPECT_THAT(session.status().message(),
              HasSubstr("scan output 0 is string; scan outputs must be "
                        "tensors of numbers or bools"));
}

// SequenceMap: body(item, bias) = item + bias over a sequence, with a
// tensor passed whole, at every thread setting.
TEST(SequenceMapTest, RunsTheBodyOnEachItem) {
  auto body = std::make_shared<Subgraph>();
  test::MustAdd(
      body->graph,
      {"item", "Placeholder", {}, {{"dtype", DataType::kFloat32}}, ""});
  test::MustAdd(
      body->graph,
      {"bias", "Placeholder", {}, {{"dtype", DataType::kFloat32}}, ""});
  test::MustAdd(body->graph, {"sum", "Add", {"item", "bias"}, {}, ""});
  test::MustAdd(body->graph, {"shape", "Shape", {"item"}, {}, ""});
  body->inputs = {"item", "bias"};
  body->outputs = {"sum", "shape"};
  for (int threads : {1, 2}) {
    Graph g = ThreeTensors();
    g.Const("bias", ContainerOpsFloats({1}, {10}));
    test::MustAdd(g, {"s", "SequenceConstruct", {"a", "b", "c"}, {}, ""});
    test::MustAdd(
        g, {"map",
            "SequenceMap",
            {"s", "bias"},
            {{"body", SubgraphPtr(body)},
             {"Tout", std::vector<DataType>{SequenceOf(DataType::kFloat32),
                                            SequenceOf(DataType::kInt64)}}},
            ""});
    auto session =
        test::MustCreate(g, test::PerSessionOptions(threads, threads));
    ASSERT_NE(session, nullptr);
    auto out = test::MustRun(*session, {"map:0", "map:1"});
    ASSERT_EQ(out.size(), 2u);
    using V = std::vector<std::vector<float>>;
    EXPECT_EQ(ItemValues(out[0]), (V{{11, 12}, {13}, {14, 15, 16}}));
    EXPECT_EQ(Values<int64_t>(SequenceItems(out[1])[2]),
              (std::vector<int64_t>{3}));
  }
}

}  // namespace
}  // namespace weft
