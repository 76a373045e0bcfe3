// SessionOptions::memory_limit_bytes: a Run whose live tensors would pass
// the limit fails with ResourceExhausted naming the node, and tensors count
// only while some node still needs them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

SessionOptions Limited(int64_t bytes, int inter) {
  SessionOptions options = test::PerSessionOptions(inter, 1);
  options.memory_limit_bytes = bytes;
  return options;
}

TEST(MemoryLimitTest, AnOutputPastTheLimitFailsTheRunNamingTheNode) {
  // big's size is known only when x is fed: the Run, not the load, fails.
  Graph g;
  g.Relu("small", g.RandomUniform("seed", DataType::kFloat32, {16}, 1));
  g.Relu("big", g.Placeholder("x", DataType::kFloat32));
  const Tensor x(DataType::kFloat32, Shape{1024, 1024});  // 4 MiB
  for (int inter : {-1, 1, 2}) {
    auto session = test::MustCreate(g, Limited(1 << 20, inter));
    std::vector<Tensor> out;
    EXPECT_TRUE(session->Run({}, {"small"}, {}, &out).ok());
    Status s = session->Run({{"x", x}}, {"big"}, {}, &out);
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
    EXPECT_THAT(s.message(), AllOf(HasSubstr("node 'big' (op Relu)"),
                                   HasSubstr("needs 4194304 bytes"),
                                   HasSubstr("memory_limit_bytes is 1048576")));
    // The session stays usable.
    EXPECT_TRUE(session->Run({}, {"small"}, {}, &out).ok());
  }
}

TEST(MemoryLimitTest, AnOutputKnownAtLoadToPassTheLimitFailsTheLoad) {
  Graph g;
  g.RandomUniform("big", DataType::kFloat32, {1024, 1024}, 2);  // 4 MiB
  auto session = Session::Create(g, Limited(1 << 20, 1));
  EXPECT_EQ(session.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(session.status().message(),
              AllOf(HasSubstr("node 'big' (op RandomUniform)"),
                    HasSubstr("shape [1024, 1024]"),
                    HasSubstr("memory_limit_bytes = 1048576")));
}

TEST(MemoryLimitTest, ReleasedIntermediatesDoNotCount) {
  // Ten 512 KiB intermediates in a chain: never more than two alive at once.
  Graph g;
  std::string h = g.RandomUniform("x", DataType::kFloat32, {128 * 1024}, 1);
  for (int i = 0; i < 10; ++i) h = g.Relu("relu" + std::to_string(i), h);
  auto session = test::MustCreate(g, Limited(1200 * 1024, 1));
  for (int run = 0; run < 3; ++run) {
    std::vector<Tensor> out;
    Status s = session->Run({}, {h}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
  }
  // Without the release, ten would be alive: the limit shows it.
  auto all = test::MustCreate(g, Limited(1200 * 1024, 1));
  std::vector<std::string> every;
  for (int i = 0; i < 10; ++i) every.push_back("relu" + std::to_string(i));
  std::vector<Tensor> out;
  EXPECT_EQ(all->Run({}, every, {}, &out).code(),
            StatusCode::kResourceExhausted);
}

TEST(MemoryLimitTest, NegativeLimitIsRejected) {
  Graph g;
  g.Const("c", Tensor::Scalar<float>(1.0f));
  auto session = Session::Create(g, Limited(-5, 1));
  EXPECT_THAT(session.status().message(),
              HasSubstr("memory_limit_bytes = -5 must be >= 0"));
}

}  // namespace
}  // namespace weft
