#include "kernels/int8_direct_conv.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "test_support/session_util.h"

namespace weft::internal {
namespace {

// Bytes from the shared seeded sequence, as a vector.
template <class T>
std::vector<T> Int8DirectConvSeededBytes(int64_t n, uint32_t seed) {
  const Tensor t = test::SeededBytes<T>(Shape{n}, seed);
  return std::vector<T>(t.data<T>(), t.data<T>() + n);
}

// Every kernel this CPU runs gives the exact sums of a tile: output
// channels in whole and partial blocks and vectors, input channels that
// are and are not whole quads (the bytes past C read but multiplied by
// zero weights), one tap and nine at scattered offsets, partial tiles.
TEST(Int8DirectConvTest, TilesAreTheExactSumsOnEveryKernelTheCpuRuns) {
  for (Int8Kernel kernel : kAllInt8Kernels) {
    if (!CpuRunsInt8Kernel(kernel)) continue;
    for (int64_t m : {8, 16, 40, 64, 72, 200}) {
      for (int64_t c : {3, 4, 6, 32}) {
        for (int64_t taps : {1, 9}) {
          SCOPED_TRACE(std::string(Int8KernelName(kernel)) +
                       " m=" + std::to_string(m) + " c=" + std::to_string(c) +
                       " taps=" + std::to_string(taps));
          const int64_t stride = Int8Quads(c) * 4;  // bytes per pixel
          const auto w = Int8DirectConvSeededBytes<int8_t>(m * c * taps, 5);
          const DirectConvWeights packed(w.data(), m, c, taps);
          ASSERT_EQ(packed.blocks(), (m + kDirectBlock - 1) / kDirectBlock);
          // An input of 64 pixels; tap t reads pixel 7 t further on.
          const auto x = Int8DirectConvSeededBytes<uint8_t>(64 * stride, 9);
          std::vector<int64_t> offsets;
          for (int64_t t = 0; t < taps; ++t) offsets.push_back(7 * t * stride);
          for (int64_t count : {int64_t{1}, int64_t{4}, kDirectPixels}) {
            const uint8_t* pixels[kDirectPixels];
            for (int64_t p = 0; p < kDirectPixels; ++p) {
              pixels[p] = x.data() + (p * 3 % 5) * stride;
            }
            for (int64_t b = 0; b < packed.blocks(); ++b) {
              std::vector<int32_t> acc(kDirectPixels * kDirectBlock, -7);
              DirectConvTile(kernel, packed, b, pixels, count, offsets.data(),
                             acc.data());
              const int64_t channels = std::min(kDirectBlock, m - b * 64);
              for (int64_t p = 0; p < count; ++p) {
                for (int64_t j = 0; j < channels; ++j) {
                  const int64_t oc = b * kDirectBlock + j;
                  int32_t want = 0;
                  for (int64_t i = 0; i < c; ++i) {
                    for (int64_t t = 0; t < taps; ++t) {
                      want += w[(oc * c + i) * taps + t] *
                              static_cast<int32_t>(pixels[p][offsets[t] + i]);
                    }
                  }
                  ASSERT_EQ(acc[p * kDirectBlock + j], want)
                      << "pixel " << p << " channel " << oc;
                }
              }
            }
          }
          for (int64_t oc = 0; oc < m; ++oc) {
            int32_t sum = 0;
            for (int64_t i = 0; i < c * taps; ++i) sum += w[oc * c * taps + i];
            EXPECT_EQ(packed.row_sums()[oc], sum);
          }
        }
      }
    }
  }
}

// Where folding pays (a quad saved per window row at least) and where it
// does not: channel counts that are whole quads, one column.
TEST(Int8DirectConvTest, FoldsColumnsOnlyWhereQuadsAreSaved) {
  EXPECT_TRUE(DirectConvFoldsColumns(3, 7));   // 21 bytes: 6 quads, not 7
  EXPECT_TRUE(DirectConvFoldsColumns(1, 3));   // 3 bytes: 1 quad, not 3
  EXPECT_TRUE(DirectConvFoldsColumns(3, 5));   // 15 bytes: 4 quads, not 5
  EXPECT_FALSE(DirectConvFoldsColumns(3, 3));  // 9 bytes: 3 quads either way
  EXPECT_FALSE(DirectConvFoldsColumns(4, 7));
  EXPECT_FALSE(DirectConvFoldsColumns(32, 3));
  EXPECT_FALSE(DirectConvFoldsColumns(3, 1));
}

// The folded weights over a dense channels-last plane (pixels of c bytes,
// a tap per window row) give the sums of the convolution they were folded
// from, on every kernel this CPU runs: the bytes past a window row's kw * c
// are read (the next pixel's) and multiplied by zero weights.
TEST(Int8DirectConvTest, FoldedColumnsGiveTheWindowsSums) {
  constexpr int64_t kWidth = 20, kRows = 9;  // the plane, pixels of c bytes
  for (Int8Kernel kernel : kAllInt8Kernels) {
    if (!CpuRunsInt8Kernel(kernel)) continue;
    for (const auto [c, kh, kw] :
         {std::array<int64_t, 3>{3, 7, 7}, std::array<int64_t, 3>{1, 3, 5},
          std::array<int64_t, 3>{2, 2, 3}}) {
      SCOPED_TRACE(std::string(Int8KernelName(kernel)) +
                   " c=" + std::to_string(c) + " " + std::to_string(kh) + "x" +
                   std::to_string(kw));
      const int64_t m = 40;
      const auto w = Int8DirectConvSeededBytes<int8_t>(m * c * kh * kw, 5);
      const std::vector<int8_t> folded =
          FoldWindowColumns(w.data(), m, c, kh, kw);
      const DirectConvWeights packed(folded.data(), m, kw * c, kh);
      // Plus the bytes the last window row reads past its end.
      const auto x = Int8DirectConvSeededBytes<uint8_t>(
          kRows * kWidth * c + packed.quads() * 4, 9);
      std::vector<int64_t> offsets;
      for (int64_t ky = 0; ky < kh; ++ky) offsets.push_back(ky * kWidth * c);
      // Windows at columns 0, 2, ..., the last one ending at the plane's
      // last pixel.
      const uint8_t* pixels[kDirectPixels];
      int64_t columns[kDirectPixels];
      for (int64_t p = 0; p < kDirectPixels; ++p) {
        columns[p] = p + 1 == kDirectPixels ? kWidth - kw : 2 * p;
        pixels[p] = x.data() + ((kRows - kh) * kWidth + columns[p]) * c;
      }
      std::vector<int32_t> acc(kDirectPixels * kDirectBlock);
      DirectConvTile(kernel, packed, 0, pixels, kDirectPixels, offsets.data(),
                     acc.data());
      for (int64_t p = 0; p < kDirectPixels; ++p) {
        for (int64_t oc = 0; oc < m; ++oc) {
          int32_t want = 0;
          for (int64_t i = 0; i < c; ++i) {
            for (int64_t ky = 0; ky < kh; ++ky) {
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t pixel =
                    (kRows - kh + ky) * kWidth + columns[p] + kx;
                want += w[((oc * c + i) * kh + ky) * kw + kx] *
                        static_cast<int32_t>(x[pixel * c + i]);
              }
            }
          }
          ASSERT_EQ(acc[p * kDirectBlock + oc], want)
              << "pixel " << p << " channel " << oc;
        }
      }
    }
  }
}

// A tile requantized from the registers equals its sums requantized by
// RequantizeChannels (the scalar formula), in both vector forms (every
// multiplier finite, or not) and both output dtypes: ties (0.5), products
// far past 2^24 and 2^31 (offsets near the int32 limits, a multiplier of
// 3e5), partial vectors, a partial tile.
TEST(Int8DirectConvTest, RequantizedTilesEqualTheirSumsRequantized) {
  const int64_t m = 40, c = 8, taps = 9, stride = 8;
  const auto w = Int8DirectConvSeededBytes<int8_t>(m * c * taps, 21);
  const DirectConvWeights packed(w.data(), m, c, taps);
  const auto x = Int8DirectConvSeededBytes<uint8_t>(80 * stride, 23);
  std::vector<int64_t> offsets;
  for (int64_t t = 0; t < taps; ++t) offsets.push_back(5 * t * stride);
  const uint8_t* pixels[kDirectPixels];
  for (int64_t p = 0; p < kDirectPixels; ++p) {
    pixels[p] = x.data() + p * 2 * stride;
  }
  std::vector<int32_t> offset;
  std::vector<float> multiplier;
  for (int64_t j = 0; j < m; ++j) {
    offset.push_back(j == 3   ? std::numeric_limits<int32_t>::max() - 9
                     : j == 4 ? std::numeric_limits<int32_t>::min() + 9
                              : static_cast<int32_t>(j * 131 - 2000));
    const float choices[] = {0.5f, 1e-3f, 7.0f, 3e5f, -0.25f};
    multiplier.push_back(choices[j % 5]);
  }
  for (Int8Kernel kernel : kAllInt8Kernels) {
    if (!CpuRunsInt8Kernel(kernel)) continue;
    for (int64_t count : {kDirectPixels, int64_t{5}}) {
      std::vector<int32_t> acc(kDirectPixels * kDirectBlock);
      DirectConvTile(kernel, packed, 0, pixels, count, offsets.data(),
                     acc.data());
      for (bool y_signed : {false, true}) {
        for (bool finite : {false, true}) {
          SCOPED_TRACE(std::string(Int8KernelName(kernel)) +
                       (y_signed ? " int8" : " uint8") +
                       (finite ? " finite" : " any") +
                       " count=" + std::to_string(count));
          const float zero = y_signed ? -3.0f : 128.0f;
          std::vector<uint8_t> got(static_cast<size_t>(count * m), 0);
          RequantizedOutput out;
          out.offset = offset.data();
          out.multiplier = multiplier.data();
          out.zero = zero;
          out.m = m;
          out.y = got.data();
          out.y_signed = y_signed;
          out.finite = finite;
          DirectConvTileRequantized(kernel, packed, 0, pixels, count,
                                    offsets.data(), out);
          for (int64_t i = 0; i < count; ++i) {
            std::vector<uint8_t> want(static_cast<size_t>(m));
            if (y_signed) {
              RequantizeChannels(acc.data() + i * kDirectBlock, m,
                                 offset.data(), multiplier.data(), zero,
                                 reinterpret_cast<int8_t*>(want.data()));
            } else {
              RequantizeChannels(acc.data() + i * kDirectBlock, m,
                                 offset.data(), multiplier.data(), zero,
                                 want.data());
            }
            for (int64_t j = 0; j < m; ++j) {
              ASSERT_EQ(got[i * m + j], want[j])
                  << "pixel " << i << " channel " << j;
            }
          }
        }
      }
    }
  }
}

// Requantization per channel equals the scalar formula lane by lane: ties
// to even, saturation at both ends, an offset that wraps, NaN (a non-finite
// multiplier) to 0 and infinities saturated, partial vectors.
TEST(Int8DirectConvTest, RequantizeChannelsIsTheScalarFormulaOnEveryLane) {
  const int64_t n = 37;
  std::vector<int32_t> acc, offset;
  std::vector<float> multiplier;
  for (int64_t j = 0; j < n; ++j) {
    acc.push_back(static_cast<int32_t>(j * 37 - 500));
    offset.push_back(j == 5 ? std::numeric_limits<int32_t>::max()
                            : static_cast<int32_t>(j % 7));
    multiplier.push_back(j % 4 == 0 ? 0.5f : 0.013f * static_cast<float>(j));
  }
  multiplier[9] = std::numeric_limits<float>::quiet_NaN();
  multiplier[10] = std::numeric_limits<float>::infinity();
  multiplier[11] = -std::numeric_limits<float>::infinity();
  for (float zero : {0.0f, 128.0f, -3.0f}) {
    std::vector<uint8_t> got_u(n);
    std::vector<int8_t> got_s(n);
    for (int64_t len : {n, int64_t{16}, int64_t{5}}) {
      RequantizeChannels(acc.data(), len, offset.data(), multiplier.data(),
                         zero, got_u.data());
      RequantizeChannels(acc.data(), len, offset.data(), multiplier.data(),
                         zero, got_s.data());
      for (int64_t j = 0; j < len; ++j) {
        const auto sum = static_cast<int32_t>(static_cast<uint32_t>(acc[j]) +
                                              static_cast<uint32_t>(offset[j]));
        const float v =
            std::nearbyint(static_cast<float>(sum) * multiplier[j]) + zero;
        const uint8_t want_u =
            std::isnan(v) ? 0 : static_cast<uint8_t>(std::clamp(v, 0.f, 255.f));
        const int8_t want_s =
            std::isnan(v) ? 0
                          : static_cast<int8_t>(std::clamp(v, -128.f, 127.f));
        EXPECT_EQ(got_u[j], want_u) << "lane " << j << " zero " << zero;
        EXPECT_EQ(got_s[j], want_s) << "lane " << j << " zero " << zero;
      }
    }
  }
}

}  // namespace
}  // namespace weft::internal
