// Four vectors of int32 saturated to 8 bits (uint8 or int8) in one
// register, for the int8 kernels' stores and QuantizeLinear's.
//
// Two packs saturate to 16 bits, then to 8 (clamp(clamp(q, +-32767), Q's
// range) is clamp(q, Q's range), as vpmovusdb / vpmovsdb give). Both work
// within 128-bit lanes: lane i of the result holds four bytes of each
// vector, a_i b_i c_i d_i. Four down-conversions took about 2.7 cycles each
// on Zen 4; these are three instructions, four with the permutation.
// For callers compiled for AVX-512 (F and BW).
#ifndef WEFT_SRC_KERNELS_SATURATE_BYTES_H_
#define WEFT_SRC_KERNELS_SATURATE_BYTES_H_

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

namespace weft::internal {

// The packs alone: lane i is a_i b_i c_i d_i (four bytes from each vector's
// 128-bit lane i). In order where the vectors' lanes were interleaved the
// same way (the depthwise byte form's).
template <class Q>
__attribute__((target("avx512f,avx512vl,avx512bw"),
               always_inline)) inline __m512i
PackFourInLanes(__m512i a, __m512i b, __m512i c, __m512i d) {
  static_assert(std::is_same_v<Q, uint8_t> || std::is_same_v<Q, int8_t>);
  const __m512i ab = _mm512_packs_epi32(a, b);
  const __m512i cd = _mm512_packs_epi32(c, d);
  return std::is_same_v<Q, uint8_t> ? _mm512_packus_epi16(ab, cd)
                                    : _mm512_packs_epi16(ab, cd);
}

// Vector k's 16 bytes in 128-bit lane k, in order: the packs and one dword
// permutation.
template <class Q>
__attribute__((target("avx512f,avx512vl,avx512bw"),
               always_inline)) inline __m512i
SaturateFour(__m512i a, __m512i b, __m512i c, __m512i d) {
  const __m512i order =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_epi32(order, PackFourInLanes<Q>(a, b, c, d));
}

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_SATURATE_BYTES_H_
