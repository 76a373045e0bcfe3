// Shape and data-movement ops, normalisation and the other reductions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>

#include "test_support/session_util.h"

namespace weft {
namespace {

using test::Values;
using ::testing::HasSubstr;

Tensor Iota(const Shape& shape) {
  Tensor t(DataType::kFloat32, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = float(i);
  return t;
}

Tensor Int64s(const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>(Shape{static_cast<int64_t>(v.size())}, v);
}

// Runs `fetches` with intra 1 and intra 2 (bitwise equal) and returns them.
std::vector<Tensor> ShapeOpsEval(const Graph& g,
                                 const std::vector<std::string>& fetches) {
  auto serial = test::MustCreate(g, test::PerSessionOptions(1, 1));
  auto parallel = test::MustCreate(g, test::PerSessionOptions(2, 2));
  auto a = test::MustRun(*serial, fetches);
  auto b = test::MustRun(*parallel, fetches);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].BitwiseEqual(b[i]));
  return a;
}

Status CreateStatus(const Graph& g) {
  return Session::Create(g, test::PerSessionOptions(1, 1)).status();
}

TEST(ShapeOpsTest, ReshapeWithZeroAndMinusOne) {
  Graph g;
  auto x = g.Const("x", Iota({2, 3, 4}));
  auto s = g.Const("s", Int64s({0, -1}));
  ASSERT_TRUE(g.AddNode({"r", "Reshape", {x, s}, {}, ""}).ok());
  auto out = ShapeOpsEval(g, {"r"});
  EXPECT_EQ(out[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(out[0].data<float>()[13], 13);
  Graph bad;
  auto y = bad.Const("y", Iota({2, 3}));
  auto t = bad.Const("t", Int64s({4, 2}));
  ASSERT_TRUE(bad.AddNode({"r", "Reshape", {y, t}, {}, ""}).ok());
  EXPECT_THAT(CreateStatus(bad).message(), HasSubstr("cannot reshape [2, 3]"));
}

TEST(ShapeOpsTest, ReshapeAllowzeroMakesZeroASize) {
  // [0, 3] with allowzero: an empty [0, 3] from an empty input; without, 0
  // copies the input's first dimension.
  Graph g;
  auto x = g.Const("x", Tensor(DataType::kFloat32, Shape{3, 0}));
  auto s = g.Const("s", Int64s({0, 3}));
  ASSERT_TRUE(
      g.AddNode({"r", "Reshape", {x, s}, {{"allowzero", true}}, ""}).ok());
  auto out = ShapeOpsEval(g, {"r"});
  EXPECT_EQ(out[0].shape(), (Shape{0, 3}));
  Graph copy;
  auto y = copy.Const("y", Iota({3, 2}));
  auto t = copy.Const("t", Int64s({0, -1}));
  ASSERT_TRUE(copy.AddNode({"r", "Reshape", {y, t}, {}, ""}).ok());
  EXPECT_EQ(ShapeOpsEval(copy, {"r"})[0].shape(), (Shape{3, 2}));
}

TEST(ShapeOpsTest, TransposeDefaultAndPerm) {
  Graph g;
  auto x = g.Const("x", Iota({2, 3, 4}));
  ASSERT_TRUE(g.AddNode({"t", "Transpose", {x}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"p",
                         "Transpose",
                         {x},
                         {{"perm", std::vector<int64_t>{1, 0, 2}}},
                         ""})
                  .ok());
  auto out = ShapeOpsEval(g, {"t", "p"});
  EXPECT_EQ(out[0].shape(), (Shape{4, 3, 2}));
  // t[k][j][i] = x[i][j][k] = i*12 + j*4 + k
  EXPECT_EQ(out[0].data<float>()[1 * 6 + 2 * 2 + 1], 1 * 12 + 2 * 4 + 1);
  EXPECT_EQ(out[1].shape(), (Shape{3, 2, 4}));
  EXPECT_EQ(out[1].data<float>()[2 * 8 + 1 * 4 + 3], 1 * 12 + 2 * 4 + 3);
}

// Transposes whose last two output dims swap the input's contiguous axis
// with another run by 16 x 16 tiles: every element lands where the
// permutation puts it, for each element size, in the partial tiles at the
// edges too, at one thread and two.
TEST(ShapeOpsTest, TransposeOfTheContiguousAxisByTilesMovesEveryElement) {
  struct Case {
    Shape in;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {{{3, 37, 2, 21}, {0, 2, 3, 1}},  // NCHW -> NHWC
                        {{19, 40}, {1, 0}},
                        {{2, 16, 33}, {0, 2, 1}}};
  for (DataType dtype : {DataType::kInt8, DataType::kFloat16,
                         DataType::kFloat32, DataType::kFloat64}) {
    for (const Case& c : cases) {
      // i mod 101: exact in every dtype, and no two neighbours alike.
      Tensor values(DataType::kFloat32, c.in);
      for (int64_t i = 0; i < values.NumElements(); ++i) {
        values.data<float>()[i] = static_cast<float>(i % 101);
      }
      Graph g;
      g.Placeholder("values", DataType::kFloat32, c.in);
      ASSERT_TRUE(
          g.AddNode({"x", "Cast", {"values"}, {{"to", dtype}}, ""}).ok());
      ASSERT_TRUE(
          g.AddNode({"t", "Transpose", {"x"}, {{"perm", c.perm}}, ""}).ok());
      auto serial = test::MustCreate(g, test::PerSessionOptions(1, 1));
      auto parallel = test::MustCreate(g, test::PerSessionOptions(2, 2));
      const NamedTensors feeds = {{"values", values}};
      const std::vector<Tensor> out = test::MustRun(*serial, {"x", "t"}, feeds);
      const Tensor& x = out.at(0);
      const Tensor& y = out.at(1);
      EXPECT_TRUE(y.BitwiseEqual(test::MustRun(*parallel, {"t"}, feeds).at(0)));
      const int rank = c.in.rank();
      std::vector<int64_t> in_strides(rank, 1);
      for (int d = rank - 2; d >= 0; --d) {
        in_strides[d] = in_strides[d + 1] * c.in.dim(d + 1);
      }
      for (int64_t o = 0; o < y.NumElements(); ++o) {
        int64_t rest = o, from = 0;
        for (int d = rank - 1; d >= 0; --d) {
          const int64_t dim = y.shape().dim(d);
          from += (rest % dim) * in_strides[c.perm[d]];
          rest /= dim;
        }
        ASSERT_EQ(y.ValueAsDouble(o), x.ValueAsDouble(from))
            << DataTypeName(dtype) << " " << c.in.ToString() << " element "
            << o;
      }
    }
  }
}

TEST(ShapeOpsTest, ConcatAndSplitInvertEachOther) {
  Graph g;
  auto a = g.Const("a", Iota({2, 3}));
  auto b = g.Const("b", Iota({2, 2}));
  ASSERT_TRUE(g.AddNode({"c", "Concat", {a, b}, {{"axis", 1}}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"s",
                         "Split",
                         {"c"},
                         {{"axis", -1},
                          {"num_outputs", 2},
                          {"split", std::vector<int64_t>{3, 2}}},
                         ""})
                  .ok());
  ASSERT_TRUE(
      g.AddNode({"even", "Split", {"c"}, {{"axis", 1}, {"num_outputs", 2}}, ""})
          .ok());
  auto out = ShapeOpsEval(g, {"c", "s:0", "s:1", "even:0", "even:1"});
  EXPECT_EQ(Values<float>(out[0]),
            (std::vector<float>{0, 1, 2, 0, 1, 3, 4, 5, 2, 3}));
  EXPECT_TRUE(out[1].BitwiseEqual(ShapeOpsEval(g, {"a"})[0]));
  EXPECT_TRUE(out[2].BitwiseEqual(ShapeOpsEval(g, {"b"})[0]));
  EXPECT_EQ(out[3].shape(), (Shape{2, 3}));  // ceil(5 / 2) = 3
  EXPECT_EQ(out[4].shape(), (Shape{2, 2}));
  Graph bad;
  auto x = bad.Const("x", Iota({2, 3}));
  auto y = bad.Const("y", Iota({3, 3}));
  ASSERT_TRUE(bad.AddNode({"c", "Concat", {x, y}, {{"axis", 1}}, ""}).ok());
  EXPECT_THAT(CreateStatus(bad).message(), HasSubstr("does not match"));
}

// Inputs of more than one copy piece (64 KB), two images: each output
// element comes from its input, at intra 1 and 2.
TEST(ShapeOpsTest, ConcatOfLargeInputsCopiesEveryPiece) {
  Graph g;
  g.Placeholder("a", DataType::kFloat32, PartialShape({2, 3, 100, 100}));
  g.Placeholder("b", DataType::kFloat32, PartialShape({2, 1, 100, 100}));
  ASSERT_TRUE(g.AddNode({"c", "Concat", {"a", "b"}, {{"axis", 1}}, ""}).ok());
  const Tensor a = Iota({2, 3, 100, 100}), b = Iota({2, 1, 100, 100});
  std::vector<Tensor> outs;
  for (int threads : {1, 2}) {
    auto session = test::MustCreate(g, test::PerSessionOptions(1, threads));
    outs.push_back(test::MustRun(*session, {"c"}, {{"a", a}, {"b", b}})[0]);
  }
  ASSERT_EQ(outs[0].shape(), (Shape{2, 4, 100, 100}));
  EXPECT_TRUE(outs[0].BitwiseEqual(outs[1]));
  const float* c = outs[0].data<float>();
  for (int64_t o = 0; o < 2; ++o) {
    for (int64_t ch = 0; ch < 4; ++ch) {
      for (int64_t i = 0; i < 100 * 100; ++i) {
        const float want = ch < 3 ? a.data<float>()[(o * 3 + ch) * 10000 + i]
                                  : b.data<float>()[o * 10000 + i];
        ASSERT_EQ(c[(o * 4 + ch) * 10000 + i], want)
            << "image " << o << " channel " << ch << " at " << i;
      }
    }
  }
}

// A channels-last Concat (the last axis: one short copy per pixel and
// input), rows of whole 64-byte moves (16 floats), of moves and a tail (37
// floats: 148 bytes) and of a tail alone (one float): each output element
// comes from its input, at intra 1 and 2.
TEST(ShapeOpsTest, ConcatOfShortRowsCopiesEveryElement) {
  const std::vector<int64_t> widths = {16, 37, 1};
  Graph g;
  std::vector<Tensor> inputs;
  std::vector<std::string> names;
  NamedTensors feeds;
  for (size_t i = 0; i < widths.size(); ++i) {
    names.push_back("in" + std::to_string(i));
    g.Placeholder(names.back(), DataType::kFloat32,
                  PartialShape({2, 45, widths[i]}));
    Tensor t = Iota({2, 45, widths[i]});
    for (int64_t j = 0; j < t.NumElements(); ++j) {
      t.data<float>()[j] += static_cast<float>(1000 * i);
    }
    feeds.emplace_back(names.back(), t);
    inputs.push_back(std::move(t));
  }
  ASSERT_TRUE(g.AddNode({"c", "Concat", names, {{"axis", -1}}, ""}).ok());
  constexpr int64_t kWidth = 16 + 37 + 1;
  for (int threads : {1, 2}) {
    auto session = test::MustCreate(g, test::PerSessionOptions(1, threads));
    const Tensor out = test::MustRun(*session, {"c"}, feeds)[0];
    ASSERT_EQ(out.shape(), (Shape{2, 45, kWidth}));
    const float* c = out.data<float>();
    for (int64_t pixel = 0; pixel < 2 * 45; ++pixel) {
      int64_t column = 0;
      for (size_t i = 0; i < widths.size(); ++i) {
        for (int64_t j = 0; j < widths[i]; ++j, ++column) {
          ASSERT_EQ(c[pixel * kWidth + column],
                    inputs[i].data<float>()[pixel * widths[i] + j])
              << threads << " threads, pixel " << pixel << ", input " << i
              << ", element " << j;
        }
      }
    }
  }
}

TEST(ShapeOpsTest, SliceLikeNumpy) {
  Graph g;
  auto x = g.Const("x", Iota({10}));
  auto m = g.Const("m", Iota({3, 4}));
  auto slice = [&](const std::string& name, const std::string& in,
                   std::vector<int64_t> starts, std::vector<int64_t> ends,
                   std::vector<int64_t> axes, std::vector<int64_t> steps) {
    ASSERT_TRUE(g.AddNode({name,
                           "Slice",
                           {in},
                           {{"starts", starts},
                            {"ends", ends},
                            {"axes", axes},
                            {"steps", steps}},
                           ""})
                    .ok());
  };
  slice("a", x, {2}, {8}, {}, {2});               // x[2:8:2]
  slice("b", x, {-3}, {1000}, {}, {});            // x[-3:]
  slice("c", x, {-1}, {-1000}, {}, {-3});         // x[::-3]
  slice("d", m, {1, 0}, {3, 4}, {0, 1}, {1, 2});  // m[1:3, ::2]
  slice("e", x, {5}, {2}, {}, {});                // empty
  auto out = ShapeOpsEval(g, {"a", "b", "c", "d", "e"});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(Values<float>(out[2]), (std::vector<float>{9, 6, 3, 0}));
  EXPECT_EQ(Values<float>(out[3]), (std::vector<float>{4, 6, 8, 10}));
  EXPECT_EQ(out[4].NumElements(), 0);
}

TEST(ShapeOpsTest, CastSaturatesAndHandlesNan) {
  Graph g;
  auto x = g.Const(
      "x", Tensor::FromVector<float>({5}, {1.9f, -2.7f, NAN, 1e20f, -1e20f}));
  ASSERT_TRUE(
      g.AddNode({"i", "Cast", {x}, {{"to", DataType::kInt32}}, ""}).ok());
  ASSERT_TRUE(
      g.AddNode({"b", "Cast", {x}, {{"to", DataType::kBool}}, ""}).ok());
  auto out = ShapeOpsEval(g, {"i", "b"});
  EXPECT_EQ(Values<int32_t>(out[0]),
            (std::vector<int32_t>{1, -2, 0, INT32_MAX, INT32_MIN}));
  EXPECT_EQ(out[1].dtype(), DataType::kBool);
  EXPECT_EQ(out[1].data<bool>()[0], true);
}

TEST(ShapeOpsTest, ExpandAndFill) {
  Graph g;
  auto x = g.Const("x", Iota({3, 1}));
  auto s = g.Const("s", Int64s({2, 3, 4}));
  ASSERT_TRUE(g.AddNode({"e", "Expand", {x, s}, {}, ""}).ok());
  ASSERT_TRUE(
      g.AddNode(
           {"f",
            "Fill",
            {},
            {{"shape", Shape{2, 2}}, {"value", 7}, {"dtype", DataType::kInt64}},
            ""})
          .ok());
  auto out = ShapeOpsEval(g, {"e", "f"});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(out[0].data<float>()[1 * 12 + 2 * 4 + 3], 2);
  EXPECT_EQ(Values<int64_t>(out[1]), (std::vector<int64_t>{7, 7, 7, 7}));
}

TEST(ShapeOpsTest, OtherReductionsAndArgMax) {
  Graph g;
  auto x =
      g.Const("x", Tensor::FromVector<float>({2, 3}, {1, 5, 2, -4, 3, 0.5f}));
  auto add = [&](const std::string& name, const std::string& op,
                 AttrMap attrs) {
    ASSERT_TRUE(g.AddNode({name, op, {x}, std::move(attrs), ""}).ok());
  };
  add("mean", "ReduceMean",
      {{"axes", std::vector<int64_t>{1}}, {"keepdims", 0}});
  add("max", "ReduceMax", {{"axes", std::vector<int64_t>{0}}, {"keepdims", 0}});
  add("min", "ReduceMin", {{"keepdims", 0}});
  add("prod", "ReduceProd",
      {{"axes", std::vector<int64_t>{1}}, {"keepdims", 0}});
  add("argmax", "ArgMax", {{"axis", 1}, {"keepdims", 0}});
  auto out = ShapeOpsEval(g, {"mean", "max", "min", "prod", "argmax"});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{8.0f / 3, -0.5f / 3}));
  EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{1, 5, 2}));
  EXPECT_EQ(Values<float>(out[2]), (std::vector<float>{-4}));
  EXPECT_EQ(Values<float>(out[3]), (std::vector<float>{10, -6}));
  EXPECT_EQ(Values<int64_t>(out[4]), (std::vector<int64_t>{1, 1}));
}

