// Process-wide threading settings: setters, getters, environment,
// precedence, sharing of the global pools, named pools.
#include "session/pools.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>

#include "test_support/session_util.h"
#include "threading/process_threading.h"
#include "threading/threading_env.h"
#include "weft/threading.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class ProcessThreadingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : internal::ThreadingVariableNames()) unsetenv(name);
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
  EXPECT_THAT(warning, HasSubstr("inter_op_parallelism_threads 1 requested, 3 "
                                 "effective"));
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

TEST_F(ProcessThreadingTest,
       JoiningAPoolMadeOtherwiseWarnsOnceNamingEachField) {
  SessionOptions first;
  first.intra_op_parallelism_threads = 2;
  first.intra_op_spin_us = 10;
  auto a = test::MustCreate(SpinGraph(), first);
  EXPECT_EQ(a->intra_op_spin_us(), 10);
  SessionOptions second;
  second.intra_op_parallelism_threads = 2;  // The same: not named.
  second.intra_op_spin_us = 0;
  second.intra_op_pin_cpus = {AutoCpuBudget().allowed_cpus[0]};
  ::testing::internal::CaptureStderr();
  auto b = test::MustCreate(SpinGraph(), second);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
  EXPECT_THAT(warning,
              AllOf(HasSubstr("intra_op_spin_us 0 requested, 10 effective"),
                    HasSubstr("intra_op_pin_cpus " +
                              std::to_string(AutoCpuBudget().allowed_cpus[0]) +
                              " requested, none effective")));
  EXPECT_THAT(warning, ::testing::Not(HasSubstr("parallelism_threads")));
  // The getters say what the session really has.
  EXPECT_EQ(b->intra_op_spin_us(), 10);
  EXPECT_TRUE(b->intra_op_pin_cpus().empty());
}

TEST_F(ProcessThreadingTest, SaysWhetherTheSpinWindowIsWeftsOwn) {
  EXPECT_TRUE(threading::SpinWindowsAreWeftsDefault());
  setenv("KMP_BLOCKTIME", "0", 1);  // Even the value of weft's own.
  EXPECT_FALSE(threading::SpinWindowsAreWeftsDefault());
  unsetenv("KMP_BLOCKTIME");
  setenv("WEFT_SPIN_US", std::to_string(kDefaultSpinUs).c_str(), 1);
  EXPECT_FALSE(threading::SpinWindowsAreWeftsDefault());
  unsetenv("WEFT_SPIN_US");
  EXPECT_TRUE(threading::SpinWindowsAreWeftsDefault());
  ASSERT_TRUE(threading::SetIntraOpSpinUs(kDefaultSpinUs).ok());
  EXPECT_FALSE(threading::SpinWindowsAreWeftsDefault());
  ASSERT_TRUE(threading::SetIntraOpSpinUs(-1).ok());  // Back to the default.
  EXPECT_TRUE(threading::SpinWindowsAreWeftsDefault());
}

TEST_F(ProcessThreadingTest, SpinAndPinningComeFromSettersThenTheEnvironment) {
  EXPECT_EQ(threading::GetInterOpSpinUs(), kDefaultSpinUs);
  setenv("KMP_BLOCKTIME", "0", 1);
  EXPECT_EQ(threading::GetInterOpSpinUs(), 0);
  auto a = test::MustCreate(SpinGraph(), test::PerSessionOptions(1, 1));
  EXPECT_EQ(a->inter_op_spin_us(), 0);
  ASSERT_TRUE(threading::SetIntraOpSpinUs(7).ok());  // Setter beats env.
  EXPECT_EQ(threading::GetIntraOpSpinUs(), 7);
  EXPECT_EQ(threading::GetInterOpSpinUs(), 0);
  EXPECT_FALSE(threading::SetInterOpSpinUs(-2).ok());
  EXPECT_FALSE(threading::SetInterOpSpinUs(kMaxSpinUs + 1).ok());
  const int cpu = AutoCpuBudget().allowed_cpus.back();
  setenv("WEFT_PIN_CPUS", std::to_string(cpu).c_str(), 1);
  EXPECT_EQ(threading::GetIntraOpPinCpus(), std::vector<int>{cpu});
  auto b = test::MustCreate(SpinGraph(), test::PerSessionOptions(1, 2));
  EXPECT_EQ(b->intra_op_pin_cpus(), std::vector<int>{cpu});
  ASSERT_TRUE(threading::SetIntraOpPinCpus({}).ok());  // No pinning.
  EXPECT_TRUE(threading::GetIntraOpPinCpus().empty());
  EXPECT_THAT(threading::SetInterOpPinCpus({1 << 20}).message(),
              HasSubstr("not in this process's affinity mask"));
}

TEST_F(ProcessThreadingTest, ForeignVariablesSetCountsAndBadOnesWarnOnce) {
  setenv("TF_NUM_INTEROP_THREADS", "3", 1);
  setenv("OMP_NUM_THREADS", "2,1", 1);
  EXPECT_EQ(threading::GetInterOpParallelismThreads(), 3);
  EXPECT_EQ(threading::GetIntraOpParallelismThreads(), 2);
  setenv("WEFT_NUM_INTEROP_THREADS", "1", 1);  // weft's own wins.
  EXPECT_EQ(threading::GetInterOpParallelismThreads(), 1);
  setenv("KMP_AFFINITY", "granularity=fine,sideways", 1);
  ::testing::internal::CaptureStderr();
  auto a = test::MustCreate(SpinGraph(), test::PerSessionOptions(1, 1));
  auto b = test::MustCreate(SpinGraph(), test::PerSessionOptions(1, 1));
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
  EXPECT_THAT(warning, AllOf(HasSubstr("KMP_AFFINITY='granularity=fine,"
                                       "sideways'"),
                             HasSubstr("'sideways'"), HasSubstr("ignored")));
}

TEST_F(ProcessThreadingTest, KmpSettingsPrintsTheEffectiveSettingsOnce) {
  setenv("KMP_SETTINGS", "1", 1);
  setenv("OMP_NUM_THREADS", "2", 1);
  ::testing::internal::CaptureStderr();
  auto a = test::MustCreate(SpinGraph(), test::PerSessionOptions(1, 1));
  auto b = test::MustCreate(SpinGraph(), test::PerSessionOptions(1, 1));
  const std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, AllOf(HasSubstr("weft: threading settings:"),
                         HasSubstr("intra-op threads 2"),
                         HasSubstr("OMP_NUM_THREADS=2: intra-op threads: 2")));
  EXPECT_EQ(out.find("threading settings"), out.rfind("threading settings"));
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
