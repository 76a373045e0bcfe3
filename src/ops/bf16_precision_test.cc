// SessionOptions::precision = "bf16": float convolutions (NhwcConv through
// oneDNN) and products against a constant weight (MatMul, Gemm) run with
// bf16 operands and float32 sums. What is checked: they are within bf16's
// rounding of fp32, not equal to it (the bf16 path ran), bitwise the same
// for every thread setting and for a row alone or in a batch, and a CPU
// without bf16 units refuses the option. Skipped where this CPU has none
// (the refusal is then what is tested).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kernels/bf16_gemm.h"
#include "ops/dnnl_matmul.h"
#include "ops/kernel_switches.h"
#include "ops/nhwc_ops.h"
#include "session/session_options.h"
#include "test_support/session_util.h"
#include "weft/warnings.h"

namespace weft {
namespace {

SessionOptions Bf16PrecisionOptions(const std::string& precision, int inter,
                                    int intra) {
  SessionOptions options = test::PerSessionOptions(inter, intra);
  options.precision = precision;
  return options;
}

// Largest |a - b| over the largest |b|.
double RelativeError(const Tensor& a, const Tensor& b) {
  double largest = 0;
  for (float v : test::Values<float>(b)) {
    largest = std::max(largest, static_cast<double>(std::fabs(v)));
  }
  return test::MaxAbsDifference(a, b) / largest;
}

TEST(Bf16PrecisionTest, TheCpuRuleDecidesWhetherBf16IsAccepted) {
  Graph g;
  g.Const("a", test::SeededFloats({4, 4}, 1));
  g.MatMul("c", "a", "a");
  auto session = Session::Create(g, Bf16PrecisionOptions("bf16", 1, 1));
  if (internal::CpuHasBf16Products()) {
    EXPECT_TRUE(session.ok()) << session.status().ToString();
  } else {
    ASSERT_FALSE(session.ok());
    EXPECT_NE(session.status().message().find("AVX-512 BF16"),
              std::string::npos)
        << session.status().message();
  }
  // Both answers of the rule, whatever this CPU is.
  EXPECT_TRUE(internal::CheckPrecisionForCpu("bf16", "AVX-512 BF16").ok());
  EXPECT_TRUE(
      internal::CheckPrecisionForCpu("bf16", "AVX-512 BF16, AMX-BF16").ok());
  EXPECT_TRUE(internal::CheckPrecisionForCpu("fp32", "none").ok());
  const Status refused = internal::CheckPrecisionForCpu("bf16", "none");
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("this one's bf16 units: none"),
            std::string::npos)
      << refused.message();
}

TEST(Bf16PrecisionTest, TheRuleSaysWhereBf16IsSlowerThanFp32) {
  using internal::Bf16Cpu;
  using internal::Bf16Support;
  using internal::Bf16SupportForCpu;
  // Every branch, whatever this CPU is.
  EXPECT_EQ(Bf16SupportForCpu(Bf16Cpu{.intel = true}), Bf16Support::kNone);
  EXPECT_EQ(Bf16SupportForCpu(Bf16Cpu{}), Bf16Support::kNone);
  EXPECT_EQ(Bf16SupportForCpu(Bf16Cpu{.intel = true, .avx512_bf16 = true}),
            Bf16Support::kSlowerThanFp32);
  EXPECT_EQ(Bf16SupportForCpu(
                Bf16Cpu{.intel = true, .avx512_bf16 = true, .amx_bf16 = true}),
            Bf16Support::kAvailable);
  EXPECT_EQ(Bf16SupportForCpu(Bf16Cpu{.avx512_bf16 = true}),
            Bf16Support::kAvailable);
  EXPECT_EQ(internal::ThisCpuBf16Support() != Bf16Support::kNone,
            internal::CpuHasBf16Products());
}

// A bf16 session warns (as a performance warning) exactly where the rule
// says bf16 is slower than fp32 on this CPU; an fp32 session never does.
TEST(Bf16PrecisionTest, ASessionSaysWhereBf16IsSlowerThanFp32) {
  if (!internal::CpuHasBf16Products()) GTEST_SKIP() << "no AVX-512 BF16";
  std::vector<Warning> seen;
  WarningHandler previous =
      SetWarningHandler([&seen](const Warning& w) { seen.push_back(w); });
  Graph g;
  g.Const("a", test::SeededFloats({4, 4}, 1));
  g.MatMul("c", "a", "a");
  const bool fp32_created =
      Session::Create(g, Bf16PrecisionOptions("fp32", 1, 1)).ok();
  const size_t after_fp32 = seen.size();
  const bool bf16_created =
      Session::Create(g, Bf16PrecisionOptions("bf16", 1, 1)).ok();
  SetWarningHandler(previous);
  ASSERT_TRUE(fp32_created);
  ASSERT_TRUE(bf16_created);
  EXPECT_EQ(after_fp32, 0U);
  const std::vector<Warning> bf16_warnings(
      seen.begin() + static_cast<std::ptrdiff_t>(after_fp32), seen.end());
  if (internal::ThisCpuBf16Support() ==
      internal::Bf16Support::kSlowerThanFp32) {
    ASSERT_EQ(bf16_warnings.size(), 1U);
    EXPECT_EQ(bf16_warnings[0].category, WarningCategory::kPerformance);
    EXPECT_NE(bf16_warnings[0].message.find("slower than fp32"),
              std::string::npos)
        << bf16_warnings[0].message;
  } else {
    for (const Warning& w : bf16_warnings) ADD_FAILURE() << w.message;
  }
}

TEST(Bf16PrecisionTest, AnUnknownPrecisionIsRefusedByName) {
  Graph g;
  g.Const("a", test::SeededFloats({2, 2}, 1));
  g.MatMul("c", "a", "a");
  auto session = Session::Create(g, Bf16PrecisionOptions("bf-16", 1, 1));
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find(
                "SessionOptions.precision = 'bf-16' is not one of fp32, bf16"),
            std::string::npos)
      << session.status().message();
  EXPECT_NE(session.status().message().find("did you mean 'bf16'"),
            std::string::npos)
      << session.status().message();
}

