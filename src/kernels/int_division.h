// Integer division rounded up, for counts of tiles, blocks and panels.
#ifndef WEFT_SRC_KERNELS_INT_DIVISION_H_
#define WEFT_SRC_KERNELS_INT_DIVISION_H_

#include <cstdint>

namespace weft::internal {

// ceil(a / b) for b > 0 and any sign of a.
constexpr int64_t CeilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

// The least multiple of `to` (> 0) that is at least a (>= 0).
constexpr int64_t RoundUp(int64_t a, int64_t to) { return CeilDiv(a, to) * to; }

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_INT_DIVISION_H_
