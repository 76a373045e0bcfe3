// NhwcQLinearConv (channels-last int8 convolutions) against QLinearConv,
// bit for bit, and the nhwc-layout pass that makes it from a quantized CNN.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <set>

#include "framework/op_registry_impl.h"
#include "runtime/compiled_graph.h"
#include "test_support/session_util.h"
#include "weft/prepared_weights.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

struct QuantizedConvNhwcCase {
  const char* name;
  int64_t n, c, h, w, m, k, stride, pad, dilation, group;
};

// One QLinearConv's constants: int8 weights, symmetric unless `w_zero`
// says otherwise, per-channel weight scales, an int32 bias, and y's dtype.
void AddQLinearConv(Graph& g, const std::string& name, const std::string& x,
                    const QuantizedConvNhwcCase& t, bool int8_y, uint32_t seed,
                    const std::string& op = "QLinearConv",
                    std::vector<int8_t> w_zero = {},
                    const std::string& x_layout = "") {
  if (w_zero.empty()) w_zero.assign(static_cast<size_t>(t.m), 0);
  const Shape w_shape{t.m, t.c / t.group, t.k, t.k};
  g.Const(name + "/w", test::SeededBytes<int8_t>(w_shape, seed));
  std::vector<float> w_scale;
  std::vector<int32_t> bias;
  for (int64_t i = 0; i < t.m; ++i) {
    w_scale.push_back(0.002f + 0.0003f * static_cast<float>(i % 11));
    bias.push_back(static_cast<int32_t>((i * 977) % 4001) - 2000);
  }
  g.Const(name + "/xs", Tensor::Scalar<float>(0.05f));
  g.Const(name + "/xz", Tensor::Scalar<uint8_t>(117));
  g.Const(name + "/ws", Tensor::FromVector<float>({t.m}, w_scale));
  g.Const(name + "/wz", Tensor::FromVector<int8_t>({t.m}, w_zero));
  g.Const(name + "/ys", Tensor::Scalar<float>(0.07f));
  if (int8_y) {
    g.Const(name + "/yz", Tensor::Scalar<int8_t>(-5));
  } else {
    g.Const(name + "/yz", Tensor::Scalar<uint8_t>(3));
  }
  g.Const(name + "/b", Tensor::FromVector<int32_t>({t.m}, bias));
  AttrMap attrs = {{"group", t.group},
                   {"kernel_shape", std::vector<int64_t>{t.k, t.k}},
                   {"pads", std::vector<int64_t>{t.pad, t.pad, t.pad, t.pad}},
                   {"strides", std::vector<int64_t>{t.stride, t.stride}},
                   {"dilations", std::vector<int64_t>{t.dilation, t.dilation}}};
  if (!x_layout.empty()) attrs["x_layout"] = x_layout;
  test::MustAdd(g, {name,
                    op,
                    {x, name + "/xs", name + "/xz", name + "/w", name + "/ws",
                     name + "/wz", name + "/ys", name + "/yz", name + "/b"},
                    attrs,
                    ""});
}

// x [N, C, H, W] (uint8) through one QLinearConv "y" of `t`.
Graph NchwConvGraph(const QuantizedConvNhwcCase& t, bool int8_y) {
  Graph g;
  g.Placeholder("x", DataType::kUInt8, Shape{t.n, t.c, t.h, t.w});
  AddQLinearConv(g, "y", "x", t, int8_y, 7);
  return g;
}

// The same as NhwcQLinearConv "y_nhwc" between the two layout moves, the
// output "y" in NCHW again.
Graph ChannelsLastConvGraph(const QuantizedConvNhwcCase& t, bool int8_y) {
  Graph g;
  g.Placeholder("x", DataType::kUInt8, Shape{t.n, t.c, t.h, t.w});
  test::MustAdd(g, {"x_nhwc", "NchwToNhwc", {"x"}, {}, ""});
  AddQLinearConv(g, "y_nhwc", "x_nhwc", t, int8_y, 7, "NhwcQLinearConv");
  test::MustAdd(g, {"y", "NhwcToNchw", {"y_nhwc"}, {}, ""});
  return g;
}

// A session that runs `g` with the nhwc-layout pass off (QLinearConv in
// NCHW, one thread): the reference the channels-last kernel is held to.
std::unique_ptr<Session> NchwSession(const Graph& g) {
  SessionOptions plain = test::PerSessionOptions(1, 1);
  plain.disabled_graph_passes = {"nhwc-layout"};
  return test::MustCreate(g, plain);
}

