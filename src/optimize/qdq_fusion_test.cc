// qdq-fusion: which QDQ groups become integer nodes, which stay in float,
// and what the rewritten graph computes (bit for bit where the pass says
// so, within one quantisation step for the convolutions).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "test_support/session_util.h"
#include "weft/graph_passes.h"

namespace weft {
namespace {

using test::Ops;

SessionOptions QdqFusionOptions(int threads, bool fuse) {
  SessionOptions options = test::PerSessionOptions(threads, threads);
  options.disabled_graph_passes = {"nhwc-layout"};
  if (!fuse) options.disabled_graph_passes.push_back("qdq-fusion");
  return options;
}

// Values from a linear congruential sequence, as T.
template <class T>
Tensor Seeded(const Shape& shape, uint32_t seed, int lo, int hi) {
  Tensor t(DataTypeOf<T>(), shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    t.data<T>()[i] =
        static_cast<T>(lo + static_cast<int>((seed >> 8) % (hi - lo + 1)));
  }
  return t;
}

// Builds QuantizeLinear -> DequantizeLinear of `x` with a constant scale and
// zero point (uint8 or int8, the quantized dtype); returns the dequantized
// tensor's name.
std::string QuantizePair(Graph& g, const std::string& x, const std::string& at,
                         float scale, Tensor zero) {
  g.Const(at + "_s", Tensor::Scalar<float>(scale));
  g.Const(at + "_z", std::move(zero));
  test::MustAdd(
      g, {at + "_q", "QuantizeLinear", {x, at + "_s", at + "_z"}, {}, ""});
  test::MustAdd(g, {at + "_dq",
                    "DequantizeLinear",
                    {at + "_q", at + "_s", at + "_z"},
                    {},
                    ""});
  return at + "_dq";
}

std::string QuantizePair(Graph& g, const std::string& x, const std::string& at,
                         float scale, uint8_t zero) {
  return QuantizePair(g, x, at, scale, Tensor::Scalar<uint8_t>(zero));
}

// Constants `name` (the values), `name`_s (a scale per slice along `axis`)
// and `name`_z (zero points), and `name`_dq, their DequantizeLinear.
void AddDequantized(Graph& g, const std::string& name, Tensor values,
                    const std::vector<float>& scales, Tensor zeros,
                    int64_t axis) {
  const auto slices = static_cast<int64_t>(scales.size());
  g.Const(name, std::move(values));
  g.Const(name + "_s", Tensor::FromVector<float>({slices}, scales));
  g.Const(name + "_z", std::move(zeros));
  test::MustAdd(g, {name + "_dq",
                    "DequantizeLinear",
                    {name, name + "_s", name + "_z"},
                    {{"axis", axis}},
                    ""});
}

// x (float, fed) -> Q/DQ -> Conv(W int8 per channel, B int32) -> Relu ->
// Q/DQ: the form ONNX Runtime's static quantization writes.
Graph ConvGroup(uint8_t out_zero, float bias_scale_error = 0) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, Shape{1, 3, 9, 9});
  const float xs = 0.02f;
  const std::string xq = QuantizePair(g, "x", "in", xs, 128);
  const int64_t m = 4;
  std::vector<float> ws = {0.01f, 0.02f, 0.015f, 0.005f};
  std::vector<float> bs;
  for (float s : ws) bs.push_back(xs * s * (1 + bias_scale_error));
  AddDequantized(g, "w", Seeded<int8_t>({m, 3, 3, 3}, 7, -127, 127), ws,
                 Tensor::FromVector<int8_t>({m}, {0, 0, 0, 0}), 0);
  AddDequantized(g, "b", Tensor::FromVector<int32_t>({m}, {100, -2000, 35, 0}),
                 bs, Tensor::FromVector<int32_t>({m}, {0, 0, 0, 0}), 0);
  test::MustAdd(g, {"conv",
                    "Conv",
                    {xq, "w_dq", "b_dq"},
                    {{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                    ""});
  test::MustAdd(g, {"relu", "Relu", {"conv"}, {}, ""});
  QuantizePair(g, "relu", "out", 0.05f, out_zero);
  return g;
}

NamedTensors ConvFeed() {
  return {{"x", test::SeededFloats({1, 3, 9, 9}, 11)}};
}

TEST(QdqFusionTest, IsAPassOfItsOwnThatCanBeSwitchedOff) {
  bool listed = false;
  for (const GraphPassInfo& pass : GraphPasses()) {
    listed = listed || pass.name == "qdq-fusion";
  }
  EXPECT_TRUE(listed);
  GraphPassOptions off;
  off.disabled = {"qdq-fusion", "nhwc-layout"};
  auto kept = OptimizeGraph(ConvGroup(0), off);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(Ops(kept->graph).count("QLinearConv"), 0u);
}

// The ops of `graph` after the passes (nhwc-layout off, as in
// QdqFusionOptions).
std::multiset<std::string> OpsAfterPasses(const Graph& graph) {
  GraphPassOptions options;
  options.disabled = {"nhwc-layout"};
  auto optimized = OptimizeGraph(graph, options);
  EXPECT_TRUE(optimized.ok()) << optimized.status();
  return optimized.ok() ? Ops(optimized->graph) : std::multiset<std::string>{};
}

// Runs `graph`'s "out_q" with the pass (at one and two threads) and
// without it: each element of the fused graph's uint8 output within one
// quantisation step of the float graph's, and the same bits at both thread
// counts. Returns how many elements differ at all, and how many there are.
std::pair<int64_t, int64_t> ExpectWithinOneStep(const Graph& graph,
                                                const NamedTensors& feed) {
  auto plain = test::MustCreate(graph, QdqFusionOptions(1, false));
  const Tensor want = test::MustRun(*plain, {"out_q"}, feed).at(0);
  Tensor first;
  int64_t differing = 0;
  for (int threads : {1, 2}) {
    auto fused = test::MustCreate(graph, QdqFusionOptions(threads, true));
    const Tensor got = test::MustRun(*fused, {"out_q"}, feed).at(0);
    EXPECT_EQ(got.dtype(), DataType::kUInt8);
    if (got.dtype() != DataType::kUInt8) break;
    for (int64_t i = 0; threads == 1 && i < want.NumElements(); ++i) {
      const int diff =
          std::abs(int{got.data<uint8_t>()[i]} - int{want.data<uint8_t>()[i]});
      EXPECT_LE(diff, 1) << "element " << i;
      differing += diff != 0;
    }
    if (threads == 1) {
      first = got;
    } else {
      EXPECT_TRUE(got.BitwiseEqual(first)) << "thread settings disagree";
    }
  }
  return {differing, want.NumElements()};
}

// The convolution group becomes one QLinearConv reading the quantized
// input, the Relu absorbed (uint8 output with zero point 0: saturation at 0
// is the Relu); its output is within one quantisation step of the float
// graph's, and the same at every thread setting.
TEST(QdqFusionTest, ConvGroupBecomesQLinearConvWithinOneStep) {
  const Graph graph = ConvGroup(0);
  const auto ops = OpsAfterPasses(graph);
  EXPECT_EQ(ops.count("QLinearConv"), 1u);
  EXPECT_EQ(ops.count("Conv"), 0u);
  EXPECT_EQ(ops.count("Relu"), 0u);
  // The input's and the output's pairs: nothing else dequantizes.
  EXPECT_EQ(ops.count("DequantizeLinear"), 1u);

  const auto [differing, elements] = ExpectWithinOneStep(graph, ConvFeed());
  EXPECT_LT(differing, elements / 10);
}

// A Relu that saturation would not reproduce (zero point 10: the Relu
// clips at 10, saturation at 0) stays, and so does the float convolution;
// a bias whose scale is not x_scale * w_scale keeps the group in float.
TEST(QdqFusionTest, GroupsWithoutAnExactIntegerFormStayInFloat) {
  GraphPassOptions options;
  options.disabled = {"nhwc-layout"};
  auto relu_kept = OptimizeGraph(ConvGroup(10), options);
  ASSERT_TRUE(relu_kept.ok()) << relu_kept.status();
  EXPECT_EQ(Ops(relu_kept->graph).count("QLinearConv"), 0u);

  auto bias_kept = OptimizeGraph(ConvGroup(0, 0.01f), options);
  ASSERT_TRUE(bias_kept.ok()) << bias_kept.status();
  EXPECT_EQ(Ops(bias_kept->graph).count("QLinearConv"), 0u);
}

// x (float, fed) -> Q/DQ -> Gemm(W int8 per output channel, C int32) ->
// Q/DQ -> Relu: a quantized Linear layer as ONNX Runtime's static
// quantization writes it, W as [N, K] with transB = 1 or as [K, N].
// Without the Relu, the output pair is read by nothing: the form a
// quantizer leaves after a graph's output.
Graph GemmGroup(bool transposed_b, float alpha = 1.0f, bool read = true) {
  Graph g;
  const int64_t k = 40, n = 6;
  g.Placeholder("x", DataType::kFloat32, Shape{3, k});
  const float xs = 0.02f;
  const std::string xq = QuantizePair(g, "x", "in", xs, 128);
  const Tensor w = Seeded<int8_t>({n, k}, 7, -127, 127);
  Tensor w_kn(DataType::kInt8, Shape{k, n});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < k; ++p) {
      w_kn.data<int8_t>()[p * n + i] = w.data<int8_t>()[i * k + p];
    }
  }
  const std::vector<float> ws = {0.01f, 0.02f, 0.015f, 0.005f, 0.03f, 0.01f};
  std::vector<float> bs;
  for (float s : ws) bs.push_back(xs * s);
  AddDequantized(g, "w", transposed_b ? w : w_kn, ws,
                 Tensor::FromVector<int8_t>({n}, std::vector<int8_t>(n, 0)),
                 transposed_b ? 0 : 1);
  AddDequantized(
      g, "b", Tensor::FromVector<int32_t>({n}, {100, -2000, 35, 0, 7, -9}), bs,
      Tensor::FromVector<int32_t>({n}, std::vector<int32_t>(n)), 0);
  test::MustAdd(g, {"gemm",
                    "Gemm",
                    {xq, "w_dq", "b_dq"},
                    {{"transB", int64_t{transposed_b ? 1 : 0}},
                     {"alpha", static_cast<double>(alpha)}},
                    ""});
  const std::string out = QuantizePair(g, "gemm", "out", 0.05f, 128);
  if (read) g.Relu("after", out);
  return g;
}

