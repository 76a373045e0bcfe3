// Batch invariance (docs/serving.md): a row's outputs are bitwise the same
// whether it runs alone or stacked with other rows along the first
// dimension, for the ops a served model is made of. The server's dynamic
// batcher promises it to clients; these tests hold every kernel path to it
// (whichever the CPU takes, and under the override variables).
#include <gtest/gtest.h>

#include <cstring>

#include "test_support/session_util.h"

namespace weft {
namespace {

using test::MustAdd;
using test::SeededFloats;

// Runs `graph` (input "x" of shape [-1] + row_shape, output "y") on
// `batch` rows at once and on each row alone, and compares the bits.
void ExpectBatchInvariant(const Graph& graph, const std::vector<int64_t>& row,
                          int64_t batch, int intra,
                          const std::vector<std::string>& disabled_passes) {
  SessionOptions options = test::PerSessionOptions(2, intra);
  options.batch_invariant = true;
  options.disabled_graph_passes = disabled_passes;
  auto session = test::MustCreate(graph, options);
  ASSERT_NE(session, nullptr);
  std::vector<int64_t> dims = {batch};
  dims.insert(dims.end(), row.begin(), row.end());
  const Tensor all = SeededFloats(Shape(dims), 1234);
  const std::vector<Tensor> together =
      test::MustRun(*session, {"y"}, {{"x", all}});
  ASSERT_EQ(together.size(), 1u);
  const int64_t in_row = all.NumElements() / batch;
  const int64_t out_row = together[0].NumElements() / batch;
  for (int64_t r = 0; r < batch; ++r) {
    dims[0] = 1;
    Tensor one(DataType::kFloat32, Shape(dims));
    std::memcpy(one.data<float>(), all.data<float>() + r * in_row,
                in_row * sizeof(float));
    const std::vector<Tensor> alone =
        test::MustRun(*session, {"y"}, {{"x", one}});
    ASSERT_EQ(alone[0].NumElements(), out_row);
    EXPECT_EQ(std::memcmp(alone[0].data<float>(),
                          together[0].data<float>() + r * out_row,
                          out_row * sizeof(float)),
              0)
        << "row " << r << " of a batch of " << batch << " (intra " << intra
        << ") differs from the row run alone";
  }
}

void ExpectInvariantOverBatches(
    const Graph& graph, const std::vector<int64_t>& row,
    const std::vector<std::string>& disabled_passes = {}) {
  for (int64_t batch : {2, 3, 5, 8, 13, 32}) {
    for (int intra : {1, 2}) {
      ExpectBatchInvariant(graph, row, batch, intra, disabled_passes);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

Graph MatMulGraph(int64_t k, int64_t n, bool gemm) {
  Graph g;
  const std::string x =
      g.Placeholder("x", DataType::kFloat32, PartialShape({-1, k}));
  const std::string w = g.Const("w", SeededFloats(Shape{k, n}, 7));
  if (gemm) {
    const std::string bias = g.Const("bias", SeededFloats(Shape{n}, 8));
    MustAdd(g, {"y", "Gemm", {x, w, bias}, {}, ""});
  } else {
    MustAdd(g, {"y", "MatMul", {x, w}, {}, ""});
  }
  return g;
}

TEST(BatchInvarianceTest, MatMulWithConstantWeights) {
  for (auto [k, n] : {std::pair<int64_t, int64_t>{4, 3},
                      {77, 301},
                      {512, 1000},
                      {768, 768}}) {
    SCOPED_TRACE("k " + std::to_string(k) + ", n " + std::to_string(n));
    ExpectInvariantOverBatches(MatMulGraph(k, n, false), {k});
  }
}

TEST(BatchInvarianceTest, GemmWithBias) {
  ExpectInvariantOverBatches(MatMulGraph(512, 1000, true), {512});
}

// A batched [-1, seq, hidden] x [hidden, hidden] product, a softmax over
// the last axis and a layer norm: an encoder block's shape of work. Batches
// of 32 x 40 rows cross the point where products stop sharing one packing
// of A (kMaxSharedRowBlocks in matmul.cc).
TEST(BatchInvarianceTest, EncoderBlock) {
  Graph g;
  const std::string x =
      g.Placeholder("x", DataType::kFloat32, PartialShape({-1, 40, 64}));
  const std::string w = g.Const("w", SeededFloats(Shape{64, 64}, 9));
  MustAdd(g, {"proj", "MatMul", {x, w}, {}, ""});
  MustAdd(g, {"soft", "Softmax", {"proj"}, {{"axis", int64_t{-1}}}, ""});
  const std::string scale = g.Const("scale", SeededFloats(Shape{64}, 10));
  const std::string shift = g.Const("shift", SeededFloats(Shape{64}, 11));
  MustAdd(g, {"y", "LayerNormalization", {"soft", scale, shift}, {}, ""});
  ExpectInvariantOverBatches(g, {40, 64});
}

// Convolutions of every kind a CNN has, pooling and a classifier head.
TEST(BatchInvarianceTest, ConvolutionalNetwork) {
  Graph g;
  const std::string x =
      g.Placeholder("x", DataType::kFloat32, PartialShape({-1, 3, 20, 20}));
  auto conv = [&](const std::string& name, const std::string& in, int64_t cin,
                  int64_t cout, int64_t kernel, int64_t stride, int64_t group,
                  uint32_t seed) {
    const std::string w =
        g.Const(name + "_w",
                SeededFloats(Shape{cout, cin / group, kernel, kernel}, seed));
    const std::string b =
        g.Const(name + "_b", SeededFloats(Shape{cout}, seed + 1));
    const int64_t pad = kernel / 2;
    MustAdd(g, {name,
                "Conv",
                {in, w, b},
                {{"kernel_shape", std::vector<int64_t>{kernel, kernel}},
                 {"strides", std::vector<int64_t>{stride, stride}},
                 {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                 {"group", group}},
                ""});
    MustAdd(g, {name + "_relu", "Relu", {name}, {}, ""});
    return name + "_relu";
  };
  std::string h = conv("c7", x, 3, 16, 7, 2, 1, 20);
  MustAdd(g, {"pool",
              "MaxPool",
              {h},
              {{"kernel_shape", std::vector<int64_t>{3, 3}},
               {"strides", std::vector<int64_t>{2, 2}},
               {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
              ""});
  h = conv("c3", "pool", 16, 32, 3, 1, 1, 30);
  h = conv("dw", h, 32, 32, 3, 1, 32, 40);
  h = conv("grouped", h, 32, 32, 3, 2, 4, 50);
  h = conv("c1", h, 32, 64, 1, 1, 1, 60);
  MustAdd(g, {"gap", "GlobalAveragePool", {h}, {}, ""});
  MustAdd(g, {"flat", "Flatten", {"gap"}, {}, ""});
  const std::string w = g.Const("fc_w", SeededFloats(Shape{64, 10}, 70));
  MustAdd(g, {"y", "MatMul", {"flat", w}, {}, ""});
  ExpectInvariantOverBatches(g, {3, 20, 20});
}

// Late layers in NCHW (channels-last off), whose few pixel tiles make the
// products split the output channels too, by how many jobs the batch
// gives: under batch_invariant the split is one image's. Found by
// tests/onnx/pass_equivalence under the Eigen tile kernel, which blocks
// the inner dimension by the product's shape (a batch of 3 summed in
// another order than one image).
TEST(BatchInvarianceTest, LateLayersWhoseProductsSplitTheChannels) {
  for (int64_t kernel : {1, 3, 5}) {
    SCOPED_TRACE("kernel " + std::to_string(kernel));
    Graph g;
    const std::string x =
        g.Placeholder("x", DataType::kFloat32, PartialShape({-1, 16, 8, 8}));
    const std::string w =
        g.Const("w", SeededFloats(Shape{64, 16, kernel, kernel}, 80));
    const int64_t pad = kernel / 2;
    MustAdd(g, {"y",
                "Conv",
                {x, w},
                {{"kernel_shape", std::vector<int64_t>{kernel, kernel}},
                 {"pads", std::vector<int64_t>{pad, pad, pad, pad}}},
                ""});
    ExpectInvariantOverBatches(g, {16, 8, 8}, {"nhwc-layout"});
  }
}

}  // namespace
}  // namespace weft
