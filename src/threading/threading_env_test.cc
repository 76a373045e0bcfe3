#include "threading/threading_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace weft::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Two sockets of two cores with two SMT siblings each: CPUs 0-3 are the
// first threads of cores 0-3, CPUs 4-7 their siblings.
CpuBudget EightCpus() {
  CpuBudget b;
  b.allowed_cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  b.core_of_cpu = {0, 1, 2, 3, 0, 1, 2, 3};
  b.physical_cores = 4;
  b.sockets = 2;
  b.threads = 4;
  return b;
}

ThreadingEnvironment Read(std::map<std::string, std::string> vars) {
  return ReadThreadingEnvironment(
      // Pointers into the captured map stay valid for the whole call, as
      // std::getenv's do.
      [vars](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      EightCpus());
}

const EnvReading* Seen(const ThreadingEnvironment& env, const char* name) {
  for (const EnvReading& r : env.seen) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(ThreadingEnvTest, NothingSetGivesNothing) {
  const ThreadingEnvironment env = Read({});
  EXPECT_FALSE(env.inter || env.intra || env.spin_us || env.pin_cpus);
  EXPECT_TRUE(env.seen.empty());
  EXPECT_TRUE(env.error.ok());
}

TEST(ThreadingEnvTest, ThreadCountsInPrecedenceOrder) {
  ThreadingEnvironment env = Read({{"TF_NUM_INTEROP_THREADS", "3"},
                                   {"TF_NUM_INTRAOP_THREADS", "4"},
                                   {"OMP_NUM_THREADS", "6"}});
  EXPECT_EQ(env.inter, 3);
  EXPECT_EQ(env.intra, 4);  // TensorFlow's variable beats OMP_NUM_THREADS.
  EXPECT_THAT(Seen(env, "OMP_NUM_THREADS")->effect,
              HasSubstr("not used: TF_NUM_INTRAOP_THREADS takes precedence"));
  env = Read({{"WEFT_NUM_INTEROP_THREADS", "1"},
              {"TF_NUM_INTEROP_THREADS", "3"},
              {"OMP_NUM_THREADS", "4,2"}});
  EXPECT_EQ(env.inter, 1);
  EXPECT_EQ(env.intra, 4);  // The first level of an OpenMP list.
  EXPECT_THAT(Seen(env, "OMP_NUM_THREADS")->effect,
              HasSubstr("the first level of '4,2'"));
  EXPECT_EQ(Read({{"TF_NUM_INTEROP_THREADS", "-1"}}).inter, -1);
}

TEST(ThreadingEnvTest, BadForeignValuesWarnAndBadWeftValuesFail) {
  ThreadingEnvironment env =
      Read({{"OMP_NUM_THREADS", "lots"}, {"TF_NUM_INTRAOP_THREADS", "9999"}});
  EXPECT_FALSE(env.intra);
  EXPECT_TRUE(env.error.ok());
  EXPECT_FALSE(Seen(env, "OMP_NUM_THREADS")->understood);
  EXPECT_THAT(Seen(env, "TF_NUM_INTRAOP_THREADS")->effect,
              HasSubstr("not understood"));
  env = Read({{"WEFT_NUM_INTRAOP_THREADS", "-1"}, {"OMP_NUM_THREADS", "2"}});
  EXPECT_THAT(env.error.message(),
              HasSubstr("WEFT_NUM_INTRAOP_THREADS='-1' is not a thread count"));
  EXPECT_EQ(env.intra, 2);  // The next in line still reads.
}

TEST(ThreadingEnvTest, SpinWindowFromKmpBlocktime) {
  EXPECT_EQ(Read({{"KMP_BLOCKTIME", "0"}}).spin_us, 0);
  EXPECT_EQ(Read({{"KMP_BLOCKTIME", "1"}}).spin_us, 1000);
  EXPECT_EQ(Read({{"KMP_BLOCKTIME", "200"}}).spin_us, 200000);
  EXPECT_EQ(Read({{"KMP_BLOCKTIME", "infinite"}}).spin_us, 1'000'000);
  EXPECT_THAT(Seen(Read({{"KMP_BLOCKTIME", "5000"}}), "KMP_BLOCKTIME")->effect,
              HasSubstr("capped"));
  EXPECT_FALSE(Read({{"KMP_BLOCKTIME", "soon"}}).spin_us);
  EXPECT_EQ(Read({{"WEFT_SPIN_US", "20"}, {"KMP_BLOCKTIME", "0"}}).spin_us, 20);
}

TEST(ThreadingEnvTest, KmpAffinityForms) {
  // compact: a core's siblings together.
  EXPECT_THAT(*Read({{"KMP_AFFINITY", "compact"}}).pin_cpus,
              ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
  // Intel's recommendation and scatter: every core first.
  EXPECT_THAT(
      *Read({{"KMP_AFFINITY", "granularity=fine,compact,1,0"}}).pin_cpus,
      ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(*Read({{"KMP_AFFINITY", "scatter"}}).pin_cpus,
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(*Read({{"KMP_AFFINITY", "verbose,compact,1,2"}}).pin_cpus,
              ElementsAre(2, 3, 4, 5, 6, 7, 0, 1));  // Offset 2.
  EXPECT_TRUE(Read({{"KMP_AFFINITY", "none"}}).pin_cpus->empty());
  const ThreadingEnvironment bad =
      Read({{"KMP_AFFINITY", "explicit,proclist=[0]"}});
  EXPECT_FALSE(bad.pin_cpus);
  EXPECT_THAT(Seen(bad, "KMP_AFFINITY")->effect, HasSubstr("'explicit'"));
}

TEST(ThreadingEnvTest, OmpProcBindAndPlaces) {
  EXPECT_THAT(*Read({{"OMP_PROC_BIND", "close"}}).pin_cpus,
              ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
  EXPECT_THAT(*Read({{"OMP_PROC_BIND", "spread"}}).pin_cpus,
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(
      *Read({{"OMP_PROC_BIND", "true"}, {"OMP_PLACES", "cores"}}).pin_cpus,
      ElementsAre(0, 1, 2, 3));                           // One place per core.
  EXPECT_THAT(*Read({{"OMP_PLACES", "cores"}}).pin_cpus,  // Alone: binds.
              ElementsAre(0, 1, 2, 3));
  EXPECT_TRUE(Read({{"OMP_PROC_BIND", "false"}}).pin_cpus->empty());
  EXPECT_FALSE(
      Read({{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "{0},{1}"}}).pin_cpus);
  // weft's own and KMP_AFFINITY come first.
  const ThreadingEnvironment env = Read({{"WEFT_PIN_CPUS", "1-2"},
                                         {"KMP_AFFINITY", "compact"},
                                         {"OMP_PROC_BIND", "spread"}});
  EXPECT_THAT(*env.pin_cpus, ElementsAre(1, 2));
  EXPECT_THAT(Seen(env, "OMP_PROC_BIND")->effect,
              HasSubstr("WEFT_PIN_CPUS takes precedence"));
  EXPECT_THAT(Read({{"WEFT_PIN_CPUS", "9"}}).error.message(),
              HasSubstr("not in this process's affinity mask"));
}

TEST(ThreadingEnvTest, DisplayVariables) {
  EXPECT_TRUE(Read({{"KMP_SETTINGS", "1"}}).display);
  EXPECT_TRUE(Read({{"OMP_DISPLAY_ENV", "TRUE"}}).display);
  EXPECT_TRUE(Read({{"OMP_DISPLAY_ENV", "verbose"}}).display);
  EXPECT_FALSE(Read({{"KMP_SETTINGS", "0"}}).display);
}

}  // namespace
}  // namespace weft::internal
