// MatMulNBits as a session runs it: a constant weight (repacked once) and a
// fed one (repacked each Run) give the same bits, at one and two intra-op
// threads; float16 A; and what a node's inputs cannot mean is named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/compiled_graph.h"
#include "test_support/session_util.h"
#include "weft/float16.h"
#include "weft/prepared_weights.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kK = 40, kN = 37, kBlock = 16, kBlocks = 3;

// Codes i * 7 mod 16 packed two to a byte; scales and zero points by index.
std::vector<Tensor> Weight() {
  std::vector<uint8_t> codes(kN * kBlocks * kBlock / 2);
  for (size_t i = 0; i < codes.size(); ++i) {
    codes[i] = static_cast<uint8_t>(((2 * i * 7) % 16) |
                                    ((((2 * i + 1) * 7) % 16) << 4));
  }
  std::vector<float> scales, zeros;
  for (int64_t i = 0; i < kN * kBlocks; ++i) {
    scales.push_back(0.01f * static_cast<float>(1 + i % 5));
    zeros.push_back(static_cast<float>(i % 16));
  }
  return {Tensor::FromVector<uint8_t>(Shape({kN, kBlocks, kBlock / 2}), codes),
          Tensor::FromVector<float>(Shape({kN, kBlocks}), scales),
          Tensor::FromVector<float>(Shape({kN, kBlocks}), zeros)};
}

Tensor Rows(int64_t rows) {
  std::vector<float> a;
  for (int64_t i = 0; i < rows * kK; ++i) {
    a.push_back(static_cast<float>(i % 11) * 0.25f - 1.0f);
  }
  return Tensor::FromVector<float>(Shape({rows, kK}), a);
}

AttrMap Attrs() {
  return {{"K", kK}, {"N", kN}, {"bits", int64_t{4}}, {"block_size", kBlock}};
}

// y of A fed, the weight as Consts (constant) or fed too.
StatusOr<Tensor> RunNBits(const Tensor& a, bool weight_fed, int intra,
                          const AttrMap& attrs = Attrs()) {
  Graph g;
  const std::vector<Tensor> w = Weight();
  std::vector<std::string> inputs = {g.Placeholder("a", a.dtype())};
  NamedTensors feeds = {{"a", a}};
  const char* names[] = {"b", "scales", "zeros"};
  for (int i = 0; i < 3; ++i) {
    if (weight_fed) {
      inputs.push_back(g.Placeholder(names[i], w[i].dtype()));
      feeds.push_back({names[i], w[i]});
    } else {
      inputs.push_back(g.Const(names[i], w[i]));
    }
  }
  WEFT_RETURN_IF_ERROR(g.AddNode({"y", "MatMulNBits", inputs, attrs, ""}));
  WEFT_ASSIGN_OR_RETURN(
      auto session,
      Session::Create(std::move(g), test::PerSessionOptions(1, intra)));
  std::vector<Tensor> out;
  WEFT_RETURN_IF_ERROR(session->Run(feeds, {"y"}, {}, &out));
  return out[0];
}

TEST(MatMulNBitsTest, ConstantAndFedWeightsGiveTheSameBitsAtEveryThreadCount) {
  const Tensor a = Rows(19);  // two groups of 8 rows and 3
  auto reference = RunNBits(a, false, 1);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ(reference->shape(), Shape({19, kN}));
  for (bool fed : {false, true}) {
    for (int intra : {1, 2}) {
      auto y = RunNBits(a, fed, intra);
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_TRUE(y->BitwiseEqual(*reference))
          << (fed ? "fed" : "constant") << " weight, intra " << intra;
    }
  }
}

TEST(MatMulNBitsTest, Float16RowsAreComputedInFloat32) {
  const Tensor a = Rows(3);
  std::vector<Float16> half;
  for (int64_t i = 0; i < a.NumElements(); ++i)
    half.push_back(a.data<float>()[i]);
  auto y16 = RunNBits(Tensor::FromVector<Float16>(a.shape(), half), false, 1);
  auto y32 = RunNBits(a, false, 1);  // a's values are exact in float16
  ASSERT_TRUE(y16.ok()) << y16.status();
  ASSERT_TRUE(y32.ok()) << y32.status();
  const Tensor& half_out = *y16;
  const Tensor& float_out = *y32;
  ASSERT_EQ(half_out.dtype(), DataType::kFloat16);
  for (int64_t i = 0; i < float_out.NumElements(); ++i) {
    EXPECT_EQ(static_cast<float>(half_out.data<Float16>()[i]),
              static_cast<float>(Float16(float_out.data<float>()[i])));
  }
}

// A session compiles its graph again for each set of feed shapes (a
// decoder's prompt and steps): the repacked weight is made once and shared
// by those compiles, and a weight of the same codes with other scales gets
// panels of its own.
TEST(MatMulNBitsTest, CompilesForOtherShapesShareThePanels) {
  const std::vector<Tensor> w = Weight();
  std::vector<float> doubled(w[1].data<float>(),
                             w[1].data<float>() + w[1].NumElements());
  for (float& s : doubled) s *= 2;
  auto graph = [&](const Tensor& scales) {
    Graph g;
    g.Placeholder("a", DataType::kFloat32, PartialShape({-1, kK}));
    const std::vector<std::string> inputs = {"a", g.Const("b", w[0]),
                                             g.Const("scales", scales),
                                             g.Const("zeros", w[2])};
    EXPECT_TRUE(g.AddNode({"y", "MatMulNBits", inputs, Attrs(), ""}).ok());
    return g;
  };
  internal::CompileOptions options;
  options.prepared_weights = std::make_shared<PreparedWeights>();
  const Graph given = graph(w[1]);
  for (int64_t rows : {1, 7}) {
    auto compiled = internal::CompiledGraph::Compile(
        test::WithPlaceholderShape(given, "a", PartialShape({rows, kK})),
        options);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_GT(
        (*compiled)->node((*compiled)->FindNode("y")).kernel->prepared_bytes(),
        0);
  }
  EXPECT_EQ(options.prepared_weights->size(), 1);
  EXPECT_EQ(options.prepared_weights->reuses(), 1);
  auto other = internal::CompiledGraph::Compile(
      graph(Tensor::FromVector<float>(w[1].shape(), doubled)), options);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(options.prepared_weights->size(), 2);
}

TEST(MatMulNBitsTest, WhatTheInputsCannotMeanIsNamed) {
  auto wrong_k =
      RunNBits(Tensor::FromVector<float>(Shape({1, 7}), std::vector<float>(7)),
               false, 1);
  ASSERT_FALSE(wrong_k.ok());
  EXPECT_THAT(wrong_k.status().message(),
              HasSubstr("its last dimension must be K = 40"));
  AttrMap other_n = Attrs();
  other_n["N"] = int64_t{36};
  for (bool fed : {false, true}) {
    auto wrong_n = RunNBits(Rows(1), fed, 1, other_n);
    ASSERT_FALSE(wrong_n.ok());
    EXPECT_THAT(wrong_n.status().message(),
                HasSubstr("B has 888 bytes; N = 36 columns of 3 blocks of 8 "
                          "bytes need 864"));
  }
  AttrMap odd_block = Attrs();
  odd_block["block_size"] = int64_t{24};
  EXPECT_THAT(RunNBits(Rows(1), false, 1, odd_block).status().message(),
              HasSubstr("block_size must be a power of two"));
}

}  // namespace
}  // namespace weft