// Every shape NhwcQLinearConv takes (1 x 1, 3 x 3 padded, strided, the 7 x 7
// stem over three channels, dilated, depthwise at strides 1 and 2, unpadded,
// 5 x 5 plain, strided and dilated, windows the grid kernel is not compiled
// for, and on a plane whose every window reaches the padding; output
// channels in partial vectors and blocks, input channels that are not whole
// quads, two images): the same bits as QLinearConv, uint8 and int8 y, at one
// and two threads, on the int8 kernel this process runs (the kernel-choice
// variants of ctest run the other).
TEST(NhwcQLinearConvTest, GivesQLinearConvsBitsOnEveryShape) {
  const QuantizedConvNhwcCase cases[] = {
      {"1x1", 2, 16, 9, 11, 24, 1, 1, 0, 1, 1},
      {"3x3", 1, 8, 10, 9, 64, 3, 1, 1, 1, 1},
      {"3x3/2 partial block", 1, 32, 9, 12, 72, 3, 2, 1, 1, 1},
      {"7x7/2 stem", 1, 3, 17, 15, 16, 7, 2, 3, 1, 1},
      // Columns folded into the channels (DirectConvFoldsColumns), the
      // input copied for the bytes read past the last window even where
      // nothing is padded; dilated, not folded.
      {"7x7 stem unpadded, two images", 2, 3, 9, 11, 16, 7, 1, 0, 1, 1},
      {"one channel 5x5", 2, 1, 9, 10, 24, 5, 1, 2, 1, 1},
      {"three channels 5x5 dilated", 1, 3, 12, 12, 16, 5, 1, 4, 2, 1},
      {"channels not whole quads", 2, 6, 5, 7, 130, 3, 1, 1, 1, 1},
      // 300 pixels in 50 tiles, small weights: four chunks (13, 13, 13 and
      // 11 tiles), each over two blocks of output channels.
      {"1x1, four chunks of tiles", 2, 16, 10, 15, 80, 1, 1, 0, 1, 1},
      // 100 pixels in 17 tiles, 295 KB of weights: chunks of 16 tiles and
      // one of 1, over two blocks.
      {"3x3, large weights, chunks of 16 tiles", 1, 256, 10, 10, 128, 3, 1, 1,
       1, 1},
      {"dilated", 1, 12, 11, 11, 20, 3, 1, 2, 2, 1},
      // Deep enough for oneDNN's int8 convolution where the CPU has
      // AMX-INT8 (and under WEFT_DNNL_INT8=1): strided, dilated, channels
      // not whole quads, a 1 x 1 over 512 channels, bands of rows.
      {"3x3/2 deep, two images", 2, 64, 9, 11, 40, 3, 2, 1, 1, 1},
      {"3x3 dilated deep", 1, 64, 11, 11, 20, 3, 1, 2, 2, 1},
      {"3x3 dilated deep, channels not whole quads", 1, 62, 11, 11, 30, 3, 1, 2,
       2, 1},
      {"1x1 over 512 channels", 1, 512, 5, 6, 24, 1, 1, 0, 1, 1},
      {"depthwise", 2, 24, 7, 9, 24, 3, 1, 1, 1, 24},
      {"depthwise/2", 1, 40, 9, 10, 40, 3, 2, 1, 1, 40},
      {"depthwise few channels", 1, 5, 6, 6, 5, 3, 1, 1, 1, 5},
      {"depthwise unpadded", 2, 16, 6, 7, 16, 3, 1, 0, 1, 16},
      {"depthwise 5x5 dilated", 1, 16, 11, 12, 16, 5, 1, 4, 2, 16},
      {"depthwise all border", 1, 16, 2, 2, 16, 3, 1, 1, 1, 16},
      {"depthwise/2 even", 2, 32, 8, 8, 32, 3, 2, 1, 1, 32},
      {"depthwise 5x5", 1, 20, 9, 13, 20, 5, 1, 2, 1, 20},
      {"depthwise 5x5/2", 1, 48, 11, 14, 48, 5, 2, 2, 1, 48},
      {"depthwise 7x7, no grid kernel", 1, 16, 12, 15, 16, 7, 1, 3, 1, 16},
      {"depthwise 3x3/3, no grid kernel", 1, 16, 12, 15, 16, 3, 3, 1, 1, 16},
      {"depthwise, 64-channel blocks and a narrow tail", 1, 144, 9, 10, 144, 3,
       1, 1, 1, 144},
      {"depthwise/2, a block and a half", 2, 96, 9, 9, 96, 3, 2, 1, 1, 96},
      {"depthwise 5x5/2, a block, a wide tail, two row groups", 1, 120, 11, 12,
       120, 5, 2, 2, 1, 120},
  };
  for (const QuantizedConvNhwcCase& t : cases) {
    for (bool int8_y : {false, true}) {
      SCOPED_TRACE(std::string(t.name) + (int8_y ? ", int8 y" : ", uint8 y"));
      const Shape x_shape{t.n, t.c, t.h, t.w};
      const Tensor x = test::SeededBytes<uint8_t>(x_shape, 3);
      auto want_session = NchwSession(NchwConvGraph(t, int8_y));
      ASSERT_NE(want_session, nullptr);
      const Tensor want = test::MustRun(*want_session, {"y"}, {{"x", x}})[0];

      const Graph channels_last = ChannelsLastConvGraph(t, int8_y);
      for (int threads : {1, 2}) {
        auto session = test::MustCreate(
            channels_last, test::PerSessionOptions(threads, threads));
        ASSERT_NE(session, nullptr);
        EXPECT_GT(session->prepared_bytes(), 0);  // w packed once
        const Tensor got = test::MustRun(*session, {"y"}, {{"x", x}})[0];
        ASSERT_EQ(got.shape(), want.shape());
        EXPECT_TRUE(got.BitwiseEqual(want)) << threads << " threads";
      }
      // An image's few channels read from the NCHW planes (x_layout NCHW,
      // as the nhwc-layout pass sets it on a network's first layer).
      if (t.group != 1 || t.c > 4) continue;
      Graph from_planes;
      from_planes.Placeholder("x", DataType::kUInt8, x_shape);
      AddQLinearConv(from_planes, "y_nhwc", "x", t, int8_y, 7,
                     "NhwcQLinearConv", {}, "NCHW");
      test::MustAdd(from_planes, {"y", "NhwcToNchw", {"y_nhwc"}, {}, ""});
      for (int threads : {1, 2}) {
        auto session = test::MustCreate(
            from_planes, test::PerSessionOptions(threads, threads));
        ASSERT_NE(session, nullptr);
        const Tensor got = test::MustRun(*session, {"y"}, {{"x", x}})[0];
        ASSERT_EQ(got.shape(), want.shape());
        EXPECT_TRUE(got.BitwiseEqual(want))
            << threads << " threads, x from the planes";
      }
    }
  }
}

