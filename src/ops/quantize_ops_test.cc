#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "test_support/session_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// y = op(inputs...) at one and two threads (bitwise equal): y's first
// `outputs` outputs.
StatusOr<std::vector<Tensor>> RunOp(const std::string& op,
                                    std::vector<Tensor> inputs,
                                    int outputs = 1) {
  return test::RunOneNode(op, std::move(inputs), {}, outputs);
}

Tensor FloatTensor(const std::vector<int64_t>& dims,
                   const std::vector<float>& v) {
  return Tensor::FromVector<float>(Shape(dims), v);
}
Tensor U8(const std::vector<int64_t>& dims, const std::vector<uint8_t>& v) {
  return Tensor::FromVector<uint8_t>(Shape(dims), v);
}
Tensor I8(const std::vector<int64_t>& dims, const std::vector<int8_t>& v) {
  return Tensor::FromVector<int8_t>(Shape(dims), v);
}

TEST(QuantizeOpsTest, QuantizeRoundsHalfToEvenAndSaturates) {
  // x / 2: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, then + 128; -1000 and 1000 clamp.
  auto y = RunOp("QuantizeLinear", {FloatTensor({5}, {1, 3, 5, -1000, 1000}),
                                    FloatTensor({}, {2}), U8({}, {128})});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(test::Values<uint8_t>((*y)[0]),
            (std::vector<uint8_t>{128, 130, 130, 0, 255}));
  // No zero point: uint8 around 0. An int8 zero point makes the output int8.
  auto none = RunOp("QuantizeLinear",
                    {FloatTensor({2}, {-4, 4}), FloatTensor({}, {1})});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)[0].dtype(), DataType::kUInt8);
  EXPECT_EQ(test::Values<uint8_t>((*none)[0]), (std::vector<uint8_t>{0, 4}));
  auto s8 = RunOp("QuantizeLinear", {FloatTensor({2}, {-400, 4}),
                                     FloatTensor({}, {1}), I8({}, {-1})});
  ASSERT_TRUE(s8.ok());
  EXPECT_EQ(test::Values<int8_t>((*s8)[0]), (std::vector<int8_t>{-128, 3}));
}

TEST(QuantizeOpsTest, PerAxisScalesAndZeroPoints) {
  // Axis 1 of [2, 2]: column 0 scale 1 zero 0, column 1 scale 10 zero 100.
  auto q =
      RunOp("QuantizeLinear", {FloatTensor({2, 2}, {1, 20, 2, 40}),
                               FloatTensor({2}, {1, 10}), U8({2}, {0, 100})});
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(test::Values<uint8_t>((*q)[0]),
            (std::vector<uint8_t>{1, 102, 2, 104}));
  auto d = RunOp("DequantizeLinear",
                 {(*q)[0], FloatTensor({2}, {1, 10}), U8({2}, {0, 100})});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(test::Values<float>((*d)[0]), (std::vector<float>{1, 20, 2, 40}));
}

TEST(QuantizeOpsTest, BadScalesAndZeroPointsAreErrors) {
  EXPECT_THAT(
      RunOp("QuantizeLinear", {FloatTensor({2}, {1, 2}), FloatTensor({}, {0})})
          .status()
          .message(),
      HasSubstr("a scale must be finite and non-zero"));
  // A float zero point: the output dtype would be float32.
  EXPECT_THAT(
      RunOp("QuantizeLinear", {FloatTensor({2}, {1, 2}), FloatTensor({}, {1}),
                               FloatTensor({}, {0})})
          .status()
          .message(),
      HasSubstr("output_dtype"));
  EXPECT_THAT(
      RunOp("QuantizeLinear", {FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6}),
                               FloatTensor({2}, {1, 1}), U8({2}, {0, 0})})
          .status()
          .message(),
      HasSubstr("y_scale has 2 entries for axis 1 of size 3"));
  EXPECT_THAT(RunOp("DequantizeLinear",
                    {U8({2}, {1, 2}), FloatTensor({}, {1}), I8({}, {0})})
                  .status()
                  .message(),
              HasSubstr("the zero point has dtype int8, expected uint8"));
}

TEST(QuantizeOpsTest, DynamicQuantizeCoversTheRangeWithZero) {
  // Range [0, 255] (min clamped up to 0): scale 1, zero point 0.
  auto y =
      RunOp("DynamicQuantizeLinear", {FloatTensor({3}, {0, 2.5f, 255})}, 3);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(test::Values<uint8_t>((*y)[0]), (std::vector<uint8_t>{0, 2, 255}));
  EXPECT_EQ((*y)[1].data<float>()[0], 1.0f);
  EXPECT_EQ((*y)[2].data<uint8_t>()[0], 0);
  // [-51, 204]: scale 1, zero point 51.
  auto shifted =
      RunOp("DynamicQuantizeLinear", {FloatTensor({2}, {-51, 204})}, 3);
  ASSERT_TRUE(shifted.ok());
  EXPECT_EQ(test::Values<uint8_t>((*shifted)[0]),
            (std::vector<uint8_t>{0, 255}));
  EXPECT_EQ((*shifted)[2].data<uint8_t>()[0], 51);
}

