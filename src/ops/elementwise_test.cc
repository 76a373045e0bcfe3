// Element-wise ops against a float64 reference, on sizes that are not
// multiples of the block size, bitwise identical for every thread setting.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "test_support/session_util.h"

namespace weft {
namespace {

struct UnaryCase {
  std::string op;
  std::function<double(double)> reference;
  double low, high;      // Input range.
  double rel_tolerance;  // Documented in docs/kernels.md.
  AttrMap attrs = {};
};

TEST(ElementwiseTest, UnaryOpsMatchAFloat64ReferenceAndAreDeterministic) {
  const std::vector<UnaryCase> cases = {
      {"Neg", [](double x) { return -x; }, -10, 10, 0},
      {"Abs", [](double x) { return std::abs(x); }, -10, 10, 0},
      {"Exp", [](double x) { return std::exp(x); }, -20, 20, 1e-6},
      {"Log", [](double x) { return std::log(x); }, 1e-3, 1e3, 1e-6},
      {"Sqrt", [](double x) { return std::sqrt(x); }, 0, 1e4, 1e-6},
      {"Reciprocal", [](double x) { return 1 / x; }, 0.01, 100, 1e-6},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -20, 20,
       1e-6},
      {"Tanh", [](double x) { return std::tanh(x); }, -10, 10, 1e-6},
      {"Gelu",
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       -6, 6, 1e-5},
      {"Gelu",
       [](double x) {
         return 0.5 * x *
                (1 +
                 std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       },
       -6,
       6,
       1e-5,
       {{"approximate", "tanh"}}},
  };
  constexpr int64_t kN = 40'007;  // Not a multiple of the 16384 block.
  for (const UnaryCase& c : cases) {
    Graph g;
    ASSERT_TRUE(g.AddNode({"x",
                           "RandomUniform",
                           {},
                           {{"shape", Shape{kN}},
                            {"low", c.low},
                            {"high", c.high},
                            {"seed", 5}},
                           ""})
                    .ok());
    ASSERT_TRUE(g.AddNode({"y", c.op, {"x"}, c.attrs, ""}).ok());
    Tensor x, reference;
    for (int inter : {-1, 1, 2}) {
      for (int intra : {1, 2, 3, 8}) {
        auto session =
            test::MustCreate(g, test::PerSessionOptions(inter, intra));
        auto out = test::MustRun(*session, {"x", "y"});
        if (!reference.IsInitialized()) {
          x = out[0];
          reference = out[1];
          continue;
        }
        ASSERT_TRUE(out[1].BitwiseEqual(reference))
            << c.op << " inter=" << inter << " intra=" << intra;
      }
    }
    double worst = 0;
    for (int64_t i = 0; i < kN; ++i) {
      const double expected = c.reference(x.data<float>()[i]);
      const double got = reference.data<float>()[i];
      const double scale = std::max(std::abs(expected), 1e-30);
      worst = std::max(worst, std::abs(got - expected) /
                                  std::max(scale, 1e-6));  // abs near 0
    }
    // float32 rounding of the result alone costs up to 6e-8.
    EXPECT_LE(worst, std::max(c.rel_tolerance, 1.2e-7)) << c.op;
  }
}

TEST(ElementwiseTest, BinaryMaxMinPowWithBroadcasting) {
  Graph g;
  auto a = g.Const("a", Tensor::FromVector<float>({2, 2}, {1, 5, -3, 2}));
  auto b = g.Const("b", Tensor::FromVector<float>({2}, {2, 3}));
  ASSERT_TRUE(g.AddNode({"max", "Max", {a, b}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"min", "Min", {a, b}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"pow", "Pow", {b, a}, {}, ""}).ok());
  auto session = test::MustCreate(g, test::PerSessionOptions(1, 2));
  auto out = test::MustRun(*session, {"max", "min", "pow"});
  EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{2, 5, 2, 3}));
  EXPECT_EQ(test::Values<float>(out[1]), (std::vector<float>{1, 3, -3, 2}));
  EXPECT_EQ(test::Values<float>(out[2]),
            (std::vector<float>{2, 243, 0.125f, 9}));
}

// NaN in either input of Max or Min gives NaN, in either position (numpy's
// maximum and minimum, ONNX Runtime's Max and Min).
TEST(ElementwiseTest, MaxAndMinPropagateNaNFromEitherInput) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Graph g;
  auto a = g.Const("a", Tensor::FromVector<float>({3}, {1, nan, nan}));
  auto b = g.Const("b", Tensor::FromVector<float>({3}, {nan, 2, nan}));
  ASSERT_TRUE(g.AddNode({"max", "Max", {a, b}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"min", "Min", {a, b}, {}, ""}).ok());
  auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
  for (const Tensor& out : test::MustRun(*session, {"max", "min"})) {
    for (float v : test::Values<float>(out)) EXPECT_TRUE(std::isnan(v)) << v;
  }
}

