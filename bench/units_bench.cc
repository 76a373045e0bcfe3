// The CPU's multiply units, one core: how many multiply-adds a second its
// fp32 FMAs (vfmadd231ps), its bf16 dot products (vdpbf16ps, two multiplies
// a lane) and its int8 dot products (vpdpbusd, four) issue, each with
// enough independent accumulators that the rate is the unit's throughput,
// not a chain's latency. This is the measurement behind the bf16 rule
// (kernels/bf16_gemm.h, Bf16SupportForCpu): where vdpbf16ps delivers fewer
// multiply-adds than the FMAs, the bf16 mode cannot be faster than fp32 on
// compute-bound layers; and the int8 kernels' ceiling (vpdpbusd on 512-
// and on 256-bit vectors, the latter as AVX-VNNI). On CPUs with AVX2
// and no VNNI, the three steps an int8 product can take there: weft's exact
// one (bytes widened to int16, vpmaddwd + vpaddd), ONNX Runtime's
// (vpmaddubsw, whose int16 pair sums saturate, + vpmaddwd by ones +
// vpaddd), and the fp32 FMA beside them (docs/BENCHMARKS.md, 2026-12-02).
//   build/bin/weft_units_bench   (counter "MAC/s", per core)
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <vector>

#include "kernels/int8_gemm.h"

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

// AVX-VNNI: the same instruction on 256-bit vectors, VEX-encoded (%{vex%}:
// the form a CPU without AVX-512 runs), twelve accumulators in the sixteen
// VEX registers ("x").
bool HasAvxVnni() {
  return weft::internal::CpuRunsInt8Kernel(
      weft::internal::Int8Kernel::kAvxVnni);
}

__attribute__((target("avx2,avxvnni"))) int32_t AvxVnniDotRounds(
    int64_t rounds) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0,
          a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  const __m256i x = _mm256_set1_epi8(1);
  const __m256i y = _mm256_set1_epi8(1);
  for (int64_t i = 0; i < rounds; ++i) {
    asm volatile(
        "%{vex%} vpdpbusd %12, %13, %0\n\t%{vex%} vpdpbusd %12, %13, %1\n\t"
        "%{vex%} vpdpbusd %12, %13, %2\n\t%{vex%} vpdpbusd %12, %13, %3\n\t"
        "%{vex%} vpdpbusd %12, %13, %4\n\t%{vex%} vpdpbusd %12, %13, %5\n\t"
        "%{vex%} vpdpbusd %12, %13, %6\n\t%{vex%} vpdpbusd %12, %13, %7\n\t"
        "%{vex%} vpdpbusd %12, %13, %8\n\t%{vex%} vpdpbusd %12, %13, %9\n\t"
        "%{vex%} vpdpbusd %12, %13, %10\n\t%{vex%} vpdpbusd %12, %13, %11"
        : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6),
          "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11)
        : "x"(y), "x"(x));
  }
  __m256i sum = _mm256_add_epi32(
      _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
      _mm256_add_epi32(_mm256_add_epi32(a4, a5), _mm256_add_epi32(a6, a7)));
  sum = _mm256_add_epi32(sum, _mm256_add_epi32(_mm256_add_epi32(a8, a9),
                                               _mm256_add_epi32(a10, a11)));
  return _mm256_extract_epi32(sum, 0);
}

// 8 lanes of four byte products.
void BM_Int8AvxVnniDot(benchmark::State& state) {
  if (!HasAvxVnni()) {
    state.SkipWithError("no AVX-VNNI");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(AvxVnniDotRounds(kRoundsPerIteration));
  }
  Report(state, 32, kVnniAccumulators);
}

bool HasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0 &&
         __builtin_cpu_supports("fma") != 0;
}

// The AVX2 steps, eight accumulators each (sixteen registers hold them, the
// four products in flight and the operands), in assembly for the reason
// above. Each accumulator takes one step a round.
constexpr int kAvx2Accumulators = 8;

