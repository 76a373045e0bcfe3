// The nhwc-layout pass and its kernels (NhwcConv through oneDNN,
// NhwcMaxPool, NhwcGlobalAveragePool, the layout conversions): what runs,
// that results agree with the NCHW kernels within float32 rounding, keep
// their bits across thread settings, and that only weft's threads compute.
// Skipped where the CPU does not take the pass (ops/nhwc_ops.h).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "ops/nhwc_ops.h"
#include "runtime/compiled_graph.h"
#include "test_support/session_util.h"
#include "test_support/threads.h"
#include "weft/graph_passes.h"
#include "weft/prepared_weights.h"

namespace weft {
namespace {

Tensor NhwcLayoutRandom(const Shape& shape, uint32_t seed) {
  return test::SeededFloats(shape, seed);
}

// A 2-D Conv node with a constant W (and B) added to the graph.
void AddConv(Graph& g, const std::string& name, const std::string& x,
             int64_t in, int64_t out, int64_t kernel, int64_t stride,
             int64_t pad, int64_t group, uint32_t seed) {
  g.Const(name + "/w",
          NhwcLayoutRandom({out, in / group, kernel, kernel}, seed));
  g.Const(name + "/b", NhwcLayoutRandom({out}, seed + 1));
  test::MustAdd(g,
                {name,
                 "Conv",
                 {x, name + "/w", name + "/b"},
                 {{"strides", AttrValue(std::vector<int64_t>{stride, stride})},
                  {"pads", AttrValue(std::vector<int64_t>(4, pad))},
                  {"group", AttrValue(group)}},
                 ""});
}

// A small CNN with every pattern the pass converts: a strided stem, a
// padded MaxPool, a residual block, a depthwise conv with Clip (ReLU6), two
// branches joined by Concat, a deep conv over a small plane (channel
// blocks), and GlobalAveragePool. `tail` reads one intermediate in NCHW.
Graph NhwcLayoutSmallCnn() {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({2, 3, 40, 40}));
  AddConv(g, "stem", "x", 3, 32, 3, 2, 1, 1, 10);
  g.Relu("stem_relu", "stem");
  test::MustAdd(g, {"pool",
                    "MaxPool",
                    {"stem_relu"},
                    {{"kernel_shape", AttrValue(std::vector<int64_t>{3, 3})},
                     {"strides", AttrValue(std::vector<int64_t>{2, 2})},
                     {"pads", AttrValue(std::vector<int64_t>{1, 1, 1, 1})}},
                    ""});
  AddConv(g, "res", "pool", 32, 32, 3, 1, 1, 1, 20);
  g.Add("res_add", "res", "pool");
  g.Relu("res_relu", "res_add");
  AddConv(g, "dw", "res_relu", 32, 32, 3, 1, 1, 32, 30);
  g.Const("lo", Tensor::Scalar<float>(0.0f));
  g.Const("hi", Tensor::Scalar<float>(6.0f));
  test::MustAdd(g, {"dw_clip", "Clip", {"dw", "lo", "hi"}, {}, ""});
  AddConv(g, "left", "dw_clip", 32, 16, 1, 1, 0, 1, 40);
  AddConv(g, "right", "dw_clip", 32, 16, 3, 1, 1, 1, 50);
  g.Relu("left_relu", "left");
  g.Relu("right_relu", "right");
  test::MustAdd(g, {"cat",
                    "Concat",
                    {"left_relu", "right_relu"},
                    {{"axis", AttrValue(int64_t{1})}},
                    ""});
  AddConv(g, "deep", "cat", 32, 256, 3, 2, 1, 1, 60);
  g.Relu("deep_relu", "deep");
  test::MustAdd(g, {"gap", "GlobalAveragePool", {"deep_relu"}, {}, ""});
  test::MustAdd(g, {"tail",
                    "ReduceSum",
                    {"res_relu"},
                    {{"keepdims", AttrValue(int64_t{0})}},
                    ""});
  return g;
}

SessionOptions NhwcLayoutOptions(int inter, int intra, bool nhwc) {
  SessionOptions options = test::PerSessionOptions(inter, intra);
  if (!nhwc) options.disabled_graph_passes = {"nhwc-layout"};
  return options;
}

double NhwcLayoutMaxRelativeError(const Tensor& got, const Tensor& want) {
  double scale = 0;
  for (float v : test::Values<float>(want)) {
    scale = std::max(scale, static_cast<double>(std::abs(v)));
  }
  return test::MaxAbsDifference(got, want) / std::max(scale, 1e-30);
}

// How many NhwcConv nodes a Run of these fetches executes.
size_t NhwcConvCount(Session& session, const std::vector<std::string>& fetches,
                     const NamedTensors& feeds) {
  const RunMetadata metadata = test::MustRunTraced(session, fetches, feeds);
  size_t count = 0;
  for (const NodeExecStats& s : metadata.node_stats) {
    count += s.op == "NhwcConv" ? 1 : 0;
  }
  return count;
}

// Where the CPU's rule takes channels-last only in graphs with a depthwise
// convolution (oneDNN's AVX2 kernels), NhwcLayoutSmallCnn (which has one) runs
// channels-last and a CNN without one stays NCHW.
TEST(NhwcLayoutRuleTest, OnlyGraphsWithADepthwiseConvolutionGoChannelsLast) {
  if (!internal::NhwcConvOnlyWithDepthwise()) {
    GTEST_SKIP() << "this CPU's rule does not ask for a depthwise convolution";
  }
  const NamedTensors feeds = {{"x", NhwcLayoutRandom({2, 3, 40, 40}, 1)}};
  auto with_depthwise =
      test::MustCreate(NhwcLayoutSmallCnn(), NhwcLayoutOptions(1, 1, true));
  ASSERT_NE(with_depthwise, nullptr);
  EXPECT_GT(NhwcConvCount(*with_depthwise, {"gap"}, feeds), 0u);

  Graph plain;
  plain.Placeholder("x", DataType::kFloat32, PartialShape({2, 3, 40, 40}));
  AddConv(plain, "stem", "x", 3, 32, 3, 2, 1, 1, 10);
  plain.Relu("stem_relu", "stem");
  AddConv(plain, "next", "stem_relu", 32, 32, 3, 1, 1, 1, 20);
  // Grouped (two input channels a group), not depthwise.
  AddConv(plain, "grouped", "next", 32, 32, 1, 1, 0, 16, 30);
  auto without =
      test::MustCreate(std::move(plain), NhwcLayoutOptions(1, 1, true));
  ASSERT_NE(without, nullptr);
  EXPECT_EQ(NhwcConvCount(*without, {"grouped"}, feeds), 0u);
}

class NhwcLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!internal::NhwcConvAvailable()) {
      GTEST_SKIP() << "this CPU keeps convolutions in NCHW";
    }
    if (internal::NhwcConvOnlyWithDepthwise()) {
      GTEST_SKIP() << "this CPU takes channels-last only in graphs with a "
                      "depthwise convolution (WEFT_NHWC_CONV=1 runs these)";
    }
  }
};