// Signed integer arithmetic wraps around on overflow, as NumPy's does (C++
// leaves it undefined; the sanitizer build checks that none is left):
// element-wise, variadic, reduced and accumulated.
TEST(ElementwiseTest, IntegerArithmeticWrapsOnOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const Tensor big = Tensor::FromVector<int64_t>({2}, {kMax, kMin});
  const Tensor one = Tensor::FromVector<int64_t>({2}, {1, 1});
  auto values = [](const char* op, std::vector<Tensor> in, AttrMap attrs = {}) {
    auto y = test::RunOneOutput(op, std::move(in), std::move(attrs));
    EXPECT_TRUE(y.ok()) << op << ": " << y.status();
    return y.ok() ? test::Values<int64_t>(*y) : std::vector<int64_t>{};
  };
  EXPECT_EQ(values("Add", {big, one}), (std::vector<int64_t>{kMin, kMin + 1}));
  EXPECT_EQ(values("Sub", {big, one}), (std::vector<int64_t>{kMax - 1, kMax}));
  EXPECT_EQ(values("Mul", {big, big}), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(values("Sum", {big, one}), (std::vector<int64_t>{kMin, kMin + 1}));
  EXPECT_EQ(values("ReduceSum", {Tensor::FromVector<int64_t>({2}, {kMax, 1})},
                   {{"keepdims", int64_t{0}}}),
            (std::vector<int64_t>{kMin}));
  EXPECT_EQ(values("ReduceProd", {Tensor::FromVector<int64_t>({2}, {kMax, 2})},
                   {{"keepdims", int64_t{0}}}),
            (std::vector<int64_t>{-2}));
  EXPECT_EQ(values("CumSum", {Tensor::FromVector<int64_t>({2}, {kMax, 1}),
                              Tensor::FromVector<int64_t>({}, {0})}),
            (std::vector<int64_t>{kMax, kMin}));
  const Tensor small = Tensor::FromVector<int32_t>({1}, {1 << 30});
  auto y = test::RunOneOutput("Mul", {small, small});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(test::Values<int32_t>(*y), (std::vector<int32_t>{0}));
}

// ONNX Pow-15: the exponent's dtype may differ from the base's. An integer
// base with an integral exponent is exact and wraps as NumPy's power; other
// exponents go through double, truncated and saturated (NaN gives 0).
TEST(ElementwiseTest, PowWithAnExponentOfAnotherDtype) {
  Graph g;
  auto f = g.Const("f", Tensor::FromVector<float>({3}, {1, 2, 3}));
  auto i32 = g.Const("i32", Tensor::FromVector<int32_t>({3}, {4, 5, 6}));
  auto u64 = g.Const("u64", Tensor::FromVector<uint64_t>({3}, {4, 5, 6}));
  auto big = g.Const("big", Tensor::FromVector<int64_t>({3}, {3, 2, -2}));
  auto e = g.Const("e", Tensor::FromVector<int64_t>({3}, {40, 63, -1}));
  auto half = g.Const("half", Tensor::FromVector<float>({3}, {0.5f, 40, NAN}));
  ASSERT_TRUE(g.AddNode({"f_i32", "Pow", {f, i32}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"f_u64", "Pow", {f, u64}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"i32_i32", "Pow", {i32, i32}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"wrap", "Pow", {big, e}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"i64_f", "Pow", {big, half}, {}, ""}).ok());
  auto run = test::RunAtOneAndTwoThreads(
      g, {"f_i32", "f_u64", "i32_i32", "wrap", "i64_f"});
  ASSERT_TRUE(run.ok()) << run.status();
  const std::vector<Tensor>& out = *run;
  EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{1, 32, 729}));
  EXPECT_EQ(test::Values<float>(out[1]), (std::vector<float>{1, 32, 729}));
  EXPECT_EQ(test::Values<int32_t>(out[2]),
            (std::vector<int32_t>{256, 3125, 46656}));
  // 3^40 wraps modulo 2^64 as NumPy's int64 power does; 2^63 wraps to the
  // minimum; (-2)^-1 = -0.5 truncates to 0.
  EXPECT_EQ(test::Values<int64_t>(out[3]),
            (std::vector<int64_t>{static_cast<int64_t>(12157665459056928801ull),
                                  INT64_MIN, 0}));
  // 3^0.5 = 1.73 truncates to 1; 2^40 fits; (-2)^NaN is NaN: 0.
  EXPECT_EQ(test::Values<int64_t>(out[4]),
            (std::vector<int64_t>{1, int64_t{1} << 40, 0}));
}