TEST(ShapeOpsTest, SoftmaxLogSoftmaxAndLayerNorm) {
  Graph g;
  auto x = g.RandomUniform("x", DataType::kFloat32, {7, 33}, 1);
  ASSERT_TRUE(g.AddNode({"sm", "Softmax", {x}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"lsm", "LogSoftmax", {x}, {{"axis", 0}}, ""}).ok());
  auto scale = g.Const(
      "scale", Tensor::FromVector<float>({33}, std::vector<float>(33, 2)));
  auto bias = g.Const(
      "bias", Tensor::FromVector<float>({33}, std::vector<float>(33, 1)));
  ASSERT_TRUE(
      g.AddNode({"ln", "LayerNormalization", {x, scale, bias}, {}, ""}).ok());
  auto out = ShapeOpsEval(g, {"x", "sm", "lsm", "ln"});
  const float* px = out[0].data<float>();
  for (int r = 0; r < 7; ++r) {
    double sum = 0, mean = 0, var = 0;
    for (int j = 0; j < 33; ++j) sum += out[1].data<float>()[r * 33 + j];
    EXPECT_NEAR(sum, 1.0, 1e-6);
    for (int j = 0; j < 33; ++j) mean += px[r * 33 + j] / 33.0;
    for (int j = 0; j < 33; ++j)
      var += std::pow(px[r * 33 + j] - mean, 2) / 33.0;
    for (int j = 0; j < 33; ++j) {
      const double expected =
          (px[r * 33 + j] - mean) / std::sqrt(var + 1e-5) * 2 + 1;
      EXPECT_NEAR(out[3].data<float>()[r * 33 + j], expected, 1e-5);
    }
  }
  for (int c = 0; c < 33; ++c) {  // LogSoftmax over axis 0: logsumexp = 0
    double sum = 0;
    for (int r = 0; r < 7; ++r)
      sum += std::exp(out[2].data<float>()[r * 33 + c]);
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(MoreOpsTest, BatchedMatMulBroadcastsBatchDimensions) {
  Graph g;
  auto a = g.RandomUniform("a", DataType::kFloat32, {3, 1, 5, 7}, 1);
  auto b = g.RandomUniform("b", DataType::kFloat32, {2, 7, 4}, 2);
  g.MatMul("c", a, b);
  auto out = ShapeOpsEval(g, {"a", "b", "c"});
  ASSERT_EQ(out[2].shape(), (Shape{3, 2, 5, 4}));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int r = 0; r < 5; ++r) {
        for (int c = 0; c < 4; ++c) {
          double ref = 0;
          for (int p = 0; p < 7; ++p) {
            ref += double(out[0].data<float>()[i * 35 + r * 7 + p]) *
                   out[1].data<float>()[j * 28 + p * 4 + c];
          }
          ASSERT_NEAR(out[2].data<float>()[((i * 2 + j) * 5 + r) * 4 + c], ref,
                      1e-5);
        }
      }
    }
  }
}

