#include "threading/cpu_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace weft::internal {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A scratch directory laid out like / with just the files a test writes.
class FakeTree {
 public:
  FakeTree() {
    root_ = fs::temp_directory_path() /
            ("weft_cpu_info_" + std::to_string(getpid()) + "_" +
             std::to_string(counter_++));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeTree() { fs::remove_all(root_); }

  void Write(const std::string& absolute, const std::string& text) {
    const fs::path path = root_ / fs::path(absolute).relative_path();
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  void AllowCpus(const std::string& list) {
    Write("/proc/self/status",
          "Name:\ttest\nCpus_allowed:\tff\nCpus_allowed_list:\t" + list + "\n");
  }

  // CPU `cpu` is core `core` of package 0.
  void AddCpu(int cpu, int core) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    Write(dir + "core_id", std::to_string(core) + "\n");
    Write(dir + "physical_package_id", "0\n");
  }

  // n CPUs, each its own core.
  void AddCores(int n) {
    for (int cpu = 0; cpu < n; ++cpu) AddCpu(cpu, cpu);
  }

  void UseCgroupV2(const std::string& cgroup_path) {
    Write("/proc/self/mountinfo",
          "25 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n");
    Write("/proc/self/cgroup", "0::" + cgroup_path + "\n");
  }

  void UseCgroupV1(const std::string& cgroup_path) {
    Write("/proc/self/mountinfo",
          "30 1 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup "
          "rw,cpu,cpuacct\n"
          "31 1 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
    Write("/proc/self/cgroup",
          "5:memory:" + cgroup_path + "\n4:cpu,cpuacct:" + cgroup_path + "\n");
  }

  CpuBudget Probe() const {
    return ProbeCpuBudget(
        CpuProbeSources{root_.string(), /*use_sched_getaffinity=*/false});
  }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

TEST(CpuInfoTest, NoLimitUsesEveryAllowedCore) {
  FakeTree tree;
  tree.AllowCpus("0-7");
  tree.AddCores(8);
  tree.UseCgroupV2("/");
  tree.Write("/sys/fs/cgroup/cpu.max", "max 100000\n");
  const CpuBudget budget = tree.Probe();
  EXPECT_EQ(budget.threads, 8);
  EXPECT_EQ(budget.physical_cores, 8);
  EXPECT_EQ(budget.cgroup_quota_cpus, 0);
  EXPECT_THAT(budget.derivation, HasSubstr("8 CPUs allowed (0-7)"));
  EXPECT_THAT(budget.derivation, HasSubstr("cgroup v2: no CPU quota"));
}

TEST(CpuInfoTest, FractionalQuotaRoundsUp) {
  FakeTree tree;
  tree.AllowCpus("0-7");
  tree.AddCores(8);
  tree.UseCgroupV2("/job");
  tree.Write("/sys/fs/cgroup/job/cpu.max", "150000 100000\n");
  const CpuBudget budget = tree.Probe();
  EXPECT_EQ(budget.threads, 2);
  EXPECT_DOUBLE_EQ(budget.cgroup_quota_cpus, 1.5);
  EXPECT_THAT(budget.derivation, HasSubstr("cpu.max \"150000 100000\""));
  EXPECT_THAT(budget.derivation, HasSubstr("rounded up to 2"));
}

TEST(CpuInfoTest, SmallQuotaGivesOneThread) {
  FakeTree tree;
  tree.AllowCpus("0-7");
  tree.AddCores(8);
  tree.UseCgroupV2("/job");
  tree.Write("/sys/fs/cgroup/job/cpu.max", "30000 100000\n");
  EXPECT_EQ(tree.Probe().threads, 1);
}

TEST(CpuInfoTest, AffinityMaskOfOneCpuOutOfEight) {
  FakeTree tree;
  tree.AllowCpus("5");
  tree.AddCores(8);
  const CpuBudget budget = tree.Probe();
  EXPECT_EQ(budget.threads, 1);
  EXPECT_EQ(budget.allowed_cpus, std::vector<int>{5});
  EXPECT_THAT(budget.derivation, HasSubstr("1 CPUs allowed (5)"));
}

TEST(CpuInfoTest, SmtSiblingsCountOnce) {
  FakeTree tree;
  tree.AllowCpus("0-7");
  for (int cpu = 0; cpu < 8; ++cpu) tree.AddCpu(cpu, cpu % 4);  // 4 cores x 2
  const CpuBudget budget = tree.Probe();
  EXPECT_EQ(budget.physical_cores, 4);
  EXPECT_EQ(budget.threads, 4);
  EXPECT_THAT(budget.derivation, HasSubstr("SMT siblings counted once"));
}

TEST(CpuInfoTest, SmtSiblingsOutsideTheMaskAreNotCounted) {
  FakeTree tree;
  tree.AllowCpus("0,4");  // Both threads of core 0.
  for (int cpu = 0; cpu < 8; ++cpu) tree.AddCpu(cpu, cpu % 4);
  EXPECT_EQ(tree.Probe().threads, 1);
}

TEST(CpuInfoTest, CgroupV1Quota) {
  FakeTree tree;
  tree.AllowCpus("0-7");
  tree.AddCores(8);
  tree.UseCgroupV1("/docker/abc");
  tree.Write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us",
             "250000\n");
  tree.Write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us",
             "100000\n");
  const CpuBudget budget = tree.Probe();
  EXPECT_EQ(budget.threads, 3);
  EXPECT_THAT(budget.derivation,
              HasSubstr("cgroup v1: cpu.cfs_quota_us 250000"));
}

TEST(CpuInfoTest, CgroupV1UnlimitedQuota) {
  FakeTree tree;
  tree.AllowCpus("0-3");
  tree.AddCores(4);
  tree.UseCgroupV1("/");
  tree.Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  tree.Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(tree.Probe().threads, 4);
}

TEST(CpuInfoTest, ParentCgroupLimitBindsChild) {
  FakeTree tree;
  tree.AllowCpus("0-7");
  tree.AddCores(8);
  tree.UseCgroupV2("/outer/inner");
  tree.Write("/sys/fs/cgroup/outer/cpu.max", "300000 100000\n");
  tree.Write("/sys/fs/cgroup/outer/inner/cpu.max", "max 100000\n");
  EXPECT_EQ(tree.Probe().threads, 3);
}

TEST(CpuInfoTest, NamespacedCgroupReadsMountRoot) {
  // In a container the process's path does not exist under the mount.
  FakeTree tree;
  tree.AllowCpus("0-7");
  tree.AddCores(8);
  tree.UseCgroupV2("/kubepods/pod1/ctr");
  tree.Write("/sys/fs/cgroup/cpu.max", "200000 100000\n");
  EXPECT_EQ(tree.Probe().threads, 2);
}

TEST(CpuInfoTest, MissingTopologyCountsEachCpu) {
  FakeTree tree;
  tree.AllowCpus("0-2");
  const CpuBudget budget = tree.Probe();
  EXPECT_EQ(budget.threads, 3);
  EXPECT_THAT(budget.derivation, HasSubstr("no topology files"));
}

TEST(CpuInfoTest, EmptyTreeStillGivesOneThread) {
  FakeTree tree;
  EXPECT_EQ(tree.Probe().threads, 1);
}

TEST(CpuInfoTest, ParseAndFormatCpuList) {
  EXPECT_EQ(ParseCpuList("0-3,8,10-11").value(),
            (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(ParseCpuList("").value(), std::vector<int>{});
  EXPECT_FALSE(ParseCpuList("3-1").has_value());
  EXPECT_FALSE(ParseCpuList("a").has_value());
  EXPECT_FALSE(ParseCpuList("1,-").has_value());
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
}

TEST(CpuInfoTest, RealSystemGivesAtLeastOneThread) {
  const CpuBudget& budget = AutoCpuBudget();
  EXPECT_GE(budget.threads, 1);
  EXPECT_LE(budget.threads, static_cast<int>(budget.allowed_cpus.size()));
  EXPECT_THAT(budget.derivation, HasSubstr("sched_getaffinity"));
}

}  // namespace
}  // namespace weft::internal