TEST(ElementwiseTest, IntegerNegAndAbsWrapLikeNumpy) {
  Graph g;
  auto x = g.Const("x", Tensor::FromVector<int32_t>({3}, {INT32_MIN, -4, 7}));
  ASSERT_TRUE(g.AddNode({"neg", "Neg", {x}, {}, ""}).ok());
  ASSERT_TRUE(g.AddNode({"abs", "Abs", {x}, {}, ""}).ok());
  auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
  auto out = test::MustRun(*session, {"neg", "abs"});
  EXPECT_EQ(test::Values<int32_t>(out[0]),
            (std::vector<int32_t>{INT32_MIN, 4, -7}));
  EXPECT_EQ(test::Values<int32_t>(out[1]),
            (std::vector<int32_t>{INT32_MIN, 4, 7}));
}

// ONNX's types for Neg (every signed type), Abs, ReduceMax/ReduceMin and
// ArgMax/ArgMin (every numeric type) and PRelu (float16 too).
TEST(ElementwiseTest, NarrowAndUnsignedTypesOfTheOpsOnnxListsThemFor) {
  const Tensor i8 = Tensor::FromVector<int8_t>({2, 3}, {-128, -1, 5, 7, 7, -3});
  auto neg = test::RunOneOutput("Neg", {i8});
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_EQ(test::Values<int8_t>(*neg),
            (std::vector<int8_t>{-128, 1, -5, -7, -7, 3}));  // -(-128) wraps.
  auto abs = test::RunOneOutput("Abs", {i8});
  ASSERT_TRUE(abs.ok()) << abs.status();
  EXPECT_EQ(test::Values<int8_t>(*abs),
            (std::vector<int8_t>{-128, 1, 5, 7, 7, 3}));
  const Tensor u8 = Tensor::FromVector<uint8_t>({2, 3}, {0, 255, 9, 4, 4, 1});
  auto max = test::RunOneOutput(
      "ReduceMax", {u8},
      {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ(test::Values<uint8_t>(*max), (std::vector<uint8_t>{255, 4}));
  auto min = test::RunOneOutput("ReduceMin", {i8},
                                {{"axes", std::vector<int64_t>{1}}});
  ASSERT_TRUE(min.ok()) << min.status();
  EXPECT_EQ(test::Values<int8_t>(*min), (std::vector<int8_t>{-128, -3}));
  // The last of tied maxima, with select_last_index.
  auto arg = test::RunOneOutput(
      "ArgMax", {i8},
      {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}});
  ASSERT_TRUE(arg.ok()) << arg.status();
  EXPECT_EQ(test::Values<int64_t>(*arg), (std::vector<int64_t>{2, 1}));
  auto prelu = test::RunOneOutput(
      "PRelu",
      {Tensor::FromVector<Float16>({2}, {Float16(-2.0f), Float16(3.0f)}),
       Tensor::FromVector<Float16>({1}, {Float16(0.25f)})});
  ASSERT_TRUE(prelu.ok()) << prelu.status();
  EXPECT_EQ(static_cast<float>(prelu->data<Float16>()[0]), -0.5f);
  EXPECT_EQ(static_cast<float>(prelu->data<Float16>()[1]), 3.0f);
}

TEST(ElementwiseTest, BadAttributesAndDtypesAreErrors) {
  Graph g;
  auto x = g.Const("x", Tensor::FromVector<float>({1}, {1}));
  ASSERT_TRUE(
      g.AddNode({"gelu", "Gelu", {x}, {{"approximate", "fast"}}, ""}).ok());
  auto session = Session::Create(g, test::PerSessionOptions(1, 1));
  EXPECT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("'approximate'"),
            std::string::npos);
  Graph ints;
  auto i = ints.Const("i", Tensor::FromVector<int32_t>({1}, {1}));
  ASSERT_TRUE(ints.AddNode({"e", "Exp", {i}, {}, ""}).ok());
  auto bad = Session::Create(ints, test::PerSessionOptions(1, 1));
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("dtype int32 is not allowed"),
            std::string::npos);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// float16 is stored as binary16 and computed in float32: each result is the