// A graph of the products bf16 covers: a batched MatMul against a
// constant weight of odd depth, and a Gemm with bias, transposed B and an
// activation (FusedGemm after the passes).
Graph Products(int64_t rows) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({rows, 3, 77}));
  g.Const("w", test::SeededFloats({77, 130}, 2));
  g.MatMul("h", "x", "w");
  g.Const("shape", Tensor::FromVector<int64_t>({2}, {rows * 3, 130}));
  test::MustAdd(g, {"flat", "Reshape", {"h", "shape"}, {}, ""});
  g.Const("w2", test::SeededFloats({70, 130}, 3));
  g.Const("bias", test::SeededFloats({70}, 4));
  test::MustAdd(g, {"gemm",
                    "Gemm",
                    {"flat", "w2", "bias"},
                    {{"transB", AttrValue(int64_t{1})}},
                    ""});
  g.Relu("y", "gemm");
  return g;
}

// Runs `g` on x ("x" to "y") once in fp32 and in bf16 at 1, 2 and 3
// intra-op threads: bf16 within its rounding of fp32 (each operand within
// 2^-9 relative, sums of up to 288 terms of both signs) but not equal to it
// (its path ran), and the same bits at every count. Returns the bf16
// session's prepared bytes over fp32's (0 where fp32 prepares none).
double ExpectNearFp32AndTheSameForEveryThreadCount(const Graph& g,
                                                   const Tensor& x) {
  auto fp32 = test::MustCreate(g, Bf16PrecisionOptions("fp32", 1, 1));
  const Tensor want = test::MustRun(*fp32, {"y"}, {{"x", x}})[0];
  Tensor first;
  double bytes_ratio = 0;
  for (int intra : {1, 2, 3}) {
    auto session = test::MustCreate(g, Bf16PrecisionOptions("bf16", 1, intra));
    const Tensor got = test::MustRun(*session, {"y"}, {{"x", x}})[0];
    if (!first.IsInitialized()) {
      first = got;
      EXPECT_LT(RelativeError(got, want), 2e-2);
      EXPECT_GT(test::MaxAbsDifference(got, want), 0)
          << "bf16 gave fp32's bits: its path did not run";
      if (fp32->prepared_bytes() > 0) {  // Eigen's fp32 products pack none.
        bytes_ratio = static_cast<double>(session->prepared_bytes()) /
                      static_cast<double>(fp32->prepared_bytes());
      }
    } else {
      EXPECT_TRUE(got.BitwiseEqual(first)) << "intra=" << intra;
    }
  }
  return bytes_ratio;
}

TEST(Bf16PrecisionTest, ProductsAreCloseToFp32AndTheSameForEveryThreadCount) {
  if (!internal::CpuHasBf16Products()) GTEST_SKIP() << "no AVX-512 BF16";
  ExpectNearFp32AndTheSameForEveryThreadCount(
      Products(5), test::SeededFloats({5, 3, 77}, 9));
}

