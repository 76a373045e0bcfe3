// The BLIS configuration (context: micro-kernel and block sizes) weft's
// float products run with.
//
// Debian's BLIS 0.9.0 picks a configuration for the CPU at run time, and
// falls back to its portable C one ("generic") on a CPU it predates even
// when that CPU has AVX2 and FMA: on AMD's Zen 5 (family 0x1A) it did, and
// a 512^3 product ran 4.4x slower than with BLIS's own AVX-512 kernels.
// Where BLIS says generic on such a CPU, weft takes the configuration for
// its instruction sets. On an Intel CPU with AVX-512 that it predates
// (Sapphire and Emerald Rapids) it takes its AVX2 haswell kernels, where
// weft takes skx (docs/kernels.md). The choice is fixed per CPU, never made
// by timing.
#ifndef WEFT_SRC_KERNELS_BLIS_CONFIG_H_
#define WEFT_SRC_KERNELS_BLIS_CONFIG_H_

#include <blis.h>

#include <string>

#include "kernels/gemm_tile.h"

namespace weft::internal {

// The configuration for a CPU on which BLIS detected `detected`: that one;
// skx for haswell on an Intel CPU with AVX-512; and in BLIS's generic
// fallback on an x86-64 CPU with AVX2 and FMA, skx with AVX-512, else zen3
// on AMD and haswell elsewhere.
arch_t BlisArchFor(arch_t detected, const CpuIdentity& cpu);

struct BlisConfig {
  arch_t arch;
  cntx_t* cntx;  // Read-only after bli_init: shared by every thread.
  // "zen3", or "zen3 (BLIS detected generic)" when weft chose it.
  std::string description;
};

// This process's configuration (BLIS initialised on first use).
const BlisConfig& ActiveBlisConfig();

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_BLIS_CONFIG_H_