TEST(MoreOpsTest, GemmWithAlphaBetaAndBroadcastC) {
  Graph g;
  auto a = g.Const("a", Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}));
  auto b = g.Const("b", Tensor::FromVector<float>({2, 2}, {5, 6, 7, 8}));
  auto c = g.Const("c", Tensor::FromVector<float>({2}, {100, 200}));
  ASSERT_TRUE(g.AddNode({"y",
                         "Gemm",
                         {a, b, c},
                         {{"alpha", 2.0}, {"beta", 0.5}, {"transB", 1}},
                         ""})
                  .ok());
  auto out = ShapeOpsEval(g, {"y"});
  // A * B^T = [[17, 23], [39, 53]]; * 2 + 0.5 * [100, 200]
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{84, 146, 128, 206}));
}

TEST(MoreOpsTest, SumIsVariadicAndRandomNormalIsCounterBased) {
  Graph g;
  auto a = g.Const("a", Tensor::FromVector<float>({2}, {1, 2}));
  auto s = g.Const("s", Tensor::Scalar<float>(10));
  ASSERT_TRUE(g.AddNode({"sum", "Sum", {a, s, a}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"n",
                         "RandomNormal",
                         {},
                         {{"shape", Shape{20000}},
                          {"seed", 3},
                          {"mean", 1.0},
                          {"scale", 2.0}},
                         ""})
                  .ok());
  auto out = ShapeOpsEval(g, {"sum", "n"});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{12, 14}));
  double mean = 0, var = 0;
  for (float v : Values<float>(out[1])) mean += v / 20000.0;
  for (float v : Values<float>(out[1]))
    var += (v - mean) * (v - mean) / 20000.0;
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.05);
}