// The range of a tensor of several blocks (the reduction's pieces run on
// the intra-op pool): the low and high ends in different blocks and past
// the last whole lane group; a NaN in a late block is found and named.
TEST(QuantizeOpsTest, DynamicQuantizeFindsTheRangeAcrossBlocks) {
  const int64_t n = 40003;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    values[static_cast<size_t>(i)] = static_cast<float>(i % 97) * 0.5f;
  }
  values[20] = 300.0f;     // the high end, in the first block
  values[40001] = -45.0f;  // the low end, in the tail of the last
  for (int threads : {1, 2}) {
    Graph g;
    g.Placeholder("x", DataType::kFloat32, PartialShape({n}));
    test::MustAdd(g, {"q", "DynamicQuantizeLinear", {"x"}, {}, ""});
    auto session = test::MustCreate(g, test::PerSessionOptions(1, threads));
    ASSERT_NE(session, nullptr);
    const Tensor x = Tensor::FromVector<float>({n}, values);
    const std::vector<Tensor> out =
        test::MustRun(*session, {"q:1", "q:2"}, {{"x", x}});
    EXPECT_EQ(out[0].data<float>()[0], 345.0f / 255.0f);
    EXPECT_EQ(out[1].data<uint8_t>()[0],
              static_cast<uint8_t>(std::nearbyint(45.0f / (345.0f / 255.0f))));
    std::vector<float> with_nan = values;
    with_nan[35000] = std::numeric_limits<float>::quiet_NaN();
    std::vector<Tensor> unused;
    const Status status =
        session->Run({{"x", Tensor::FromVector<float>({n}, with_nan)}}, {"q:0"},
                     {}, &unused);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find("NaN at element 35000"), std::string::npos)
        << status.message();
  }
}

TEST(QuantizeOpsTest, IntegerProductsAreExact) {
  // (A - a_zero per row) x (B - b_zero): A = [[3, 4], [5, 6]] minus rows'
  // zeros 1 and 2 is [[2, 3], [3, 4]]; B = [[1, 0], [0, 1]] minus 0.
  auto y = RunOp("MatMulInteger", {U8({2, 2}, {3, 4, 5, 6}),
                                   U8({2, 2}, {1, 0, 0, 1}), U8({2}, {1, 2})});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ((*y)[0].dtype(), DataType::kInt32);
  EXPECT_EQ(test::Values<int32_t>((*y)[0]), (std::vector<int32_t>{2, 3, 3, 4}));
  // The largest int8 products sum exactly: 128 * 127 * K for K = 1000.
  std::vector<int8_t> ones(1000, -128), other(1000, 127);
  auto big =
      RunOp("MatMulInteger", {I8({1, 1000}, ones), I8({1000, 1}, other)});
  ASSERT_TRUE(big.ok());
  EXPECT_EQ((*big)[0].data<int32_t>()[0], -128 * 127 * 1000);

  // QLinearMatMul: (2 * 0.5) x (4 * 0.25) = 1 per term, K = 2: 2 / y_scale 0.5
  // = 4, + y_zero 10 = 14.
  auto q = RunOp("QLinearMatMul",
                 {U8({1, 2}, {2, 2}), FloatTensor({}, {0.5f}), U8({}, {0}),
                  U8({2, 1}, {4, 4}), FloatTensor({}, {0.25f}), U8({}, {0}),
                  FloatTensor({}, {0.5f}), U8({}, {10})});
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(test::Values<uint8_t>((*q)[0]), (std::vector<uint8_t>{14}));
  EXPECT_THAT(RunOp("MatMulInteger",
                    {U8({2, 3}, {0, 0, 0, 0, 0, 0}), U8({2, 2}, {0, 0, 0, 0})})
                  .status()
                  .message(),
              HasSubstr("do not multiply"));
}