// The Gemm group becomes one QLinearMatMul with C as its int32 bias (a
// transposed W folded into a constant), within one quantisation step of
// the float graph and the same at every thread setting. Alpha other than 1
// keeps it in float.
TEST(QdqFusionTest, GemmGroupBecomesQLinearMatMulWithItsBias) {
  const NamedTensors feed = {{"x", test::SeededFloats({3, 40}, 12)}};
  for (bool transposed_b : {true, false}) {
    SCOPED_TRACE(transposed_b ? "transB" : "W as [K, N]");
    const Graph graph = GemmGroup(transposed_b);
    const auto ops = OpsAfterPasses(graph);
    EXPECT_EQ(ops.count("QLinearMatMul"), 1u);
    EXPECT_EQ(ops.count("Gemm"), 0u);
    EXPECT_EQ(ops.count("Transpose"), 0u);  // Folded into the constant.

    ExpectWithinOneStep(graph, feed);
  }
  EXPECT_EQ(OpsAfterPasses(GemmGroup(true, 0.5f)).count("QLinearMatMul"), 0u);
}

// A Gemm whose float output is what a Run fetches (the output pair after
// it read by nothing: a quantized classifier) becomes FusedMatMulInteger
// under the Gemm's name: its float output from the exact integer sums,
// within float rounding of the float graph's, the same at every thread
// setting. Alpha other than 1 keeps it a float Gemm.
TEST(QdqFusionTest, GemmWithAFloatOutputSumsItsIntegers) {
  const NamedTensors feed = {{"x", test::SeededFloats({3, 40}, 12)}};
  for (bool transposed_b : {true, false}) {
    SCOPED_TRACE(transposed_b ? "transB" : "W as [K, N]");
    const Graph graph = GemmGroup(transposed_b, 1.0f, /*read=*/false);
    const auto ops = OpsAfterPasses(graph);
    EXPECT_EQ(ops.count("FusedMatMulInteger"), 1u);
    EXPECT_EQ(ops.count("Gemm"), 0u);
    EXPECT_EQ(ops.count("QLinearMatMul"), 0u);
    EXPECT_EQ(ops.count("Transpose"), 0u);  // Folded into the constant.
    EXPECT_EQ(ops.count("Mul"), 0u);        // The scales' product too.

    auto plain = test::MustCreate(graph, QdqFusionOptions(1, false));
    const Tensor want = test::MustRun(*plain, {"gemm"}, feed).at(0);
    Tensor first;
    for (int threads : {1, 2}) {
      auto fused = test::MustCreate(graph, QdqFusionOptions(threads, true));
      const Tensor got = test::MustRun(*fused, {"gemm"}, feed).at(0);
      ASSERT_EQ(got.dtype(), DataType::kFloat32);
      ASSERT_EQ(got.shape(), want.shape());
      for (int64_t i = 0; i < want.NumElements(); ++i) {
        const float w = want.data<float>()[i];
        EXPECT_NEAR(got.data<float>()[i], w, 1e-5f * (1 + std::abs(w)))
            << "element " << i;
      }
      if (threads == 1) {
        first = got;
      } else {
        EXPECT_TRUE(got.BitwiseEqual(first)) << "thread settings disagree";
      }
    }
  }
  const auto scaled = OpsAfterPasses(GemmGroup(true, 0.5f, /*read=*/false));
  EXPECT_EQ(scaled.count("FusedMatMulInteger"), 0u);
  EXPECT_EQ(scaled.count("Gemm"), 1u);
}