TEST_F(NhwcLayoutTest, ASmallCnnRunsChannelsLastAndAgreesWithNchw) {
  const NamedTensors feeds = {{"x", NhwcLayoutRandom({2, 3, 40, 40}, 1)}};
  const std::vector<std::string> fetches = {"gap", "tail"};
  auto nchw =
      test::MustCreate(NhwcLayoutSmallCnn(), NhwcLayoutOptions(1, 1, false));
  ASSERT_NE(nchw, nullptr);
  const std::vector<Tensor> want = test::MustRun(*nchw, fetches, feeds);

  std::vector<std::vector<Tensor>> got;
  for (auto [inter, intra] : {std::pair{1, 1}, {1, 2}, {2, 2}}) {
    SCOPED_TRACE(std::to_string(inter) + ", " + std::to_string(intra));
    auto session = test::MustCreate(NhwcLayoutSmallCnn(),
                                    NhwcLayoutOptions(inter, intra, true));
    ASSERT_NE(session, nullptr);
    EXPECT_GT(session->prepared_bytes(), 0);  // W reordered once.
    const RunMetadata metadata = test::MustRunTraced(*session, fetches, feeds);
    std::multiset<std::string> ops;
    for (const NodeExecStats& s : metadata.node_stats) ops.insert(s.op);
    EXPECT_EQ(ops.count("NhwcConv"), 6u);
    EXPECT_EQ(ops.count("Conv") + ops.count("FusedConv"), 0u);
    EXPECT_EQ(ops.count("NhwcMaxPool"), 1u);
    EXPECT_EQ(ops.count("NhwcGlobalAveragePool"), 1u);
    EXPECT_EQ(ops.count("NchwToNhwc"), 1u);  // The feed, once.
    EXPECT_EQ(ops.count("NhwcToNchw"), 1u);  // res_relu, for ReduceSum.
    EXPECT_EQ(ops.count("Concat"), 1u);
    got.push_back(test::MustRun(*session, fetches, feeds));
    ASSERT_EQ(got.back().size(), 2u);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got.back()[i].shape(), want[i].shape());
      EXPECT_LT(NhwcLayoutMaxRelativeError(got.back()[i], want[i]), 1e-5)
          << fetches[i];
    }
  }
  for (size_t s = 1; s < got.size(); ++s) {
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(got[s][i].BitwiseEqual(got[0][i])) << fetches[i];
    }
  }
}

