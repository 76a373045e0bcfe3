// The CPU's multiply units, one core: how many multiply-adds a second its
// fp32 FMAs (vfmadd231ps) and its bf16 dot products (vdpbf16ps, two
// multiplies a lane) issue, each with 24 independent accumulators so that
// the rate is the unit's throughput, not a chain's latency. This is the
// measurement behind the bf16 rule (kernels/bf16_gemm.h, Bf16SupportForCpu):
// where vdpbf16ps delivers fewer multiply-adds than the FMAs, the bf16 mode
// cannot be faster than fp32 on compute-bound layers.
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

// Multiply-adds per instruction: 16 lanes, and two products a lane for
// vdpbf16ps.
void Report(benchmark::State& state, int64_t macs_per_instruction) {
  state.counters["MAC/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kRoundsPerIteration *
                          kAccumulators * macs_per_instruction),
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

BENCHMARK(BM_Fp32Fma);
BENCHMARK(BM_Bf16Dot);

}  // namespace

BENCHMARK_MAIN();
