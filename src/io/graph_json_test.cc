#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_support/session_util.h"
#include "weft/graph_io.h"
#include "weft/npy.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Wrap(const std::string& nodes, const std::string& outputs = "[]") {
  return R"({"format": "weft-graph", "version": 1, "nodes": [)" + nodes +
         R"(], "outputs": )" + outputs + "}";
}

TEST(GraphJsonTest, ParsesTheDocumentedExample) {
  const std::string text = R"({"format": "weft-graph", "version": 1,
   "nodes": [
     {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [4, 4]}},
     {"name": "w", "op": "RandomUniform", "attrs": {"dtype": "float32", "shape": [4, 4], "seed": 7}},
     {"name": "y", "op": "MatMul", "inputs": ["x", "w"], "attrs": {"transpose_b": false}, "device": "/cpu:0"}],
   "outputs": ["y"]})";
  auto file = ParseGraph(text);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->graph.nodes().size(), 3u);
  EXPECT_EQ(file->outputs, std::vector<std::string>{"y"});
  const NodeDef* y = file->graph.FindNode("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->device, "/cpu:0");
  EXPECT_EQ(*y->attrs.at("transpose_b").get_if<bool>(), false);
  auto session = test::MustCreate(file->graph, test::PerSessionOptions(1, 1));
  auto out = test::MustRun(*session, {"y"},
                           {{"x", Tensor(DataType::kFloat32, {4, 4})}});
  EXPECT_EQ(out[0].shape(), (Shape{4, 4}));
}