// ResNet's plane sizes, where NhwcConv's plan takes each of its forms: a
// 28-row plane cut into row pieces (3 and 4 rows, top to bottom, the 4s at
// the ends; whole 4-row tiles where it runs as Winograd), a 14-row plane
// whose W is past 1 MiB (blocks of output channels), and a 14-row plane
// whose W is small (row pieces of 1 and 2 rows). Each agrees with the NCHW
// kernels, with the same bits at every thread setting.
TEST_F(NhwcLayoutTest, ResNetPlanesAgreeWithNchwWithTheSameBitsAtAnyThreads) {
  auto graph = [] {
    Graph g;
    g.Placeholder("x", DataType::kFloat32, PartialShape({1, 128, 28, 28}));
    AddConv(g, "rows", "x", 128, 128, 3, 1, 1, 1, 100);
    g.Relu("rows_relu", "rows");
    AddConv(g, "blocks", "rows_relu", 128, 256, 3, 2, 1, 1, 110);
    g.Relu("blocks_relu", "blocks");
    AddConv(g, "short_rows", "blocks_relu", 256, 64, 1, 1, 0, 1, 120);
    return g;
  };
  const NamedTensors feeds = {{"x", NhwcLayoutRandom({1, 128, 28, 28}, 9)}};
  // The graph's end only: a fetched intermediate that the passes fuse away
  // is computed from the graph as given, in NCHW.
  const std::vector<std::string> fetches = {"short_rows"};
  auto nchw = test::MustCreate(graph(), NhwcLayoutOptions(1, 1, false));
  ASSERT_NE(nchw, nullptr);
  const std::vector<Tensor> want = test::MustRun(*nchw, fetches, feeds);
  std::vector<std::vector<Tensor>> got;
  for (auto [inter, intra] : {std::pair{1, 1}, {1, 2}, {1, 3}, {2, 2}}) {
    SCOPED_TRACE(std::to_string(inter) + ", " + std::to_string(intra));
    auto session =
        test::MustCreate(graph(), NhwcLayoutOptions(inter, intra, true));
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(NhwcConvCount(*session, fetches, feeds), 3u);
    got.push_back(test::MustRun(*session, fetches, feeds));
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got.back()[i].shape(), want[i].shape()) << fetches[i];
      EXPECT_LT(NhwcLayoutMaxRelativeError(got.back()[i], want[i]), 1e-5)
          << fetches[i];
      EXPECT_TRUE(got.back()[i].BitwiseEqual(got[0][i])) << fetches[i];
    }
  }
}