// int8 activations in and out (a quantizer's symmetric activations): the
// MatMul group becomes a QLinearMatMul whose output is int8, as its zero
// point says, within one quantisation step of the float graph.
TEST(QdqFusionTest, MatMulGroupWithInt8ActivationsKeepsInt8Outputs) {
  Graph g;
  const int64_t k = 24, n = 5;
  g.Placeholder("x", DataType::kFloat32, Shape{2, 3, k});
  const std::string xq =
      QuantizePair(g, "x", "in", 0.03f, Tensor::Scalar<int8_t>(-4));
  AddDequantized(g, "w", Seeded<int8_t>({k, n}, 3, -127, 127),
                 {0.01f, 0.02f, 0.015f, 0.005f, 0.03f},
                 Tensor::FromVector<int8_t>({n}, std::vector<int8_t>(n, 0)), 1);
  test::MustAdd(g, {"mm", "MatMul", {xq, "w_dq"}, {}, ""});
  QuantizePair(g, "mm", "out", 0.04f, Tensor::Scalar<int8_t>(7));
  const auto ops = OpsAfterPasses(g);
  EXPECT_EQ(ops.count("QLinearMatMul"), 1u);
  EXPECT_EQ(ops.count("MatMul"), 0u);

  const NamedTensors feed = {{"x", test::SeededFloats({2, 3, k}, 5)}};
  auto plain = test::MustCreate(g, QdqFusionOptions(1, false));
  auto fused = test::MustCreate(g, QdqFusionOptions(1, true));
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(fused, nullptr);
  const Tensor want = test::MustRun(*plain, {"out_q"}, feed).at(0);
  const Tensor got = test::MustRun(*fused, {"out_q"}, feed).at(0);
  ASSERT_EQ(got.dtype(), DataType::kInt8);
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    EXPECT_LE(
        std::abs(int{got.data<int8_t>()[i]} - int{want.data<int8_t>()[i]}), 1)
        << "element " << i;
  }
}

