// MemoryPlan::Build: values share a slot only when the graph orders their
// lives; fetched buffers and buffers passed on as fetches get none; an
// alias keeps its buffer's slot until its own readers are done.
#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include "test_support/session_util.h"

namespace weft::internal {
namespace {

struct Planned {
  std::shared_ptr<const CompiledGraph> graph;
  std::shared_ptr<const ExecutionPlan> plan;
  std::shared_ptr<const MemoryPlan> memory;

  int Slot(const std::string& node) const {
    return memory->slot_of(graph->node(graph->FindNode(node)).first_value);
  }
};

// Plans `g` for `fetches` as if every node's output took `bytes`, and
// `aliases` (node -> node whose output it passes on) were seen.
Planned PlanOf(
    const Graph& g, const std::vector<std::string>& fetches, int64_t bytes,
    const std::vector<std::pair<std::string, std::string>>& aliases = {}) {
  Planned out;
  out.graph = CompiledGraph::Compile(g, {}).value();
  out.plan = ExecutionPlan::Build(*out.graph, {}, fetches, {}).value();
  std::vector<int64_t> observed(out.graph->num_values(), 0);
  std::vector<int> alias(out.graph->num_values(), -1);
  for (int i = 0; i < out.graph->num_nodes(); ++i) {
    if (out.plan->role[i] == ExecutionPlan::kRun) {
      observed[out.graph->node(i).first_value] = bytes;
    }
  }
  auto value_of = [&](const std::string& node) {
    return out.graph->node(out.graph->FindNode(node)).first_value;
  };
  for (const auto& [node, of] : aliases) {
    alias[value_of(node)] = value_of(of);
    observed[value_of(node)] = 0;  // Passed on, not allocated.
  }
  out.memory = MemoryPlan::Build(*out.graph, *out.plan, observed, alias);
  return out;
}

Graph Chain(int length) {
  Graph g;
  g.RandomUniform("n0", DataType::kFloat32, {4}, 1);
  for (int i = 1; i <= length; ++i) {
    test::MustAdd(g, {"n" + std::to_string(i),
                      "Relu",
                      {"n" + std::to_string(i - 1)},
                      {},
                      ""});
  }
  return g;
}

TEST(MemoryPlanTest, AChainTakesTurnsInTwoSlots) {
  const Planned p = PlanOf(Chain(6), {"n6"}, 1000);
  ASSERT_NE(p.memory, nullptr);
  // n0 .. n5 (n6 is fetched): a node's input and output are live at once,
  // the one before its input is not.
  EXPECT_EQ(p.memory->num_slots(), 2);
  EXPECT_EQ(p.Slot("n6"), -1);
  for (int i = 0; i + 1 <= 5; ++i) {
    EXPECT_NE(p.Slot("n" + std::to_string(i)),
              p.Slot("n" + std::to_string(i + 1)));
  }
  EXPECT_EQ(p.Slot("n0"), p.Slot("n2"));
  EXPECT_EQ(p.memory->unshared_bytes(), 6000);
  EXPECT_EQ(p.memory->total_bytes(),
            2 * (MemoryPlan::kHeaderBytes + 1024));  // 1000 -> whole lines.
}

TEST(MemoryPlanTest, BranchesThatMayRunTogetherNeverShare) {
  // x -> a1 -> a2 -> a3 and x -> b1 -> b2 -> b3, joined by Add: no order
  // between the branches, so no value of one shares with one of the other.
  Graph g;
  g.RandomUniform("x", DataType::kFloat32, {4}, 1);
  for (const char* side : {"a", "b"}) {
    std::string prev = "x";
    for (int i = 1; i <= 3; ++i) {
      const std::string name = side + std::to_string(i);
      test::MustAdd(g, {name, "Relu", {prev}, {}, ""});
      prev = name;
    }
  }
  test::MustAdd(g, {"sum", "Add", {"a3", "b3"}, {}, ""});
  test::MustAdd(g, {"y", "Relu", {"sum"}, {}, ""});
  const Planned p = PlanOf(g, {"y"}, 256);
  ASSERT_NE(p.memory, nullptr);
  for (const char* a : {"a1", "a2", "a3"}) {
    for (const char* b : {"b1", "b2", "b3"}) {
      EXPECT_NE(p.Slot(a), p.Slot(b)) << a << " and " << b;
    }
  }
  // After the join, everything before it is free: "sum" reuses a slot.
  EXPECT_LT(p.Slot("sum"), 6);
  EXPECT_LE(p.memory->num_slots(), 6);
}

TEST(MemoryPlanTest, AnAliasKeepsItsBufferUntilItsReadersRan) {
  // n2 passes n1's buffer on (a Reshape would); n3 reads n2, so n1's slot
  // is busy until n3 has run: n3's own output may not take it, n4's may.
  const Planned p = PlanOf(Chain(5), {"n5"}, 512, {{"n2", "n1"}});
  ASSERT_NE(p.memory, nullptr);
  EXPECT_EQ(p.Slot("n2"), -1);  // Not allocated: n1's buffer.
  EXPECT_NE(p.Slot("n3"), p.Slot("n1"));
  EXPECT_NE(p.Slot("n0"), p.Slot("n1"));
  const Planned plain = PlanOf(Chain(5), {"n5"}, 512);
  EXPECT_EQ(plain.Slot("n3"), plain.Slot("n1"));  // Without the alias.
}

TEST(MemoryPlanTest, ABufferFetchedUnderAnotherNameGetsNoSlot) {
  const Planned p = PlanOf(Chain(3), {"n3"}, 512, {{"n3", "n2"}});
  ASSERT_NE(p.memory, nullptr);
  EXPECT_EQ(p.Slot("n2"), -1);  // The caller gets it as n3.
  EXPECT_EQ(p.Slot("n3"), -1);
  EXPECT_GE(p.Slot("n1"), 0);
}

TEST(MemoryPlanTest, ATakenSlotIsRefusedUntilItsBufferIsReturned) {
  const Planned p = PlanOf(Chain(3), {"n3"}, 512);
  ASSERT_NE(p.memory, nullptr);
  MemoryArena* arena = MemoryArena::Create(p.memory);
  const int n1 = p.graph->node(p.graph->FindNode("n1")).first_value;
  void* first = arena->Take(n1, 512);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(arena->Take(n1, 512), nullptr);  // Still held.
  MemoryArena::ReturnSlot(arena, p.memory->slot_of(n1));
  EXPECT_EQ(arena->Take(n1, 4096), nullptr);  // More than recorded.
  EXPECT_EQ(arena->Take(n1, 100), first);
  // The owner lets go first; the buffer's return frees the memory
  // (AddressSanitizer reports a leak or a double free otherwise).
  arena->Unhold();
  MemoryArena::ReturnSlot(arena, p.memory->slot_of(n1));
}

}  // namespace
}  // namespace weft::internal