__attribute__((target("avx2,fma"))) float Avx2FmaRounds(int64_t rounds) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,
         a6 = a0, a7 = a0;
  const __m256 x = _mm256_set1_ps(1.0001F), y = _mm256_set1_ps(0.9999F);
  for (int64_t i = 0; i < rounds; ++i) {
    asm volatile(
        "vfmadd231ps %8, %9, %0\n\tvfmadd231ps %8, %9, %1\n\t"
        "vfmadd231ps %8, %9, %2\n\tvfmadd231ps %8, %9, %3\n\t"
        "vfmadd231ps %8, %9, %4\n\tvfmadd231ps %8, %9, %5\n\t"
        "vfmadd231ps %8, %9, %6\n\tvfmadd231ps %8, %9, %7"
        : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6),
          "+x"(a7)
        : "x"(x), "x"(y));
  }
  const __m256 sum = _mm256_add_ps(
      _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
      _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  return lanes[0];
}

// The eight accumulators' lanes summed, so that none is dead code.
__attribute__((target("avx2"))) int32_t SumOfEight(__m256i a0, __m256i a1,
                                                   __m256i a2, __m256i a3,
                                                   __m256i a4, __m256i a5,
                                                   __m256i a6, __m256i a7) {
  const __m256i sum = _mm256_add_epi32(
      _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
      _mm256_add_epi32(_mm256_add_epi32(a4, a5), _mm256_add_epi32(a6, a7)));
  return _mm256_extract_epi32(sum, 0);
}

// clang-format off
// One step: the int16 lanes of x and y multiplied in pairs and summed into
// int32 (exact), added to the accumulator.
#define WEFT_MADD_STEP(acc, tmp) \
  "vpmaddwd %[y], %[x], " tmp "\n\t" \
  "vpaddd " tmp ", " acc ", " acc "\n\t"
// One step: u8 x s8 byte pairs summed into int16 (saturating), those pairs
// summed into int32 by a vpmaddwd with ones, added to the accumulator.
#define WEFT_UBS_STEP(acc, tmp) \
  "vpmaddubsw %[y], %[x], " tmp "\n\t" \
  "vpmaddwd %[ones], " tmp ", " tmp "\n\t" \
  "vpaddd " tmp ", " acc ", " acc "\n\t"
// Eight steps, one per accumulator, over four temporaries.
#define WEFT_EIGHT_STEPS(STEP) \
  STEP("%[a0]", "%[t0]") STEP("%[a1]", "%[t1]") \
  STEP("%[a2]", "%[t2]") STEP("%[a3]", "%[t3]") \
  STEP("%[a4]", "%[t0]") STEP("%[a5]", "%[t1]") \
  STEP("%[a6]", "%[t2]") STEP("%[a7]", "%[t3]")
// Named variables, not an array: from an array g++ 12 kept the
// accumulators on the stack (37-42 G multiply-adds a second for the exact
// step instead of 72-76 on the Zen 3 guest).
#define WEFT_EIGHT_ACCUMULATORS \
  [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), \
  [a4] "+x"(a4), [a5] "+x"(a5), [a6] "+x"(a6), [a7] "+x"(a7), \
  [t0] "=&x"(t0), [t1] "=&x"(t1), [t2] "=&x"(t2), [t3] "=&x"(t3)
// clang-format on

__attribute__((target("avx2"))) int32_t Avx2ExactInt16Rounds(int64_t rounds) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0,
          a5 = a0, a6 = a0, a7 = a0, t0, t1, t2, t3;
  const __m256i x = _mm256_set1_epi16(3), y = _mm256_set1_epi16(-2);
  for (int64_t i = 0; i < rounds; ++i) {
    asm volatile(WEFT_EIGHT_STEPS(WEFT_MADD_STEP)
                 : WEFT_EIGHT_ACCUMULATORS
                 : [x] "x"(x), [y] "x"(y));
  }
  return SumOfEight(a0, a1, a2, a3, a4, a5, a6, a7);
}