// Two dequantized tensors added and quantized: QLinearAdd, which repeats the
// float operations of the three nodes, so the bits stay.
TEST(QdqFusionTest, AddGroupBecomesQLinearAddWithTheSameBits) {
  Graph g;
  g.Placeholder("a", DataType::kFloat32, Shape{2, 4, 5});
  g.Placeholder("b", DataType::kFloat32, Shape{2, 4, 5});
  const std::string a = QuantizePair(g, "a", "qa", 0.013f, 120);
  const std::string b = QuantizePair(g, "b", "qb", 0.021f, 131);
  test::MustAdd(g, {"sum", "Add", {a, b}, {}, ""});
  QuantizePair(g, "sum", "out", 0.03f, 128);
  GraphPassOptions options;
  options.disabled = {"nhwc-layout"};
  auto optimized = OptimizeGraph(g, options);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(Ops(optimized->graph).count("QLinearAdd"), 1u);
  EXPECT_EQ(Ops(optimized->graph).count("Add"), 0u);

  const NamedTensors feeds = {{"a", test::SeededFloats({2, 4, 5}, 3)},
                              {"b", test::SeededFloats({2, 4, 5}, 4)}};
  auto plain = test::MustCreate(g, QdqFusionOptions(1, false));
  auto fused = test::MustCreate(g, QdqFusionOptions(2, true));
  EXPECT_TRUE(test::MustRun(*fused, {"out_q"}, feeds)
                  .at(0)
                  .BitwiseEqual(test::MustRun(*plain, {"out_q"}, feeds).at(0)));
}