// NumPy's matmul rule, as ONNX states it for MatMulInteger and
// QLinearMatMul: vectors as a row or a column whose dimension the output
// leaves out, and batch dims that broadcast (a side may broadcast along
// some dims and not others).
TEST(QuantizeOpsTest, IntegerProductsFollowNumPysShapes) {
  auto vector_times_matrix = RunOp(
      "MatMulInteger", {U8({3}, {1, 2, 3}), I8({3, 2}, {1, -1, 2, -2, 3, -3})});
  ASSERT_TRUE(vector_times_matrix.ok())
      << vector_times_matrix.status().ToString();
  EXPECT_EQ((*vector_times_matrix)[0].shape(), Shape{2});
  EXPECT_EQ(test::Values<int32_t>((*vector_times_matrix)[0]),
            (std::vector<int32_t>{14, -14}));

  // A [2, 1, 1, 2] x B [3, 2, 1]: output [2, 3, 1, 1], entry (i, j) is
  // A's matrix i times B's matrix j.
  auto broadcast = RunOp("MatMulInteger", {U8({2, 1, 1, 2}, {1, 2, 3, 4}),
                                           I8({3, 2, 1}, {1, 0, 0, 1, 1, 1})});
  ASSERT_TRUE(broadcast.ok()) << broadcast.status().ToString();
  EXPECT_EQ((*broadcast)[0].shape(), (Shape{2, 3, 1, 1}));
  EXPECT_EQ(test::Values<int32_t>((*broadcast)[0]),
            (std::vector<int32_t>{1, 2, 3, 3, 4, 7}));

  // QLinearMatMul, matrix x vector: rows (2, 2) and (4, 4) at scale 0.5
  // times (4, 4) at 0.25 sum to 2 and 4, / 0.5 + 10 = 14 and 18.
  auto q = RunOp("QLinearMatMul",
                 {U8({2, 2}, {2, 2, 4, 4}), FloatTensor({}, {0.5f}),
                  U8({}, {0}), U8({2}, {4, 4}), FloatTensor({}, {0.25f}),
                  U8({}, {0}), FloatTensor({}, {0.5f}), U8({}, {10})});
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ((*q)[0].shape(), Shape{2});
  EXPECT_EQ(test::Values<uint8_t>((*q)[0]), (std::vector<uint8_t>{14, 18}));

  EXPECT_THAT(RunOp("MatMulInteger", {U8({3, 1, 2}, {0, 0, 0, 0, 0, 0}),
                                      U8({2, 2, 1}, {0, 0, 0, 0})})
                  .status()
                  .message(),
              HasSubstr("do not broadcast"));
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// QLinearAdd: both operands dequantized, added, requantized, broadcast as
// NumPy does; each element as the three float nodes compute it.
TEST(QuantizedAddTest, QLinearAddBroadcastsAndRequantizesAsTheFloatNodes) {
  const std::vector<uint8_t> a = {0, 17, 128, 255, 90, 200};
  const std::vector<int8_t> b = {-128, 5, 127};
  auto y = test::RunOneNode(
      "QLinearAdd",
      {Tensor::FromVector<uint8_t>({2, 3}, a), Tensor::Scalar<float>(0.05f),
       Tensor::Scalar<uint8_t>(128), Tensor::FromVector<int8_t>({3}, b),
       Tensor::Scalar<float>(0.02f), Tensor::Scalar<int8_t>(1),
       Tensor::Scalar<float>(0.07f), Tensor::Scalar<uint8_t>(100)});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) {
    const float fa = (static_cast<float>(a[i]) - 128.f) * 0.05f;
    const float fb = (static_cast<float>(b[i % 3]) - 1.f) * 0.02f;
    const float v = std::nearbyint((fa + fb) / 0.07f) + 100.f;
    EXPECT_EQ((*y)[0].data<uint8_t>()[i],
              static_cast<uint8_t>(std::clamp(v, 0.f, 255.f)))
        << i;
  }
}

// What QLinearAdd gives for one element: the three float nodes' operations
// in order, rounded half to even, saturated; a NaN sum gives 0.
template <class QC, class QA, class QB>
QC ReferenceQuantizedSum(QA x, float a_scale, float a_zero, QB y, float b_scale,
                         float b_zero, float c_scale, float c_zero) {
  const float fa = (static_cast<float>(x) - a_zero) * a_scale;
  const float fb = (static_cast<float>(y) - b_zero) * b_scale;
  const float v = std::nearbyint((fa + fb) / c_scale) + c_zero;
  if (std::isnan(v)) return 0;
  return static_cast<QC>(
      std::clamp(v, static_cast<float>(std::numeric_limits<QC>::min()),
                 static_cast<float>(std::numeric_limits<QC>::max())));
}

// Operands of one shape (the residual Adds of a quantized ResNet), which
// run 16 at a time where the build has AVX-512, the rest one by one: every
// element of 1,007 (whole vectors and a tail) as the reference gives it,
// for each of the eight dtype combinations, with scales whose sums tie
// halfway (rounded to even), run past the output's range both ways, or
// overflow to infinities and their NaN sum.
template <class QA, class QB, class QC>
void ExpectSameShapeSumsAsTheReference() {
  struct Params {
    float a_scale, b_scale, c_scale;
    int a_zero, b_zero, c_zero;
  };
  const Params cases[] = {
      {0.05f, 0.02f, 0.07f, 3, -2, 5},  // Ordinary.
      {0.5f, 0.25f, 1.0f, 0, 0, 0},     // Quarters and halves: ties.
      {1.0f, 1.0f, 0.01f, 1, -1, 0},    // Far past the range both ways.
      {3e38f, 3e38f, 1.0f, 0, 0, 0},    // Infinities, and NaN where they meet.
  };
  constexpr int64_t kCount = 1007;
  std::vector<QA> a(kCount);
  std::vector<QB> b(kCount);
  for (int64_t i = 0; i < kCount; ++i) {
    a[i] = static_cast<QA>((i * 37) % 256);
    b[i] = static_cast<QB>((i * 101 + 11) % 256);
  }
  for (const Params& p : cases) {
    // Zero points in each dtype's range.
    const auto a_zero = static_cast<QA>(p.a_zero);
    const auto b_zero = static_cast<QB>(p.b_zero);
    const auto c_zero = static_cast<QC>(p.c_zero);
    auto y = test::RunOneNode(
        "QLinearAdd",
        {Tensor::FromVector<QA>({kCount}, a), Tensor::Scalar<float>(p.a_scale),
         Tensor::Scalar<QA>(a_zero), Tensor::FromVector<QB>({kCount}, b),
         Tensor::Scalar<float>(p.b_scale), Tensor::Scalar<QB>(b_zero),
         Tensor::Scalar<float>(p.c_scale), Tensor::Scalar<QC>(c_zero)});
    ASSERT_TRUE(y.ok()) << y.status();
    const QC* got = (*y)[0].template data<QC>();
    for (int64_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(int{got[i]}, int{ReferenceQuantizedSum<QC>(
                                 a[i], p.a_scale, static_cast<float>(a_zero),
                                 b[i], p.b_scale, static_cast<float>(b_zero),
                                 p.c_scale, static_cast<float>(c_zero))})
          << "element " << i << ", scales " << p.a_scale << ", " << p.b_scale
          << ", " << p.c_scale;
    }
  }
}

