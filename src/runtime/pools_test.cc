// Process-wide threading settings: setters, getters, environment,
// precedence, sharing of the global pools, named pools.
#include "runtime/pools.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "test_support/session_util.h"
#include "threading/process_threading.h"
#include "weft/threading.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class ProcessThreadingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("WEFT_NUM_INTEROP_THREADS");
    unsetenv("WEFT_NUM_INTRAOP_THREADS");
    internal::ResetProcessThreadingForTest();
  }
  void TearDown() override { SetUp(); }

  static Graph SpinGraph() {
    Graph g;
    g.Spin("s", 10);
    return g;
  }
};

TEST_F(ProcessThreadingTest, GettersReturnEffectiveCountsNeverZero) {
  EXPECT_EQ(threading::GetInterOpParallelismThreads(), AutoCpuBudget().threads);
  EXPECT_EQ(threading::GetIntraOpParallelismThreads(), AutoCpuBudget().threads);
  ASSERT_TRUE(threading::SetInterOpParallelismThreads(0)
                  .ok());  // 0 = auto, still not 0.
  EXPECT_GE(threading::GetInterOpParallelismThreads(), 1);
}

TEST_F(ProcessThreadingTest, EnvironmentVariables) {
  setenv("WEFT_NUM_INTEROP_THREADS", "3", 1);
  setenv("WEFT_NUM_INTRAOP_THREADS", "2", 1);
  EXPECT_EQ(threading::GetInterOpParallelismThreads(), 3);
  EXPECT_EQ(threading::GetIntraOpParallelismThreads(), 2);
  auto session = test::MustCreate(SpinGraph(), SessionOptions());
  EXPECT_EQ(session->inter_op_threads(), 3);
  EXPECT_EQ(session->intra_op_threads(), 2);
}

TEST_F(ProcessThreadingTest, InvalidEnvironmentValueIsAnError) {
  setenv("WEFT_NUM_INTEROP_THREADS", "lots", 1);
  auto session = Session::Create(SpinGraph(), SessionOptions());
  EXPECT_FALSE(session.ok());
  EXPECT_THAT(
      session.status().message(),
      AllOf(HasSubstr("WEFT_NUM_INTEROP_THREADS"), HasSubstr("'lots'")));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(threading::GetInterOpParallelismThreads(), AutoCpuBudget().threads);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("WEFT_NUM_INTEROP_THREADS"));
}

TEST_F(ProcessThreadingTest, PrecedenceOptionOverSetterOverEnvironment) {
  setenv("WEFT_NUM_INTEROP_THREADS", "3", 1);
  ASSERT_TRUE(threading::SetInterOpParallelismThreads(2).ok());
  EXPECT_EQ(threading::GetInterOpParallelismThreads(), 2);
  auto from_setter =
      test::MustCreate(SpinGraph(), test::PerSessionOptions(0, 1));
  EXPECT_EQ(from_setter->inter_op_threads(), 2);
  auto from_option =
      test::MustCreate(SpinGraph(), test::PerSessionOptions(1, 1));
  EXPECT_EQ(from_option->inter_op_threads(), 1);
  ASSERT_TRUE(threading::SetInterOpParallelismThreads(0)
                  .ok());  // Back to the environment.
  EXPECT_EQ(threading::GetInterOpParallelismThreads(), 3);
}

TEST_F(ProcessThreadingTest,
       FirstSessionCreatesGlobalPoolsLaterOnesShareAndWarn) {
  SessionOptions first;
  first.inter_op_parallelism_threads = 3;
  first.intra_op_parallelism_threads = 2;
  auto a = test::MustCreate(SpinGraph(), first);
  EXPECT_EQ(a->inter_op_threads(), 3);
  EXPECT_EQ(threading::GetInterOpParallelismThreads(), 3);
  EXPECT_EQ(threading::GetIntraOpParallelismThreads(), 2);

  SessionOptions second;
  second.inter_op_parallelism_threads = 1;
  ::testing::internal::CaptureStderr();
  auto b = test::MustCreate(SpinGraph(), second);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(b->inter_op_threads(), 3);
  EXPECT_THAT(warning, AllOf(HasSubstr("asked for 1 inter-op threads"),
                             HasSubstr("pool of 3")));
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;

  // A session that asks for nothing shares silently.
  ::testing::internal::CaptureStderr();
  auto c = test::MustCreate(SpinGraph(), SessionOptions());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(c->inter_op_threads(), 3);
}

TEST_F(ProcessThreadingTest, SetterAfterPoolsExistAffectsLaterSessionsOnly) {
  SessionOptions defaults;
  ASSERT_TRUE(threading::SetInterOpParallelismThreads(3).ok());
  auto before = test::MustCreate(SpinGraph(), defaults);
  EXPECT_EQ(before->inter_op_threads(), 3);
  ASSERT_TRUE(
      threading::SetInterOpParallelismThreads(2).ok());  // Does not fail.
  EXPECT_EQ(threading::GetInterOpParallelismThreads(), 2);
  auto after = test::MustCreate(SpinGraph(), defaults);
  EXPECT_EQ(after->inter_op_threads(), 2);
  EXPECT_EQ(before->inter_op_threads(), 3);
  // The earlier session keeps working on its pool.
  test::MustRun(*before, {"s"});
  test::MustRun(*after, {"s"});
  ASSERT_TRUE(threading::SetIntraOpParallelismThreads(1).ok());
  auto serial = test::MustCreate(SpinGraph(), defaults);
  EXPECT_EQ(serial->intra_op_threads(), 1);
}

TEST_F(ProcessThreadingTest, SettersCheckTheRangesTheOptionsCheck) {
  ASSERT_TRUE(threading::SetInterOpParallelismThreads(2).ok());
  for (int bad : {kMinInterOpThreads - 1, kMaxThreads + 1}) {
    Status s = threading::SetInterOpParallelismThreads(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("must be from -1 to 4096"));
  }
  EXPECT_EQ(threading::GetInterOpParallelismThreads(), 2);  // Unchanged.
  EXPECT_TRUE(threading::SetInterOpParallelismThreads(-1).ok());
  EXPECT_THAT(threading::SetIntraOpParallelismThreads(-1).message(),
              HasSubstr("must be from 0 to 4096"));
  EXPECT_FALSE(threading::SetIntraOpParallelismThreads(kMaxThreads + 1).ok());
  EXPECT_TRUE(threading::SetIntraOpParallelismThreads(kMaxThreads).ok());
}

TEST_F(ProcessThreadingTest, PerSessionThreadsIgnoreGlobalPools) {
  SessionOptions first;
  first.inter_op_parallelism_threads = 3;
  auto a = test::MustCreate(SpinGraph(), first);
  ::testing::internal::CaptureStderr();
  auto own = test::MustCreate(SpinGraph(), test::PerSessionOptions(1, 1));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(own->inter_op_threads(), 1);
}

}  // namespace
}  // namespace weft