// float32 result rounded once to float16. The narrow and unsigned integer
// types compute in their own type, wrapping as NumPy does.
TEST(ElementwiseTest, Float16AndNarrowIntegersComputeAsNumPyDoes) {
  auto half = [](std::vector<float> v) {
    std::vector<Float16> h(v.begin(), v.end());
    return Tensor::FromVector<Float16>(Shape{static_cast<int64_t>(h.size())},
                                       h);
  };
  Graph g;
  test::MustAdd(g,
                {"a", "Placeholder", {}, {{"dtype", DataType::kFloat16}}, ""});
  test::MustAdd(g,
                {"b", "Placeholder", {}, {{"dtype", DataType::kFloat16}}, ""});
  test::MustAdd(g, {"sum", "Add", {"a", "b"}, {}, ""});
  test::MustAdd(g, {"relu", "Relu", {"sum"}, {}, ""});
  test::MustAdd(g, {"u", "Placeholder", {}, {{"dtype", DataType::kUInt8}}, ""});
  test::MustAdd(g, {"wrapped", "Add", {"u", "u"}, {}, ""});
  auto session = test::MustCreate(std::move(g), test::PerSessionOptions(1, 2));
  // 1 + 2^-11 is a tie in float16: rounds to even (1).
  const Tensor a = half({1.0f, -3.0f, 1000.0f});
  const Tensor b = half({0x1p-11f, 1.0f, 0.5f});
  const Tensor u = Tensor::FromVector<uint8_t>(Shape{2}, {200, 7});
  auto out = test::MustRun(*session, {"sum", "relu", "wrapped"},
                           {{"a", a}, {"b", b}, {"u", u}});
  ASSERT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(out[0].data<Float16>()[0].bits(), Float16(1.0f).bits());
  EXPECT_EQ(static_cast<float>(out[0].data<Float16>()[1]), -2.0f);
  EXPECT_EQ(static_cast<float>(out[0].data<Float16>()[2]), 1000.5f);
  EXPECT_EQ(static_cast<float>(out[1].data<Float16>()[1]), 0.0f);
  EXPECT_EQ(out[2].data<uint8_t>()[0], 144);  // 400 mod 256.
  EXPECT_EQ(out[2].data<uint8_t>()[1], 14);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// The float ops that take float16 compute in float32 (or double) and round
// once: on inputs exact in float16, each result is within one float16 step
// of the float32 graph's result rounded to float16 (exact for the ops that
// widen, run the float32 kernel and narrow: MatMul, Gemm, Conv).
TEST(ElementwiseTest, Float16MathIsFloat32MathRoundedOnce) {
  struct Case {
    std::string op;
    std::vector<int64_t> a_dims, b_dims;  // b empty: unary.
    AttrMap attrs;
    bool exact;
  };
  const std::vector<Case> cases = {
      {"MatMul", {3, 5}, {5, 4}, {}, true},
      {"Gemm", {3, 5}, {5, 4}, {}, true},
      {"Conv",
       {1, 2, 5, 5},
       {3, 2, 3, 3},
       {{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
       true},
      {"Softmax", {2, 7}, {}, {}, false},
      {"ReduceMean", {4, 6}, {}, {{"axes", std::vector<int64_t>{1}}}, false},
      {"Sigmoid", {11}, {}, {}, false},
      {"AveragePool",
       {1, 1, 4, 4},
       {},
       {{"kernel_shape", std::vector<int64_t>{2, 2}}},
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    auto values = [](const std::vector<int64_t>& dims, int seed) {
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      std::vector<float> v(n);
      for (int64_t i = 0; i < n; ++i) {  // Multiples of 1/64: exact in half.
        v[i] = static_cast<float>((i * 37 + seed * 11) % 97 - 48) / 64.0f;
      }
      return v;
    };
    auto run = [&](DataType dtype) {
      Graph g;
      std::vector<std::string> inputs = {"a"};
      auto add_input = [&](const std::string& name,
                           const std::vector<int64_t>& dims, int seed) {
        const std::vector<float> v = values(dims, seed);
        Tensor t = Tensor::FromVector<float>(Shape(dims), v);
        if (dtype == DataType::kFloat16) {
          std::vector<Float16> h(v.begin(), v.end());
          t = Tensor::FromVector<Float16>(Shape(dims), h);
        }
        test::MustAdd(
            g, {name, "Const", {}, {{"value", t}, {"dtype", dtype}}, ""});
      };
      add_input("a", c.a_dims, 1);
      if (!c.b_dims.empty()) {
        add_input("b", c.b_dims, 2);
        inputs.push_back("b");
      }
      test::MustAdd(g, {"y", c.op, inputs, c.attrs, ""});
      auto session =
          test::MustCreate(std::move(g), test::PerSessionOptions(1, 2));
      return test::MustRun(*session, {"y"}, {})[0];
    };
    const Tensor f32 = run(DataType::kFloat32);
    const Tensor f16 = run(DataType::kFloat16);
    ASSERT_EQ(f16.dtype(), DataType::kFloat16);
    ASSERT_EQ(f16.shape(), f32.shape());
    for (int64_t i = 0; i < f32.NumElements(); ++i) {
      const Float16 want(f32.data<float>()[i]);
      const int steps =
          std::abs(static_cast<int>(f16.data<Float16>()[i].bits()) -
                   static_cast<int>(want.bits()));
      ASSERT_LE(steps, c.exact ? 0 : 1) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace weft