TEST(NhwcQLinearConvTest, RefusesWhatItCannotCompute) {
  const QuantizedConvNhwcCase t = {"3x3", 1, 8, 6, 6, 16, 3, 1, 1, 1, 1};
  const Shape x_shape{1, 6, 6, 8};
  {
    // A weight zero point other than 0.
    Graph g;
    g.Placeholder("x", DataType::kUInt8, x_shape);
    std::vector<int8_t> zeros(16, 0);
    zeros[3] = 2;
    AddQLinearConv(g, "y", "x", t, false, 7, "NhwcQLinearConv", zeros);
    auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
    ASSERT_NE(session, nullptr);
    std::vector<Tensor> out;
    const Status status = session->Run(
        {{"x", test::SeededBytes<uint8_t>(x_shape, 1)}}, {"y"}, {}, &out);
    ASSERT_FALSE(status.ok());
    EXPECT_THAT(status.message(), HasSubstr("w_zero_point 0"));
  }
  {
    // Channels that do not match w.
    Graph g;
    g.Placeholder("x", DataType::kUInt8, Shape{1, 6, 6, 5});
    AddQLinearConv(g, "y", "x", t, false, 7, "NhwcQLinearConv");
    auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
    ASSERT_NE(session, nullptr);
    std::vector<Tensor> out;
    const Status status =
        session->Run({{"x", test::SeededBytes<uint8_t>(Shape{1, 6, 6, 5}, 1)}},
                     {"y"}, {}, &out);
    ASSERT_FALSE(status.ok());
    EXPECT_THAT(status.message(), HasSubstr("5 channels"));
  }
}

