// The expansions of com.microsoft ops: what each becomes, and the errors
// that name what weft does not expand. What they compute is checked
// against ONNX Runtime by tests/onnx/contrib_ops (ctest onnx.contrib_ops).
#include "io/onnx/contrib_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "io/onnx/expansion_testing.h"

namespace weft::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::weft::testing::OpsOf;
using ::weft::testing::Undeclared;

onnx::NodeProto ContribOpsNode(const std::string& op,
                               const std::vector<std::string>& inputs,
                               const std::vector<std::string>& outputs) {
  return ::weft::testing::OnnxNodeOf(op, inputs, outputs, kMicrosoftDomain);
}

void SetInt(onnx::NodeProto* n, const std::string& name, int64_t value) {
  ::weft::testing::SetIntAttribute(n, name, value);
}

StatusOr<Nodes> Expand(const onnx::NodeProto& node, int64_t opset = 17,
                       const DeclaredFn& declared = Undeclared) {
  Nodes out;
  DeclaredOutputs outputs;
  WEFT_RETURN_IF_ERROR(
      ExpandContribOp(node, opset, "n/0/", declared, &out, &outputs));
  return out;
}

// Every expansion writes the node's outputs under their names, names its
// other values and nodes under the prefix, and is of the default domain.
TEST(ContribOpsTest, ExpansionsKeepTheOutputNamesAndPrefixTheRest) {
  auto nodes = Expand(ContribOpsNode("SkipLayerNormalization",
                                     {"x", "skip", "gamma", "beta", "bias"},
                                     {"y", "", "", "sum"}));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_THAT(OpsOf(*nodes), ElementsAre("Add", "Add", "LayerNormalization"));
  std::set<std::string> written;
  for (const onnx::NodeProto& n : *nodes) {
    EXPECT_TRUE(n.domain().empty()) << n.op_type();
    EXPECT_EQ(n.name().rfind("n/0/", 0), 0u) << n.name();
    for (const std::string& o : n.output()) {
      if (!o.empty()) written.insert(o);
    }
  }
  EXPECT_TRUE(written.count("y"));
  EXPECT_TRUE(written.count("sum"));
  for (const std::string& o : written) {
    EXPECT_TRUE(o == "y" || o == "sum" || o.rfind("n/0/", 0) == 0) << o;
  }
}

// The QOperator ops dequantize, compute in float and quantize, the form
// qdq-fusion turns back into integer kernels.
TEST(ContribOpsTest, QuantizedOpsBecomeDequantizeComputeQuantize) {
  auto add = Expand(ContribOpsNode(
      "QLinearAdd", {"a", "as", "az", "b", "bs", "bz", "cs", "cz"}, {"c"}));
  ASSERT_TRUE(add.ok()) << add.status();
  EXPECT_THAT(OpsOf(*add), ElementsAre("DequantizeLinear", "DequantizeLinear",
                                       "Add", "QuantizeLinear"));
  auto gemm = Expand(
      ContribOpsNode("QGemm", {"a", "as", "az", "b", "bs", "bz", "c"}, {"y"}));
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  EXPECT_THAT(OpsOf(*gemm), ElementsAre("DequantizeLinear", "DequantizeLinear",
                                        "Cast", "Mul", "Mul", "Gemm"));
  EXPECT_EQ(gemm->rbegin()->output(0), "y");  // Float: no QuantizeLinear.
}

// An omitted output zero point is 0 of the input's dtype: taken from the
// input's zero point, or its declared type; refused, naming why, when
// neither says it.
TEST(ContribOpsTest, AnOmittedOutputZeroPointNeedsTheInputsDtype) {
  const onnx::NodeProto with_input_zero =
      ContribOpsNode("QLinearSigmoid", {"x", "xs", "xz", "ys"}, {"y"});
  auto from_zero = Expand(with_input_zero);
  ASSERT_TRUE(from_zero.ok()) << from_zero.status();
  EXPECT_THAT(OpsOf(*from_zero), ElementsAre("Sub", "DequantizeLinear",
                                             "Sigmoid", "QuantizeLinear"));

  const onnx::NodeProto bare =
      ContribOpsNode("QLinearSigmoid", {"x", "xs", "", "ys"}, {"y"});
  auto declared = Expand(bare, 17, [](const std::string& name) {
    return DeclaredValue{name == "x" ? onnx::TensorProto::INT8 : 0, {}};
  });
  ASSERT_TRUE(declared.ok()) << declared.status();
  const onnx::NodeProto& zero = declared->Get(0);
  ASSERT_EQ(zero.op_type(), "Constant");
  EXPECT_EQ(zero.attribute(0).t().data_type(), onnx::TensorProto::INT8);

  auto unknown = Expand(bare);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("needs the input's zero point or its declared type"));
}

