// attention-fusion: the head chain of exported attention becomes one
// FusedAttention with the chain's bits; chains it cannot take stay.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "test_support/session_util.h"
#include "weft/graph_passes.h"

namespace weft {
namespace {

using test::MustAdd;

// The attention of one encoder layer as torch exports it. Sizes chosen so
// that the products have a partial row tile (Sq = 24: tiles of 16 rows).
struct AttentionFusionForm {
  int64_t batch = 2, queries = 24, keys = 24, heads = 3, size = 16;
  bool split = true;         // Q, K, V from one Split of [B, S, 3 H D]
  bool split_extra = false;  // the Split's Q also read by another node
  std::vector<int64_t> mask = {2, 1, 1, 24};  // {} for none
  bool mask_first = false;                    // Add(mask, scores)
  float divisor = 4.0f;  // Div (a power of two) or Mul by 1 / divisor
  bool divide = true;
  std::vector<int64_t> k_perm = {0, 2, 3, 1};
  int64_t softmax_axis = -1;
  bool probs_read_twice = false;
};

void AttentionFusionInts(Graph& g, const std::string& name,
                         const std::vector<int64_t>& v) {
  g.Const(name,
          Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

// Reshape [B, S, H D] -> [B, S, H, D] -> Transpose(perm), named prefix_*.
std::string Heads(Graph& g, const AttentionFusionForm& f, const std::string& x,
                  int64_t seq, const std::string& prefix,
                  const std::vector<int64_t>& perm) {
  AttentionFusionInts(g, prefix + "_shape", {f.batch, seq, f.heads, f.size});
  MustAdd(g, {prefix + "_4d", "Reshape", {x, prefix + "_shape"}, {}, ""});
  MustAdd(
      g,
      {prefix + "_heads", "Transpose", {prefix + "_4d"}, {{"perm", perm}}, ""});
  return prefix + "_heads";
}

Graph AttentionGraph(const AttentionFusionForm& f) {
  Graph g;
  const int64_t width = f.heads * f.size;
  std::string q = "q", k = "k", v = "v";
  if (f.split) {
    g.Placeholder("qkv", DataType::kFloat32, {f.batch, f.queries, 3 * width});
    MustAdd(g, {"split",
                "Split",
                {"qkv"},
                {{"axis", int64_t{-1}}, {"num_outputs", int64_t{3}}},
                ""});
    q = "split";
    k = "split:1";
    v = "split:2";
    if (f.split_extra) g.Relu("q_also", "split");
  } else {
    g.Placeholder("q", DataType::kFloat32, {f.batch, f.queries, width});
    g.Placeholder("k", DataType::kFloat32, {f.batch, f.keys, width});
    g.Placeholder("v", DataType::kFloat32, {f.batch, f.keys, width});
  }
  const std::string qh = Heads(g, f, q, f.queries, "q", {0, 2, 1, 3});
  const std::string kh = Heads(g, f, k, f.keys, "k", f.k_perm);
  const std::string vh = Heads(g, f, v, f.keys, "v", {0, 2, 1, 3});
  g.MatMul("qk", qh, kh);
  if (f.divide) {
    g.Const("divisor", Tensor::Scalar<float>(f.divisor));
    g.Div("scores", "qk", "divisor");
  } else {
    g.Const("factor", Tensor::Scalar<float>(1.0f / f.divisor));
    g.Mul("scores", "factor", "qk");
  }
  std::string logits = "scores";
  if (!f.mask.empty()) {
    g.Placeholder("mask", DataType::kFloat32, PartialShape(f.mask));
    if (f.mask_first) {
      g.Add("masked", "mask", "scores");
    } else {
      g.Add("masked", "scores", "mask");
    }
    logits = "masked";
  }
  MustAdd(g, {"probs", "Softmax", {logits}, {{"axis", f.softmax_axis}}, ""});
  if (f.probs_read_twice) g.Relu("probs_also", "probs");
  g.MatMul("context", "probs", vh);
  MustAdd(g, {"context_t",
              "Transpose",
              {"context"},
              {{"perm", std::vector<int64_t>{0, 2, 1, 3}}},
              ""});
  AttentionFusionInts(g, "merged_shape", {f.batch, f.queries, width});
  MustAdd(g, {"y", "Reshape", {"context_t", "merged_shape"}, {}, ""});
  return g;
}

NamedTensors AttentionFusionFeeds(const AttentionFusionForm& f) {
  const int64_t width = f.heads * f.size;
  NamedTensors feeds;
  if (f.split) {
    feeds.emplace_back("qkv",
                       test::SeededFloats({f.batch, f.queries, 3 * width}, 11));
  } else {
    feeds.emplace_back("q",
                       test::SeededFloats({f.batch, f.queries, width}, 12));
    feeds.emplace_back("k", test::SeededFloats({f.batch, f.keys, width}, 13));
    feeds.emplace_back("v", test::SeededFloats({f.batch, f.keys, width}, 14));
  }
  if (!f.mask.empty()) {
    // Whole positions hidden (-10000) and some mild values, as masks hold.
    Tensor mask = test::SeededFloats(Shape(f.mask), 15);
    float* m = mask.data<float>();
    for (int64_t i = 0; i < mask.NumElements(); ++i) {
      m[i] = m[i] > 0.6f ? -10000.0f : m[i];
    }
    feeds.emplace_back("mask", mask);
  }
  return feeds;
}

SessionOptions AttentionFusionOptions(int inter, int intra, bool optimize) {
  SessionOptions options = test::PerSessionOptions(inter, intra);
  options.optimize_graph = optimize;
  return options;
}

// y with the passes off at (1, 1), and on at (1, 1), (1, 2) and (2, 2):
// the same bits every way.
void AttentionFusionExpectSameBits(const AttentionFusionForm& f) {
  const Graph g = AttentionGraph(f);
  const NamedTensors feeds = AttentionFusionFeeds(f);
  const Tensor want =
      test::MustRun(*test::MustCreate(g, AttentionFusionOptions(1, 1, false)),
                    {"y"}, feeds)
          .at(0);
  for (auto [inter, intra] : {std::pair{1, 1}, {1, 2}, {2, 2}}) {
    const Tensor got =
        test::MustRun(
            *test::MustCreate(g, AttentionFusionOptions(inter, intra, true)),
            {"y"}, feeds)
            .at(0);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(0,
              std::memcmp(got.raw_data(), want.raw_data(), want.size_bytes()))
        << "at (" << inter << ", " << intra << ")";
  }
}

StatusOr<OptimizedGraph> Optimized(const AttentionFusionForm& f,
                                   const GraphPassOptions& options = {}) {
  return OptimizeGraph(AttentionGraph(f), options);
}

// The ops of form f's optimised graph, and its node "y" into *y when given.
std::multiset<std::string> OptimizedOps(const AttentionFusionForm& f,
                                        NodeDef* y = nullptr) {
  auto optimized = Optimized(f);
  EXPECT_TRUE(optimized.ok()) << optimized.status();
  if (!optimized.ok()) return {};
  if (y != nullptr) {
    const NodeDef* found = optimized->graph.FindNode("y");
    EXPECT_NE(found, nullptr);
    if (found != nullptr) *y = *found;
  }
  return test::Ops(optimized->graph);
}

int64_t IntAttr(const NodeDef& node, const char* name) {
  StatusOr<const int64_t*> found = FindAttr<int64_t>(node.attrs, name);
  EXPECT_TRUE(found.ok()) << name;
  return found.ok() ? **found : -1;
}

TEST(AttentionFusionTest, TheSplitEncoderFormBecomesOneNodeWithTheSameBits) {
  const AttentionFusionForm f;
  NodeDef y;
  const auto ops = OptimizedOps(f, &y);
  EXPECT_EQ(ops.count("FusedAttention"), 1u);
  for (const char* gone :
       {"Split", "Reshape", "Transpose", "MatMul", "Softmax", "Add", "Div"}) {
    EXPECT_EQ(ops.count(gone), 0u) << gone;
  }
  EXPECT_EQ(y.op, "FusedAttention");
  EXPECT_EQ(y.inputs, (std::vector<std::string>{"qkv", "qkv", "qkv", "mask"}));
  EXPECT_EQ(IntAttr(y, "num_heads"), 3);
  EXPECT_EQ(IntAttr(y, "head_size"), 16);
  EXPECT_EQ(IntAttr(y, "k_offset"), 48);
  EXPECT_EQ(IntAttr(y, "v_offset"), 96);
  AttentionFusionExpectSameBits(f);
}

TEST(AttentionFusionTest, SeparateInputsCrossAttentionAndMulScaleKeepTheBits) {
  AttentionFusionForm f;
  f.split = false;
  f.queries = 5;
  f.keys = 37;
  f.divide = false;
  f.divisor = 3.0f;  // Mul by 1/3: alpha is that float.
  f.mask = {5, 37};  // Per query and key, broadcast over batch and heads.
  f.mask_first = true;
  EXPECT_EQ(OptimizedOps(f).count("FusedAttention"), 1u);
  AttentionFusionExpectSameBits(f);

  f.mask = {};  // No mask; one head; a batch of one.
  f.heads = 1;
  f.batch = 1;
  EXPECT_EQ(OptimizedOps(f).count("FusedAttention"), 1u);
  AttentionFusionExpectSameBits(f);

  f.mask = {1, 1, 5, 37};  // A full-rank mask.
  EXPECT_EQ(OptimizedOps(f).count("FusedAttention"), 1u);
  AttentionFusionExpectSameBits(f);
}

TEST(AttentionFusionTest, ADivisorNoMulCanReplaceIsDividedByInTheKernel) {
  // sqrt(32): matmul-scale-fusion leaves the Div (x / c is not x times any
  // float), so the fused node divides as the Div did.
  AttentionFusionForm f;
  f.divisor = 5.656854f;
  NodeDef y;
  const auto ops = OptimizedOps(f, &y);
  EXPECT_EQ(ops.count("FusedAttention"), 1u);
  EXPECT_EQ(ops.count("Div"), 0u);
  StatusOr<const double*> divisor = FindAttr<double>(y.attrs, "divisor");
  ASSERT_TRUE(divisor.ok());
  EXPECT_EQ(**divisor, static_cast<double>(5.656854f));
  AttentionFusionExpectSameBits(f);

  f.mask = {};  // The Div straight before the Softmax.
  f.split = false;
  EXPECT_EQ(OptimizedOps(f).count("FusedAttention"), 1u);
  AttentionFusionExpectSameBits(f);
}

TEST(AttentionFusionTest, ASplitReadElsewhereStaysAndItsOutputsAreRead) {
  AttentionFusionForm f;
  f.split_extra = true;
  NodeDef y;
  const auto ops = OptimizedOps(f, &y);
  EXPECT_EQ(ops.count("FusedAttention"), 1u);
  EXPECT_EQ(ops.count("Split"), 1u);
  EXPECT_EQ(y.inputs,
            (std::vector<std::string>{"split", "split:1", "split:2", "mask"}));
  EXPECT_EQ(IntAttr(y, "k_offset"), 0);
  AttentionFusionExpectSameBits(f);
}

TEST(AttentionFusionTest, ChainsItCannotTakeStay) {
  AttentionFusionForm
      wrong_keys;  // K not transposed to [B, H, D, S]: another product.
  wrong_keys.k_perm = {0, 2, 1, 3};
  wrong_keys.size = wrong_keys.keys = wrong_keys.queries = 16;
  wrong_keys.mask = {2, 1, 1, 16};
  AttentionFusionForm other_axis;  // Softmax over the queries.
  other_axis.softmax_axis = 2;
  AttentionFusionForm
      read_twice;  // The probabilities are read by another node too.
  read_twice.probs_read_twice = true;
  AttentionFusionForm growing_mask;  // A mask that broadcasts the scores up.
  growing_mask.mask = {3, 2, 1, 1, 24};
  for (const AttentionFusionForm& f :
       {wrong_keys, other_axis, read_twice, growing_mask}) {
    auto optimized = Optimized(f);
    ASSERT_TRUE(optimized.ok()) << optimized.status();
    const auto ops = test::Ops(optimized->graph);
    EXPECT_EQ(ops.count("FusedAttention"), 0u);
    EXPECT_EQ(ops.count("Softmax"), 1u);
  }
}

TEST(AttentionFusionTest, DisabledItLeavesTheChain) {
  GraphPassOptions options;
  options.disabled = {"attention-fusion"};
  auto optimized = Optimized(AttentionFusionForm{}, options);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(test::Ops(optimized->graph).count("FusedAttention"), 0u);
  EXPECT_EQ(test::Ops(optimized->graph).count("Softmax"), 1u);
}

TEST(AttentionFusionTest, OpenShapesFuseOnceTheFeedsGiveThem) {
  // Batch and sequence open, as exporters declare them: the generic graph
  // keeps the chain, the graph specialised for the feeds fuses it.
  const AttentionFusionForm f;
  Graph g = AttentionGraph(f);
  Graph open;
  for (const NodeDef& node : g.nodes()) {
    NodeDef copy = node;
    if (copy.name == "qkv" || copy.name == "mask") {
      copy.attrs["shape"] =
          AttrValue(copy.name == "qkv" ? PartialShape({-1, -1, 144})
                                       : PartialShape({-1, 1, 1, -1}));
    }
    MustAdd(open, copy);
  }
  auto generic = OptimizeGraph(open);
  ASSERT_TRUE(generic.ok()) << generic.status();
  EXPECT_EQ(test::Ops(generic->graph).count("FusedAttention"), 0u);
  const NamedTensors feeds = AttentionFusionFeeds(f);
  auto session = test::MustCreate(open, AttentionFusionOptions(1, 2, true));
  RunMetadata metadata = test::MustRunTraced(*session, {"y"}, feeds);
  bool fused = false;
  for (const auto& node : metadata.node_stats) {
    fused = fused || node.op == "FusedAttention";
  }
  EXPECT_TRUE(fused);
  const Tensor want =
      test::MustRun(*test::MustCreate(g, AttentionFusionOptions(1, 1, false)),
                    {"y"}, feeds)
          .at(0);
  const Tensor got = test::MustRun(*session, {"y"}, feeds).at(0);
  EXPECT_EQ(0, std::memcmp(got.raw_data(), want.raw_data(), want.size_bytes()));
}

// The op itself, given by hand: inputs it cannot read are errors naming
// them.
TEST(FusedAttentionOpTest, BadInputsAreNamed) {
  auto run = [](const std::vector<int64_t>& mask, int64_t v_offset,
                int64_t heads) {
    Graph g;
    g.Placeholder("x", DataType::kFloat32, {1, 4, 8});
    g.Placeholder("m", DataType::kFloat32, PartialShape(mask));
    MustAdd(g, {"y",
                "FusedAttention",
                {"x", "x", "x", "m"},
                {{"num_heads", heads},
                 {"head_size", int64_t{2}},
                 {"v_offset", v_offset}},
                ""});
    // Refused when the session is made or when it runs.
    auto session =
        Session::Create(std::move(g), AttentionFusionOptions(1, 1, true));
    if (!session.ok()) return session.status();
    std::vector<Tensor> out;
    return (*session)->Run({{"x", test::SeededFloats({1, 4, 8}, 1)},
                            {"m", test::SeededFloats(Shape(mask), 2)}},
                           {"y"}, {}, &out);
  };
  EXPECT_TRUE(run({1, 1, 4, 4}, 4, 2).ok());
  const Status bad_mask = run({1, 3, 4, 4}, 4, 2);
  EXPECT_EQ(bad_mask.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_mask.message().find("mask [1, 3, 4, 4]"), std::string::npos)
      << bad_mask;
  const Status bad_offset = run({1, 1, 4, 4}, 6, 2);
  EXPECT_EQ(bad_offset.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      bad_offset.message().find(
          "v [1, 4, 8] has no room for 2 heads of 2 columns from column 6"),
      std::string::npos)
      << bad_offset;
  // Attributes whose product overflows are refused, not multiplied.
  const Status huge = run({1, 1, 4, 4}, 0, int64_t{1} << 62);
  EXPECT_EQ(huge.code(), StatusCode::kInvalidArgument) << huge;
  const Status no_heads = run({1, 1, 4, 4}, 0, 0);
  EXPECT_EQ(no_heads.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_heads.message().find("num_heads"), std::string::npos)
      << no_heads;
}

}  // namespace
}  // namespace weft