// Sizes whose arithmetic would pass int64 are errors naming what is wrong,
// not wrapped values: DepthToSpace's blocksize squared wrapped to 0 and its
// c % 0 trapped; two pads of 2^63 - 1 wrapped to a 1-wide output.
TEST(ShapeOpsTest, HugeSizesAreErrorsNotWrappedValues) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const Tensor x = Tensor::FromVector<float>({1, 4, 1, 1}, {1, 2, 3, 4});
  auto message = [](const StatusOr<std::vector<Tensor>>& out) {
    return out.ok() ? std::string("ok") : out.status().message();
  };
  EXPECT_THAT(message(test::RunOneNode("DepthToSpace", {x},
                                       {{"blocksize", int64_t{1} << 62}})),
              HasSubstr("blocksize 4611686018427387904 is out of range"));
  EXPECT_THAT(message(test::RunOneNode("SpaceToDepth", {x},
                                       {{"blocksize", int64_t{1} << 62}})),
              HasSubstr("is out of range"));
  EXPECT_THAT(message(test::RunOneNode(
                  "Pad", {x, Tensor::FromVector<int64_t>(
                                 {8}, {0, 0, 0, kMax, 0, 0, 0, kMax})})),
              HasSubstr("pads make dimension 3 overflow"));
  EXPECT_THAT(message(test::RunOneNode("Tile", {x, Tensor::FromVector<int64_t>(
                                                       {4}, {1, kMax, 1, 1})})),
              HasSubstr("overflows"));
  EXPECT_THAT(message(test::RunOneNode(
                  "Split", {x, Tensor::FromVector<int64_t>({2}, {kMax, kMax})},
                  {{"axis", int64_t{1}}, {"num_outputs", int64_t{2}}}, 2)),
              HasSubstr("add up past 2^63"));
}

