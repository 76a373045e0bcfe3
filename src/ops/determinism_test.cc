// Every op, bitwise identical for intra in {1, 2, 3, 4, 7, 8} x inter in
// {-1, 1, 2, 4}, on random inputs whose sizes are not multiples of any block
// size weft uses.
#include <gtest/gtest.h>

#include "test_support/session_util.h"

namespace weft {
namespace {

Graph EveryOpGraph(std::vector<std::string>* fetches) {
  Graph g;
  auto node = [&](const std::string& name, const std::string& op,
                  std::vector<std::string> inputs, AttrMap attrs = {}) {
    EXPECT_TRUE(
        g.AddNode({name, op, std::move(inputs), std::move(attrs), ""}).ok())
        << name;
    fetches->push_back(name);
    return name;
  };
  // 40,009 = 7 x 5,717: crosses the 16,384 element and 8,192 reduction blocks.
  const Shape big{7, 5717};
  auto x = g.RandomUniform("x", DataType::kFloat32, big, 11);
  auto y = g.RandomUniform("y", DataType::kFloat32, big, 12);
  auto pos =
      node("pos", "Add", {x, g.Const("half", Tensor::Scalar<float>(0.5f))});
  auto row = g.RandomUniform("row", DataType::kFloat32, {5717}, 13);
  node("add", "Add", {x, row});
  node("sub", "Sub", {x, y});
  node("mul", "Mul", {x, y});
  node("div", "Div", {x, pos});
  node("sum", "Sum", {x, y, row});
  node("max", "Max", {x, y});
  node("min", "Min", {x, y});
  node("pow", "Pow", {pos, y});
  for (const char* op : {"Neg", "Abs", "Exp", "Sqrt", "Reciprocal", "Relu",
                         "Sigmoid", "Tanh", "Gelu"}) {
    node(std::string("u_") + op, op,
         {op == std::string("Sqrt") || op == std::string("Reciprocal") ? pos
                                                                       : x});
  }
  node("log", "Log", {pos});
  node("gelu_tanh", "Gelu", {x}, {{"approximate", "tanh"}});
  node("softmax", "Softmax", {x});
  node("logsoftmax", "LogSoftmax", {x}, {{"axis", 0}});
  auto scale = g.RandomUniform("scale", DataType::kFloat32, {5717}, 14);
  node("layernorm", "LayerNormalization", {x, scale, row});
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
    node(std::string(op) + "_all", op, {x}, {{"keepdims", 0}});
    node(std::string(op) + "_ax1", op, {x},
         {{"axes", std::vector<int64_t>{1}}});
  }
  auto small = g.RandomUniform("small", DataType::kFloat32, {33, 17}, 15);
  node("prod", "ReduceProd", {small}, {{"axes", std::vector<int64_t>{0}}});
  node("argmax", "ArgMax", {x}, {{"axis", 1}});
  auto a = g.RandomUniform("a", DataType::kFloat32, {3, 131, 77}, 16);
  auto b = g.RandomUniform("b", DataType::kFloat32, {77, 301}, 17);
  node("matmul", "MatMul", {a, b});
  auto a2 = g.RandomUniform("a2", DataType::kFloat32, {131, 77}, 18);
  node("gemm", "Gemm", {a2, b, g.Const("c", Tensor::Scalar<float>(1))},
       {{"alpha", 0.5}, {"beta", 2.0}});
  // Attention over 2 x 75 positions, 3 heads of 20, Q, K and V from one
  // tensor, with a mask per key: row tiles of 48 queries, a partial last.
  auto qkv = g.RandomUniform("qkv", DataType::kFloat32, {2, 75, 180}, 19);
  auto keys_mask =
      g.RandomUniform("keys_mask", DataType::kFloat32, {2, 1, 1, 75}, 20);
  node("attention", "FusedAttention", {qkv, qkv, qkv, keys_mask},
       {{"num_heads", int64_t{3}},
        {"head_size", int64_t{20}},
        {"k_offset", int64_t{60}},
        {"v_offset", int64_t{120}},
        {"alpha", 0.25}});
  node("concat", "Concat", {x, y}, {{"axis", 0}});
  node("split", "Split", {x}, {{"axis", 1}, {"num_outputs", 3}});
  fetches->push_back("split:2");
  node("slice", "Slice", {x},
       {{"starts", std::vector<int64_t>{1, -4000}},
        {"ends", std::vector<int64_t>{6, 5000}},
        {"steps", std::vector<int64_t>{2, 3}}});
  node("transpose", "Transpose", {x});
  node("reshape", "Reshape",
       {x, g.Const("shape", Tensor::FromVector<int64_t>({2}, {5717, -1}))});
  node("cast", "Cast", {x}, {{"to", DataType::kInt32}});
  node("expand", "Expand",
       {row, g.Const("to", Tensor::FromVector<int64_t>({2}, {3, 5717}))});
  node("fill", "Fill", {}, {{"shape", Shape{5, 3}}, {"value", 2.5}});
  node("normal", "RandomNormal", {}, {{"shape", big}, {"seed", 4}});
  return g;
}

TEST(DeterminismTest, EveryOpIsBitwiseIdenticalForEveryThreadSetting) {
  std::vector<std::string> fetches;
  const Graph g = EveryOpGraph(&fetches);
  std::vector<Tensor> reference;
  for (int inter : {-1, 1, 2, 4}) {
    for (int intra : {1, 2, 3, 4, 7, 8}) {
      auto session = test::MustCreate(g, test::PerSessionOptions(inter, intra));
      ASSERT_NE(session, nullptr);
      auto out = test::MustRun(*session, fetches);
      ASSERT_EQ(out.size(), fetches.size());
      if (reference.empty()) {
        reference = out;
        continue;
      }
      for (size_t i = 0; i < fetches.size(); ++i) {
        EXPECT_TRUE(out[i].BitwiseEqual(reference[i]))
            << fetches[i] << " differs with inter=" << inter
            << " intra=" << intra;
      }
    }
  }
}

}  // namespace
}  // namespace weft
