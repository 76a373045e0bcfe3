// MatMul: bitwise identical for every thread configuration, and no thread
// computes but weft's own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/gemm_tile.h"
#include "ops/dnnl_matmul.h"
#include "ops/matmul_tiles.h"
#include "test_support/session_util.h"
#include "test_support/threads.h"

namespace weft {
namespace {

TEST(MatMulTest, BitwiseIdenticalForEveryThreadConfiguration) {
  // Sizes that are not multiples of the tile size, all transpose modes.
  struct Case {
    int64_t m, k, n;
    bool ta, tb;
  };
  const std::vector<Case> cases = {{131, 77, 301, false, false},
                                   {65, 300, 257, true, false},
                                   {200, 129, 70, false, true},
                                   {97, 513, 33, true, true}};
  for (const Case& c : cases) {
    Graph g;
    auto a = g.RandomUniform("a", DataType::kFloat32,
                             c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k}, 3);
    auto b = g.RandomUniform("b", DataType::kFloat32,
                             c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n}, 4);
    g.MatMul("c", a, b, c.ta, c.tb);
    Tensor reference;
    for (int inter : {-1, 1, 2, 4}) {
      for (int intra : {1, 2, 3, 4, 7, 8}) {
        auto session =
            test::MustCreate(g, test::PerSessionOptions(inter, intra));
        Tensor out = test::MustRun(*session, {"c"})[0];
        if (!reference.IsInitialized()) {
          reference = out;
        } else {
          ASSERT_TRUE(out.BitwiseEqual(reference))
              << c.m << "x" << c.k << "x" << c.n << " inter=" << inter
              << " intra=" << intra;
        }
      }
    }
  }
}

TEST(MatMulTest, OnlyWeftThreadsRunDuringALargeProduct) {
  Graph g;
  auto a = g.RandomUniform("a", DataType::kFloat32, {1024, 1024}, 1);
  g.MatMul("c", a, a);
  auto session = test::MustCreate(g, test::PerSessionOptions(1, 2));
  test::MustRun(*session, {"c"});  // Pools are up.
  // Main thread + 1 inter-op worker + 1 intra-op worker (+ this sampler).
  const int expected = test::CountProcessThreads() + 1;
  EXPECT_EQ(test::MostProcessThreadsDuring([&] {
              for (int i = 0; i < 3; ++i) test::MustRun(*session, {"c"});
            }),
            expected);
}

// A constant B of MatMul and Gemm (transposed or not) is packed when the
// session is created (for oneDNN's products where they run, else for the
// micro-kernel where the tile kernel is BLIS):
// the product agrees with a session that feeds B (not packed), gives the same
// bits at (1, 1) and (2, 2), and a Run that feeds the Const's output
// computes with the fed B.
TEST(PackedWeightTest, ProductsWithAConstantBUseTheBGiven) {
  const int64_t m = 64, k = 300, n = 530;  // n over one 512-column tile.
  const Tensor a = test::SeededFloats({m, k}, 21);
  for (const bool gemm : {false, true}) {
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(std::string(gemm ? "Gemm" : "MatMul") +
                   (tb ? " transposed B" : ""));
      const Shape b_shape = tb ? Shape{n, k} : Shape{k, n};
      const Tensor b = test::SeededFloats(b_shape, 22);
      const Tensor other_b = test::SeededFloats(b_shape, 23);
      auto make_graph = [&](bool constant_b) {
        Graph g;
        g.Placeholder("a", DataType::kFloat32, PartialShape({m, k}));
        if (constant_b) {
          g.Const("b", b);
        } else {
          g.Placeholder("b", DataType::kFloat32, PartialShape(b_shape.dims()));
        }
        const AttrMap attrs = gemm ? AttrMap{{"transB", AttrValue(int64_t{tb})}}
                                   : AttrMap{{"transpose_b", AttrValue(tb)}};
        test::MustAdd(g,
                      {"y", gemm ? "Gemm" : "MatMul", {"a", "b"}, attrs, ""});
        return g;
      };
      auto run = [](Session& session, const NamedTensors& feeds) {
        std::vector<Tensor> out = test::MustRun(session, {"y"}, feeds);
        return out.empty() ? Tensor() : out[0];
      };
      auto plain =
          test::MustCreate(make_graph(false), test::PerSessionOptions(1, 1));
      ASSERT_NE(plain, nullptr);
      const Tensor want = run(*plain, {{"a", a}, {"b", b}});
      const Tensor want_other = run(*plain, {{"a", a}, {"b", other_b}});
      std::vector<Tensor> packed;
      for (int threads : {1, 2}) {
        auto session = test::MustCreate(
            make_graph(true), test::PerSessionOptions(threads, threads));
        ASSERT_NE(session, nullptr);
        EXPECT_EQ(
            session->prepared_bytes() > 0,
            internal::DnnlMatMulAvailable() ||
                internal::ActiveGemmKernel() == internal::GemmKernel::kBlis);
        packed.push_back(run(*session, {{"a", a}}));
        EXPECT_LT(test::MaxAbsDifference(packed.back(), want), 1e-4);
        const Tensor fed = run(*session, {{"a", a}, {"b", other_b}});
        EXPECT_LT(test::MaxAbsDifference(fed, want_other), 1e-4);
      }
      EXPECT_TRUE(packed[0].BitwiseEqual(packed[1]));
    }
  }
}

