#include "weft/chrome_trace.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "test_support/session_util.h"

namespace weft::internal {
namespace {

using Json = nlohmann::json;

RunMetadata ChromeTraceTracedRun(Graph g, int inter, int intra,
                                 const std::string& fetch) {
  auto session =
      test::MustCreate(std::move(g), test::PerSessionOptions(inter, intra));
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> out;
  RunMetadata metadata;
  EXPECT_TRUE(session->Run(options, {}, {fetch}, {}, &out, &metadata).ok());
  return metadata;
}

// Timing: the overlap needs both workers free; ctest runs it alone.
TEST(ChromeTraceTimingTest, StructureAndTwoOverlappingBranchesOnTwoThreads) {
  Graph g;
  auto left = g.Spin("left", 20000);
  auto right = g.Spin("right", 20000);
  g.Add("join", left, right);
  const Json trace =
      Json::parse(ChromeTraceJson(ChromeTraceTracedRun(g, 2, 1, "join")));
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::map<std::string, Json> nodes;
  std::map<int64_t, std::string> thread_names;
  for (const Json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name"));
    if (e["ph"] == "X") {
      for (const char* key : {"ts", "dur", "tid", "cat", "args"}) {
        ASSERT_TRUE(e.contains(key)) << key << " in " << e.dump();
      }
      EXPECT_GE(e["dur"].get<double>(), 0);
      if (e["cat"] == "node") {
        nodes[e["name"]] = e;
        for (const char* arg :
             {"op", "output_shapes", "queue_wait_us", "pool"}) {
          EXPECT_TRUE(e["args"].contains(arg)) << arg;
        }
      }
    } else if (e["ph"] == "M" && e["name"] == "thread_name") {
      thread_names[e["tid"].get<int64_t>()] = e["args"]["name"];
    }
  }
  ASSERT_EQ(nodes.size(), 3u);
  const Json& l = nodes["left"];
  const Json& r = nodes["right"];
  EXPECT_NE(l["tid"], r["tid"]);
  const double l0 = l["ts"], l1 = l0 + l["dur"].get<double>();
  const double r0 = r["ts"], r1 = r0 + r["dur"].get<double>();
  EXPECT_TRUE(l0 < r1 && r0 < l1) << "branches did not overlap";
  EXPECT_EQ(l["args"]["op"], "Spin");
  for (const auto& [name, e] : nodes) {
    const int64_t tid = e["tid"];
    ASSERT_TRUE(thread_names.count(tid)) << name;
    EXPECT_EQ(thread_names[tid].rfind("weft-inter-", 0), 0u)
        << thread_names[tid];
  }
}

TEST(ChromeTraceTest, IntraOpShardsAppearOnTheThreadsThatRanThem) {
  Graph g;
  auto a = g.RandomUniform("a", DataType::kFloat32, {256, 256}, 1);
  g.MatMul("mm", a, a);
  const Json trace =
      Json::parse(ChromeTraceJson(ChromeTraceTracedRun(g, 1, 2, "mm")));
  std::set<int64_t> shard_threads;
  std::map<int64_t, std::string> thread_names;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "intra-op" && e["args"]["node"] == "mm") {
      shard_threads.insert(e["tid"].get<int64_t>());
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      thread_names[e["tid"].get<int64_t>()] = e["args"]["name"];
    }
  }
  EXPECT_GE(shard_threads.size(), 1u);
  bool intra_worker = false;
  for (int64_t tid : shard_threads) {
    ASSERT_TRUE(thread_names.count(tid));
    intra_worker |= thread_names[tid].rfind("weft-intra-", 0) == 0;
  }
  // With a 2-thread intra-op pool the worker takes blocks as well, unless it
  // was too slow to wake for every one of them.
  if (shard_threads.size() > 1) EXPECT_TRUE(intra_worker);
}

}  // namespace
}  // namespace weft::internal
