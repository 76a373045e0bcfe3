#include "threading/cpu_spread.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <latch>
#include <memory>
#include <thread>
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

// Another thread, pinned to `cpu`, holding a claim there until destroyed.
class HeldCpu {
 public:
  explicit HeldCpu(int cpu)
      : thread_([this, cpu] {
          pinned_ = PinTo(cpu);
          const CpuClaim claim(/*may_move=*/false);
          claimed_cpu_ = claim.cpu();
          ready_.count_down();
          release_.wait();
        }) {
    ready_.wait();
  }
  ~HeldCpu() {
    release_.count_down();
    thread_.join();
  }
  // The claim is on `cpu`.
  bool holds(int cpu) const { return pinned_ && claimed_cpu_ == cpu; }

 private:
  bool pinned_ = false;
  int claimed_cpu_ = -1;
  std::latch ready_{1};
  std::latch release_{1};
  std::thread thread_;  // Last: started once the members above exist.
};

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

// This thread on its first allowed CPU, its mask as it was, while another
// thread holds a claim there.
class OnAHeldCpuTest : public testing::Test {
 protected:
  void SetUp() override {
    cpu_ = saved_.Cpus().front();
    holder_ = std::make_unique<HeldCpu>(cpu_);
    ASSERT_TRUE(holder_->holds(cpu_));
    ASSERT_TRUE(PinTo(cpu_));
    ASSERT_EQ(sched_setaffinity(0, sizeof(saved_.mask()), &saved_.mask()), 0);
    if (sched_getcpu() != cpu_) GTEST_SKIP() << "the OS moved the thread";
    moves_ = CpuSpreadMoves();
  }

  // The mask is wide again, so the OS may still move the thread between the
  // check above and the claim (seen in CI with the shards running side by
  // side). A claim made elsewhere without a move of ours is that case.
  bool OsMovedBeforeTheClaim(const CpuClaim& claim) const {
    return claim.cpu() != cpu_ && CpuSpreadMoves() == moves_;
  }

  const SavedMask saved_;
  int cpu_ = -1;
  std::unique_ptr<HeldCpu> holder_;
  long moves_ = 0;
};

TEST_F(OnAHeldCpuTest, AClaimMovesOffItAndGivesTheMaskBack) {
  if (saved_.Cpus().size() < 2) GTEST_SKIP() << "needs two allowed CPUs";
  const CpuClaim mover(/*may_move=*/true);
  if (OsMovedBeforeTheClaim(mover)) GTEST_SKIP() << "the OS moved the thread";
  EXPECT_NE(mover.cpu(), cpu_);
  EXPECT_EQ(sched_getcpu(), mover.cpu());
  EXPECT_EQ(ComputingOnCpu(mover.cpu()), 1);
  EXPECT_EQ(CpuSpreadMoves(), moves_ + 1);
  // The move left the mask as it was, not narrowed to the new CPU.
  EXPECT_TRUE(SameMask(saved_.mask()));
}

TEST_F(OnAHeldCpuTest, AClaimThatMayNotMoveStaysOnIt) {
  const CpuClaim user_thread(/*may_move=*/false);
  if (OsMovedBeforeTheClaim(user_thread)) {
    GTEST_SKIP() << "the OS moved the thread";
  }
  EXPECT_EQ(user_thread.cpu(), cpu_);
  EXPECT_EQ(ComputingOnCpu(cpu_), 2);
  EXPECT_EQ(CpuSpreadMoves(), moves_);
}

TEST(CpuClaimTest, APinnedThreadStays) {
  const SavedMask saved;
  const int cpu = saved.Cpus().front();
  const HeldCpu holder(cpu);
  ASSERT_TRUE(holder.holds(cpu));
  ASSERT_TRUE(PinTo(cpu));
  const CpuClaim pinned(/*may_move=*/true);
  EXPECT_EQ(pinned.cpu(), cpu);
  EXPECT_EQ(sched_getcpu(), cpu);
  EXPECT_EQ(ComputingOnCpu(cpu), 2);
}

TEST(CpuClaimTest, StaysWhenEveryAllowedCpuIsTaken) {
  const SavedMask saved;
  std::vector<int> cpus = saved.Cpus();
  if (cpus.size() > 16) cpus.resize(16);  // Enough to show the rule.
  // Another thread's claim on each of those CPUs, and a mask of just them.
  std::vector<std::unique_ptr<HeldCpu>> holders;
  cpu_set_t taken;
  CPU_ZERO(&taken);
  for (int cpu : cpus) {
    holders.push_back(std::make_unique<HeldCpu>(cpu));
    ASSERT_TRUE(holders.back()->holds(cpu));
    CPU_SET(cpu, &taken);
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(taken), &taken), 0);
  const int here = sched_getcpu();
  const long moves = CpuSpreadMoves();

  const CpuClaim claim(/*may_move=*/true);
  EXPECT_EQ(CpuSpreadMoves(), moves);
  EXPECT_EQ(claim.cpu(), here);
  EXPECT_TRUE(SameMask(taken));
}

TEST(CpuClaimTest, AClaimInsideAnotherOnTheSameThreadCountsNothing) {
  const SavedMask saved;
  const int cpu = saved.Cpus().front();
  ASSERT_TRUE(PinTo(cpu));
  const int before = ComputingOnCpu(cpu);
  const long moves = CpuSpreadMoves();
  const CpuClaim outer(/*may_move=*/true);
  {
    // Its own record is no reason for the thread to move.
    const CpuClaim inner(/*may_move=*/true);
    EXPECT_EQ(inner.cpu(), -1);
    EXPECT_EQ(ComputingOnCpu(cpu), before + 1);
  }
  EXPECT_EQ(outer.cpu(), cpu);
  EXPECT_EQ(ComputingOnCpu(cpu), before + 1);
  EXPECT_EQ(CpuSpreadMoves(), moves);
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