// A channels-last quantized pool (ONNX Runtime's NHWC transformer writes
// them) runs channels first between two Transposes, whose permutations
// come from the input's declared rank.
TEST(ContribOpsTest, AChannelsLastPoolRunsBetweenTransposes) {
  onnx::NodeProto nhwc = ContribOpsNode("QLinearGlobalAveragePool",
                                        {"x", "xs", "xz", "ys", "yz"}, {"y"});
  SetInt(&nhwc, "channels_last", 1);
  auto expanded = Expand(nhwc, 17, [](const std::string& name) {
    return DeclaredValue{name == "x" ? onnx::TensorProto::UINT8 : 0,
                         std::vector<int64_t>{1, 7, 7, 32}};
  });
  ASSERT_TRUE(expanded.ok()) << expanded.status();
  EXPECT_THAT(OpsOf(*expanded),
              ElementsAre("DequantizeLinear", "Transpose", "GlobalAveragePool",
                          "Transpose", "QuantizeLinear"));
  std::vector<std::vector<int64_t>> perms;
  for (const onnx::NodeProto& n : *expanded) {
    if (n.op_type() == "Transpose") {
      perms.emplace_back(n.attribute(0).ints().begin(),
                         n.attribute(0).ints().end());
    }
  }
  EXPECT_THAT(perms,
              ElementsAre(ElementsAre(0, 3, 1, 2), ElementsAre(0, 2, 3, 1)));
}

// What weft does not expand is named: the op (with the list of those it
// does), an attribute value, a malformed node.
TEST(ContribOpsTest, WhatIsNotExpandedIsNamed) {
  auto paged = Expand(
      ContribOpsNode("PagedAttention", {"q", "k", "v", "kc", "vc"}, {"y"}));
  ASSERT_FALSE(paged.ok());
  EXPECT_EQ(paged.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(paged.status().message(),
              HasSubstr("op 'PagedAttention' of domain 'com.microsoft' is "
                        "not supported (weft reads these of it: Attention"));

  onnx::NodeProto batch = ContribOpsNode("FusedMatMul", {"a", "b"}, {"y"});
  SetInt(&batch, "transBatchA", 1);
  auto batched = Expand(batch);
  ASSERT_FALSE(batched.ok());
  EXPECT_THAT(batched.status().message(), HasSubstr("transBatchA"));

  onnx::NodeProto nhwc = ContribOpsNode("QLinearGlobalAveragePool",
                                        {"x", "xs", "xz", "ys", "yz"}, {"y"});
  SetInt(&nhwc, "channels_last", 1);
  auto channels_last = Expand(nhwc);
  ASSERT_FALSE(channels_last.ok());
  EXPECT_THAT(channels_last.status().message(),
              HasSubstr("channels_last = 1 needs input 0's declared rank"));

  auto concat =
      Expand(ContribOpsNode("QLinearConcat", {"ys", "yz", "a", "as"}, {"y"}));
  ASSERT_FALSE(concat.ok());
  EXPECT_EQ(concat.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(concat.status().message(),
              HasSubstr("com.microsoft QLinearConcat"));

  auto missing = Expand(ContribOpsNode("BiasGelu", {"x"}, {"y"}));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("input 1 is required"));
}

void SetInt(onnx::NodeProto* n, const std::string& name, int64_t value);

// Attention reads its mask by rank, so a mask_index without a declared
// shape is refused; EmbedLayerNormalization declares the 1-D mask_index
// it makes, which is what lets the Attention after it read that.
TEST(ContribOpsTest, AttentionNeedsTheRankOfItsMask) {
  onnx::NodeProto attention =
      ContribOpsNode("Attention", {"x", "w", "b", "mask"}, {"y"});
  SetInt(&attention, "num_heads", 2);
  auto weights_only = [](const std::string& name) {
    return name == "w" ? DeclaredValue{1, std::vector<int64_t>{4, 12}}
                       : DeclaredValue{};
  };
  auto unknown = Expand(attention, 17, weights_only);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("mask_index needs a declared shape"));

  Nodes out;
  DeclaredOutputs declared;
  const onnx::NodeProto embed = ContribOpsNode(
      "EmbedLayerNormalization",
      {"ids", "", "words", "positions", "", "gamma", "beta", "mask"},
      {"e", "mask_index"});
  ASSERT_TRUE(
      ExpandContribOp(embed, 17, "n/0/", Undeclared, &out, &declared).ok());
  ASSERT_TRUE(declared.count("mask_index"));
  EXPECT_EQ(declared["mask_index"].elem_type, onnx::TensorProto::INT32);
  EXPECT_EQ(declared["mask_index"].dims, std::vector<int64_t>{-1});

  auto from_embed = Expand(attention, 17, [&](const std::string& name) {
    return name == "mask" ? declared["mask_index"] : weights_only(name);
  });
  ASSERT_TRUE(from_embed.ok()) << from_embed.status();

  auto no_weights = Expand(attention);
  ASSERT_FALSE(no_weights.ok());
  EXPECT_THAT(no_weights.status().message(),
              HasSubstr("the weights need a declared shape"));
}