// The rule for Winograd: 3 x 3, stride 1, no dilation, one group, channels
// in blocks of 16, planes of 7 rows or more, where the rule's CPU test (or
// WEFT_CONV_WINOGRAD) allows it; every other shape runs direct.
TEST_F(NhwcLayoutTest, OnlyThreeByThreeStrideOneConvolutionsRunAsWinograd) {
  internal::NhwcConvSpec spec;
  spec.x = {1, 64, 56, 56};
  spec.w = {64, 64, 3, 3};
  spec.pads = {1, 1, 1, 1};
  const bool rule = internal::NhwcConvWinogradAvailable();
  EXPECT_EQ(internal::NhwcConvRunsWinograd(spec), rule);
  internal::NhwcConvSpec blocks = spec;  // Blocks of output channels.
  blocks.x = {1, 256, 14, 14};
  blocks.w = {256, 256, 3, 3};
  EXPECT_EQ(internal::NhwcConvRunsWinograd(blocks), rule);
  internal::NhwcConvSpec strided = spec;
  strided.stride = {2, 2};
  EXPECT_FALSE(internal::NhwcConvRunsWinograd(strided));
  internal::NhwcConvSpec one_by_one = spec;
  one_by_one.w = {64, 64, 1, 1};
  one_by_one.pads = {0, 0, 0, 0};
  EXPECT_FALSE(internal::NhwcConvRunsWinograd(one_by_one));
  internal::NhwcConvSpec odd_channels = spec;
  odd_channels.x[1] = 24;
  odd_channels.w = {24, 24, 3, 3};
  EXPECT_FALSE(internal::NhwcConvRunsWinograd(odd_channels));
  internal::NhwcConvSpec late = spec;  // ResNet's last layers: 7 x 7.
  late.x = {1, 512, 7, 7};
  late.w = {512, 512, 3, 3};
  EXPECT_EQ(internal::NhwcConvRunsWinograd(late), rule);
  internal::NhwcConvSpec small_plane = late;  // 6 x 6: tiles would waste.
  small_plane.x = {1, 512, 6, 6};
  EXPECT_FALSE(internal::NhwcConvRunsWinograd(small_plane));
  internal::NhwcConvSpec grouped = spec;
  grouped.group = 2;
  grouped.w = {64, 32, 3, 3};
  EXPECT_FALSE(internal::NhwcConvRunsWinograd(grouped));
}