TEST(GraphJsonTest, AttributesAreReadThroughTheOpSchema) {
  // RandomUniform's low/high are floats: a JSON 1 is accepted as 1.0.
  auto file = ParseGraph(Wrap(
      R"({"name": "r", "op": "RandomUniform", "attrs": {"shape": [2], "low": 1, "high": 2}})"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*file->graph.FindNode("r")->attrs.at("low").get_if<double>(), 1.0);
  // Spin's micros is an int: 1.5 is not.
  auto bad = ParseGraph(
      Wrap(R"({"name": "s", "op": "Spin", "attrs": {"micros": 1.5}})"));
  EXPECT_THAT(bad.status().message(),
              AllOf(HasSubstr("node 's'"), HasSubstr("attribute 'micros'"),
                    HasSubstr("must be an integer")));
}

TEST(GraphJsonTest, ABooleanIsReadAsZeroOrOneForIntegerFlags) {
  auto file = ParseGraph(Wrap(
      R"({"name": "s", "op": "ReduceSum", "inputs": ["x"], "attrs": {"keepdims": false}})"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*file->graph.FindNode("s")->attrs.at("keepdims").get_if<int64_t>(),
            0);
  // An integer that is not a flag still wants an integer.
  auto bad = ParseGraph(
      Wrap(R"({"name": "s", "op": "Spin", "attrs": {"micros": true}})"));
  EXPECT_THAT(bad.status().message(), HasSubstr("must be an integer"));
  // And an unknown op or attribute names the closest ones.
  auto typo = ParseGraph(Wrap(R"({"name": "r", "op": "relu"})"));
  EXPECT_THAT(typo.status().message(),
              HasSubstr("unknown op 'relu' — did you mean 'Relu'?"));
  auto attr =
      ParseGraph(Wrap(R"({"name": "s", "op": "Spin", "attrs": {"micro": 3}})"));
  EXPECT_THAT(attr.status().message(),
              HasSubstr("did you mean 'micros'?; Spin's attributes: micros"));
}

TEST(GraphJsonTest, InlineConstAndDtypeFromValue) {
  auto file = ParseGraph(Wrap(
      R"({"name": "c", "op": "Const", "attrs": {"value": {"dtype": "int32", "shape": [2, 2], "values": [1, 2, 3, 4]}}})",
      R"(["c"])"));
  ASSERT_TRUE(file.ok()) << file.status();
  auto session = test::MustCreate(file->graph, test::PerSessionOptions(1, 1));
  auto out = test::MustRun(*session, {"c"});
  EXPECT_EQ(test::Values<int32_t>(out[0]), (std::vector<int32_t>{1, 2, 3, 4}));
}

// Each dtype's extreme values are kept exactly; one past them is an error
// naming the node, the value and the dtype, never a wrapped value.
TEST(GraphJsonTest, ConstValuesAreRangeCheckedPerDtype) {
  auto Const = [](const std::string& dtype, const std::string& value) {
    return ParseGraph(Wrap(R"({"name": "c", "op": "Const", "attrs": {"value":
        {"dtype": ")" + dtype +
                           R"(", "shape": [1], "values": [)" + value + "]}}}"));
  };
  struct Case {
    const char* dtype;
    const char* fits;
    const char* too_big;
  };
  for (const Case& c :
       {Case{"int32", "2147483647", "2147483648"},
        Case{"int32", "-2147483648", "-2147483649"},
        Case{"int64", "9223372036854775807", "9223372036854775808"},
        Case{"int64", "-9223372036854775808", "18446744073709551615"},
        Case{"float32", "3.4e+38", "3.5e+38"},
        Case{"float32", "-3.4e+38", "-1e+39"},
        Case{"float64", "1.7e308", "-1e400"}, Case{"bool", "1", "-1"},
        Case{"int4", "-8", "-9"}, Case{"int4", "7", "8"},
        Case{"uint4", "15", "16"}, Case{"uint4", "0", "-1"},
        Case{"float8_e4m3fn", "464", "465"},
        Case{"float8_e5m2", "-57344", "-61440"},
        Case{"float8_e4m3fnuz", "-247.5", "248.5"}}) {
    SCOPED_TRACE(std::string(c.dtype) + " " + c.fits + " / " + c.too_big);
    EXPECT_TRUE(Const(c.dtype, c.fits).ok()) << Const(c.dtype, c.fits).status();
    auto bad = Const(c.dtype, c.too_big);
    ASSERT_FALSE(bad.ok());
    if (std::string(c.too_big) != "-1e400") {  // The JSON parser's own error.
      EXPECT_THAT(bad.status().message(),
                  AllOf(HasSubstr("node 'c'"), HasSubstr(c.too_big),
                        HasSubstr(std::string("does not fit ") + c.dtype)));
    }
  }
  auto int32 = Const("int32", "-2147483648");
  EXPECT_EQ(int32->graph.FindNode("c")
                ->attrs.at("value")
                .get_if<Tensor>()
                ->data<int32_t>()[0],
            INT32_MIN);
}

TEST(GraphJsonTest, ConstFromNpyRelativeToTheGraphFile) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("weft_graph_json_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "data");
  Tensor value = Tensor::FromVector<double>({3}, {0.5, 1.5, 2.5});
  ASSERT_TRUE(WriteNpy((dir / "data" / "v.npy").string(), value).ok());
  std::ofstream(dir / "g.json") << Wrap(
      R"({"name": "c", "op": "Const", "attrs": {"value": "data/v.npy"}})",
      R"(["c"])");
  auto file = LoadGraph((dir / "g.json").string());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE(file->graph.FindNode("c")
                  ->attrs.at("value")
                  .get_if<Tensor>()
                  ->BitwiseEqual(value));
  std::ofstream(dir / "bad.json") << Wrap(
      R"({"name": "c", "op": "Const", "attrs": {"value": "data/missing.npy"}})");
  EXPECT_THAT(LoadGraph((dir / "bad.json").string()).status().message(),
              AllOf(HasSubstr("bad.json"), HasSubstr("node 'c'"),
                    HasSubstr("missing.npy")));
  std::filesystem::remove_all(dir);
}

TEST(GraphJsonTest, SyntaxErrorsGiveLineAndColumn) {
  auto file = ParseGraph(
      "{\"format\": \"weft-graph\",\n  \"version\": 1,\n  \"nodes\": [,]}");
  EXPECT_THAT(file.status().message(),
              AllOf(HasSubstr("JSON syntax error at line 3, column")));
  EXPECT_THAT(ParseGraph("").status().message(), HasSubstr("empty"));
  EXPECT_THAT(ParseGraph("   \n").status().message(), HasSubstr("empty"));
  EXPECT_THAT(ParseGraph(std::string(10000, '[')).status().message(),
              HasSubstr("nested deeper than 64"));
}

TEST(GraphJsonTest, SemanticErrorsNameNodeAndField) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"[]", "top level must be an object"},
      {R"({"format": "onnx", "version": 1, "nodes": []})", "\"format\""},
      {R"({"format": "weft-graph", "version": 2, "nodes": []})",
       "\"version\" must be 1"},
      {R"({"format": "weft-graph", "version": 1})", "\"nodes\" must be a list"},
      {R"({"format": "weft-graph", "version": 1, "nodes": [], "extra": 1})",
       "unknown top-level field \"extra\""},
      {Wrap(R"(7)"), "nodes[0] must be an object"},
      {Wrap(R"({"op": "Spin"})"), "nodes[0]: \"name\" must be a string"},
      {Wrap(R"({"name": "n"})"), "node 'n': \"op\" must be a string"},
      {Wrap(R"({"name": "n", "op": "Nope"})"), "node 'n': unknown op 'Nope'"},
      {Wrap(
           R"({"name": "n", "op": "Spin", "attrs": {"micros": 1, "color": 2}})"),
       "unknown attribute 'color'"},
      {Wrap(R"({"name": "n", "op": "Spin", "colour": 1})"),
       "unknown field \"colour\""},
      {Wrap(R"({"name": "n", "op": "Identity", "inputs": [3]})"),
       "every input must be a string"},
      {Wrap(
           R"({"name": "p", "op": "Placeholder", "attrs": {"dtype": "complex64"}})"),
       "unknown dtype \"complex64\""},
      {Wrap(
           R"({"name": "p", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2, -5]}})"),
       "shape dimensions"},
      {Wrap(
           R"({"name": "c", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [3], "values": [1, 2]}}})"),
       "needs 3 values, got 2"},
      {Wrap(
           R"({"name": "c", "op": "Const", "attrs": {"value": {"dtype": "int32", "shape": [1], "values": [1.5]}}})"),
       "is not a int32"},
      {Wrap(
           R"({"name": "c", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [4611686018427387904, 4], "values": []}}})"),
       "needs too many values"},
      {Wrap(
           R"({"name": "a", "op": "Spin", "attrs": {"micros": 1}}, {"name": "a", "op": "Spin", "attrs": {"micros": 1}})"),
       "duplicate node name 'a'"},
      {Wrap(R"({"name": "a", "op": "Spin", "attrs": {"micros": 1}})",
            R"(["b"])"),
       "output 'b' names no node"},
  };
  for (const Case& c : cases) {
    auto file = ParseGraph(c.text);
    EXPECT_FALSE(file.ok()) << c.text;
    EXPECT_THAT(file.status().message(), HasSubstr(c.expected)) << c.text;
  }
}