// MatMulNBits: weft's MatMulNBits of float32 scales and zero points; what
// the node's attributes and inputs cannot mean is named.
TEST(ContribOpsTest, MatMulNBitsDequantizesItsWeightOrSaysWhyNot) {
  auto node = [](int64_t bits, int64_t block,
                 const std::vector<std::string>& inputs = {"a", "b", "s"}) {
    onnx::NodeProto n = ContribOpsNode("MatMulNBits", inputs, {"y"});
    SetInt(&n, "K", 20);
    SetInt(&n, "N", 6);
    SetInt(&n, "bits", bits);
    SetInt(&n, "block_size", block);
    return n;
  };
  auto nodes = Expand(node(4, 16));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(OpsOf(*nodes).back(), "MatMulNBits");
  EXPECT_EQ(nodes->Get(nodes->size() - 1).domain(), kMicrosoftDomain);

  auto message = [&](const onnx::NodeProto& n, const DeclaredFn& declared) {
    auto expanded = Expand(n, 17, declared);
    return expanded.ok() ? std::string("expanded")
                         : std::string(expanded.status().message());
  };
  EXPECT_THAT(message(node(3, 16), Undeclared), HasSubstr("bits = 3"));
  EXPECT_THAT(message(node(4, 24), Undeclared),
              HasSubstr("block_size must be a power of two, at least 16, "
                        "got 24"));
  EXPECT_THAT(message(node(4, 16, {"a", "b", "s", "", "g"}), Undeclared),
              HasSubstr("g_idx"));
  // K = 20 in blocks of 16 is two blocks of 8 bytes a column.
  auto b_of_shape = [](const std::vector<int64_t>& dims) {
    return [dims](const std::string& name) {
      return name == "b" ? DeclaredValue{onnx::TensorProto::UINT8, dims}
                         : DeclaredValue{};
    };
  };
  EXPECT_EQ(message(node(4, 16), b_of_shape({6, 2, 8})), "expanded");
  EXPECT_THAT(message(node(4, 16), b_of_shape({6, 1, 8})),
              HasSubstr("B must have shape [N, k_blocks, blob_size] = [6, 2, "
                        "8] for K = 20, block_size = 16, bits = 4, got [6, 1, "
                        "8]"));
}