// Winograd in each form of NhwcConv's plan, with a fused residual and ReLU:
// row pieces on a 28-row plane, blocks of output channels on a 14-row
// plane whose W is past 1 MiB and on a 7-row plane (tiles past its edge).
// Each agrees with the NCHW kernels (direct
// convolutions) within float32 rounding, keeps its bits at every thread
// setting, and an image's output is the same alone as in a batch.
TEST_F(NhwcLayoutTest, ResidualBlocksAgreeWithNchwAndKeepTheirBitsInABatch) {
  auto graph = [](int64_t batch) {
    Graph g;
    g.Placeholder("x", DataType::kFloat32, PartialShape({batch, 128, 28, 28}));
    AddConv(g, "rows", "x", 128, 128, 3, 1, 1, 1, 200);
    g.Add("rows_add", "rows", "x");
    g.Relu("rows_relu", "rows_add");
    AddConv(g, "down", "rows_relu", 128, 256, 1, 2, 0, 1, 210);
    AddConv(g, "blocks", "down", 256, 256, 3, 1, 1, 1, 220);
    g.Add("blocks_add", "blocks", "down");
    g.Relu("blocks_relu", "blocks_add");
    AddConv(g, "down7", "blocks_relu", 256, 256, 1, 2, 0, 1, 230);
    AddConv(g, "late", "down7", 256, 256, 3, 1, 1, 1, 240);
    g.Add("late_add", "late", "down7");
    g.Relu("late_relu", "late_add");
    return g;
  };
  const Tensor both = NhwcLayoutRandom({2, 128, 28, 28}, 11);
  // The graph's end only: a fetched intermediate that the passes fuse away
  // is computed from the graph as given, in NCHW.
  const std::vector<std::string> fetches = {"late_relu"};
  auto nchw = test::MustCreate(graph(2), NhwcLayoutOptions(1, 1, false));
  ASSERT_NE(nchw, nullptr);
  const std::vector<Tensor> want = test::MustRun(*nchw, fetches, {{"x", both}});
  std::vector<std::vector<Tensor>> got;
  for (auto [inter, intra] : {std::pair{1, 1}, {1, 2}, {1, 3}, {2, 2}}) {
    SCOPED_TRACE(std::to_string(inter) + ", " + std::to_string(intra));
    auto session =
        test::MustCreate(graph(2), NhwcLayoutOptions(inter, intra, true));
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(NhwcConvCount(*session, fetches, {{"x", both}}), 5u);
    got.push_back(test::MustRun(*session, fetches, {{"x", both}}));
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got.back()[i].shape(), want[i].shape()) << fetches[i];
      EXPECT_LT(NhwcLayoutMaxRelativeError(got.back()[i], want[i]), 1e-5)
          << fetches[i];
      EXPECT_TRUE(got.back()[i].BitwiseEqual(got[0][i])) << fetches[i];
    }
  }
  // Each image alone, against its rows of the batch.
  auto alone = test::MustCreate(graph(1), NhwcLayoutOptions(1, 2, true));
  ASSERT_NE(alone, nullptr);
  const int64_t image = 128 * 28 * 28;
  for (int64_t n = 0; n < 2; ++n) {
    Tensor x(DataType::kFloat32, Shape({1, 128, 28, 28}));
    std::copy_n(both.data<float>() + n * image, image, x.data<float>());
    const std::vector<Tensor> one = test::MustRun(*alone, fetches, {{"x", x}});
    for (size_t i = 0; i < one.size(); ++i) {
      const int64_t size = one[i].NumElements();
      EXPECT_EQ(
          std::memcmp(one[i].data<float>(), got[0][i].data<float>() + n * size,
                      static_cast<size_t>(size) * sizeof(float)),
          0)
          << fetches[i] << ", image " << n;
    }
  }
}

// A fetched intermediate the pass removed is computed from the graph as
// given: the value is NCHW and right.
TEST_F(NhwcLayoutTest, AFetchedIntermediateIsStillNchw) {
  const NamedTensors feeds = {{"x", NhwcLayoutRandom({2, 3, 40, 40}, 2)}};
  auto nchw =
      test::MustCreate(NhwcLayoutSmallCnn(), NhwcLayoutOptions(1, 1, false));
  auto nhwc =
      test::MustCreate(NhwcLayoutSmallCnn(), NhwcLayoutOptions(1, 2, true));
  ASSERT_NE(nchw, nullptr);
  ASSERT_NE(nhwc, nullptr);
  for (const char* fetch : {"stem_relu", "cat", "deep_relu"}) {
    const Tensor want = test::MustRun(*nchw, {fetch}, feeds).at(0);
    const Tensor got = test::MustRun(*nhwc, {fetch}, feeds).at(0);
    ASSERT_EQ(got.shape(), want.shape()) << fetch;
    EXPECT_LT(NhwcLayoutMaxRelativeError(got, want), 1e-5) << fetch;
  }
}

// A convolution of a multi-output node's second output ("halves:1", as
// ShuffleNet's channel split feeds its branch): the conversion the pass
// adds is named after that tensor, and a node name cannot hold ':'. Found
// by tests/onnx/pass_equivalence (the session failed to compile).
TEST_F(NhwcLayoutTest, AConvolutionOfASecondOutputRunsChannelsLast) {
  auto graph = [] {
    Graph g;
    g.Placeholder("x", DataType::kFloat32, PartialShape({1, 8, 10, 10}));
    test::MustAdd(g, {"halves",
                      "Split",
                      {"x"},
                      {{"axis", AttrValue(int64_t{1})},
                       {"num_outputs", AttrValue(int64_t{2})}},
                      ""});
    AddConv(g, "branch", "halves:1", 4, 16, 3, 1, 1, 1, 70);
    return g;
  };
  const NamedTensors feeds = {{"x", NhwcLayoutRandom({1, 8, 10, 10}, 3)}};
  auto nchw = test::MustCreate(graph(), NhwcLayoutOptions(1, 1, false));
  auto nhwc = test::MustCreate(graph(), NhwcLayoutOptions(1, 1, true));
  ASSERT_NE(nchw, nullptr);
  ASSERT_NE(nhwc, nullptr);
  EXPECT_EQ(NhwcConvCount(*nhwc, {"branch"}, feeds), 1u);
  const Tensor want = test::MustRun(*nchw, {"branch"}, feeds).at(0);
  const Tensor got = test::MustRun(*nhwc, {"branch"}, feeds).at(0);
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_LT(NhwcLayoutMaxRelativeError(got, want), 1e-5);
}