// Under SessionOptions::batch_invariant (which serving asks for): oneDNN's
// bf16 plans, where the CPU has AMX, are made for one row count and may sum
// in an order that follows it, so such sessions keep weft's own kernel.
TEST(Bf16PrecisionTest, ARowAloneGivesItsBitsInABatch) {
  if (!internal::CpuHasBf16Products()) GTEST_SKIP() << "no AVX-512 BF16";
  const Tensor batch = test::SeededFloats({7, 3, 77}, 11);
  auto invariant = [](int intra) {
    SessionOptions options = Bf16PrecisionOptions("bf16", 1, intra);
    options.batch_invariant = true;
    return options;
  };
  auto batched = test::MustCreate(Products(7), invariant(2));
  const Tensor all = test::MustRun(*batched, {"y"}, {{"x", batch}})[0];
  // Row 4 alone: its 3 x 77 values.
  Tensor row = Tensor::Create(DataType::kFloat32, Shape{1, 3, 77}).value();
  std::copy(batch.data<float>() + 4 * 3 * 77, batch.data<float>() + 5 * 3 * 77,
            row.data<float>());
  auto single = test::MustCreate(Products(1), invariant(1));
  const Tensor one = test::MustRun(*single, {"y"}, {{"x", row}})[0];
  for (int64_t i = 0; i < one.NumElements(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(one.data<float>()[i]),
              std::bit_cast<uint32_t>(all.data<float>()[4 * 3 * 70 + i]))
        << "element " << i;
  }
}

// The bf16 products go to oneDNN where the CPU has AMX-BF16, unless
// WEFT_DNNL_BF16_MATMUL says otherwise (tests/CMakeLists.txt runs both).
TEST(Bf16PrecisionTest, OneDnnTakesTheProductsWhereTheCpuHasAmx) {
  const std::optional<bool> forced =
      internal::KernelSwitchSetting(internal::KernelSwitch::kDnnlBf16MatMul);
  EXPECT_EQ(internal::DnnlBf16ProductsAvailable(),
            forced.value_or(internal::CpuHasAmxBf16() &&
                            internal::CpuHasBf16Products() &&
                            internal::DnnlHasAvx512Core()));
}

// oneDNN's bf16 plan (DnnlWeightProduct, kBf16), as precision bf16 runs it
// where the CPU has AMX-BF16 and as WEFT_DNNL_BF16_MATMUL=1 makes it run
// elsewhere: C is the product of the operands rounded to bf16 (to within
// float32 sums' rounding), the same bits at every intra-op count, and the
// epilogue sees every tile once. Two row tiles (64 + 6), two column blocks
// (256 + 44) and an odd depth (A's bf16 rows end in a padding zero).
constexpr int64_t kPlanRows = 70, kPlanDepth = 77, kPlanCols = 300;
const internal::DnnlWeightProduct* g_bf16_plan = nullptr;
const internal::Bf16Rows* g_bf16_rows = nullptr;

// The CustomOp that runs g_bf16_plan over the Run's pool: C, or an error
// when oneDNN failed a tile or the epilogue saw an element other than once.
Status RunBf16Plan(KernelContext& ctx) {
  WEFT_ASSIGN_OR_RETURN(Tensor c, Tensor::Create(DataType::kFloat32,
                                                 Shape{kPlanRows, kPlanCols}));
  std::vector<int> seen(static_cast<size_t>(kPlanRows * kPlanCols), 0);
  const bool done = g_bf16_plan->Run(
      ctx, *g_bf16_rows, c.data<float>(),
      [&](int64_t r0, int64_t tile_rows, int64_t c0, int64_t cols) {
        for (int64_t r = r0; r < r0 + tile_rows; ++r) {
          for (int64_t j = c0; j < c0 + cols; ++j) {
            ++seen[static_cast<size_t>(r * kPlanCols + j)];
          }
        }
      });
  if (!done) return InternalError("oneDNN failed a tile");
  if (std::any_of(seen.begin(), seen.end(), [](int n) { return n != 1; })) {
    return InternalError("the epilogue saw an element other than once");
  }
  return ctx.SetOutput(0, c);
}