// Index values at the ends of their types: a Slice step of 2^62 takes the
// first element; a OneHot index of 2^63 (as float) is past every depth; an
// Einsum over integers whose sum passes int64 saturates, as Cast does.
TEST(ShapeOpsTest, ExtremeIndexValuesGiveDefinedResults) {
  auto slice = test::RunOneOutput(
      "Slice", {Tensor::FromVector<float>({3}, {1, 2, 3}),
                Tensor::FromVector<int64_t>({1}, {0}),
                Tensor::FromVector<int64_t>({1}, {3}),
                Tensor::FromVector<int64_t>({1}, {0}),
                Tensor::FromVector<int64_t>({1}, {int64_t{1} << 62})});
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(test::Values<float>(*slice), (std::vector<float>{1}));
  auto hot = test::RunOneOutput("OneHot",
                                {Tensor::FromVector<float>({2}, {9.3e18f, 1}),
                                 Tensor::FromVector<int64_t>({}, {3}),
                                 Tensor::FromVector<float>({2}, {0, 1})});
  ASSERT_TRUE(hot.ok()) << hot.status();
  EXPECT_EQ(test::Values<float>(*hot), (std::vector<float>{0, 0, 0, 0, 1, 0}));
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto sum = test::RunOneOutput(
      "Einsum", {Tensor::FromVector<int64_t>({2}, {kMax, kMax})},
      {{"equation", std::string("i->")}});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(test::Values<int64_t>(*sum), (std::vector<int64_t>{kMax}));
}