// oneDNN runs with one OpenMP thread on the calling weft thread: no
// OpenMP team is started, and the caller's own OpenMP setting is back
// after the Run.
TEST_F(NhwcLayoutTest, OnlyWeftThreadsComputeAndOpenMpSettingsAreKept) {
  Graph g;
  g.Placeholder("x", DataType::kFloat32, PartialShape({1, 64, 56, 56}));
  AddConv(g, "a", "x", 64, 64, 3, 1, 1, 1, 70);
  g.Relu("a_relu", "a");
  AddConv(g, "b", "a_relu", 64, 64, 3, 1, 1, 1, 80);
  const NamedTensors feeds = {{"x", NhwcLayoutRandom({1, 64, 56, 56}, 3)}};
  omp_set_num_threads(3);
  SessionOptions options = NhwcLayoutOptions(1, 2, true);
  auto session = test::MustCreate(std::move(g), options);
  ASSERT_NE(session, nullptr);
  test::MustRun(*session, {"b"}, feeds);                 // Pools are up.
  const int expected = test::CountProcessThreads() + 1;  // + the sampler.
  EXPECT_EQ(test::MostProcessThreadsDuring([&] {
              for (int i = 0; i < 5; ++i) test::MustRun(*session, {"b"}, feeds);
            }),
            expected);
  EXPECT_EQ(omp_get_max_threads(), 3);
  // The caller computing (inter = -1) gets its setting back too.
  SessionOptions inline_options = NhwcLayoutOptions(-1, 1, true);
  Graph small;
  small.Placeholder("x", DataType::kFloat32, PartialShape({1, 64, 56, 56}));
  AddConv(small, "a", "x", 64, 64, 3, 1, 1, 1, 70);
  auto caller_runs = test::MustCreate(std::move(small), inline_options);
  ASSERT_NE(caller_runs, nullptr);
  test::MustRun(*caller_runs, {"a"}, feeds);
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(1);
}

// A feed of another batch than the one the pass saw gets its own
// specialised graph; a wrong channel count is an error naming the shapes.
TEST_F(NhwcLayoutTest, OpenBatchesAndWrongShapes) {
  auto graph = [] {
    Graph g;
    g.Placeholder("x", DataType::kFloat32, PartialShape({-1, 8, 12, 12}));
    AddConv(g, "c", "x", 8, 16, 3, 1, 1, 1, 90);
    g.Relu("r", "c");
    return g;
  };
  auto nchw = test::MustCreate(graph(), NhwcLayoutOptions(1, 1, false));
  auto nhwc = test::MustCreate(graph(), NhwcLayoutOptions(1, 2, true));
  ASSERT_NE(nchw, nullptr);
  ASSERT_NE(nhwc, nullptr);
  for (int64_t batch : {1, 3, 1}) {
    const NamedTensors feeds = {{"x", NhwcLayoutRandom({batch, 8, 12, 12}, 4)}};
    const RunMetadata metadata = test::MustRunTraced(*nhwc, {"r"}, feeds);
    std::set<std::string> ops;
    for (const NodeExecStats& s : metadata.node_stats) ops.insert(s.op);
    EXPECT_EQ(ops.count("NhwcConv"), 1u) << batch;
    const Tensor got = test::MustRun(*nhwc, {"r"}, feeds).at(0);
    const Tensor want = test::MustRun(*nchw, {"r"}, feeds).at(0);
    EXPECT_LT(NhwcLayoutMaxRelativeError(got, want), 1e-5) << batch;
  }
  std::vector<Tensor> out;
  const Status wrong =
      nhwc->Run({{"x", NhwcLayoutRandom({1, 5, 12, 12}, 5)}}, {"r"}, {}, &out);
  EXPECT_FALSE(wrong.ok());
}

