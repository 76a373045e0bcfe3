// Reading packed panels in tests: the layout of packed_gemm.h, for depth
// blocks of any kc (tests choose small ones to cross block boundaries).
#ifndef WEFT_SRC_TEST_SUPPORT_PANELS_H_
#define WEFT_SRC_TEST_SUPPORT_PANELS_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace weft::test {

// Element (outer o, depth d) of panels of `width` over `depth`, with
// `padded_outer` outer indices (whole panels) and depth blocks of kc.
inline float PanelAt(const std::vector<float>& panels, int64_t padded_outer,
                     int64_t width, int64_t kc, int64_t depth, int64_t o,
                     int64_t d) {
  const int64_t d0 = d / kc * kc, rows = std::min(kc, depth - d0);
  return panels[d0 * padded_outer + o / width * width * rows +
                (d - d0) * width + o % width];
}

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_PANELS_H_
