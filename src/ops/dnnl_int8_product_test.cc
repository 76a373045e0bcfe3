// oneDNN's int8 plans (DnnlWeightProduct::MakeInt8) and the int8 products
// that run their whole row tiles on them (MultiplyUint8Direct*, where the
// CPU has AMX-INT8 or WEFT_DNNL_INT8=1 asks): the sums are exact, so
// every output keeps the direct tiles' bits.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/int8_gemm.h"
#include "ops/dnnl_int8_conv.h"
#include "ops/dnnl_matmul.h"
#include "ops/kernel_switches.h"
#include "ops/quantized_matmul_packed.h"
#include "test_support/session_util.h"

namespace weft {
namespace {

// Two column blocks (256 + 44), a depth of whole quads; rows: below one
// row tile, and two whole tiles plus 13 rows for the direct tiles.
constexpr int64_t kDepth = 100, kCols = 300;
constexpr int64_t kRowCounts[] = {30, 2 * internal::kDnnlTileRows + 13};
constexpr int32_t kAZero = 7;

// sum_k (a[i][k] - kAZero) b[k][j] in int64 (no wrap at these sizes).
std::vector<int32_t> ReferenceSums(const Tensor& a, const Tensor& b,
                                   int64_t rows) {
  std::vector<int32_t> sums(static_cast<size_t>(rows * kCols));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) {
      int64_t sum = 0;
      for (int64_t k = 0; k < kDepth; ++k) {
        sum += (int64_t{a.data<uint8_t>()[i * kDepth + k]} - kAZero) *
               int64_t{b.data<int8_t>()[k * kCols + j]};
      }
      sums[static_cast<size_t>(i * kCols + j)] = static_cast<int32_t>(sum);
    }
  }
  return sums;
}

struct Int8Scene {
  Tensor a = test::SeededBytes<uint8_t>(
      {kRowCounts[1], kDepth}, 61);  // the first rows serve the smaller case
  Tensor b = test::SeededBytes<int8_t>({kDepth, kCols}, 62);
  std::optional<internal::DirectProductWeights> with_dnnl, direct_only;
  std::vector<float> multiplier, bias;
  std::vector<int32_t> offset;
  std::string failure;  // What the CustomOp found wrong, if anything.
};
Int8Scene* g_scene = nullptr;

// The plan's own sums for the whole row tiles, each element emitted once.
void CheckPlanSums(KernelContext& ctx, Int8Scene& s) {
  const int64_t rows = 2 * internal::kDnnlTileRows;
  const std::vector<int32_t> want = ReferenceSums(s.a, s.b, rows);
  std::vector<int32_t> got(want.size(), 0);
  std::vector<int> seen(want.size(), 0);
  // The plan's sums are sum a b: the zero point's share is added here.
  std::vector<int32_t> column_sums(kCols, 0);
  for (int64_t k = 0; k < kDepth; ++k) {
    for (int64_t j = 0; j < kCols; ++j) {
      column_sums[static_cast<size_t>(j)] += s.b.data<int8_t>()[k * kCols + j];
    }
  }
  const bool ran = s.with_dnnl->dnnl->RunInt8(
      ctx, s.a.data<uint8_t>(), rows,
      [&](int64_t r0, int64_t r, int64_t c0, int64_t cols, const int32_t* sums,
          int64_t ld) {
        for (int64_t i = 0; i < r; ++i) {
          for (int64_t j = 0; j < cols; ++j) {
            const auto at = static_cast<size_t>((r0 + i) * kCols + c0 + j);
            got[at] = sums[i * ld + j] -
                      kAZero * column_sums[static_cast<size_t>(c0 + j)];
            ++seen[at];
          }
        }
      });
  if (!ran) s.failure += "oneDNN failed a tile; ";
  for (size_t i = 0; i < want.size(); ++i) {
    if (seen[i] != 1) {
      s.failure += "element " + std::to_string(i) + " emitted " +
                   std::to_string(seen[i]) + " times; ";
      return;
    }
    if (got[i] != want[i]) {
      s.failure += "element " + std::to_string(i) + ": " +
                   std::to_string(got[i]) + ", want " +
                   std::to_string(want[i]) + "; ";
      return;
    }
  }
}

