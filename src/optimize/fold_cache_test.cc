// Constant folding's cache across a session's compiles (fold_cache.h):
// what it knows a node by, and that a compile for other feed shapes takes
// from it only what does not depend on them.
#include "optimize/fold_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "optimize/passes.h"
#include "test_support/session_util.h"

namespace weft::internal {
namespace {

const Tensor& ConstValue(const Graph& graph, const std::string& name) {
  const NodeDef* node = graph.FindNode(name);
  EXPECT_NE(node, nullptr) << name;
  EXPECT_EQ(node->op, "Const") << name;
  return *node->attrs.at("value").get_if<Tensor>();
}

// `graph` with x's shape declared [rows, 4], as a session specialises it.
Graph WithRows(const Graph& graph, int64_t rows) {
  Graph out;
  for (NodeDef node : graph.nodes()) {
    if (node.name == "x") node.attrs["shape"] = PartialShape({rows, 4});
    test::MustAdd(out, std::move(node));
  }
  return out;
}

TEST(FoldCacheTest, KnowsNodesByWhatTheyCompute) {
  Graph g;
  g.Const("c", test::SeededFloats({4}, 1));
  g.Const("same_bytes", test::SeededFloats({4}, 1));
  FoldCache cache(g);
  const Tensor& c = ConstValue(g, "c");
  const int64_t c_id = cache.ConstantId(c);
  ASSERT_NE(c_id, FoldCache::kUnknown);
  // Another buffer is another constant, whatever its bytes.
  EXPECT_NE(cache.ConstantId(ConstValue(g, "same_bytes")), c_id);
  EXPECT_EQ(cache.ConstantId(test::SeededFloats({4}, 1)), FoldCache::kUnknown);

  const NodeDef neg = {"n", "Neg", {"c"}, {}, ""};
  const NodeDef renamed = {"other_name", "Neg", {"c"}, {}, ""};
  const int64_t neg_id = cache.NodeId(neg, {{c_id, 0}});
  EXPECT_EQ(cache.NodeId(renamed, {{c_id, 0}}), neg_id);
  EXPECT_NE(cache.NodeId({"n", "Abs", {"c"}, {}, ""}, {{c_id, 0}}), neg_id);
  EXPECT_NE(cache.NodeId({"n", "Neg", {"c"}, {}, "/cpu:1"}, {{c_id, 0}}),
            neg_id);
  EXPECT_EQ(cache.NodeId(neg, {{FoldCache::kUnknown, 0}}), FoldCache::kUnknown);
  const NodeDef cast_to_int = {
      "k", "Cast", {"c"}, {{"to", DataType::kInt32}}, ""};
  const NodeDef cast_to_half = {
      "k", "Cast", {"c"}, {{"to", DataType::kFloat16}}, ""};
  EXPECT_NE(cache.NodeId(cast_to_int, {{c_id, 0}}),
            cache.NodeId(cast_to_half, {{c_id, 0}}));
  // A tensor attribute is not part of a key: the node is not cached.
  const NodeDef fill = {
      "f", "ConstantOfShape", {"c"}, {{"value", Tensor::Scalar<float>(1)}}, ""};
  EXPECT_EQ(cache.NodeId(fill, {{c_id, 0}}), FoldCache::kUnknown);

  EXPECT_FALSE(cache.Find(neg_id).has_value());
  const Tensor folded = test::SeededFloats({4}, 2);
  cache.Insert(neg_id, folded);
  const std::optional<Tensor> found = cache.Find(neg_id);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->raw_data(), folded.raw_data());
  EXPECT_EQ(cache.hits(), 1);
  // A Const holding the value in a later compile reads as the node.
  EXPECT_EQ(cache.ConstantId(folded), neg_id);
}

TEST(FoldCacheTest, ACompileForOtherShapesTakesOnlyWhatDoesNotDependOnThem) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({-1, 4}));
  g.Const("w", test::SeededFloats({4}, 3));
  g.Const("scale", test::SeededFloats({4}, 4));
  test::MustAdd(g, {"scaled", "Mul", {"w", "scale"}, {}, ""});
  test::MustAdd(g, {"y", "Add", {"x", "scaled"}, {}, ""});
  // The element count of x, as a float: constant only once x's shape is.
  test::MustAdd(g, {"count", "Size", {"x"}, {}, ""});
  test::MustAdd(
      g, {"count_f", "Cast", {"count"}, {{"to", DataType::kFloat32}}, ""});
  test::MustAdd(g, {"by_count", "Mul", {"scaled", "count_f"}, {}, ""});
  test::MustAdd(g, {"z", "Mul", {"x", "by_count"}, {}, ""});

  FoldCache cache(g);
  GraphPassOptions passes;
  auto general = OptimizeGraph(g, passes, &cache);
  ASSERT_TRUE(general.ok()) << general.status();
  const Tensor scaled = ConstValue(general->graph, "scaled");
  EXPECT_EQ(cache.hits(), 0);

  auto two_rows = OptimizeGraph(WithRows(g, 2), passes, &cache);
  ASSERT_TRUE(two_rows.ok()) << two_rows.status();
  EXPECT_GE(cache.hits(), 1);
  // The same tensor, not a value computed again.
  EXPECT_EQ(ConstValue(two_rows->graph, "scaled").raw_data(),
            scaled.raw_data());
  const int64_t hits_before = cache.hits();
  auto three_rows = OptimizeGraph(WithRows(g, 3), passes, &cache);
  ASSERT_TRUE(three_rows.ok()) << three_rows.status();
  EXPECT_GT(cache.hits(), hits_before);

  // What depends on the shapes is each compile's own.
  for (const auto& [graph, count] :
       {std::pair<const Graph*, float>{&two_rows->graph, 8.0f},
        std::pair<const Graph*, float>{&three_rows->graph, 12.0f}}) {
    const Tensor& by_count = ConstValue(*graph, "by_count");
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(by_count.data<float>()[i], scaled.data<float>()[i] * count)
          << count << " " << i;
    }
  }
  // And without a cache, the same graphs.
  auto uncached = OptimizeGraph(WithRows(g, 3), passes, nullptr);
  ASSERT_TRUE(uncached.ok()) << uncached.status();
  EXPECT_TRUE(ConstValue(uncached->graph, "by_count")
                  .BitwiseEqual(ConstValue(three_rows->graph, "by_count")));
}