// A Q/DQ pair of one scale and zero point around MaxPool moves through it:
// MaxPool runs on the integers, with the same bits. With another scale at
// the output the pair stays.
TEST(QdqFusionTest, PairMovesThroughMaxPoolOnlyWithTheSameParameters) {
  for (float out_scale : {0.02f, 0.03f}) {
    Graph g;
    g.Placeholder("x", DataType::kFloat32, Shape{1, 2, 7, 7});
    const std::string x = QuantizePair(g, "x", "in", 0.02f, 128);
    test::MustAdd(g, {"pool",
                      "MaxPool",
                      {x},
                      {{"kernel_shape", std::vector<int64_t>{3, 3}},
                       {"strides", std::vector<int64_t>{2, 2}},
                       {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                      ""});
    g.Const("out_s", Tensor::Scalar<float>(out_scale));
    g.Const("out_z", Tensor::Scalar<uint8_t>(128));
    test::MustAdd(
        g, {"out_q", "QuantizeLinear", {"pool", "out_s", "out_z"}, {}, ""});
    GraphPassOptions options;
    options.disabled = {"nhwc-layout"};
    auto optimized = OptimizeGraph(g, options);
    ASSERT_TRUE(optimized.ok()) << optimized.status();
    const bool same = out_scale == 0.02f;
    EXPECT_EQ(Ops(optimized->graph).count("QuantizeLinear"), same ? 1u : 2u);
    const NamedTensors feeds = {{"x", test::SeededFloats({1, 2, 7, 7}, 9)}};
    auto plain = test::MustCreate(g, QdqFusionOptions(1, false));
    auto fused = test::MustCreate(g, QdqFusionOptions(2, true));
    EXPECT_TRUE(
        test::MustRun(*fused, {"out_q"}, feeds)
            .at(0)
            .BitwiseEqual(test::MustRun(*plain, {"out_q"}, feeds).at(0)));
  }
}

}  // namespace
}  // namespace weft