// GroupQueryAttention and RotaryEmbedding: what a node asks for that weft
// does not compute, or cannot mean, is named; a query whose shape the model
// does not declare (a MatMulNBits' output) still expands.
TEST(ContribOpsTest, DecoderAttentionSaysWhatItDoesNotRead) {
  const std::vector<std::string> gqa_inputs = {
      "q", "k", "v", "pk", "pv", "seqlens", "total", "cos", "sin"};
  auto gqa = [&](const std::vector<std::string>& inputs, int64_t heads,
                 int64_t kv_heads) {
    onnx::NodeProto n = ContribOpsNode("GroupQueryAttention", inputs,
                                       {"y", "present_k", "present_v"});
    SetInt(&n, "num_heads", heads);
    SetInt(&n, "kv_num_heads", kv_heads);
    return n;
  };
  auto message = [](const onnx::NodeProto& n, const DeclaredFn& declared) {
    auto expanded = Expand(n, 17, declared);
    return expanded.ok() ? std::string("expanded")
                         : std::string(expanded.status().message());
  };
  auto cos_declared = [](const std::string& name) {
    return name == "cos" ? DeclaredValue{1, std::vector<int64_t>{16, 8}}
                         : DeclaredValue{};
  };
  EXPECT_EQ(message(gqa(gqa_inputs, 4, 2), Undeclared), "expanded");
  onnx::NodeProto rotary = gqa(gqa_inputs, 4, 2);
  SetInt(&rotary, "do_rotary", 1);
  EXPECT_EQ(message(rotary, cos_declared), "expanded");
  EXPECT_THAT(message(rotary, Undeclared),
              HasSubstr("cos_cache needs a declared shape"));
  EXPECT_THAT(message(gqa(gqa_inputs, 4, 3), Undeclared),
              HasSubstr("num_heads a multiple of kv_num_heads"));
  EXPECT_THAT(message(gqa({"q", "k", "", "", "", "seqlens", "total"}, 4, 2),
                      Undeclared),
              HasSubstr("key and value must be both given"));
  std::vector<std::string> with_positions = gqa_inputs;
  with_positions.push_back("position_ids");
  EXPECT_THAT(message(gqa(with_positions, 4, 2), Undeclared),
              HasSubstr("input 9 (position_ids) is not supported"));
  onnx::NodeProto quantized_cache = gqa(gqa_inputs, 4, 2);
  *quantized_cache.add_attribute() = StringAttr("k_quant_type", "PER_TENSOR");
  EXPECT_THAT(message(quantized_cache, Undeclared),
              HasSubstr("k_quant_type 'PER_TENSOR' (a quantized cache)"));
  EXPECT_THAT(
      message(gqa({"q", "k", "v", "", "", "seqlens"}, 4, 2), Undeclared),
      HasSubstr("input 6 is required"));

  onnx::NodeProto rope =
      ContribOpsNode("RotaryEmbedding", {"x", "ids", "cos", "sin"}, {"y"});
  auto rope_declared = [](const std::vector<int64_t>& x) {
    return [x](const std::string& name) {
      if (name == "x") return DeclaredValue{1, x};
      if (name == "ids") return DeclaredValue{7, std::vector<int64_t>{1}};
      if (name == "cos") return DeclaredValue{1, std::vector<int64_t>{16, 8}};
      return DeclaredValue{};
    };
  };
  EXPECT_EQ(message(rope, rope_declared({1, 2, 3, 16})), "expanded");
  EXPECT_THAT(message(rope, Undeclared),
              HasSubstr("input needs a declared shape of rank 3 or 4"));
  EXPECT_THAT(message(rope, rope_declared({1, 2, 3, 8})),
              HasSubstr("at most half the head size (8)"));
}

// ReduceMean takes its axes as an attribute before opset 18 and as an
// input from 18: the expansion follows the model's opset.
TEST(ContribOpsTest, FormsFollowTheModelsOpset) {
  const onnx::NodeProto rms = ContribOpsNode("SkipSimplifiedLayerNormalization",
                                             {"x", "skip", "gamma"}, {"y"});
  for (int64_t opset : {17, 18}) {
    auto nodes = Expand(rms, opset);
    ASSERT_TRUE(nodes.ok()) << nodes.status();
    for (const onnx::NodeProto& n : *nodes) {
      if (n.op_type() != "ReduceMean") continue;
      EXPECT_EQ(n.input_size(), opset >= 18 ? 2 : 1) << opset;
    }
  }
}

}  // namespace
}  // namespace weft::internal