TEST(ShapeOpsTest, ClipWithOnlyAMaxInput) {
  // ONNX's Clip(x, "", max) with max known at Run: max_only says the one
  // bound input is the max.
  auto y = test::RunOneOutput("Clip",
                              {Tensor::FromVector<float>({3}, {-5, 1, 5}),
                               Tensor::FromVector<float>({}, {2})},
                              {{"max_only", true}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(test::Values<float>(*y), (std::vector<float>{-5, 1, 2}));
}

// 1 + 2^-8 + 2^-9 lies between the bfloat16 values 1 and 1 + 2^-7, nearer
// the second: rounding to nearest gives 1 + 2^-7, truncation 1.
TEST(CastTest, BFloat16RoundsToNearestEvenOrTruncates) {
  const float between = 1.0f + 0x1p-8f + 0x1p-9f;
  Tensor x = Tensor::FromVector<float>({3}, {between, -2.5f, 65536.0f});
  for (const char* rounding : {"nearest_even", "truncate"}) {
    SCOPED_TRACE(rounding);
    auto b = test::RunOneOutput("Cast", {x},
                                {{"to", DataType::kBFloat16},
                                 {"bfloat16_rounding", std::string(rounding)}});
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->dtype(), DataType::kBFloat16);
    auto back = test::RunOneOutput("Cast", {*b}, {{"to", DataType::kFloat32}});
    ASSERT_TRUE(back.ok()) << back.status();
    const float first =
        std::string(rounding) == "truncate" ? 1.0f : 1.0f + 0x1p-7f;
    EXPECT_EQ(Values<float>(*back),
              (std::vector<float>{first, -2.5f, 65536.0f}));
  }
}

// int4 and uint4 (ONNX 21): integers keep their low four bits (ONNX's
// "discard higher bits"), floats are truncated toward zero first (ONNX's
// reference); each back to int32 or float as the value it holds.
TEST(CastTest, FourBitIntegersWrapAndTruncate) {
  const Tensor ints = Tensor::FromVector<int32_t>({6}, {-9, -8, 7, 8, 15, 23});
  const Tensor floats =
      Tensor::FromVector<float>({4}, {2.7f, -3.5f, 7.9f, -8.4f});
  const auto round_trip = [](const Tensor& x, DataType via, DataType back) {
    auto q = test::RunOneOutput("Cast", {x}, {{"to", via}});
    EXPECT_TRUE(q.ok()) << q.status();
    if (!q.ok()) return Tensor();
    EXPECT_EQ(q->dtype(), via);
    auto y = test::RunOneOutput("Cast", {*q}, {{"to", back}});
    EXPECT_TRUE(y.ok()) << y.status();
    return y.ok() ? *y : Tensor();
  };
  EXPECT_EQ(
      Values<int32_t>(round_trip(ints, DataType::kInt4, DataType::kInt32)),
      (std::vector<int32_t>{7, -8, 7, -8, -1, 7}));
  EXPECT_EQ(
      Values<int32_t>(round_trip(ints, DataType::kUInt4, DataType::kInt32)),
      (std::vector<int32_t>{7, 8, 7, 8, 15, 7}));
  EXPECT_EQ(
      Values<float>(round_trip(floats, DataType::kInt4, DataType::kFloat32)),
      (std::vector<float>{2, -3, 7, -8}));
  EXPECT_EQ(
      Values<float>(round_trip(floats, DataType::kUInt4, DataType::kFloat32)),
      (std::vector<float>{2, 13, 7, 8}));
  // int4 to uint4 directly, and to a string.
  auto q = test::RunOneOutput("Cast", {ints}, {{"to", DataType::kInt4}});
  ASSERT_TRUE(q.ok());
  auto text = test::RunOneOutput("Cast", {*q}, {{"to", DataType::kString}});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->data<std::string>()[0], "7");
  EXPECT_EQ(text->data<std::string>()[1], "-8");
  auto sum = test::RunOneOutput("Add", {*q, *q});
  ASSERT_FALSE(sum.ok());
  EXPECT_THAT(sum.status().message(),
              HasSubstr("op Add does not take int4 tensors"));
}