TEST(QuantizedAddTest, QLinearAddOfOneShapeGivesEveryElementAsTheReference) {
  ExpectSameShapeSumsAsTheReference<uint8_t, uint8_t, uint8_t>();
  ExpectSameShapeSumsAsTheReference<uint8_t, uint8_t, int8_t>();
  ExpectSameShapeSumsAsTheReference<uint8_t, int8_t, uint8_t>();
  ExpectSameShapeSumsAsTheReference<uint8_t, int8_t, int8_t>();
  ExpectSameShapeSumsAsTheReference<int8_t, uint8_t, uint8_t>();
  ExpectSameShapeSumsAsTheReference<int8_t, uint8_t, int8_t>();
  ExpectSameShapeSumsAsTheReference<int8_t, int8_t, uint8_t>();
  ExpectSameShapeSumsAsTheReference<int8_t, int8_t, int8_t>();
}

TEST(QuantizedAddTest, QLinearAddRefusesAZeroPointOfAnotherDtype) {
  auto y = test::RunOneNode(
      "QLinearAdd",
      {Tensor::FromVector<uint8_t>({2}, {1, 2}), Tensor::Scalar<float>(0.1f),
       Tensor::Scalar<uint8_t>(0), Tensor::FromVector<uint8_t>({2}, {1, 2}),
       Tensor::Scalar<float>(0.1f), Tensor::Scalar<int8_t>(0),
       Tensor::Scalar<float>(0.1f), Tensor::Scalar<uint8_t>(0)});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(
      y.status().message(),
      ::testing::HasSubstr("input 'B_zero_point' is int8 but TB is uint8"));
}

// MaxPool on uint8 and int8 (where qdq-fusion moves a Q/DQ pair through
// it) gives the float MaxPool's maxima, padding included.
TEST(QuantizedPoolTest, MaxPoolOnIntegersEqualsFloatMaxPool) {
  const AttrMap attrs = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                         {"strides", std::vector<int64_t>{2, 2}},
                         {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const Shape shape{1, 3, 11, 13};
  Tensor u(DataType::kUInt8, shape), s(DataType::kInt8, shape),
      fu(DataType::kFloat32, shape), fs(DataType::kFloat32, shape);
  uint32_t seed = 5;
  for (int64_t i = 0; i < u.NumElements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    u.data<uint8_t>()[i] = static_cast<uint8_t>(seed >> 24);
    s.data<int8_t>()[i] = static_cast<int8_t>(seed >> 24);
    fu.data<float>()[i] = u.data<uint8_t>()[i];
    fs.data<float>()[i] = s.data<int8_t>()[i];
  }
  auto got_u = test::RunOneNode("MaxPool", {u}, attrs);
  auto got_s = test::RunOneNode("MaxPool", {s}, attrs);
  auto want_u = test::RunOneNode("MaxPool", {fu}, attrs);
  auto want_s = test::RunOneNode("MaxPool", {fs}, attrs);
  ASSERT_TRUE(got_u.ok() && got_s.ok() && want_u.ok() && want_s.ok());
  for (int64_t i = 0; i < (*want_u)[0].NumElements(); ++i) {
    EXPECT_EQ(static_cast<float>((*got_u)[0].data<uint8_t>()[i]),
              (*want_u)[0].data<float>()[i]);
    EXPECT_EQ(static_cast<float>((*got_s)[0].data<int8_t>()[i]),
              (*want_s)[0].data<float>()[i]);
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// MatMulInteger with a constant int8 B (packed for the int8 kernel, or for
// the direct tiles where it is VNNI, A uint8 and B's zero point 0) over
// shapes that are and are not whole panels and quads, A uint8 or int8 and
// batched, B's zero point none, 0, per tensor or per column: the sums equal
// a direct int32 sum.
TEST(QuantizedMatMulTest, PackedProductsGiveTheExactSums) {
  struct Case {
    int64_t batch, m, k, n;
  };
  for (const Case& c :
       {Case{1, 1, 3, 1}, Case{1, 5, 16, 9}, Case{2, 33, 37, 24},
        Case{1, 70, 64, 17}, Case{2, 13, 72, 130}}) {
    for (bool signed_a : {false, true}) {
      // zeros: 0 none, 1 per tensor, 2 per column, 3 A's and a zero B's.
      for (int zeros : {0, 1, 2, 3}) {
        SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.k) + "x" +
                     std::to_string(c.n) + (signed_a ? " int8" : " uint8") +
                     " zeros " + std::to_string(zeros));
        const Shape a_shape =
            c.batch > 1 ? Shape{c.batch, c.m, c.k} : Shape{c.m, c.k};
        Tensor a = signed_a ? test::SeededBytes<int8_t>(a_shape, 3)
                            : test::SeededBytes<uint8_t>(a_shape, 3);
        Tensor b = test::SeededBytes<int8_t>({c.k, c.n}, 5);
        std::vector<Tensor> inputs = {a, b};
        std::vector<int32_t> bz(static_cast<size_t>(c.n), 0);
        const int32_t az = signed_a ? -7 : 131;
        if (zeros > 0) {
          inputs.push_back(signed_a ? Tensor::Scalar<int8_t>(-7)
                                    : Tensor::Scalar<uint8_t>(131));
          std::vector<int8_t> z(static_cast<size_t>(zeros == 1 ? 1 : c.n));
          for (size_t j = 0; j < z.size(); ++j) {
            z[j] = zeros == 3
                       ? 0
                       : static_cast<int8_t>(static_cast<int>(j % 5) - 2);
          }
          for (int64_t j = 0; j < c.n; ++j) {
            // An int8 zero point is signed: its value, not its bit pattern.
            // NOLINTNEXTLINE(bugprone-signed-char-misuse)
            bz[j] = static_cast<int32_t>(z[zeros == 1 ? 0 : j]);
          }
          inputs.push_back(zeros == 1 ? Tensor::Scalar<int8_t>(z[0])
                                      : Tensor::FromVector<int8_t>({c.n}, z));
        }
        // A fed, B and the zero points constants: B packed by the first Run
        // (an all-constant node would be folded at creation).
        Graph g;
        g.Placeholder("a", a.dtype(), a_shape);
        std::vector<std::string> names = {"a"};
        for (size_t i = 1; i < inputs.size(); ++i) {
          names.push_back(g.Const("in" + std::to_string(i), inputs[i]));
        }
        test::MustAdd(g, {"y", "MatMulInteger", names, {}, ""});
        auto session = test::MustCreate(g, test::PerSessionOptions(1, 2));
        ASSERT_NE(session, nullptr);
        const std::vector<Tensor> got =
            test::MustRun(*session, {"y"}, {{"a", a}});
        EXPECT_GT(session->prepared_bytes(), 0);
        const std::vector<Tensor>* y = &got;
        const int32_t a_zero = zeros > 0 ? az : 0;
        const int64_t rows = c.batch * c.m;
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < c.n; ++j) {
            int32_t want = 0;
            for (int64_t kk = 0; kk < c.k; ++kk) {
              const int32_t av =
                  (signed_a ? int32_t{a.data<int8_t>()[i * c.k + kk]}
                            : int32_t{a.data<uint8_t>()[i * c.k + kk]}) -
                  a_zero;
              want += av * (int32_t{b.data<int8_t>()[kk * c.n + j]} - bz[j]);
            }
            ASSERT_EQ((*y)[0].data<int32_t>()[i * c.n + j], want)
                << i << "," << j;
          }
        }
      }
    }
  }
}

