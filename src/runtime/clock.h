// The one clock of the runtime: traces, cost measurement and RunMetadata
// read the same steady clock, so their timestamps compare.
#ifndef WEFT_SRC_RUNTIME_CLOCK_H_
#define WEFT_SRC_RUNTIME_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace weft::internal {

// Nanoseconds on std::chrono::steady_clock.
inline int64_t ToNs(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             t.time_since_epoch())
      .count();
}

inline int64_t NowNs() { return ToNs(std::chrono::steady_clock::now()); }

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_CLOCK_H_
