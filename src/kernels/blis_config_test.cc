#include "kernels/blis_config.h"

#include <gtest/gtest.h>

namespace weft::internal {
namespace {

TEST(BlisConfigTest, BlisOwnChoiceStandsUnlessItIsTheGenericFallback) {
  const CpuIdentity amd{.amd = true, .avx2_fma = true};
  const CpuIdentity amd512{.amd = true, .avx2_fma = true, .avx512 = true};
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_ZEN3, amd), BLIS_ARCH_ZEN3);
  // Zen 4 has AVX-512 but BLIS knows it: its choice (zen3) stands.
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_ZEN3, amd512), BLIS_ARCH_ZEN3);
  // A CPU newer than BLIS 0.9 (Zen 5): AVX-512 kernels, else AVX2 ones.
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_GENERIC, amd512), BLIS_ARCH_SKX);
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_GENERIC, amd), BLIS_ARCH_ZEN3);
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_GENERIC, {.intel = true, .avx2_fma = true}),
            BLIS_ARCH_HASWELL);
  // An Intel CPU with AVX-512 that BLIS takes for haswell (Sapphire and
  // Emerald Rapids): skx. Without AVX-512, and on AMD, haswell stands.
  const CpuIdentity intel512{.intel = true, .avx2_fma = true, .avx512 = true};
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_HASWELL, intel512), BLIS_ARCH_SKX);
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_SKX, intel512), BLIS_ARCH_SKX);
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_HASWELL, {.intel = true, .avx2_fma = true}),
            BLIS_ARCH_HASWELL);
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_HASWELL, amd512), BLIS_ARCH_HASWELL);
  // Without AVX2 and FMA the portable kernels are the right ones.
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_GENERIC, {.amd = true}), BLIS_ARCH_GENERIC);
  EXPECT_EQ(BlisArchFor(BLIS_ARCH_GENERIC, {}), BLIS_ARCH_GENERIC);
}

// On this machine: a CPU with AVX2 and FMA never runs BLIS's portable C
// kernels, and the context is the chosen configuration's.
TEST(BlisConfigTest, ThisCpuWithAvx2NeverRunsTheGenericKernels) {
  const BlisConfig& config = ActiveBlisConfig();
  ASSERT_NE(config.cntx, nullptr);
  if (ThisCpu().avx2_fma) EXPECT_NE(config.arch, BLIS_ARCH_GENERIC);
  EXPECT_EQ(config.description.rfind(bli_arch_string(config.arch), 0), 0u)
      << config.description;
}

}  // namespace
}  // namespace weft::internal