// B is packed once, by the first Run that reads the constant; a Run that
// feeds the Const's output (B, or B's zero point) must multiply by what it
// fed, and the next Run without it by the constant again. A uint8 A with
// B's zero point 0 takes the direct tiles where the int8 kernel is VNNI, an
// int8 A the packed panels.
TEST(QuantizedMatMulTest, AFedBReplacesTheConstantOnlyForThatRun) {
  const int64_t m = 5, k = 32, n = 24;
  for (bool signed_a : {false, true}) {
    SCOPED_TRACE(signed_a ? "int8 A" : "uint8 A");
    const Tensor a = signed_a ? test::SeededBytes<int8_t>({m, k}, 3)
                              : test::SeededBytes<uint8_t>({m, k}, 3);
    const Tensor b = test::SeededBytes<int8_t>({k, n}, 5);
    const Tensor other_b = test::SeededBytes<int8_t>({k, n}, 11);
    const Tensor a_zero =
        signed_a ? Tensor::Scalar<int8_t>(-7) : Tensor::Scalar<uint8_t>(131);
    const Tensor b_zero = Tensor::Scalar<int8_t>(0);
    const Tensor other_b_zero = Tensor::Scalar<int8_t>(3);
    // The exact sums of A times (B - zero).
    const auto sums = [&](const Tensor& with_b, int32_t zero) {
      std::vector<int32_t> out(static_cast<size_t>(m * n), 0);
      const int32_t az = signed_a ? -7 : 131;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t kk = 0; kk < k; ++kk) {
            const int32_t av =
                (signed_a ? int32_t{a.data<int8_t>()[i * k + kk]}
                          : int32_t{a.data<uint8_t>()[i * k + kk]}) -
                az;
            out[i * n + j] +=
                av * (int32_t{with_b.data<int8_t>()[kk * n + j]} - zero);
          }
        }
      }
      return out;
    };
    const auto values = [](const Tensor& y) {
      return std::vector<int32_t>(y.data<int32_t>(),
                                  y.data<int32_t>() + y.NumElements());
    };
    Graph g;
    g.Placeholder("a", a.dtype(), {m, k});
    g.Const("b", b);
    g.Const("az", a_zero);
    g.Const("bz", b_zero);
    test::MustAdd(g, {"y", "MatMulInteger", {"a", "b", "az", "bz"}, {}, ""});
    auto session = test::MustCreate(g, test::PerSessionOptions(1, 2));
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(session->prepared_bytes(), 0);  // Nothing packed before a Run.
    EXPECT_EQ(values(test::MustRun(*session, {"y"}, {{"a", a}}).at(0)),
              sums(b, 0));
    EXPECT_GT(session->prepared_bytes(), 0);
    EXPECT_EQ(
        values(
            test::MustRun(*session, {"y"}, {{"a", a}, {"b", other_b}}).at(0)),
        sums(other_b, 0));
    EXPECT_EQ(
        values(test::MustRun(*session, {"y"}, {{"a", a}, {"bz", other_b_zero}})
                   .at(0)),
        sums(b, 3));
    EXPECT_EQ(values(test::MustRun(*session, {"y"}, {{"a", a}}).at(0)),
              sums(b, 0));
  }
}