// A folded weight that a later pass replaces (batch normalization folded
// into the convolution's weights) is in no graph the compile keeps: the
// cache lets it go rather than hold its memory for the session.
TEST(FoldCacheTest, LetsGoOfWhatTheCompileDidNotKeep) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({-1, 2, 6, 6}));
  g.Const("w_half", test::SeededFloats({4, 2, 3, 3}, 6));
  g.Const("two", Tensor::Scalar<float>(2));
  test::MustAdd(g, {"w", "Mul", {"w_half", "two"}, {}, ""});
  test::MustAdd(g, {"conv",
                    "Conv",
                    {"x", "w"},
                    {{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                    ""});
  for (const char* name : {"scale", "shift", "mean"}) {
    g.Const(name, test::SeededFloats({4}, 7));
  }
  g.Const("var", Tensor::FromVector<float>({4}, {1, 2, 3, 4}));
  test::MustAdd(g, {"bn",
                    "BatchNormalization",
                    {"conv", "scale", "shift", "mean", "var"},
                    {{"epsilon", 1e-3}},
                    ""});
  FoldCache cache(g);
  GraphPassOptions with_batchnorm_folding;
  with_batchnorm_folding.disabled = {"nhwc-layout"};
  auto optimized = OptimizeGraph(g, with_batchnorm_folding, &cache);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  for (const NodeDef& node : optimized->graph.nodes()) {
    ASSERT_NE(node.op, "BatchNormalization");  // Folded into the weights.
  }
  EXPECT_EQ(cache.size(), 0u);

  GraphPassOptions without = with_batchnorm_folding;
  without.disabled.push_back("batchnorm-folding");
  optimized = OptimizeGraph(g, without, &cache);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(cache.size(), 1u);  // The weight the Conv reads.
}

// A session's concurrent Runs may specialise at once: they share the
// cache (run under ThreadSanitizer in CI).
TEST(FoldCacheTest, ConcurrentCompilesShareIt) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({-1, 4}));
  g.Const("w", test::SeededFloats({4}, 5));
  test::MustAdd(g, {"doubled", "Add", {"w", "w"}, {}, ""});
  test::MustAdd(g, {"y", "Mul", {"x", "doubled"}, {}, ""});
  FoldCache cache(g);
  constexpr int kThreads = 4;
  std::vector<StatusOr<OptimizedGraph>> results(kThreads,
                                                InternalError("not run"));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(
        [&, t] { results[t] = OptimizeGraph(WithRows(g, t + 1), {}, &cache); });
  }
  for (std::thread& thread : threads) thread.join();
  const Tensor& w = ConstValue(g, "w");
  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    const Tensor& doubled = ConstValue(result->graph, "doubled");
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(doubled.data<float>()[i], w.data<float>()[i] * 2);
    }
  }
}

}  // namespace
}  // namespace weft::internal