// Every form on both weights, bit for bit, for each row count.
void CheckForms(KernelContext& ctx, Int8Scene& s) {
  for (const int64_t rows : kRowCounts) {
    const uint8_t* a = s.a.data<uint8_t>();
    std::vector<std::vector<int32_t>> sums(2);
    std::vector<std::vector<uint8_t>> requantized(2);
    std::vector<std::vector<float>> scaled(2);
    for (int way = 0; way < 2; ++way) {
      const internal::DirectProductWeights& w =
          way == 0 ? *s.with_dnnl : *s.direct_only;
      sums[way].assign(static_cast<size_t>(rows * kCols), 0);
      internal::MultiplyUint8Direct(ctx, a, rows, kAZero, w, sums[way].data());
      requantized[way].assign(sums[way].size(), 0);
      internal::RequantizedOutput q;
      q.multiplier = s.multiplier.data();
      q.zero = 128;
      q.offset = s.offset.data();
      q.y = requantized[way].data();
      internal::MultiplyUint8DirectRequantized(ctx, a, rows, kAZero, w, q);
      scaled[way].assign(sums[way].size(), 0);
      internal::RequantizedOutput f;
      f.multiplier = s.multiplier.data();
      f.bias = s.bias.data();
      f.y = scaled[way].data();
      internal::ActivationSpec relu;
      relu.kind = internal::FusedActivation::kRelu;
      internal::MultiplyUint8DirectScaled(ctx, a, rows, kAZero, w, f, relu,
                                          /*residual=*/nullptr);
    }
    const std::string where = " at " + std::to_string(rows) + " rows; ";
    if (sums[0] != ReferenceSums(s.a, s.b, rows)) {
      s.failure += "sums differ from the reference" + where;
    }
    if (sums[0] != sums[1]) s.failure += "sums differ" + where;
    if (requantized[0] != requantized[1]) {
      s.failure += "requantized outputs differ" + where;
    }
    if (std::memcmp(scaled[0].data(), scaled[1].data(),
                    scaled[0].size() * sizeof(float)) != 0) {
      s.failure += "scaled outputs differ" + where;
    }
  }
}

Status RunInt8Checks(KernelContext& ctx) {
  CheckPlanSums(ctx, *g_scene);
  CheckForms(ctx, *g_scene);
  return ctx.SetOutput(0, Tensor::Scalar<float>(0));
}

// Runs `check` as a graph's one CustomOp (so that it gets a Run's
// intra-op pool) at 1, 2 and 3 intra-op threads; after each, expects
// `failure` (which check appends to) empty, and clears it.
void RunAtEachThreadCount(const std::string& name, CustomFunction check,
                          std::string& failure) {
  ASSERT_TRUE(RegisterCustomFunction(name, std::move(check)).ok());
  Graph g;
  ASSERT_TRUE(g.AddNode({"y",
                         "CustomOp",
                         {},
                         {{"function", name},
                          {"Tout", std::vector<DataType>{DataType::kFloat32}}},
                         ""})
                  .ok());
  for (int intra : {1, 2, 3}) {
    auto session = test::MustCreate(g, test::PerSessionOptions(1, intra));
    test::MustRun(*session, {"y"});
    EXPECT_EQ(failure, "") << name << ", intra=" << intra;
    failure.clear();
  }
}

TEST(DnnlInt8ProductTest, WholeTilesOnOneDnnKeepTheDirectTilesBits) {
  Int8Scene s;
  s.with_dnnl = internal::DirectProductWeights::Prepare(
      s.b.data<int8_t>(), kDepth, kCols, /*with_dnnl=*/true);
  s.direct_only = internal::DirectProductWeights::Prepare(
      s.b.data<int8_t>(), kDepth, kCols, /*with_dnnl=*/false);
  ASSERT_TRUE(s.with_dnnl.has_value() && s.direct_only.has_value());
  ASSERT_EQ(s.direct_only->dnnl, nullptr);
  if (s.with_dnnl->dnnl == nullptr) {
    // oneDNN offers int8 tiles with exact sums only with VNNI or AMX.
    ASSERT_FALSE(internal::CpuHasAmxInt8() && internal::DnnlHasAvx512Core());
    GTEST_SKIP() << "oneDNN has no VNNI or AMX int8 matmul on this CPU";
  }
  for (int64_t j = 0; j < kCols; ++j) {
    s.multiplier.push_back(1e-3f * static_cast<float>(1 + j % 7));
    s.bias.push_back(0.25f * static_cast<float>(j % 5) - 0.5f);
    s.offset.push_back(static_cast<int32_t>(j * 37 % 1001) - 500);
  }
  g_scene = &s;
  RunAtEachThreadCount("dnnl_int8_checks", RunInt8Checks, s.failure);
  g_scene = nullptr;
}

// oneDNN's int8 convolution over a padded channels-last input (the direct
// tiles' input: 6 channels at a stride of 8), a 3 x 3 window at stride 2
// over 2 images of 15 x 13 padded pixels: every output pixel's sums once,
// equal to sum x * w over its window, channels past C adding nothing.
struct ConvScene {
  static constexpr int64_t kImages = 2, kH = 15, kW = 13, kC = 6, kStride = 8,
                           kM = 40, kK = 3;
  Tensor x = test::SeededBytes<uint8_t>({kImages, kH, kW, kStride}, 71);
  Tensor w = test::SeededBytes<int8_t>({kM, kC, kK, kK}, 72);
  internal::Window win;
  const internal::DnnlInt8Conv* conv = nullptr;
  std::string failure;
};
ConvScene* g_conv = nullptr;