// A 4-bit const is written as the integers it holds and read back the same.
TEST(GraphJsonTest, FourBitConstsRoundTrip) {
  auto file = ParseGraph(Wrap(
      R"({"name": "c", "op": "Const", "attrs": {"value": {"dtype": "int4", "shape": [3], "values": [-8, 0, 7]}}})",
      R"(["c"])"));
  ASSERT_TRUE(file.ok()) << file.status();
  const std::string text = SerializeGraph(*file);
  EXPECT_THAT(text, HasSubstr("-8"));
  auto parsed = ParseGraph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  EXPECT_EQ(SerializeGraph(*parsed), text);
  const Tensor* value =
      parsed->graph.FindNode("c")->attrs.at("value").get_if<Tensor>();
  EXPECT_EQ(value->dtype(), DataType::kInt4);
  EXPECT_EQ(value->ValueAsDouble(0), -8);
  EXPECT_EQ(value->ValueAsDouble(2), 7);
}

TEST(GraphJsonTest, SerializeParsesBackToTheSameText) {
  GraphFile file;
  auto x = file.graph.Placeholder("x", DataType::kFloat32, {2, -1});
  auto c = file.graph.Const("c", Tensor::FromVector<float>({2}, {0.25f, -1}));
  file.graph.Add("y", x, c);
  file.graph.ReduceSum("s", "y", {0, -1}, false);
  ASSERT_TRUE(
      file.graph.AddNode({"d", "Identity", {"s", "^c"}, {}, "/cpu:0"}).ok());
  file.outputs = {"d", "y:0"};
  const std::string text = SerializeGraph(file);
  auto parsed = ParseGraph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  EXPECT_EQ(SerializeGraph(*parsed), text);
}

}  // namespace
}  // namespace weft
