// Helpers for tests that build graphs and run sessions.
#ifndef WEFT_SRC_TEST_SUPPORT_SESSION_UTIL_H_
#define WEFT_SRC_TEST_SUPPORT_SESSION_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
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

template <class T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.NumElements());
}

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_SESSION_UTIL_H_