__attribute__((target("avx2"))) int32_t Avx2SaturatingU8S8Rounds(
    int64_t rounds) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0,
          a5 = a0, a6 = a0, a7 = a0, t0, t1, t2, t3;
  const __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2),
                ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < rounds; ++i) {
    asm volatile(WEFT_EIGHT_STEPS(WEFT_UBS_STEP)
                 : WEFT_EIGHT_ACCUMULATORS
                 : [x] "x"(x), [y] "x"(y), [ones] "x"(ones));
  }
  return SumOfEight(a0, a1, a2, a3, a4, a5, a6, a7);
}

#undef WEFT_MADD_STEP
#undef WEFT_UBS_STEP
#undef WEFT_EIGHT_STEPS
#undef WEFT_EIGHT_ACCUMULATORS

template <class Rounds>
void RunAvx2(benchmark::State& state, Rounds rounds, int64_t macs_per_step) {
  if (!HasAvx2()) {
    state.SkipWithError("no AVX2 and FMA");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(rounds(kRoundsPerIteration));
  Report(state, macs_per_step, kAvx2Accumulators);
}

// 8 lanes of one multiply-add.
void BM_Avx2Fp32Fma(benchmark::State& state) {
  RunAvx2(state, Avx2FmaRounds, 8);
}
// 8 lanes of two exact products: weft's int8 step without VNNI
// (kernels/int8_gemm.h, kAvx2).
void BM_Avx2ExactInt16Madd(benchmark::State& state) {
  RunAvx2(state, Avx2ExactInt16Rounds, 16);
}
// 8 lanes of four byte products, pair sums saturating to int16.
void BM_Avx2SaturatingU8S8(benchmark::State& state) {
  RunAvx2(state, Avx2SaturatingU8S8Rounds, 32);
}

// weft's int8 panel product itself (kernels/int8_gemm.h): one panel of 8
// weight rows by 32 pixels over `depth` (arg 1; 576 is a 3 x 3 layer of 64
// channels), every call on the same panels, so they stay in cache: the
// kernel against the unit's ceiling above, without packing or memory.
// Arg 0: the kernel (0 generic, 1 AVX2, 2 AVX-VNNI, 3 AVX-512 VNNI).
void BM_Int8PanelProduct(benchmark::State& state) {
  using weft::internal::Int8Kernel;
  const Int8Kernel kernel = weft::internal::kAllInt8Kernels[state.range(0)];
  if (!weft::internal::CpuRunsInt8Kernel(kernel)) {
    state.SkipWithError("the CPU cannot run this kernel");
    return;
  }
  const int64_t depth = state.range(1);
  constexpr int64_t kRows = weft::internal::kInt8Rows;
  constexpr int64_t kCols = weft::internal::kInt8Cols;
  std::vector<int8_t> w(static_cast<size_t>(kRows * depth));
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 255) - 127);
  }
  const weft::internal::PackedInt8Weights packed(w.data(), kRows, depth);
  std::vector<uint8_t> columns(
      static_cast<size_t>(weft::internal::Int8ColumnPanelBytes(depth)));
  for (size_t i = 0; i < columns.size(); ++i) {
    columns[i] = static_cast<uint8_t>(i * 91 % 256);
  }
  std::vector<int32_t> acc(static_cast<size_t>(kRows * kCols));
  for (auto _ : state) {
    weft::internal::Int8PanelProduct(kernel, packed.panel(0), columns.data(),
                                     packed.quads(), kRows, kCols, acc.data(),
                                     kCols);
    benchmark::DoNotOptimize(acc.data());
    benchmark::ClobberMemory();
  }
  state.counters["MAC/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kRows * kCols * depth),
      benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Fp32Fma);
BENCHMARK(BM_Bf16Dot);
BENCHMARK(BM_Int8VnniDot);
BENCHMARK(BM_Int8AvxVnniDot);
BENCHMARK(BM_Avx2Fp32Fma);
BENCHMARK(BM_Avx2ExactInt16Madd);
BENCHMARK(BM_Avx2SaturatingU8S8);
BENCHMARK(BM_Int8PanelProduct)
    ->ArgsProduct({{0, 1, 2, 3}, {576, 2304, 4608}})
    ->ArgNames({"kernel", "depth"});

}  // namespace

BENCHMARK_MAIN();