TEST(CastTest, BFloat16IsRefusedByOpsThatDoNotListIt) {
  auto b = test::RunOneOutput("Cast", {Tensor::FromVector<float>({1}, {1})},
                              {{"to", DataType::kBFloat16}});
  ASSERT_TRUE(b.ok()) << b.status();
  auto sum = test::RunOneOutput("Add", {*b, *b});
  ASSERT_FALSE(sum.ok());
  EXPECT_THAT(sum.status().message(),
              HasSubstr("op Add does not take bfloat16 tensors"));
  auto bad = test::RunOneOutput(
      "Cast", {*b},
      {{"to", DataType::kFloat32}, {"bfloat16_rounding", std::string("up")}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("bfloat16_rounding \"up\" is not nearest_even"));
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Pad's wrap mode (ONNX 19) reads the axis as a ring, also where the pads
// are longer than the axis; ONNX 18's axes input names the padded axes.
TEST(ShapeOpsTest, PadWrapsAroundAndPadsTheAxesNamed) {
  const Tensor x = Tensor::FromVector<float>({1, 3}, {1, 2, 3});
  auto wrapped = test::RunOneOutput(
      "Pad", {x, Tensor::FromVector<int64_t>({4}, {0, 4, 0, 2})},
      {{"mode", std::string("wrap")}});
  ASSERT_TRUE(wrapped.ok()) << wrapped.status();
  EXPECT_EQ(Values<float>(*wrapped),
            (std::vector<float>{3, 1, 2, 3, 1, 2, 3, 1, 2}));
  // Pads for axis -1 only, then the constant 9.
  auto axes = test::RunOneOutput(
      "Pad",
      {x, Tensor::FromVector<int64_t>({2}, {1, 2}), Tensor::Scalar(9.0f),
       Tensor::FromVector<int64_t>({1}, {-1})},
      {{"has_value", true}, {"has_axes", true}});
  ASSERT_TRUE(axes.ok()) << axes.status();
  EXPECT_EQ(axes->shape(), (Shape{1, 6}));
  EXPECT_EQ(Values<float>(*axes), (std::vector<float>{9, 1, 2, 3, 9, 9}));
  EXPECT_THAT(
      test::RunOneOutput("Pad",
                         {x, Tensor::FromVector<int64_t>({4}, {1, 1, 1, 1}),
                          Tensor::FromVector<int64_t>({2}, {1, -1})},
                         {{"has_axes", true}})
          .status()
          .message(),
      HasSubstr("axes lists axis 1 twice"));
}

}  // namespace
}  // namespace weft
