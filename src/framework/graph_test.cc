#include "weft/graph.h"

#include <gtest/gtest.h>

#include <utility>

#include "weft/session.h"

namespace weft {
namespace {

Graph TwoNodes() {
  Graph g;
  g.Const("a", Tensor::Scalar<float>(1.0f));
  g.Identity("b", "a");
  return g;
}

TEST(GraphTest, FindsNodesByName) {
  const Graph g = TwoNodes();
  ASSERT_NE(g.FindNode("b"), nullptr);
  EXPECT_EQ(g.FindNode("b")->op, "Identity");
  EXPECT_EQ(g.FindNode("c"), nullptr);
}

TEST(GraphTest, ACopyHasItsOwnIndex) {
  const Graph original = TwoNodes();
  Graph copy = original;
  EXPECT_TRUE(copy.AddNode({"c", "Identity", {"b"}, {}, ""}).ok());
  ASSERT_NE(copy.FindNode("c"), nullptr);
  EXPECT_EQ(original.FindNode("c"), nullptr);
  EXPECT_FALSE(copy.AddNode({"a", "Identity", {"b"}, {}, ""}).ok());
  Graph assigned;
  assigned = copy;
  EXPECT_NE(assigned.FindNode("c"), nullptr);
}

TEST(GraphTest, AMovedFromGraphCanBeUsedAgain) {
  Graph g = TwoNodes();
  Graph moved = std::move(g);
  EXPECT_NE(moved.FindNode("a"), nullptr);
  g = Graph();
  EXPECT_TRUE(g.AddNode({"a", "Identity", {"x"}, {}, ""}).ok());
  EXPECT_FALSE(g.AddNode({"a", "Identity", {"x"}, {}, ""}).ok());
}

TEST(GraphTest, CompilingATakenGraphTakesItsIndex) {
  // Session::Create takes the graph: its index moves to the compiled graph.
  auto session = Session::Create(TwoNodes());
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {"b"}, {}, &out).ok());
  EXPECT_EQ(*out[0].data<float>(), 1.0f);
}

}  // namespace
}  // namespace weft