// A session compiles its graph again for each batch size it meets; the
// direct and depthwise weights do not depend on it, so those compiles take
// them from the session's PreparedWeights instead of preparing them again.
TEST(NhwcQLinearConvTest, CompilesForOtherBatchSizesShareThePreparedWeights) {
  const QuantizedConvNhwcCase direct = {"3x3", 1, 8, 6, 6, 16, 3, 1, 1, 1, 1};
  const QuantizedConvNhwcCase depthwise = {"dw", 1, 16, 6, 6, 16,
                                           3,    1, 1,  1, 16};
  Graph given;
  given.Placeholder("x", DataType::kUInt8, PartialShape({1, 6, 6, 8}));
  AddQLinearConv(given, "a", "x", direct, false, 7, "NhwcQLinearConv");
  AddQLinearConv(given, "b", "a", depthwise, false, 8, "NhwcQLinearConv");
  internal::CompileOptions options;
  options.prepared_weights = std::make_shared<PreparedWeights>();
  for (int64_t batch : {1, 3, 2}) {
    const Graph g =
        test::WithPlaceholderShape(given, "x", PartialShape({batch, 6, 6, 8}));
    auto compiled = internal::CompiledGraph::Compile(g, options);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    for (const char* conv : {"a", "b"}) {
      EXPECT_GT((*compiled)
                    ->node((*compiled)->FindNode(conv))
                    .kernel->prepared_bytes(),
                0)
          << conv;
    }
  }
  EXPECT_EQ(options.prepared_weights->size(), 2);
  EXPECT_EQ(options.prepared_weights->reuses(), 4);
}

// A quantized residual CNN as qdq-fusion leaves one (QLinearConv, uint8
// MaxPool, QLinearAdd, depthwise): where the int8 kernel is VNNI the pass
// runs it channels-last end to end, with one move in and one out, and the
// result keeps its bits at every thread setting.
TEST(NhwcQLinearConvTest, ThePassRunsAQuantizedCnnChannelsLast) {
  if (internal::OpRegistry::Global().FindChannelsLastConv("QLinearConv") ==
      nullptr) {
    GTEST_SKIP() << "this process's int8 kernel keeps QLinearConv in NCHW";
  }
  auto build = [] {
    Graph g;
    g.Placeholder("x", DataType::kUInt8, PartialShape({2, 3, 20, 20}));
    AddQLinearConv(g, "stem", "x", {"", 2, 3, 20, 20, 32, 3, 2, 1, 1, 1}, false,
                   11);
    test::MustAdd(g, {"pool",
                      "MaxPool",
                      {"stem"},
                      {{"kernel_shape", AttrValue(std::vector<int64_t>{3, 3})},
                       {"strides", AttrValue(std::vector<int64_t>{1, 1})},
                       {"pads", AttrValue(std::vector<int64_t>{1, 1, 1, 1})}},
                      ""});
    AddQLinearConv(g, "res", "pool", {"", 2, 32, 10, 10, 32, 3, 1, 1, 1, 1},
                   false, 13);
    g.Const("as", Tensor::Scalar<float>(0.07f));
    g.Const("az", Tensor::Scalar<uint8_t>(3));
    g.Const("cs", Tensor::Scalar<float>(0.1f));
    g.Const("cz", Tensor::Scalar<uint8_t>(1));
    test::MustAdd(g, {"add",
                      "QLinearAdd",
                      {"res", "as", "az", "pool", "as", "az", "cs", "cz"},
                      {},
                      ""});
    AddQLinearConv(g, "dw", "add", {"", 2, 32, 10, 10, 32, 3, 1, 1, 1, 32},
                   false, 17);
    return g;
  };
  const Tensor x = test::SeededBytes<uint8_t>(Shape{2, 3, 20, 20}, 5);
  auto reference = NchwSession(build());
  ASSERT_NE(reference, nullptr);
  const Tensor want = test::MustRun(*reference, {"dw"}, {{"x", x}})[0];
  for (auto [inter, intra] : {std::pair{1, 1}, {1, 2}, {2, 2}}) {
    SCOPED_TRACE(std::to_string(inter) + ", " + std::to_string(intra));
    auto session =
        test::MustCreate(build(), test::PerSessionOptions(inter, intra));
    ASSERT_NE(session, nullptr);
    const RunMetadata metadata =
        test::MustRunTraced(*session, {"dw"}, {{"x", x}});
    std::multiset<std::string> ops;
    for (const NodeExecStats& s : metadata.node_stats) ops.insert(s.op);
    EXPECT_EQ(ops.count("NhwcQLinearConv"), 3u);
    EXPECT_EQ(ops.count("QLinearConv"), 0u);
    EXPECT_EQ(ops.count("NhwcMaxPool"), 1u);
    EXPECT_EQ(ops.count("QLinearAdd"), 1u);
    // The stem reads the image's planes itself (x_layout NCHW).
    EXPECT_EQ(ops.count("NchwToNhwc"), 0u);
    EXPECT_EQ(ops.count("NhwcToNchw"), 1u);
    const Tensor got = test::MustRun(*session, {"dw"}, {{"x", x}})[0];
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_TRUE(got.BitwiseEqual(want));
  }
}