// A session whose A leaves its rows open compiles the graph again for each
// row count it meets; those compiles take B's packing, made at the first
// Run, from the session's prepared constants (PreparedOnFirstRun), and each
// must still multiply its own rows by it: the direct tiles (uint8 A) and
// the panels (int8 A).
TEST(QuantizedMatMulTest, EveryRowCountMultipliesByTheOnePackedB) {
  const int64_t k = 32, n = 24;
  const Tensor b = test::SeededBytes<int8_t>({k, n}, 5);
  for (bool signed_a : {false, true}) {
    SCOPED_TRACE(signed_a ? "int8 A" : "uint8 A");
    const DataType a_type = signed_a ? DataType::kInt8 : DataType::kUInt8;
    Graph g;
    g.Placeholder("a", a_type, PartialShape({-1, k}));
    g.Const("b", b);
    test::MustAdd(g, {"y", "MatMulInteger", {"a", "b"}, {}, ""});
    auto session = test::MustCreate(g, test::PerSessionOptions(1, 2));
    ASSERT_NE(session, nullptr);
    for (int64_t m : {1, 5, 3, 5}) {
      SCOPED_TRACE(m);
      const Tensor a = signed_a ? test::SeededBytes<int8_t>({m, k}, 3 + m)
                                : test::SeededBytes<uint8_t>({m, k}, 3 + m);
      const Tensor y = test::MustRun(*session, {"y"}, {{"a", a}}).at(0);
      ASSERT_EQ(y.shape(), Shape({m, n}));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          int32_t want = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            const int32_t av = signed_a
                                   ? int32_t{a.data<int8_t>()[i * k + kk]}
                                   : int32_t{a.data<uint8_t>()[i * k + kk]};
            want += av * int32_t{b.data<int8_t>()[kk * n + j]};
          }
          ASSERT_EQ(y.data<int32_t>()[i * n + j], want) << i << "," << j;
        }
      }
    }
  }
}

// QLinearMatMul with a constant int8 B of zero point 0 and a uint8 A (the
// direct tiles where the int8 kernel is VNNI, the panels elsewhere), and
// with B fed (the reference loop): requantized as ONNX defines it,
// per-column scales, uint8 and int8 y, ties to even (a multiplier of 0.5),
// batched A; with weft's int32 bias per column (a fused Gemm's C), added
// before requantizing.
TEST(QuantizedMatMulTest, QLinearMatMulRequantizesTheExactSums) {
  const int64_t batch = 2, m = 7, k = 24, n = 70;
  const Tensor a = test::SeededBytes<uint8_t>(Shape{batch, m, k}, 13);
  const Tensor b = test::SeededBytes<int8_t>(Shape{k, n}, 17);
  std::vector<float> b_scale;
  for (int64_t j = 0; j < n; ++j) {
    b_scale.push_back(j % 9 == 0 ? 0.25f : 0.001f * static_cast<float>(j + 1));
  }
  std::vector<int32_t> bias;
  for (int64_t j = 0; j < n; ++j) {
    bias.push_back(static_cast<int32_t>(j * 37 % 501) - 250);
  }
  const float a_scale = 2.0f, y_scale = 1.0f;
  for (const auto [int8_y, with_bias, fed_b] :
       {std::tuple{false, false, false}, std::tuple{true, false, false},
        std::tuple{false, true, false}, std::tuple{true, true, false},
        std::tuple{false, true, true}}) {
    SCOPED_TRACE(std::string(int8_y ? "int8 y" : "uint8 y") +
                 (with_bias ? ", bias" : "") + (fed_b ? ", B fed" : ""));
    const Tensor y_zero =
        int8_y ? Tensor::Scalar<int8_t>(-9) : Tensor::Scalar<uint8_t>(100);
    // A fed, the rest constants: B is packed when the kernel is built.
    Graph g;
    g.Placeholder("a", DataType::kUInt8, a.shape());
    g.Const("as", Tensor::Scalar<float>(a_scale));
    g.Const("az", Tensor::Scalar<uint8_t>(119));
    if (fed_b) {
      g.Placeholder("b", DataType::kInt8, b.shape());
    } else {
      g.Const("b", b);
    }
    g.Const("bs", Tensor::FromVector<float>({n}, b_scale));
    g.Const("bz", Tensor::FromVector<int8_t>({n}, std::vector<int8_t>(n, 0)));
    g.Const("ys", Tensor::Scalar<float>(y_scale));
    g.Const("yz", y_zero);
    g.Const("bias", Tensor::FromVector<int32_t>({n}, bias));
    std::vector<std::string> inputs = {"a",  "as", "az", "b",
                                       "bs", "bz", "ys", "yz"};
    if (with_bias) inputs.push_back("bias");
    // y's dtype is its zero point's.
    test::MustAdd(g, {"y", "QLinearMatMul", inputs, {}, ""});
    NamedTensors feeds = {{"a", a}};
    if (fed_b) feeds.push_back({"b", b});
    std::vector<Tensor> got;
    for (int threads : {1, 2}) {
      auto session = test::MustCreate(g, test::PerSessionOptions(1, threads));
      ASSERT_NE(session, nullptr);
      got.push_back(test::MustRun(*session, {"y"}, feeds)[0]);
    }
    EXPECT_TRUE(got[1].BitwiseEqual(got[0]));
    const std::vector<Tensor>* y = &got;
    for (int64_t i = 0; i < batch * m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int32_t acc = with_bias ? bias[j] : 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          acc += (int32_t{a.data<uint8_t>()[i * k + kk]} - 119) *
                 int32_t{b.data<int8_t>()[kk * n + j]};
        }
        const float v = std::nearbyint(static_cast<float>(acc) *
                                       (a_scale * b_scale[j] / y_scale)) +
                        (int8_y ? -9.0f : 100.0f);
        if (int8_y) {
          ASSERT_EQ((*y)[0].data<int8_t>()[i * n + j],
                    static_cast<int8_t>(std::clamp(v, -128.0f, 127.0f)))
              << i << "," << j;
        } else {
          ASSERT_EQ((*y)[0].data<uint8_t>()[i * n + j],
                    static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f)))
              << i << "," << j;
        }
      }
    }
  }
}

