#include "kernels/blis_config.h"

#include <cstdlib>

namespace weft::internal {

arch_t BlisArchFor(arch_t detected, const CpuIdentity& cpu) {
  // An Intel CPU with AVX-512 that BLIS 0.9 does not know (Sapphire and
  // Emerald Rapids): BLIS takes its AVX2 haswell kernels, at half the
  // vector width; its skx ones ran 1.6-2.3x faster on an Emerald Rapids
  // (docs/kernels.md).
  if (detected == BLIS_ARCH_HASWELL && cpu.intel && cpu.avx512) {
    return BLIS_ARCH_SKX;
  }
  if (detected != BLIS_ARCH_GENERIC || !cpu.avx2_fma) return detected;
  // A CPU newer than BLIS 0.9 with AVX-512: its skx kernels (on a Zen 5,
  // 4.4x the generic ones and 1.5x zen3's, docs/kernels.md). With AVX2
  // only: the configuration BLIS gives the newest such CPU of the vendor.
  if (cpu.avx512) return BLIS_ARCH_SKX;
  return cpu.amd ? BLIS_ARCH_ZEN3 : BLIS_ARCH_HASWELL;
}

const BlisConfig& ActiveBlisConfig() {
  static const BlisConfig config = [] {
    bli_init();
    const arch_t detected = bli_arch_query_id();
    BlisConfig c;
    // BLIS_ARCH_TYPE (BLIS's own variable) names the configuration
    // outright: bli_arch_query_id returns it, and it stands.
    c.arch = std::getenv("BLIS_ARCH_TYPE") != nullptr
                 ? detected
                 : BlisArchFor(detected, ThisCpu());
    // Every x86-64 configuration is compiled into Debian's build; one
    // that is not would have no context, and BLIS's own stays.
    c.cntx = c.arch == detected ? nullptr : bli_gks_lookup_nat_cntx(c.arch);
    if (c.cntx == nullptr) {
      c.arch = detected;
      c.cntx = bli_gks_query_cntx();
    }
    c.description = bli_arch_string(c.arch);
    if (c.arch != detected) {
      c.description +=
          std::string(" (BLIS detected ") + bli_arch_string(detected) + ")";
    }
    return c;
  }();
  return config;
}

}  // namespace weft::internal
