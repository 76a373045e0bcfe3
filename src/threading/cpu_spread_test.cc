#include "threading/cpu_spread.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <optional>
#include <vector>

namespace weft::internal {
namespace {

// The calling thread's affinity mask, restored when the test ends whatever
// it changed.
class SavedMask {
 public:
  SavedMask() { sched_getaffinity(0, sizeof(mask_), &mask_); }
  ~SavedMask() { sched_setaffinity(0, sizeof(mask_), &mask_); }
  const cpu_set_t& mask() const { return mask_; }
  std::vector<int> Cpus() const {
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &mask_)) cpus.push_back(cpu);
    }
    return cpus;
  }

 private:
  cpu_set_t mask_;
};

bool PinTo(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return sched_setaffinity(0, sizeof(one), &one) == 0 && sched_getcpu() == cpu;
}

bool SameMask(const cpu_set_t& a) {
  cpu_set_t now;
  sched_getaffinity(0, sizeof(now), &now);
  return CPU_EQUAL(&a, &now);
}

TEST(CpuClaimTest, CountsTheThreadOnItsCpuUntilItEnds) {
  const SavedMask saved;
  const int cpu = saved.Cpus().front();
  ASSERT_TRUE(PinTo(cpu));
  const int before = ComputingOnCpu(cpu);
  {
    const CpuClaim claim(/*may_move=*/true);
    EXPECT_EQ(claim.cpu(), cpu);
    EXPECT_EQ(ComputingOnCpu(cpu), before + 1);
  }
  EXPECT_EQ(ComputingOnCpu(cpu), before);
}

TEST(CpuClaimTest, MovesOffACpuAnotherClaimHoldsAndGivesTheMaskBack) {
  const SavedMask saved;
  const std::vector<int> cpus = saved.Cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two allowed CPUs";
  // Hold the first CPU with a claim, then widen the mask back to what it
  // was: the thread stays where it is, on a CPU that is now taken.
  ASSERT_TRUE(PinTo(cpus[0]));
  const CpuClaim holder(/*may_move=*/false);
  ASSERT_EQ(holder.cpu(), cpus[0]);
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved.mask()), &saved.mask()), 0);
  if (sched_getcpu() != cpus[0]) GTEST_SKIP() << "the OS moved the thread";
  const long moves = CpuSpreadMoves();

  const CpuClaim mover(/*may_move=*/true);
  EXPECT_NE(mover.cpu(), cpus[0]);
  EXPECT_EQ(sched_getcpu(), mover.cpu());
  EXPECT_EQ(ComputingOnCpu(mover.cpu()), 1);
  EXPECT_EQ(CpuSpreadMoves(), moves + 1);
  // The move left the mask as it was, not narrowed to the new CPU.
  EXPECT_TRUE(SameMask(saved.mask()));
}

TEST(CpuClaimTest, AClaimThatMayNotMoveStaysOnTheSharedCpu) {
  const SavedMask saved;
  const std::vector<int> cpus = saved.Cpus();
  ASSERT_TRUE(PinTo(cpus[0]));
  const CpuClaim holder(/*may_move=*/false);
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved.mask()), &saved.mask()), 0);
  if (sched_getcpu() != cpus[0]) GTEST_SKIP() << "the OS moved the thread";
  const long moves = CpuSpreadMoves();

  const CpuClaim user_thread(/*may_move=*/false);
  EXPECT_EQ(user_thread.cpu(), cpus[0]);
  EXPECT_EQ(ComputingOnCpu(cpus[0]), 2);
  EXPECT_EQ(CpuSpreadMoves(), moves);
}

TEST(CpuClaimTest, APinnedThreadStays) {
  const SavedMask saved;
  const int cpu = saved.Cpus().front();
  ASSERT_TRUE(PinTo(cpu));
  const CpuClaim holder(/*may_move=*/false);
  const CpuClaim pinned(/*may_move=*/true);
  EXPECT_EQ(pinned.cpu(), cpu);
  EXPECT_EQ(sched_getcpu(), cpu);
  EXPECT_EQ(ComputingOnCpu(cpu), 2);
}

TEST(CpuClaimTest, StaysWhenEveryAllowedCpuIsTaken) {
  const SavedMask saved;
  std::vector<int> cpus = saved.Cpus();
  if (cpus.size() > 64) cpus.resize(64);  // Enough to show the rule.
  // One claim on each of the first CPUs, then a mask of just those.
  std::vector<std::optional<CpuClaim>> holders(cpus.size());
  cpu_set_t taken;
  CPU_ZERO(&taken);
  for (size_t i = 0; i < cpus.size(); ++i) {
    ASSERT_TRUE(PinTo(cpus[i]));
    holders[i].emplace(/*may_move=*/false);
    CPU_SET(cpus[i], &taken);
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(taken), &taken), 0);
  const int here = sched_getcpu();
  const long moves = CpuSpreadMoves();

  const CpuClaim claim(/*may_move=*/true);
  EXPECT_EQ(CpuSpreadMoves(), moves);
  EXPECT_EQ(claim.cpu(), here);
  EXPECT_TRUE(SameMask(taken));
}

TEST(CpuSpreadWantedTest, ReadsZeroOrOneAndWarnsOnAnythingElse) {
  EXPECT_TRUE(CpuSpreadWanted(nullptr));
  EXPECT_TRUE(CpuSpreadWanted("1"));
  EXPECT_FALSE(CpuSpreadWanted("0"));
  testing::internal::CaptureStderr();
  EXPECT_TRUE(CpuSpreadWanted("off"));
  EXPECT_NE(testing::internal::GetCapturedStderr().find(
                "ignoring WEFT_CPU_SPREAD=off (expected 0 or 1)"),
            std::string::npos);
}

}  // namespace
}  // namespace weft::internal