// y's dtype is y_zero_point's (ONNX's T3): an int8 zero point gives int8
// outputs, saturated at -128 and 127, as a QDQ model with int8 activations
// has them.
TEST(QuantizedMatMulTest, QLinearMatMulWritesTheDtypeOfItsOutputZeroPoint) {
  const Tensor a = test::SeededBytes<uint8_t>(Shape{2, 4}, 1);
  const Tensor b = test::SeededBytes<int8_t>(Shape{4, 3}, 2);
  constexpr int8_t kZeroY = -5;
  auto y = test::RunOneOutput(
      "QLinearMatMul",
      {a, Tensor::Scalar<float>(0.5f), Tensor::Scalar<uint8_t>(3), b,
       Tensor::Scalar<float>(0.25f), Tensor::Scalar<int8_t>(0),
       Tensor::Scalar<float>(1.f), Tensor::Scalar<int8_t>(kZeroY)});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ASSERT_EQ(y->dtype(), DataType::kInt8);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      int32_t sum = 0;
      for (int64_t k = 0; k < 4; ++k) {
        sum += (a.data<uint8_t>()[i * 4 + k] - 3) * b.data<int8_t>()[k * 3 + j];
      }
      const float v = std::nearbyint(static_cast<float>(sum) * 0.125f) + kZeroY;
      EXPECT_EQ(y->data<int8_t>()[i * 3 + j],
                static_cast<int8_t>(std::clamp(v, -128.0f, 127.0f)))
          << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// QuantizeLinear per tensor (a vectorised loop) and per axis (the general
// one) agree element for element: ties to even, saturation at both ends,
// NaN to 0, for uint8 and int8, over lengths with vector tails.
// The specials first and last: the per-tensor path's vectors of 64 take
// the first, its scalar tail the last; the per-axis path is scalar.
TEST(QuantizeLinearTest, PerTensorAndPerAxisAgreeOnTiesSaturationAndNaN) {
  const std::vector<float> specials = {std::numeric_limits<float>::quiet_NaN(),
                                       std::numeric_limits<float>::infinity(),
                                       -std::numeric_limits<float>::infinity()};
  std::vector<float> x = specials;
  for (int i = -300; i <= 300; ++i) x.push_back(static_cast<float>(i) * 0.5f);
  x.insert(x.end(), specials.begin(), specials.end());
  const int64_t n = static_cast<int64_t>(x.size());
  for (bool as_int8 : {false, true}) {
    Tensor zero =
        as_int8 ? Tensor::Scalar<int8_t>(-3) : Tensor::Scalar<uint8_t>(100);
    Tensor zeros = as_int8 ? Tensor::FromVector<int8_t>({1}, {-3})
                           : Tensor::FromVector<uint8_t>({1}, {100});
    auto per_tensor = test::RunOneNode(
        "QuantizeLinear",
        {Tensor::FromVector<float>({n}, x), Tensor::Scalar<float>(1.0f), zero});
    // A scale of shape [1] along axis 0: the per-axis path, same values.
    auto per_axis =
        test::RunOneNode("QuantizeLinear",
                         {Tensor::FromVector<float>({1, n}, x),
                          Tensor::FromVector<float>({1}, {1.0f}), zeros},
                         {{"axis", int64_t{0}}});
    ASSERT_TRUE(per_tensor.ok()) << per_tensor.status();
    ASSERT_TRUE(per_axis.ok()) << per_axis.status();
    const Tensor& a = (*per_tensor)[0];
    const Tensor& b = (*per_axis)[0];
    ASSERT_EQ(0, std::memcmp(a.raw_data(), b.raw_data(), a.size_bytes()));
    const auto value = [&](int64_t i) {
      return as_int8 ? int{a.data<int8_t>()[i]} : int{a.data<uint8_t>()[i]};
    };
    const int z = as_int8 ? -3 : 100;
    EXPECT_EQ(value(303), z);      // 0
    EXPECT_EQ(value(304), z);      // 0.5 rounds to 0 (even)
    EXPECT_EQ(value(306), z + 2);  // 1.5 rounds to 2
    for (int64_t at : {int64_t{0}, n - 3}) {
      EXPECT_EQ(value(at), 0);  // NaN
      EXPECT_EQ(value(at + 1), as_int8 ? 127 : 255);
      EXPECT_EQ(value(at + 2), as_int8 ? -128 : 0);
    }
  }
}

// ONNX 21's 4- and 16-bit types: one value per byte (int4 sign-extended),
// saturated at each type's own range, read back by DequantizeLinear.
TEST(QuantizeLinearTest, FourAndSixteenBitTypesSaturateAtTheirRange) {
  const Tensor x = FloatTensor({5}, {-100, -7.5f, 2.5f, 6.6f, 100});
  const auto quantized = [&](const Tensor& zero) {
    auto y = RunOp("QuantizeLinear", {x, FloatTensor({}, {1}), zero});
    EXPECT_TRUE(y.ok()) << y.status();
    return y.ok() ? (*y)[0] : Tensor();
  };
  const Tensor i4 = quantized(Tensor::Scalar<Int4>(WrapToInt4(-1)));
  ASSERT_EQ(i4.dtype(), DataType::kInt4);
  std::vector<int> values;
  for (Int4 v : test::Values<Int4>(i4)) values.push_back(ValueOf(v));
  // -100 -> -8; -7.5 -> -8 (even) - 1 -> -8 (clamped); 2.5 -> 2 - 1 = 1;
  // 6.6 -> 7 - 1 = 6; 100 -> 7.
  EXPECT_EQ(values, (std::vector<int>{-8, -8, 1, 6, 7}));
  const Tensor u4 = quantized(Tensor::Scalar<UInt4>(WrapToUInt4(3)));
  values.clear();
  for (UInt4 v : test::Values<UInt4>(u4)) values.push_back(ValueOf(v));
  EXPECT_EQ(values, (std::vector<int>{0, 0, 5, 10, 15}));
  const Tensor i16 = quantized(Tensor::Scalar<int16_t>(int16_t{-32760}));
  EXPECT_EQ(test::Values<int16_t>(i16),
            (std::vector<int16_t>{-32768, -32768, -32758, -32753, -32660}));
  const Tensor u16 = quantized(Tensor::Scalar<uint16_t>(uint16_t{65500}));
  EXPECT_EQ(test::Values<uint16_t>(u16),
            (std::vector<uint16_t>{65400, 65492, 65502, 65507, 65535}));

  auto back = RunOp("DequantizeLinear", {i4, FloatTensor({}, {0.5f}),
                                         Tensor::Scalar<Int4>(WrapToInt4(-1))});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(test::Values<float>((*back)[0]),
            (std::vector<float>{-3.5f, -3.5f, 1, 3.5f, 4}));
  // A zero point of another width than the output is refused by name.
  auto mixed =
      RunOp("DequantizeLinear", {i4, FloatTensor({}, {1}), I8({}, {0})});
  ASSERT_FALSE(mixed.ok());
  EXPECT_THAT(mixed.status().message(),
              HasSubstr("the zero point has dtype int8, expected int4"));
}

// A float8 output (ONNX 19): x / scale + zero point rounded to the float8,
// no rounding to an integer first; `saturate` 0 lets an overflow be NaN.
TEST(QuantizeLinearTest, Float8OutputsRoundToTheFormatAndSaturateOrNot) {
  const Tensor x = FloatTensor({3}, {1000, 3.3f, -0.7f});
  const Tensor zero =
      Tensor::Scalar<Float8E4M3FN>(FloatToFloat8<Float8E4M3FN>(0.5f, true));
  for (int64_t saturate : {1, 0}) {
    auto y = test::RunOneNode("QuantizeLinear", {x, FloatTensor({}, {2}), zero},
                              {{"saturate", saturate}});
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ((*y)[0].dtype(), DataType::kFloat8E4M3FN);
    // 500.5 -> 448 or NaN; 2.15 -> 2.25 (the nearest, step 0.25);
    // 0.15 -> 0.15625 (in [0.125, 0.25) the step is 2^-6).
    const Tensor& q = (*y)[0];
    if (saturate) {
      EXPECT_EQ(q.ValueAsDouble(0), 448);
    } else {
      EXPECT_TRUE(std::isnan(q.ValueAsDouble(0)));
    }
    EXPECT_EQ(q.ValueAsDouble(1), 2.25);
    EXPECT_EQ(q.ValueAsDouble(2), 0.15625);
    auto back = RunOp("DequantizeLinear", {q, FloatTensor({}, {2}), zero});
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(test::Values<float>((*back)[0])[1], 3.5f);
    EXPECT_EQ(test::Values<float>((*back)[0])[2], -0.6875f);
  }
}

TEST(QuantizeLinearTest, DequantizeNamesADtypeItDoesNotRead) {
  for (const Tensor& x : {Tensor::FromVector<float>({2}, {1, 2}),
                          Tensor::FromVector<std::string>({1}, {"7"}),
                          Tensor::FromVector<int64_t>({1}, {7})}) {
    auto y = RunOp("DequantizeLinear", {x, FloatTensor({}, {1})});
    ASSERT_FALSE(y.ok());
    EXPECT_THAT(y.status().message(),
                HasSubstr(std::string("x is ") + DataTypeName(x.dtype()) +
                          ": DequantizeLinear reads uint8, int8"));
  }
}

}  // namespace
}  // namespace weft
