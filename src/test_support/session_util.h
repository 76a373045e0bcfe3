// Helpers for tests that build graphs and run sessions.
#ifndef WEFT_SRC_TEST_SUPPORT_SESSION_UTIL_H_
#define WEFT_SRC_TEST_SUPPORT_SESSION_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "weft/weft.h"

namespace weft::test {

inline SessionOptions PerSessionOptions(int inter, int intra) {
  SessionOptions options;
  options.use_per_session_threads = true;
  options.inter_op_parallelism_threads = inter;
  options.intra_op_parallelism_threads = intra;
  return options;
}

// Creates a session or fails the test.
inline std::unique_ptr<Session> MustCreate(Graph graph,
                                           const SessionOptions& options) {
  auto session = Session::Create(std::move(graph), options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(session).value() : nullptr;
}

// The attributes of a queue op on a float32 queue named `name`.
inline AttrMap QueueAttrs(const std::string& name, int64_t capacity = -1) {
  return {{"queue", name},
          {"component_types", std::vector<DataType>{DataType::kFloat32}},
          {"capacity", capacity}};
}

// Adds a node or fails the test.
inline void MustAdd(Graph& graph, NodeDef node) {
  const Status status = graph.AddNode(std::move(node));
  EXPECT_TRUE(status.ok()) << status;
}

// Runs and returns the fetched tensors, failing the test on error.
inline std::vector<Tensor> MustRun(Session& session,
                                   const std::vector<std::string>& fetches,
                                   const NamedTensors& feeds = {}) {
  std::vector<Tensor> outputs;
  Status status = session.Run(feeds, fetches, {}, &outputs);
  EXPECT_TRUE(status.ok()) << status;
  return outputs;
}

// Runs with full tracing and returns the metadata, failing the test on
// error.
inline RunMetadata MustRunTraced(Session& session,
                                 const std::vector<std::string>& fetches,
                                 const NamedTensors& feeds = {}) {
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFull;
  std::vector<Tensor> outputs;
  RunMetadata metadata;
  Status status = session.Run(options, feeds, fetches, {}, &outputs, &metadata);
  EXPECT_TRUE(status.ok()) << status;
  return metadata;
}

// Runs `fetches` of `graph` at (inter, intra) = (1, 1) and (2, 2); the
// two must agree bit for bit (a test failure otherwise). Returns the first
// Run's tensors, or the first error (graph, session or Run).
inline StatusOr<std::vector<Tensor>> RunAtOneAndTwoThreads(
    const Graph& graph, const std::vector<std::string>& fetches) {
  std::vector<std::vector<Tensor>> results;
  for (int threads : {1, 2}) {
    WEFT_RETURN_IF_ERROR(graph.status());
    WEFT_ASSIGN_OR_RETURN(
        auto session,
        Session::Create(graph, PerSessionOptions(threads, threads)));
    std::vector<Tensor> out;
    WEFT_RETURN_IF_ERROR(session->Run({}, fetches, {}, &out));
    results.push_back(std::move(out));
  }
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_TRUE(results[0][i].BitwiseEqual(results[1][i])) << fetches[i];
  }
  return std::move(results[0]);
}

// A graph of constants `inputs` ("in0", "in1", ...) and one node "y" of
// `op` over them, run by RunAtOneAndTwoThreads; returns y's first
// `outputs` outputs.
inline StatusOr<std::vector<Tensor>> RunOneNode(const std::string& op,
                                                std::vector<Tensor> inputs,
                                                AttrMap attrs = {},
                                                int outputs = 1) {
  Graph graph;
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back(
        graph.Const("in" + std::to_string(i), std::move(inputs[i])));
  }
  WEFT_RETURN_IF_ERROR(graph.AddNode({"y", op, names, std::move(attrs), ""}));
  std::vector<std::string> fetches = {"y"};
  for (int i = 1; i < outputs; ++i) fetches.push_back("y:" + std::to_string(i));
  return RunAtOneAndTwoThreads(graph, fetches);
}

// RunOneNode for y's first output alone.
inline StatusOr<Tensor> RunOneOutput(const std::string& op,
                                     std::vector<Tensor> inputs,
                                     AttrMap attrs = {}) {
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                        RunOneNode(op, std::move(inputs), std::move(attrs)));
  return std::move(out[0]);
}

// The largest elementwise difference between two float32 tensors of the same
// size (infinity when the sizes differ).
inline double MaxAbsDifference(const Tensor& a, const Tensor& b) {
  if (a.NumElements() != b.NumElements()) return HUGE_VAL;
  double worst = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a.data<float>()[i]) -
                                     b.data<float>()[i]));
  }
  return worst;
}

template <class T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.NumElements());
}

// A rank-0 tensor holding v.
template <class T>
Tensor Scalar(T v) {
  return Tensor::FromVector<T>({}, {v});
}

// A float32 tensor of `shape` with values in [-0.5, 0.5) from a linear
// congruential sequence started at `seed`: the same on every machine.
inline Tensor SeededFloats(const Shape& shape, uint32_t seed) {
  Tensor t(DataType::kFloat32, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(seed >> 8) * 0x1p-24f - 0.5f;
  }
  return t;
}

// A uint8 or int8 tensor of `shape` from the top bytes of the same
// sequence: every value of the dtype, the same on every machine.
template <class T>
Tensor SeededBytes(const Shape& shape, uint32_t seed) {
  Tensor t(DataTypeOf<T>(), shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    t.data<T>()[i] = static_cast<T>(seed >> 24);
  }
  return t;
}

// `graph` with placeholder `name` declaring `shape`, as a session compiles
// it for a feed of that shape: the nodes are copies, so the constants share
// their buffers with `graph`'s.
inline Graph WithPlaceholderShape(const Graph& graph, const std::string& name,
                                  const PartialShape& shape) {
  Graph out;
  for (NodeDef node : graph.nodes()) {
    if (node.name == name) node.attrs["shape"] = shape;
    MustAdd(out, std::move(node));
  }
  return out;
}

// The op of every node of `graph`, with repeats: what a graph pass left.
inline std::multiset<std::string> Ops(const Graph& graph) {
  std::multiset<std::string> ops;
  for (const NodeDef& node : graph.nodes()) ops.insert(node.op);
  return ops;
}

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_SESSION_UTIL_H_
