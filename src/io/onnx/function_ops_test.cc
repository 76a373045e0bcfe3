// The expansions of the default-domain ops ONNX defines as functions: the
// forms they take and the errors that name what weft does not expand. What
// they compute is checked against ONNX Runtime and NumPy references by
// tests/onnx/newer_opsets (ctest onnx.newer_opsets).
#include "io/onnx/function_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "io/onnx/expansion_testing.h"

// A namespace of its own: the unity build joins this file with
// contrib_ops_test.cc, whose helpers have the same names.
namespace weft::internal::function_ops_test {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

using ::weft::testing::OnnxNodeOf;
using ::weft::testing::OpsOf;
using ::weft::testing::Undeclared;

onnx::NodeProto OnnxNode(const std::string& op,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs) {
  return OnnxNodeOf(op, inputs, outputs);
}

void SetInt(onnx::NodeProto* n, const std::string& name, int64_t value) {
  ::weft::testing::SetIntAttribute(n, name, value);
}

StatusOr<Nodes> Expand(const onnx::NodeProto& node, int64_t opset = 23,
                       const DeclaredFn& declared = Undeclared) {
  Nodes out;
  DeclaredOutputs outputs;
  WEFT_RETURN_IF_ERROR(
      ExpandFunctionOp(node, opset, "n/0/", declared, &out, &outputs));
  return out;
}

std::string StatusText(const Status& s) { return s.message(); }

TEST(FunctionOpsTest, TheOpsOfOpset23AreExpanded) {
  for (const char* op : {"Attention", "RMSNormalization", "RotaryEmbedding"}) {
    EXPECT_TRUE(IsFunctionOpExpanded(op)) << op;
  }
  EXPECT_FALSE(IsFunctionOpExpanded("LayerNormalization"));
}

// A 3-D multi-head Attention whose head size the model declares becomes
// the chain attention-fusion fuses: K reshaped and transposed straight to
// K', a constant scale, Softmax then MatMul, and no row guard without a
// mask.
TEST(FunctionOpsTest, ThreeDimensionalAttentionBecomesTheFusableChain) {
  onnx::NodeProto node = OnnxNode("Attention", {"q", "k", "v"}, {"y"});
  SetInt(&node, "q_num_heads", 4);
  SetInt(&node, "kv_num_heads", 4);
  const DeclaredFn declared = [](const std::string&) {
    return DeclaredValue{onnx::TensorProto::FLOAT,
                         std::vector<int64_t>{1, 8, 32}};
  };
  auto nodes = Expand(node, 23, declared);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_EQ(OpsOf(*nodes), (std::vector<std::string>{
                               "Reshape", "Transpose", "Reshape", "Transpose",
                               "Reshape", "Transpose", "MatMul", "Mul",
                               "Softmax", "MatMul", "Transpose", "Reshape"}));
  EXPECT_EQ(nodes->rbegin()->output(0), "y");
  int keys_transposed = 0;
  for (const onnx::NodeProto& n : *nodes) {
    if (n.op_type() == "Transpose" && n.attribute(0).ints_size() == 4 &&
        n.attribute(0).ints(2) == 3) {
      ++keys_transposed;  // perm (0, 2, 3, 1): K straight to K'.
    }
  }
  EXPECT_EQ(keys_transposed, 1);
}

// Grouped-query heads broadcast K and V in MatMul (a head axis of 1)
// rather than copying them; a mask brings the guard that zeroes a row
// every key is hidden from, found from the mask.
TEST(FunctionOpsTest, GroupedQueriesBroadcastAndMasksGuardHiddenRows) {
  onnx::NodeProto node = OnnxNode("Attention", {"q", "k", "v", "mask"}, {"y"});
  SetInt(&node, "q_num_heads", 4);
  SetInt(&node, "kv_num_heads", 2);
  const DeclaredFn declared = [](const std::string& name) {
    return DeclaredValue{
        name == "mask" ? onnx::TensorProto::BOOL : onnx::TensorProto::FLOAT,
        std::nullopt};
  };
  auto nodes = Expand(node, 23, declared);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  const std::vector<std::string> ops = OpsOf(*nodes);
  EXPECT_THAT(ops, Contains("ReduceMax"));
  EXPECT_THAT(ops, Contains("Unsqueeze"));
  EXPECT_THAT(ops, Not(Contains("Tile")));
  // The one Expand widens the hidden-row flags (an Equal's), never K or V.
  std::map<std::string, std::string> producer;
  for (const onnx::NodeProto& n : *nodes) {
    for (const std::string& o : n.output()) producer[o] = n.op_type();
  }
  for (const onnx::NodeProto& n : *nodes) {
    if (n.op_type() == "Expand") EXPECT_EQ(producer[n.input(0)], "Equal");
  }
}

// RMSNormalization's axes are constants counted from the back where that
// takes a few of them; an axis far from the back without a declared rank
// (a hostile file's -2^62) becomes a Range over the fed rank, never 2^62
// constants.
TEST(FunctionOpsTest, FarNegativeRmsAxisWithoutRankIsARangeOfTheFedRank) {
  onnx::NodeProto near = OnnxNode("RMSNormalization", {"x", "s"}, {"y"});
  SetInt(&near, "axis", -2);
  auto constant = Expand(near);
  ASSERT_TRUE(constant.ok()) << constant.status();
  EXPECT_THAT(OpsOf(*constant), Not(Contains("Range")));
  onnx::NodeProto far = OnnxNode("RMSNormalization", {"x", "s"}, {"y"});
  SetInt(&far, "axis", -(int64_t{1} << 62));
  auto ranged = Expand(far);
  ASSERT_TRUE(ranged.ok()) << ranged.status();
  EXPECT_THAT(OpsOf(*ranged), Contains("Range"));
  EXPECT_LT(ranged->size(), 20u);
}

TEST(FunctionOpsTest, WhatIsNotExpandedIsNamed) {
  auto early = Expand(OnnxNode("RMSNormalization", {"x", "s"}, {"y"}), 22);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(StatusText(early.status()),
              HasSubstr("ONNX RMSNormalization is defined from opset 23; the "
                        "model imports opset 22"));

  onnx::NodeProto stash = OnnxNode("RMSNormalization", {"x", "s"}, {"y"});
  SetInt(&stash, "stash_type", onnx::TensorProto::DOUBLE);
  auto stashed = Expand(stash);
  ASSERT_FALSE(stashed.ok());
  EXPECT_EQ(stashed.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(StatusText(stashed.status()), HasSubstr("stash_type"));

  onnx::NodeProto extra = OnnxNode("RotaryEmbedding", {"x", "c", "s"}, {"y"});
  SetInt(&extra, "is_neox", 1);
  auto unknown = Expand(extra);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(StatusText(unknown.status()),
              HasSubstr("ONNX RotaryEmbedding: attribute 'is_neox' is not "
                        "supported"));

  onnx::NodeProto odd = OnnxNode("RotaryEmbedding", {"x", "c", "s"}, {"y"});
  SetInt(&odd, "rotary_embedding_dim", 5);
  auto odd_dim = Expand(odd);
  ASSERT_FALSE(odd_dim.ok());
  EXPECT_THAT(StatusText(odd_dim.status()),
              HasSubstr("rotary_embedding_dim must be even"));

  const DeclaredFn three_d = [](const std::string&) {
    return DeclaredValue{onnx::TensorProto::FLOAT,
                         std::vector<int64_t>{1, 4, 8}};
  };
  auto headless =
      Expand(OnnxNode("RotaryEmbedding", {"x", "c", "s"}, {"y"}), 23, three_d);
  ASSERT_FALSE(headless.ok());
  EXPECT_THAT(StatusText(headless.status()),
              HasSubstr("a 3-D X needs a positive num_heads"));

  onnx::NodeProto uneven = OnnxNode("Attention", {"q", "k", "v"}, {"y"});
  SetInt(&uneven, "q_num_heads", 3);
  SetInt(&uneven, "kv_num_heads", 2);
  auto groups = Expand(uneven, 23, three_d);
  ASSERT_FALSE(groups.ok());
  EXPECT_THAT(StatusText(groups.status()),
              HasSubstr("the first a multiple of the second"));

  onnx::NodeProto precise = OnnxNode("Attention", {"q", "k", "v"}, {"y"});
  SetInt(&precise, "softmax_precision", onnx::TensorProto::DOUBLE);
  auto precision = Expand(precise);
  ASSERT_FALSE(precision.ok());
  EXPECT_EQ(precision.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(StatusText(precision.status()), HasSubstr("softmax_precision"));

  auto untyped = Expand(OnnxNode("Attention", {"q", "k", "v", "mask"}, {"y"}));
  ASSERT_FALSE(untyped.ok());
  EXPECT_THAT(StatusText(untyped.status()),
              HasSubstr("attn_mask needs a declared type, bool or Q's float "
                        "type (it has none)"));

  auto half_past =
      Expand(OnnxNode("Attention", {"q", "k", "v", "", "past_key"}, {"y"}));
  ASSERT_FALSE(half_past.ok());
  EXPECT_THAT(StatusText(half_past.status()),
              HasSubstr("past_key and past_value must be given together"));

  auto missing = Expand(OnnxNode("Attention", {"q", "k"}, {"y"}));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(StatusText(missing.status()), HasSubstr("input 2 is required"));
}

// ONNX Runtime's SimplifiedLayerNormalization: RMSNormalization's nodes at
// any opset, and its inv_std_var when asked for; RMSNormalization itself
// has one output.
TEST(FunctionOpsTest,
     SimplifiedLayerNormalizationIsRmsNormalizationAtAnyOpset) {
  auto plain =
      Expand(OnnxNode("SimplifiedLayerNormalization", {"x", "s"}, {"y"}), 13);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_THAT(OpsOf(*plain), Not(Contains("Reciprocal")));
  for (const onnx::NodeProto& n : *plain) {  // axes an attribute before 18
    if (n.op_type() == "ReduceMean") EXPECT_EQ(n.input_size(), 1);
  }
  onnx::NodeProto counted =
      OnnxNode("SimplifiedLayerNormalization", {"x", "s"}, {"y"});
  SetInt(&counted, "axis", 1);  // from the front, of a rank not declared
  auto unranked = Expand(counted, 13);
  ASSERT_FALSE(unranked.ok());
  EXPECT_THAT(StatusText(unranked.status()),
              HasSubstr("needs the input's declared rank"));
  auto with_inverse = Expand(
      OnnxNode("SimplifiedLayerNormalization", {"x", "s"}, {"y", "inv"}), 13);
  ASSERT_TRUE(with_inverse.ok()) << with_inverse.status();
  EXPECT_EQ(OpsOf(*with_inverse).back(), "Reciprocal");
  EXPECT_EQ(with_inverse->Get(with_inverse->size() - 1).output(0), "inv");

  auto two = Expand(OnnxNode("RMSNormalization", {"x", "s"}, {"y", "inv"}));
  ASSERT_FALSE(two.ok());
  EXPECT_THAT(
      StatusText(two.status()),
      HasSubstr("ONNX RMSNormalization has 2 outputs; it has at most 1"));
}

}  // namespace
}  // namespace weft::internal::function_ops_test