// Products with a constant B and few rows share one packing of A across
// column tiles (RunOverSharedRows); larger ones keep row tiles. Both agree
// with a session that feeds B, give the same bits at every thread setting,
// and keep Gemm's transA, alpha, beta, bias and FusedGemm's activation, and
// a batched MatMul's rows.
TEST(PackedWeightTest, SharedRowsAndRowTilesMatchAFedWeight) {
  struct Case {
    const char* name;
    std::string op;
    Shape a_shape;
    int64_t k, n;
    AttrMap attrs;
    bool bias;
  };
  const AttrMap gelu = {{"activation", AttrValue(std::string("Gelu"))},
                        {"alpha", AttrValue(0.5)},
                        {"beta", AttrValue(2.0)}};
  const std::vector<Case> cases = {
      {"FusedGemm Gelu with bias, 64 rows",
       "FusedGemm",
       {64, 200},
       200,
       300,
       gelu,
       true},
      {"Gemm transA with bias, 50 rows",
       "Gemm",
       {90, 50},
       90,
       41,
       {{"transA", AttrValue(int64_t{1})}, {"beta", AttrValue(0.25)}},
       true},
      {"batched MatMul, 3 x 40 rows",
       "MatMul",
       {3, 40, 70},
       70,
       130,
       {},
       false},
      // One row (RunRowTimesPacked): a batch-1 classifier, a transposed A
      // with a partial last panel, a plain MatMul.
      {"Gemm one row with bias", "Gemm", {1, 512}, 512, 1000, {}, true},
      {"FusedGemm transA one row",
       "FusedGemm",
       {70, 1},
       70,
       37,
       {{"transA", AttrValue(int64_t{1})},
        {"activation", AttrValue(std::string("Relu"))},
        {"alpha", AttrValue(0.5)}},
       true},
      {"MatMul one row", "MatMul", {1, 300}, 300, 77, {}, false},
      // oneDNN's tiles (where it runs them): a partial row tile and a
      // partial column block; two rows, one partial block.
      {"MatMul 150 rows", "MatMul", {150, 70}, 70, 600, {}, false},
      {"FusedGemm Gelu two rows", "FusedGemm", {2, 33}, 33, 17, gelu, true},
      // Over 64 panels: a tile's panels summed in groups, the last partial,
      // over three depth blocks, the last partial.
      {"MatMul one row, wide", "MatMul", {1, 600}, 600, 2100, {}, false},
      {"FusedGemm beyond the shared rows, 700 rows",
       "FusedGemm",
       {700, 64},
       64,
       100,
       gelu,
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor a = test::SeededFloats(c.a_shape, 31);
    const Tensor b = test::SeededFloats({c.k, c.n}, 32);
    const Tensor bias = test::SeededFloats({c.n}, 33);
    auto make_graph = [&](bool constant_b) {
      Graph g;
      g.Placeholder("a", DataType::kFloat32, PartialShape(c.a_shape.dims()));
      if (constant_b) {
        g.Const("b", b);
      } else {
        g.Placeholder("b", DataType::kFloat32, PartialShape({c.k, c.n}));
      }
      std::vector<std::string> inputs = {"a", "b"};
      if (c.bias) {
        g.Const("bias", bias);
        inputs.push_back("bias");
      }
      test::MustAdd(g, {"y", c.op, inputs, c.attrs, ""});
      return g;
    };
    auto plain =
        test::MustCreate(make_graph(false), test::PerSessionOptions(1, 1));
    ASSERT_NE(plain, nullptr);
    const Tensor want = test::MustRun(*plain, {"y"}, {{"a", a}, {"b", b}})[0];
    Tensor first;
    for (const auto& [inter, intra] :
         std::vector<std::pair<int, int>>{{1, 1}, {2, 2}, {1, 3}, {-1, 4}}) {
      auto session = test::MustCreate(make_graph(true),
                                      test::PerSessionOptions(inter, intra));
      ASSERT_NE(session, nullptr);
      const Tensor got = test::MustRun(*session, {"y"}, {{"a", a}})[0];
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_LT(test::MaxAbsDifference(got, want), 1e-3);
      if (!first.IsInitialized()) {
        first = got;
      } else {
        EXPECT_TRUE(got.BitwiseEqual(first))
            << "inter=" << inter << " intra=" << intra;
      }
    }
  }
}

// Products of two computed operands run DynamicProductKernel()'s tiles:
// oneDNN's on AMD CPUs of family 1Ah with AVX-512 where the tile kernel is
// BLIS, the tile kernel elsewhere. The rule reads the CPU alone.
TEST(DynamicProductTest, TheRuleTakesOneDnnOnAmdFamily1AhWithAvx512) {
  using internal::CpuIdentity;
  using internal::DnnlDynamicProductsForCpu;
  EXPECT_TRUE(DnnlDynamicProductsForCpu(
      {.amd = true, .avx2_fma = true, .avx512 = true, .family = 0x1a}));
  EXPECT_TRUE(DnnlDynamicProductsForCpu(
      {.amd = true, .avx2_fma = true, .avx512 = true, .family = 0x1b}));
  // Zen 4: half-width AVX-512, unmeasured; Zen 3 and 5 without AVX-512.
  EXPECT_FALSE(DnnlDynamicProductsForCpu(
      {.amd = true, .avx2_fma = true, .avx512 = true, .family = 0x19}));
  EXPECT_FALSE(DnnlDynamicProductsForCpu(
      {.amd = true, .avx2_fma = true, .avx512 = false, .family = 0x1a}));
  // Intel's tile kernel is oneDNN's already; Eigen's CPUs keep Eigen.
  EXPECT_FALSE(DnnlDynamicProductsForCpu(
      {.intel = true, .avx2_fma = true, .avx512 = true, .family = 6}));
  EXPECT_FALSE(DnnlDynamicProductsForCpu({.avx512 = true, .family = 0x1a}));
  EXPECT_FALSE(DnnlDynamicProductsForCpu(CpuIdentity{}));
}

// A MatMul of two fed operands gives, tile by tile, the bits of
// DynamicProductKernel()'s tile (whichever kernel this CPU or the
// kernel-choice variables made it), at every thread setting.
TEST(DynamicProductTest, ProductsOfTwoFedOperandsRunTheDynamicKernel) {
  // Two row tiles (32 and 8 rows); a depth over the kernels' depth blocks,
  // where BLIS's and oneDNN's sums differ in their last bits (at 333 the
  // two kernels gave the same bits on a Zen 5: one chain each).
  const int64_t m = 40, k = 1500, n = 70;
  const Tensor a = test::SeededFloats({m, k}, 31);
  const Tensor b = test::SeededFloats({k, n}, 32);
  Tensor want(DataType::kFloat32, Shape({m, n}));
  const internal::TileShape tile = internal::ChooseTiles({m, k, n});
  for (int64_t r0 = 0; r0 < m; r0 += tile.rows) {
    for (int64_t c0 = 0; c0 < n; c0 += tile.cols) {
      internal::GemmTile<float>(
          internal::DynamicProductKernel(), std::min(tile.rows, m - r0),
          std::min(tile.cols, n - c0), k, {a.data<float>() + r0 * k, k},
          {b.data<float>() + c0, n}, want.data<float>() + r0 * n + c0, n,
          /*accumulate=*/false);
    }
  }
  Graph g;
  g.Placeholder("a", DataType::kFloat32, PartialShape({m, k}));
  g.Placeholder("b", DataType::kFloat32, PartialShape({k, n}));
  test::MustAdd(g, {"y", "MatMul", {"a", "b"}, {}, ""});
  for (int threads : {1, 2}) {
    auto session =
        test::MustCreate(g, test::PerSessionOptions(threads, threads));
    ASSERT_NE(session, nullptr);
    const Tensor got = test::MustRun(*session, {"y"}, {{"a", a}, {"b", b}})[0];
    EXPECT_TRUE(got.BitwiseEqual(want))
        << "kernel "
        << internal::GemmKernelName(internal::DynamicProductKernel()) << ", "
        << threads << " threads";
  }
}

// NumPy's matmul on vectors: a 1-D A is a row, a 1-D B a column, and the
// output leaves that dimension out. Values small enough to be exact.
TEST(MatMulTest, VectorOperandsFollowNumPy) {
  const Tensor v = Tensor::FromVector<float>({3}, {1, 2, 3});
  const Tensor m = Tensor::FromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor mt = Tensor::FromVector<float>({2, 3}, {1, 3, 5, 2, 4, 6});
  const Tensor batch = Tensor::FromVector<float>(
      {2, 3, 2}, {1, 2, 3, 4, 5, 6, 0, 1, 0, 1, 0, 1});
  struct Case {
    const char* what;
    Tensor a, b;
    Shape shape;
    std::vector<float> values;
  };
  const std::vector<Case> cases = {
      {"vector x matrix", v, m, Shape{2}, {22, 28}},
      {"matrix x vector", mt, v, Shape{2}, {22, 28}},
      {"vector x vector", v, v, Shape{}, {14}},
      {"vector x batch", v, batch, Shape{2, 2}, {22, 28, 0, 6}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto y = test::RunOneOutput("MatMul", {c.a, c.b});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    EXPECT_EQ(y->shape(), c.shape);
    EXPECT_EQ(test::Values<float>(*y), c.values);
  }
  // A scalar has no matrix; a transpose has no meaning for a vector.
  EXPECT_THAT(test::RunOneOutput("MatMul", {Tensor::Scalar(1.0f), m})
                  .status()
                  .message(),
              ::testing::HasSubstr("A is a scalar"));
  EXPECT_THAT(test::RunOneOutput("MatMul", {v, m}, {{"transpose_a", true}})
                  .status()
                  .message(),
              ::testing::HasSubstr("transpose_a needs A of rank >= 2"));
}

// ONNX MatMul-13's integer types: exact, and wrapping past the type's range
// as NumPy's integer matmul does.
TEST(MatMulTest, IntegerProductsAreExactAndWrap) {
  constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
  auto y = test::RunOneOutput(
      "MatMul", {Tensor::FromVector<int32_t>({2, 2}, {kMax32, 1, -3, 4}),
                 Tensor::FromVector<int32_t>({2, 2}, {2, 0, 5, -1})});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ASSERT_EQ(y->dtype(), DataType::kInt32);
  // kMax32 * 2 + 5 wraps to 3; the second row stays in range.
  EXPECT_EQ(test::Values<int32_t>(*y), (std::vector<int32_t>{3, -1, 14, -4}));
  auto u = test::RunOneOutput(
      "MatMul",
      {Tensor::FromVector<uint64_t>({3}, {1, 2, 3}),
       Tensor::FromVector<uint64_t>(
           {3, 2}, {std::numeric_limits<uint64_t>::max(), 1, 0, 2, 0, 3})});
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->shape(), Shape{2});
  EXPECT_EQ(test::Values<uint64_t>(*u),
            (std::vector<uint64_t>{std::numeric_limits<uint64_t>::max(), 14}));
  auto big = test::RunOneOutput(
      "MatMul", {Tensor::FromVector<int64_t>({1, 2}, {int64_t{1} << 40, 3}),
                 Tensor::FromVector<int64_t>({2, 1}, {1 << 20, 7})});
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(test::Values<int64_t>(*big),
            (std::vector<int64_t>{(int64_t{1} << 60) + 21}));
}

}  // namespace
}  // namespace weft