TEST(Bf16PrecisionTest, OneDnnsBf16PlanMultipliesTheRoundedOperands) {
  if (!internal::CpuHasBf16Products()) GTEST_SKIP() << "no AVX-512 BF16";
  const int64_t m = kPlanRows, k = kPlanDepth, n = kPlanCols;
  const Tensor a = test::SeededFloats({m, k}, 51);
  const Tensor b = test::SeededFloats({n, k}, 52);  // op(B) = B transposed
  const auto plan = internal::DnnlWeightProduct::Make(
      b.data<float>(), /*transposed=*/true, m, k, n,
      internal::DnnlProductPrecision::kBf16);
  ASSERT_NE(plan, nullptr) << "oneDNN has no bf16 product on this CPU";
  internal::Bf16Rows rows;
  rows.Reset(m, k);
  rows.Fill(a.data<float>(), k, /*transposed=*/false, 0, m);
  g_bf16_plan = plan.get();
  g_bf16_rows = &rows;
  ASSERT_TRUE(RegisterCustomFunction("bf16_plan_product", RunBf16Plan).ok());
  Graph g;
  ASSERT_TRUE(g.AddNode({"y",
                         "CustomOp",
                         {},
                         {{"function", "bf16_plan_product"},
                          {"Tout", std::vector<DataType>{DataType::kFloat32}}},
                         ""})
                  .ok());
  Tensor first;
  for (int intra : {1, 2, 3}) {
    auto session = test::MustCreate(g, test::PerSessionOptions(1, intra));
    const Tensor got = test::MustRun(*session, {"y"})[0];
    if (!first.IsInitialized()) {
      first = got;
    } else {
      EXPECT_TRUE(got.BitwiseEqual(first)) << "intra=" << intra;
    }
  }
  g_bf16_plan = nullptr;
  g_bf16_rows = nullptr;
  ASSERT_TRUE(first.IsInitialized());
  // The exact product of the rounded operands, in double: float32 sums of
  // 77 terms stay within a few float32 ulps of the largest partial sum.
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, scale = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double term =
            static_cast<double>(internal::Bf16ToFloat(
                internal::RoundToBf16(a.data<float>()[i * k + p]))) *
            static_cast<double>(internal::Bf16ToFloat(
                internal::RoundToBf16(b.data<float>()[j * k + p])));
        want += term;
        scale += std::fabs(term);
      }
      const double error =
          std::fabs(static_cast<double>(first.data<float>()[i * n + j]) -
                    want) /
          scale;
      worst = std::max(worst, error);
    }
  }
  EXPECT_LT(worst, 1e-5);
}

// A small CNN through NhwcConv: a strided stem, a 3 x 3 block with a
// residual sum, a depthwise conv, a 1 x 1 conv.
Graph Convolutions() {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({2, 3, 32, 32}));
  auto conv = [&g](const std::string& name, const std::string& x, int64_t in,
                   int64_t out, int64_t kernel, int64_t stride, int64_t group,
                   uint32_t seed) {
    g.Const(name + "/w",
            test::SeededFloats({out, in / group, kernel, kernel}, seed));
    g.Const(name + "/b", test::SeededFloats({out}, seed + 1));
    test::MustAdd(
        g, {name,
            "Conv",
            {x, name + "/w", name + "/b"},
            {{"strides", AttrValue(std::vector<int64_t>{stride, stride})},
             {"pads", AttrValue(std::vector<int64_t>(4, kernel / 2))},
             {"group", AttrValue(group)}},
            ""});
  };
  conv("stem", "x", 3, 32, 3, 2, 1, 10);
  g.Relu("stem_relu", "stem");
  conv("block", "stem_relu", 32, 32, 3, 1, 1, 20);
  g.Add("sum", "block", "stem_relu");
  g.Relu("sum_relu", "sum");
  conv("dw", "sum_relu", 32, 32, 3, 1, 32, 30);
  g.Relu("dw_relu", "dw");
  conv("y", "dw_relu", 32, 64, 1, 1, 1, 40);
  return g;
}

TEST(Bf16PrecisionTest, ConvolutionsRunInBf16CloseToFp32) {
  if (!internal::CpuHasBf16Products() || !internal::NhwcConvAvailable()) {
    GTEST_SKIP() << "no AVX-512 BF16, or channels-last convolutions are off";
  }
  const double bytes_ratio = ExpectNearFp32AndTheSameForEveryThreadCount(
      Convolutions(), test::SeededFloats({2, 3, 32, 32}, 5));
  // The packed weights are bf16: about half the bytes of fp32's.
  EXPECT_LT(bytes_ratio, 0.75);
}

}  // namespace
}  // namespace weft
