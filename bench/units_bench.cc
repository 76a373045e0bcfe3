// The CPU's multiply units, one core: how many multiply-adds a second its
// fp32 FMAs (vfmadd231ps), its bf16 dot products (vdpbf16ps, two multiplies
// a lane) and its int8 dot products (vpdpbusd, four) issue, each with
// enough independent accumulators that the rate is the unit's throughput,
// not a chain's latency. This is the measurement behind the bf16 rule
// (kernels/bf16_gemm.h, Bf16SupportForCpu): where vdpbf16ps delivers fewer
// multiply-adds than the FMAs, the bf16 mode cannot be faster than fp32 on
// compute-bound layers; and the int8 kernels' ceiling.
//   build/bin/weft_units_bench   (counter "MAC/s", per core)
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>

namespace {

constexpr int kAccumulators = 24;
constexpr int64_t kRoundsPerIteration = 1 << 16;

bool HasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") != 0;
}

bool HasAvx512Bf16() {
  return HasAvx512() && __builtin_cpu_supports("avx512bf16") != 0;
}

__attribute__((target("avx512f"))) float FmaRounds(int64_t rounds) {
  __m512 acc[kAccumulators];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512 x = _mm512_set1_ps(1.0001F);
  const __m512 y = _mm512_set1_ps(0.9999F);
  for (int64_t i = 0; i < rounds; ++i) {
#pragma GCC unroll 24
    for (__m512& a : acc) a = _mm512_fmadd_ps(x, y, a);
    // Keeps x opaque, so the compiler cannot fold the rounds.
    asm volatile("" : "+v"(x));
  }
  float sum = 0;
  for (const __m512& a : acc) sum += _mm512_reduce_add_ps(a);
  return sum;
}

__attribute__((target("avx512f,avx512bf16"))) float Bf16DotRounds(
    int64_t rounds) {
  __m512 acc[kAccumulators];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  // 1.0 in every bf16 lane.
  auto x = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3F80));
  const auto y = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3F80));
  for (int64_t i = 0; i < rounds; ++i) {
#pragma GCC unroll 24
    for (__m512& a : acc) a = _mm512_dpbf16_ps(a, x, y);
    asm volatile("" : "+v"(x));
  }
  float sum = 0;
  for (const __m512& a : acc) sum += _mm512_reduce_add_ps(a);
  return sum;
}

bool HasAvx512Vnni() {
  return HasAvx512() && __builtin_cpu_supports("avx512vnni") != 0;
}

// Written in assembly: given the intrinsic in a loop like the two above, g++
// 12 kept the integer accumulators on the stack and measured the stores.
// Twelve accumulators cover the instruction's latency (5 cycles) at two a
// cycle; asm takes at most 30 operands, and each accumulator counts twice.
constexpr int kVnniAccumulators = 12;

__attribute__((target("avx512f,avx512bw,avx512vnni"))) int32_t VnniDotRounds(
    int64_t rounds) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0,
          a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  const __m512i x = _mm512_set1_epi8(1);
  const __m512i y = _mm512_set1_epi8(1);
  for (int64_t i = 0; i < rounds; ++i) {
    asm volatile(
        "vpdpbusd %12, %13, %0\n\tvpdpbusd %12, %13, %1\n\t"
        "vpdpbusd %12, %13, %2\n\tvpdpbusd %12, %13, %3\n\t"
        "vpdpbusd %12, %13, %4\n\tvpdpbusd %12, %13, %5\n\t"
        "vpdpbusd %12, %13, %6\n\tvpdpbusd %12, %13, %7\n\t"
        "vpdpbusd %12, %13, %8\n\tvpdpbusd %12, %13, %9\n\t"
        "vpdpbusd %12, %13, %10\n\tvpdpbusd %12, %13, %11"
        : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6),
          "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11)
        : "v"(y), "v"(x));
  }
  const __m512i sum = _mm512_add_epi32(
      _mm512_add_epi32(
          _mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),
          _mm512_add_epi32(a4, a5)),
      _mm512_add_epi32(
          _mm512_add_epi32(_mm512_add_epi32(a6, a7), _mm512_add_epi32(a8, a9)),
          _mm512_add_epi32(a10, a11)));
  return _mm512_reduce_add_epi32(sum);
}

// Multiply-adds per instruction: 16 lanes, and two products a lane for
// vdpbf16ps, four for vpdpbusd.
void Report(benchmark::State& state, int64_t macs_per_instruction,
            int64_t accumulators = kAccumulators) {
  state.counters["MAC/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kRoundsPerIteration *
                          accumulators * macs_per_instruction),
      benchmark::Counter::kIsRate);
}

void BM_Fp32Fma(benchmark::State& state) {
  if (!HasAvx512()) {
    state.SkipWithError("no AVX-512");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(FmaRounds(kRoundsPerIteration));
  Report(state, 16);
}

void BM_Bf16Dot(benchmark::State& state) {
  if (!HasAvx512Bf16()) {
    state.SkipWithError("no AVX-512 BF16");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(Bf16DotRounds(kRoundsPerIteration));
  }
  Report(state, 32);
}

// u8 x s8 dot products of four a lane: the int8 kernels' unit
// (kernels/int8_direct_conv.h, int8_gemm.h).
void BM_Int8VnniDot(benchmark::State& state) {
  if (!HasAvx512Vnni()) {
    state.SkipWithError("no AVX-512 VNNI");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(VnniDotRounds(kRoundsPerIteration));
  }
  Report(state, 64, kVnniAccumulators);
}

BENCHMARK(BM_Fp32Fma);
BENCHMARK(BM_Bf16Dot);
BENCHMARK(BM_Int8VnniDot);

}  // namespace

BENCHMARK_MAIN();