// A Run that feeds a constant's output (the weights, or the requantization's
// scales and zero points) runs with what it fed, as the graph as given
// would, whether or not the layout pass made the convolution channels-last;
// the next Run without it runs with the constants again.
TEST(NhwcQLinearConvTest, AFedConstantReplacesItOnlyForThatRun) {
  const QuantizedConvNhwcCase conv = {"", 1, 32, 10, 10, 32, 3, 1, 1, 1, 1};
  // The batch open (the pass runs at the first Run, on the shapes fed) or
  // given (it runs at creation).
  int64_t batch = -1;
  auto build = [&](uint32_t seed) {
    Graph g;
    g.Placeholder("x", DataType::kUInt8, PartialShape({batch, 32, 10, 10}));
    AddQLinearConv(g, "res", "x", conv, false, seed);
    return g;
  };
  const Tensor x = test::SeededBytes<uint8_t>(Shape{1, 32, 10, 10}, 5);
  const Tensor other_w = test::SeededBytes<int8_t>(Shape{32, 32, 3, 3}, 21);
  auto reference = NchwSession(build(7));
  ASSERT_NE(reference, nullptr);
  const Tensor want = test::MustRun(*reference, {"res"}, {{"x", x}})[0];
  const Tensor want_other_w =
      test::MustRun(*reference, {"res"}, {{"x", x}, {"res/w", other_w}})[0];
  const Tensor other_scale = Tensor::Scalar<float>(0.11f);
  const Tensor want_other_ys = test::MustRun(
      *reference, {"res"}, {{"x", x}, {"res/ys", other_scale}})[0];
  ASSERT_FALSE(want_other_w.BitwiseEqual(want));
  ASSERT_FALSE(want_other_ys.BitwiseEqual(want));
  for (int threads : {1, 2, -1, -2}) {
    batch = threads < 0 ? 1 : -1;
    threads = std::abs(threads);
    SCOPED_TRACE(testing::Message() << threads << " threads, batch " << batch);
    auto session =
        test::MustCreate(build(7), test::PerSessionOptions(threads, threads));
    ASSERT_NE(session, nullptr);
    EXPECT_TRUE(
        test::MustRun(*session, {"res"}, {{"x", x}})[0].BitwiseEqual(want));
    EXPECT_TRUE(
        test::MustRun(*session, {"res"}, {{"x", x}, {"res/w", other_w}})[0]
            .BitwiseEqual(want_other_w));
    EXPECT_TRUE(
        test::MustRun(*session, {"res"}, {{"x", x}, {"res/ys", other_scale}})[0]
            .BitwiseEqual(want_other_ys));
    EXPECT_TRUE(
        test::MustRun(*session, {"res"}, {{"x", x}})[0].BitwiseEqual(want));
  }
}

// The op itself, in a graph that names it: a fed scale or zero point
// requantizes as QLinearConv would with it; a fed w is refused by name
// (its packing is of the constant).
TEST(NhwcQLinearConvTest, UsesAFedScaleAndRefusesAFedW) {
  const QuantizedConvNhwcCase conv = {"", 1, 16, 6, 6, 16, 3, 1, 1, 1, 1};
  const Tensor x = test::SeededBytes<uint8_t>(Shape{1, 16, 6, 6}, 3);
  auto want_session = NchwSession(NchwConvGraph(conv, false));
  ASSERT_NE(want_session, nullptr);
  const Tensor other_scale = Tensor::Scalar<float>(0.11f);
  const Tensor want =
      test::MustRun(*want_session, {"y"}, {{"x", x}, {"y/ys", other_scale}})[0];

  SessionOptions as_built = test::PerSessionOptions(1, 2);
  as_built.optimize_graph = false;
  auto session = test::MustCreate(ChannelsLastConvGraph(conv, false), as_built);
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(
      test::MustRun(*session, {"y"}, {{"x", x}, {"y_nhwc/ys", other_scale}})[0]
          .BitwiseEqual(want));
  std::vector<Tensor> out;
  const Status fed_w = session->Run(
      {{"x", x},
       {"y_nhwc/w", test::SeededBytes<int8_t>(Shape{16, 16, 3, 3}, 21)}},
      {"y"}, {}, &out);
  EXPECT_EQ(fed_w.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(fed_w.message(), HasSubstr("constant w"));
}

}  // namespace
}  // namespace weft