Status RunConvCheck(KernelContext& ctx) {
  ConvScene& s = *g_conv;
  const int64_t oh = s.win.out[0], ow = s.win.out[1], m = ConvScene::kM;
  std::vector<int> seen(static_cast<size_t>(ConvScene::kImages * oh * ow), 0);
  const uint8_t* x = s.x.data<uint8_t>();
  const bool ran = s.conv->Run(
      ctx, s.win, x, ConvScene::kImages, ConvScene::kH, ConvScene::kW,
      [&](int64_t p0, int64_t count, const int32_t* sums) {
        for (int64_t p = p0; p < p0 + count; ++p) {
          ++seen[static_cast<size_t>(p)];
          const int64_t image = p / (oh * ow), oy = p / ow % oh, ox = p % ow;
          for (int64_t oc = 0; oc < m; ++oc) {
            int32_t want = 0;
            for (int64_t ic = 0; ic < ConvScene::kC; ++ic) {
              for (int64_t ky = 0; ky < ConvScene::kK; ++ky) {
                for (int64_t kx = 0; kx < ConvScene::kK; ++kx) {
                  const int64_t iy = oy * 2 + ky, ix = ox * 2 + kx;
                  want +=
                      int32_t{x[((image * ConvScene::kH + iy) * ConvScene::kW +
                                 ix) *
                                    ConvScene::kStride +
                                ic]} *
                      int32_t{s.w.data<int8_t>()[((oc * ConvScene::kC + ic) *
                                                      ConvScene::kK +
                                                  ky) *
                                                     ConvScene::kK +
                                                 kx]};
                }
              }
            }
            const int32_t got = sums[(p - p0) * m + oc];
            if (got != want && s.failure.empty()) {
              s.failure = "pixel " + std::to_string(p) + " channel " +
                          std::to_string(oc) + ": " + std::to_string(got) +
                          ", want " + std::to_string(want);
            }
          }
        }
      });
  if (!ran) s.failure += "oneDNN had no plan or failed; ";
  for (const int times : seen) {
    if (times != 1) {
      s.failure += "a pixel emitted " + std::to_string(times) + " times; ";
      break;
    }
  }
  return ctx.SetOutput(0, Tensor::Scalar<float>(0));
}

TEST(DnnlInt8ProductTest, OneDnnsConvolutionSumsAPaddedInputExactly) {
  if (!internal::CpuRunsInt8Kernel(internal::Int8Kernel::kAvx512Vnni) ||
      !internal::DnnlHasAvx512Core()) {
    GTEST_SKIP() << "oneDNN's exact int8 kernels need AVX-512 VNNI or AMX";
  }
  ConvScene s;
  s.win.rank = 2;
  s.win.in = {ConvScene::kH, ConvScene::kW};
  s.win.kernel = {ConvScene::kK, ConvScene::kK};
  s.win.stride = {2, 2};
  s.win.dilation = {1, 1};
  s.win.pad_begin = {0, 0};
  s.win.pad_end = {0, 0};
  s.win.out = {(ConvScene::kH - 3) / 2 + 1, (ConvScene::kW - 3) / 2 + 1};
  const internal::DnnlInt8Conv conv(s.w, ConvScene::kStride);
  s.conv = &conv;
  g_conv = &s;
  RunAtEachThreadCount("dnnl_int8_conv_check", RunConvCheck, s.failure);
  EXPECT_GT(conv.bytes(), 0);
  g_conv = nullptr;
}

// The rule: AMX-INT8 with oneDNN's AVX-512 kernels, unless
// WEFT_DNNL_INT8 says otherwise; never without AVX-512 VNNI.
TEST(DnnlInt8ProductTest, OneDnnTakesTheProductsWhereTheCpuHasAmxInt8) {
  const std::optional<bool> forced =
      internal::KernelSwitchSetting(internal::KernelSwitch::kDnnlInt8);
  const bool rule =
      forced.value_or(internal::CpuHasAmxInt8() &&
                      internal::DnnlHasAvx512Core()) &&
      internal::CpuRunsInt8Kernel(internal::Int8Kernel::kAvx512Vnni);
  EXPECT_EQ(internal::DnnlInt8ProductsAvailable(), rule);
  const std::string described = internal::DescribeInt8ProductKernel();
  EXPECT_EQ(described.rfind(rule ? "dnnl" : "weft", 0), 0u) << described;
}

}  // namespace
}  // namespace weft
