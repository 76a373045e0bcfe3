// The pipeline's random numbers: a SplitMix64 stream and an unbiased draw
// below a bound, written out here (not std::shuffle or a std::
// distribution, whose results differ between standard libraries) so that a
// seed gives the same order on every machine.
#ifndef WEFT_SRC_FRAMEWORK_SEEDED_RANDOM_H_
#define WEFT_SRC_FRAMEWORK_SEEDED_RANDOM_H_

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace weft::internal {

class SeededRandom {
 public:
  // Streams for (seed, pass) pairs differ: each Repeat round of a
  // reshuffling stage draws from its own.
  explicit SeededRandom(uint64_t seed, uint64_t pass = 0)
      : state_(seed ^ (pass * 0xD1B54A32D192ED03ULL)) {
    Next();
  }

  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound): draws above the last whole multiple of bound
  // are redrawn, so no value is favoured. REQUIRES: bound > 0.
  uint64_t Below(uint64_t bound) {
    const uint64_t excess = (UINT64_MAX % bound + 1) % bound;  // 2^64 mod b.
    uint64_t x = Next();
    while (x > UINT64_MAX - excess) x = Next();
    return x % bound;
  }

  // Fisher-Yates.
  template <class T>
  void Shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) {
      std::swap(items[i - 1], items[Below(i)]);
    }
  }

 private:
  uint64_t state_;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_FRAMEWORK_SEEDED_RANDOM_H_
