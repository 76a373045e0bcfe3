#ifndef WEFT_SRC_THREADING_SPIN_H_
#define WEFT_SRC_THREADING_SPIN_H_

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace weft::internal {

// Tells the CPU we are in a spin-wait loop: saves power and lets a sibling
// hyper-thread run.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace weft::internal

#endif  // WEFT_SRC_THREADING_SPIN_H_