// A session compiles its graph again for each batch size it meets (its
// placeholders declaring the feeds' shapes); NhwcConv's packed W does not
// depend on the batch, so those compiles take it from the session's
// PreparedWeights instead of packing it again.
TEST_F(NhwcLayoutTest, CompilesForOtherBatchSizesShareThePackedWeights) {
  const Graph given = NhwcLayoutSmallCnn();
  internal::CompileOptions options;
  options.prepared_weights = std::make_shared<PreparedWeights>();
  std::vector<int64_t> packed_per_compile;
  for (int64_t batch : {1, 2, 4}) {
    auto optimized =
        OptimizeGraph(test::WithPlaceholderShape(
                          given, "x", PartialShape({batch, 3, 40, 40})),
                      {});
    ASSERT_TRUE(optimized.ok()) << optimized.status();
    auto compiled = internal::CompiledGraph::Compile(optimized->graph, options);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    int64_t packed = 0;
    for (int i = 0; i < (*compiled)->num_nodes(); ++i) {
      const internal::CompiledNode& node = (*compiled)->node(i);
      if (node.def->name == "NhwcConv") {
        EXPECT_GT(node.kernel->prepared_bytes(), 0) << node.name;
        ++packed;
      }
    }
    packed_per_compile.push_back(packed);
  }
  // stem, res, dw, left, right, deep.
  EXPECT_EQ(packed_per_compile, std::vector<int64_t>({6, 6, 6}));
  EXPECT_EQ(options.prepared_weights->size(), 6);
  EXPECT_EQ(options.prepared_weights->reuses(), 12);
}

// The channels-last ops are internal, but a graph file can name them: bad
// input is an error naming what is wrong, never a crash.
TEST_F(NhwcLayoutTest, TheChannelsLastOpsRejectBadInput) {
  const AttrMap window = {
      {"kernel_shape", AttrValue(std::vector<int64_t>{3, 3})},
      {"strides", AttrValue(std::vector<int64_t>{1, 1})},
      {"dilations", AttrValue(std::vector<int64_t>{1, 1})},
      {"pads", AttrValue(std::vector<int64_t>(4, 1))}};
  auto run = [](Graph g, const NamedTensors& feeds) {
    auto session =
        test::MustCreate(std::move(g), NhwcLayoutOptions(1, 1, true));
    std::vector<Tensor> out;
    return session == nullptr ? InternalError("no session")
                              : session->Run(feeds, {"y"}, {}, &out);
  };
  {  // W fed, not a constant.
    Graph g;
    g.Placeholder("x", DataType::kFloat32, PartialShape({1, 8, 8, 4}));
    g.Placeholder("w", DataType::kFloat32, PartialShape({4, 4, 3, 3}));
    test::MustAdd(g, {"y", "NhwcConv", {"x", "w"}, window, ""});
    const Status status =
        run(std::move(g), {{"x", NhwcLayoutRandom({1, 8, 8, 4}, 6)},
                           {"w", NhwcLayoutRandom({4, 4, 3, 3}, 7)}});
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("constant"), std::string::npos) << status;
  }
  {  // A MaxPool over a tensor of rank 3.
    Graph g;
    g.Placeholder("x", DataType::kFloat32, PartialShape({8, 8, 4}));
    test::MustAdd(g, {"y", "NhwcMaxPool", {"x"}, window, ""});
    const Status status =
        run(std::move(g), {{"x", NhwcLayoutRandom({8, 8, 4}, 8)}});
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("[N, H, W, C]"), std::string::npos)
        << status;
  }
}

}  // namespace
}  // namespace weft
