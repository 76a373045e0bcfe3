// The ops of the graph issue against simple references, plus ops and kernels
// registered by user code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "framework/op_registry_impl.h"
#include "test_support/session_util.h"

namespace weft {
namespace {

using test::Values;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Runs `fetch` of g with intra = 2 and with intra = 1; both must agree
// bitwise. Returns the result.
Tensor OpsEval(const Graph& g, const std::string& fetch) {
  auto serial = test::MustCreate(g, test::PerSessionOptions(1, 1));
  auto parallel = test::MustCreate(g, test::PerSessionOptions(2, 2));
  auto a = test::MustRun(*serial, {fetch});
  auto b = test::MustRun(*parallel, {fetch});
  EXPECT_TRUE(a[0].BitwiseEqual(b[0])) << fetch;
  return a[0];
}

Status EvalStatus(const Graph& g, const std::string& fetch) {
  auto session = Session::Create(g, test::PerSessionOptions(1, 1));
  if (!session.ok()) return session.status();
  std::vector<Tensor> out;
  return (*session)->Run({}, {fetch}, {}, &out);
}

TEST(OpsTest, ArithmeticWithBroadcasting) {
  Graph g;
  auto a = g.Const("a", Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  auto row = g.Const("row", Tensor::FromVector<float>({3}, {10, 20, 30}));
  auto col = g.Const("col", Tensor::FromVector<float>({2, 1}, {100, 200}));
  auto s = g.Const("s", Tensor::Scalar<float>(2));
  g.Add("add_row", a, row);
  g.Sub("sub_col", a, col);
  g.Mul("mul_s", s, a);
  g.Div("div_row", row, a);
  g.Add("outer", row, col);  // [3] + [2, 1] -> [2, 3]
  EXPECT_EQ(Values<float>(OpsEval(g, "add_row")),
            (std::vector<float>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(Values<float>(OpsEval(g, "sub_col")),
            (std::vector<float>{-99, -98, -97, -196, -195, -194}));
  EXPECT_EQ(Values<float>(OpsEval(g, "mul_s")),
            (std::vector<float>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(Values<float>(OpsEval(g, "div_row")),
            (std::vector<float>{10, 10, 10, 2.5, 4, 5}));
  Tensor outer = OpsEval(g, "outer");
  EXPECT_EQ(outer.shape(), (Shape{2, 3}));
  EXPECT_EQ(Values<float>(outer),
            (std::vector<float>{110, 120, 130, 210, 220, 230}));
}

TEST(OpsTest, BroadcastingSizeOneAndZeroSizeDims) {
  Graph g;
  auto a = g.Const("a", Tensor(DataType::kFloat32, {4, 1, 3}));
  auto b = g.Const("b", Tensor(DataType::kFloat32, {5, 1}));
  auto z = g.Const("z", Tensor(DataType::kFloat32, {0, 3}));
  auto one = g.Const("one", Tensor::FromVector<float>({1}, {1}));
  g.Add("ab", a, b);
  g.Add("zone", z, one);
  EXPECT_EQ(OpsEval(g, "ab").shape(), (Shape{4, 5, 3}));
  EXPECT_EQ(OpsEval(g, "zone").shape(), (Shape{0, 3}));
}

TEST(OpsTest, IntegerArithmetic) {
  Graph g;
  auto a = g.Const("a", Tensor::FromVector<int32_t>({3}, {7, -7, INT32_MIN}));
  auto b = g.Const("b", Tensor::FromVector<int32_t>({3}, {2, 2, -1}));
  auto zero = g.Const("zero", Tensor::FromVector<int32_t>({3}, {1, 0, 1}));
  g.Div("div", a, b);
  g.Div("div0", a, zero);
  EXPECT_EQ(Values<int32_t>(OpsEval(g, "div")),
            (std::vector<int32_t>{3, -3, INT32_MIN}));  // Truncation; wraps.
  Status s = EvalStatus(g, "div0");
  EXPECT_THAT(s.message(), AllOf(HasSubstr("node 'div0' (op Div)"),
                                 HasSubstr("integer division by zero")));
}

// Ops whose inputs are all optional lists (DequantizeLinear's x, scale and
// zero point; RandomUniformLike's input) given none: refused by the shape
// functions that read input 0, where they once read past the end.
TEST(OpsTest, AnOpGivenNoneOfTheInputsItReadsIsRefused) {
  for (const char* op : {"DequantizeLinear", "RandomUniformLike", "Sigmoid"}) {
    Graph g;
    NodeDef node{.name = "n", .op = op};
    if (std::string(op) == "RandomUniformLike") {
      node.attrs["dtype"] = DataType::kFloat32;
    }
    Status status = g.AddNode(std::move(node));
    if (status.ok()) status = EvalStatus(g, "n");
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << op << status;
    EXPECT_THAT(status.message(), HasSubstr("node 'n'")) << op;
  }
}

TEST(OpsTest, Relu) {
  Graph g;
  auto x = g.Const("x", Tensor::FromVector<float>({4}, {-1, 0, 2, -0.5}));
  g.Relu("r", x);
  EXPECT_EQ(Values<float>(OpsEval(g, "r")), (std::vector<float>{0, 0, 2, 0}));
}

std::vector<double> ReferenceMatMul(const std::vector<float>& a,
                                    const std::vector<float>& b, int m, int k,
                                    int n, bool ta, bool tb) {
  std::vector<double> c(m * n, 0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      for (int p = 0; p < k; ++p) {
        const double x = ta ? a[p * m + i] : a[i * k + p];
        const double y = tb ? b[j * k + p] : b[p * n + j];
        c[i * n + j] += x * y;
      }
    }
  }
  return c;
}

TEST(OpsTest, MatMulWithTransposes) {
  const int m = 37, k = 19, n = 23;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Graph g;
      Shape a_shape = ta ? Shape{k, m} : Shape{m, k};
      Shape b_shape = tb ? Shape{n, k} : Shape{k, n};
      auto a = g.RandomUniform("a", DataType::kFloat32, a_shape, 1);
      auto b = g.RandomUniform("b", DataType::kFloat32, b_shape, 2);
      g.MatMul("c", a, b, ta, tb);
      auto session = test::MustCreate(g, test::PerSessionOptions(1, 2));
      auto out = test::MustRun(*session, {"a", "b", "c"});
      ASSERT_EQ(out[2].shape(), (Shape{m, n}));
      auto ref = ReferenceMatMul(Values<float>(out[0]), Values<float>(out[1]),
                                 m, k, n, ta, tb);
      for (int i = 0; i < m * n; ++i) {
        ASSERT_NEAR(out[2].data<float>()[i], ref[i],
                    1e-5 * (1 + std::abs(ref[i])))
            << "ta=" << ta << " tb=" << tb << " i=" << i;
      }
      EXPECT_TRUE(out[2].BitwiseEqual(OpsEval(g, "c")));
    }
  }
}

TEST(OpsTest, ReduceSumAxesAndKeepdims) {
  Graph g;
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  auto x = g.Const("x", Tensor::FromVector<float>({2, 3, 4}, v));
  g.ReduceSum("all", x);                  // keepdims default: [1, 1, 1]
  g.ReduceSum("all_flat", x, {}, false);  // []
  g.ReduceSum("ax1", x, {1}, false);      // [2, 4]
  g.ReduceSum("ax02", x, {0, -1}, true);  // [1, 3, 1]
  Tensor all = OpsEval(g, "all");
  EXPECT_EQ(all.shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(all.data<float>()[0], 276);
  EXPECT_EQ(OpsEval(g, "all_flat").shape(), Shape{});
  Tensor ax1 = OpsEval(g, "ax1");
  EXPECT_EQ(ax1.shape(), (Shape{2, 4}));
  EXPECT_EQ(Values<float>(ax1),
            (std::vector<float>{12, 15, 18, 21, 48, 51, 54, 57}));
  Tensor ax02 = OpsEval(g, "ax02");
  EXPECT_EQ(ax02.shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(Values<float>(ax02), (std::vector<float>{60, 92, 124}));

  Graph bad;
  auto y = bad.Const("y", Tensor(DataType::kFloat32, {2, 2}));
  bad.ReduceSum("r", y, {2});
  EXPECT_THAT(
      EvalStatus(bad, "r").message(),
      AllOf(HasSubstr("node 'r'"), HasSubstr("axis 2 is out of range")));
}

// A reduction reads each output's inputs as one run when the reduced axes
// are the trailing ones once axes of size 1 are set aside, and by offsets
// otherwise: both against a plain loop, with size-1 axes on either side.
TEST(OpsTest, ReduceSumOverAxesBetweenAxesOfSizeOne) {
  const Shape shape{2, 1, 3, 1, 5};
  std::vector<float> v(30);
  for (int i = 0; i < 30; ++i) v[i] = static_cast<float>(i * i % 17);
  Graph g;
  auto x = g.Const("x", Tensor::FromVector<float>(shape, v));
  g.ReduceSum("trailing", x, {1, 2, 3, 4}, false);  // [2]: one run each.
  g.ReduceSum("size_one_kept", x, {2, 4}, false);   // [2, 1, 1]: one run.
  g.ReduceSum("inner_kept", x, {0, 2}, false);      // [1, 1, 5]: offsets.
  std::vector<float> trailing(2, 0), inner(5, 0);
  for (int n = 0; n < 2; ++n) {
    for (int h = 0; h < 3; ++h) {
      for (int w = 0; w < 5; ++w) {
        trailing[n] += v[(n * 3 + h) * 5 + w];
        inner[w] += v[(n * 3 + h) * 5 + w];
      }
    }
  }
  EXPECT_EQ(Values<float>(OpsEval(g, "trailing")), trailing);
  Tensor size_one_kept = OpsEval(g, "size_one_kept");
  EXPECT_EQ(size_one_kept.shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(Values<float>(size_one_kept), trailing);
  Tensor inner_kept = OpsEval(g, "inner_kept");
  EXPECT_EQ(inner_kept.shape(), (Shape{1, 1, 5}));
  EXPECT_EQ(Values<float>(inner_kept), inner);
}

// The max of nothing but -inf is -inf, and the min of nothing but +inf is
// +inf (numpy's and ONNX Runtime's answers), on the vectorised path (a long
// row) and the short one, beside a row whose extreme is finite.
TEST(OpsTest, ReduceMaxAndMinOfInfinitiesAreInfinite) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t width : {3, 1000}) {
    std::vector<float> lows(2 * width, -inf), highs(2 * width, inf);
    lows[width] = -1.0f;  // Row 1 holds one finite value.
    highs[width] = 1.0f;
    Graph g;
    auto lo = g.Const("lo", Tensor::FromVector<float>({2, width}, lows));
    auto hi = g.Const("hi", Tensor::FromVector<float>({2, width}, highs));
    test::MustAdd(g, {"max",
                      "ReduceMax",
                      {lo},
                      {{"axes", std::vector<int64_t>{1}}, {"keepdims", 0}},
                      ""});
    test::MustAdd(g, {"min",
                      "ReduceMin",
                      {hi},
                      {{"axes", std::vector<int64_t>{1}}, {"keepdims", 0}},
                      ""});
    EXPECT_EQ(Values<float>(OpsEval(g, "max")),
              (std::vector<float>{-inf, -1.0f}))
        << width;
    EXPECT_EQ(Values<float>(OpsEval(g, "min")), (std::vector<float>{inf, 1.0f}))
        << width;
  }
}

// ReduceMax and ReduceMin of bool (ONNX opset 20) are "any" and "all",
// along each axis and over everything (a long input too, whose blocks
// threads reduce at once).
TEST(OpsTest, ReduceMaxAndMinOfBoolAreAnyAndAll) {
  Tensor x(DataType::kBool, {2, 3});
  const bool values[] = {true, false, false, true, true, true};
  std::copy(values, values + 6, x.data<bool>());
  auto reduce = [&](const char* op, Tensor in, std::vector<int64_t> axes) {
    auto y = test::RunOneOutput(op, {std::move(in)},
                                {{"axes", std::move(axes)}, {"keepdims", 0}});
    EXPECT_TRUE(y.ok()) << y.status();
    return y.ok() ? test::Values<bool>(*y) : std::vector<bool>{};
  };
  EXPECT_EQ(reduce("ReduceMax", x, {1}), (std::vector<bool>{true, true}));
  EXPECT_EQ(reduce("ReduceMin", x, {1}), (std::vector<bool>{false, true}));
  EXPECT_EQ(reduce("ReduceMax", x, {0}), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(reduce("ReduceMin", x, {0}),
            (std::vector<bool>{true, false, false}));
  EXPECT_EQ(reduce("ReduceMin", x, {0, 1}), (std::vector<bool>{false}));
  Tensor lone(DataType::kBool, {3, 40000});  // All false but the last.
  lone.data<bool>()[lone.NumElements() - 1] = true;
  EXPECT_EQ(reduce("ReduceMax", lone, {0, 1}), (std::vector<bool>{true}));
  EXPECT_EQ(reduce("ReduceMin", lone, {0, 1}), (std::vector<bool>{false}));
}

// Over an empty axis ReduceMax and ReduceMin give their identities, as
// ONNX defines a reduction over nothing: -inf and +inf for floats, the
// type's lowest and highest values for integers, false and true for bool.
TEST(OpsTest, ReduceMaxAndMinOverAnEmptyAxisAreTheirIdentities) {
  const float inf = std::numeric_limits<float>::infinity();
  auto reduce = [](const char* op, Tensor x) {
    auto y = test::RunOneOutput(
        op, {std::move(x)},
        {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
    EXPECT_TRUE(y.ok()) << y.status();
    return y.ok() ? *std::move(y) : Tensor();
  };
  EXPECT_EQ(
      Values<float>(reduce("ReduceMax", Tensor(DataType::kFloat32, {2, 0}))),
      (std::vector<float>{-inf, -inf}));
  EXPECT_EQ(
      Values<float>(reduce("ReduceMin", Tensor(DataType::kFloat32, {2, 0}))),
      (std::vector<float>{inf, inf}));
  EXPECT_EQ(
      Values<int32_t>(reduce("ReduceMax", Tensor(DataType::kInt32, {1, 0}))),
      (std::vector<int32_t>{std::numeric_limits<int32_t>::lowest()}));
  EXPECT_EQ(
      Values<uint8_t>(reduce("ReduceMin", Tensor(DataType::kUInt8, {1, 0}))),
      (std::vector<uint8_t>{255}));
  EXPECT_EQ(
      test::Values<bool>(reduce("ReduceMax", Tensor(DataType::kBool, {1, 0}))),
      (std::vector<bool>{false}));
  EXPECT_EQ(
      test::Values<bool>(reduce("ReduceMin", Tensor(DataType::kBool, {1, 0}))),
      (std::vector<bool>{true}));
}

// ReduceLogSumExp sums exp(x - max): values whose exp overflows even in
// double (e^1000) give m + log(sum), along an axis (strided and contiguous)
// and over everything; an infinite or NaN maximum is the answer itself.
TEST(OpsTest, ReduceLogSumExpDoesNotOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float log2 = std::log(2.0f);
  Graph g;
  auto big =
      g.Const("big", Tensor::FromVector<float>({2, 2}, {1000, 1000, 0, 0}));
  auto special =
      g.Const("special", Tensor::FromVector<float>(
                             {3, 3}, {-inf, -inf, -inf, 1, nan, 2, inf, 1, 3}));
  auto lse = [&](const std::string& name, const std::string& x,
                 std::vector<int64_t> axes) {
    AttrMap attrs = {{"keepdims", int64_t{0}}};
    if (!axes.empty()) attrs["axes"] = std::move(axes);
    test::MustAdd(g, {name, "ReduceLogSumExp", {x}, attrs, ""});
  };
  lse("rows", big, {1});
  lse("columns", big, {0});
  lse("all", big, {});
  lse("specials", special, {1});
  EXPECT_EQ(Values<float>(OpsEval(g, "rows")),
            (std::vector<float>{1000 + log2, log2}));
  EXPECT_EQ(Values<float>(OpsEval(g, "columns")),
            (std::vector<float>{1000.0f, 1000.0f}));
  EXPECT_NEAR(Values<float>(OpsEval(g, "all"))[0], 1000 + log2, 1e-3);
  const std::vector<float> specials = Values<float>(OpsEval(g, "specials"));
  EXPECT_EQ(specials[0], -inf);
  EXPECT_TRUE(std::isnan(specials[1]));
  EXPECT_EQ(specials[2], inf);
}

TEST(OpsTest, ReduceSumOfManyElementsIsThreadCountIndependent) {
  Graph g;
  auto x = g.RandomUniform("x", DataType::kFloat32, {100003}, 9);
  g.ReduceSum("s", x, {}, false);
  Tensor s = OpsEval(g, "s");  // OpsEval checks intra 1 vs 2 bitwise.
  EXPECT_NEAR(s.data<float>()[0], 100003 / 2.0, 1000);
}

TEST(OpsTest, RandomUniformIsCounterBased) {
  Graph g;
  g.RandomUniform("short", DataType::kFloat32, {10}, 42);
  g.RandomUniform("long", DataType::kFloat32, {1000}, 42);
  g.RandomUniform("other", DataType::kFloat32, {10}, 43);
  ASSERT_TRUE(g.AddNode({"ranged",
                         "RandomUniform",
                         {},
                         {{"shape", Shape{1000}},
                          {"low", -2.0},
                          {"high", -1.0},
                          {"seed", 1},
                          {"dtype", DataType::kFloat64}},
                         ""})
                  .ok());
  Tensor a = OpsEval(g, "short");
  Tensor b = OpsEval(g, "long");
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]);
  EXPECT_FALSE(a.BitwiseEqual(OpsEval(g, "other")));
  for (float v : Values<float>(b)) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
  }
  for (double v : Values<double>(OpsEval(g, "ranged"))) {
    EXPECT_GE(v, -2.0);
    EXPECT_LT(v, -1.0);
  }
}

TEST(OpsTest, SpinAndSleepOutputTheirMicros) {
  Graph g;
  auto s = g.Spin("spin", 200);
  g.Sleep("sleep", 300, s);
  EXPECT_EQ(OpsEval(g, "spin").data<float>()[0], 200);
  EXPECT_EQ(OpsEval(g, "sleep").data<float>()[0], 300);
  Graph bad;
  bad.Spin("neg", -1);
  EXPECT_THAT(EvalStatus(bad, "neg").message(), HasSubstr("'micros'"));
}

// --- Ops and kernels registered by user code, outside weft's sources. -------

class SquareKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    ctx.ParallelFor(x.NumElements(), 1.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        y->data<float>()[i] = x.data<float>()[i] * x.data<float>()[i];
      }
    });
    return Status::OK();
  }
};

TEST(OpsTest, UserRegisteredOpAndKernel) {
  static const bool registered = [] {
    EXPECT_TRUE(RegisterOp(OpDefBuilder("TestSquare")
                               .Input(ArgDef::Typed("x", "T"))
                               .Output(ArgDef::Typed("y", "T"))
                               .Attr("T", AttrType::kType, std::nullopt,
                                     {DataType::kFloat32})
                               .SetShapeFn(shape_fns::SameAsInput0)
                               .Build())
                    .ok());
    EXPECT_TRUE(
        RegisterKernel("TestSquare", KernelFactoryFor<SquareKernel>()).ok());
    return true;
  }();
  ASSERT_TRUE(registered);
  // Registering the same name again is an error, not a silent replacement.
  EXPECT_EQ(RegisterOp(OpDefBuilder("TestSquare").Build()).code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(RegisterKernel("NoSuchOpAnywhere", KernelFactoryFor<SquareKernel>())
                .code(),
            StatusCode::kNotFound);

  Graph g;
  auto x = g.Const("x", Tensor::FromVector<float>({3}, {1, 2, 3}));
  ASSERT_TRUE(g.AddNode({"sq", "TestSquare", {x}, {}, ""}).ok());
  EXPECT_EQ(Values<float>(OpsEval(g, "sq")), (std::vector<float>{1, 4, 9}));
  Graph wrong_type;
  auto i = wrong_type.Const("i", Tensor::FromVector<int32_t>({1}, {1}));
  ASSERT_TRUE(wrong_type.AddNode({"sq", "TestSquare", {i}, {}, ""}).ok());
  EXPECT_THAT(EvalStatus(wrong_type, "sq").message(),
              HasSubstr("dtype int32 is not allowed"));
}

// A kernel that reads an attribute its op does not declare (a kernel
// author's mistake) and one that reads a declared one as the wrong type.
class ReadsUndeclaredAttr : public OpKernel {
 public:
  explicit ReadsUndeclaredAttr(const KernelConstruction& c)
      : value_(c.attr<int64_t>("not_declared")) {}
  Status Compute(KernelContext&) const override { return Status::OK(); }

 private:
  int64_t value_;
};

class ReadsAttrAsWrongType : public OpKernel {
 public:
  explicit ReadsAttrAsWrongType(const KernelConstruction& c)
      : value_(c.attr<std::string>("n")) {}
  Status Compute(KernelContext&) const override { return Status::OK(); }

 private:
  std::string value_;
};

TEST(OpsTest, AKernelReadingAMissingOrMistypedAttributeFailsCompilation) {
  static const bool registered = [] {
    for (const char* name : {"TestUndeclaredAttr", "TestMistypedAttr"}) {
      EXPECT_TRUE(RegisterOp(OpDefBuilder(name)
                                 .Output(ArgDef::Fixed("y", DataType::kFloat32))
                                 .Attr("n", AttrType::kInt, int64_t{3})
                                 .Build())
                      .ok());
    }
    EXPECT_TRUE(RegisterKernel("TestUndeclaredAttr",
                               KernelFactoryFor<ReadsUndeclaredAttr>())
                    .ok());
    EXPECT_TRUE(RegisterKernel("TestMistypedAttr",
                               KernelFactoryFor<ReadsAttrAsWrongType>())
                    .ok());
    return true;
  }();
  ASSERT_TRUE(registered);
  Graph missing;
  ASSERT_TRUE(missing.AddNode({"m", "TestUndeclaredAttr", {}, {}, ""}).ok());
  const Status missing_status = EvalStatus(missing, "m");
  EXPECT_EQ(missing_status.code(), StatusCode::kNotFound);
  EXPECT_THAT(missing_status.message(),
              HasSubstr("no attribute 'not_declared'"));
  EXPECT_THAT(missing_status.message(), HasSubstr("'m'"));
  Graph mistyped;
  ASSERT_TRUE(mistyped.AddNode({"t", "TestMistypedAttr", {}, {}, ""}).ok());
  EXPECT_THAT(EvalStatus(mistyped, "t").message(),
              HasSubstr("attribute 'n' is int, read as string"));
}

TEST(OpsTest, EveryBuiltinOpHasASummaryAndEverySummaryAnOp) {
  std::set<std::string> registered;
  for (const OpDef* op : RegisteredOps()) {
    registered.insert(op->name);
    if (op->name.rfind("Test", 0) == 0) continue;  // Registered by tests.
    EXPECT_FALSE(op->summary.empty()) << op->name << " has no summary";
  }
  for (const std::string& op :
       internal::OpRegistry::Global().OpsWithSummary()) {
    EXPECT_TRUE(registered.count(op)) << "a family's kSummaries names '" << op
                                      << "', which is not registered";
  }
}

TEST(OpsTest, UnknownOpsAndAttributesSuggestTheClosestNames) {
  Graph typo;
  typo.Const("x", Tensor::Scalar<float>(1));
  ASSERT_TRUE(typo.AddNode({"r", "relu", {"x"}, {}, ""}).ok());
  EXPECT_THAT(EvalStatus(typo, "r").message(),
              HasSubstr("unknown op 'relu' — did you mean 'Relu'?"));
  Graph attr;
  attr.Const("x", Tensor::FromVector<float>({2}, {1, 2}));
  ASSERT_TRUE(
      attr.AddNode({"s", "ReduceSum", {"x"}, {{"keep_dims", int64_t{0}}}, ""})
          .ok());
  const std::string message = EvalStatus(attr, "s").message();
  EXPECT_THAT(message, HasSubstr("unknown attribute 'keep_dims' for op "
                                 "ReduceSum — did you mean 'keepdims'?"));
  EXPECT_THAT(message, HasSubstr("ReduceSum's attributes: "));
  EXPECT_THAT(message, HasSubstr("axes"));
}

TEST(OpsTest, OpDefinitionErrors) {
  EXPECT_THAT(
      RegisterOp(
          OpDefBuilder("TestBadOp").Input(ArgDef::Typed("x", "T")).Build())
          .message(),
      HasSubstr("refers to attribute 'T'"));
  EXPECT_THAT(RegisterOp(OpDefBuilder("TestBadDefault")
                             .Attr("n", AttrType::kInt, std::string("x"))
                             .Build())
                  .message(),
              HasSubstr("default of attribute 'n'"));
}

TEST(OpsTest, CustomOpCallsARegisteredFunction) {
  static const bool registered = [] {
    EXPECT_TRUE(RegisterCustomFunction(
                    "test.sum_two",
                    [](KernelContext& ctx) -> Status {
                      WEFT_ASSIGN_OR_RETURN(Tensor * out,
                                            ctx.AllocateOutput(0, Shape{}));
                      out->data<double>()[0] = ctx.input(0).data<float>()[0] +
                                               ctx.input(1).data<int32_t>()[0];
                      return Status::OK();
                    })
                    .ok());
    return true;
  }();
  ASSERT_TRUE(registered);
  Graph g;
  auto a = g.Const("a", Tensor::Scalar<float>(1.5f));
  auto b = g.Const("b", Tensor::Scalar<int32_t>(2));
  ASSERT_TRUE(g.AddNode({"c",
                         "CustomOp",
                         {a, b},
                         {{"function", "test.sum_two"},
                          {"Tout", std::vector<DataType>{DataType::kFloat64}},
                          {"blocking", true}},
                         ""})
                  .ok());
  EXPECT_EQ(OpsEval(g, "c").data<double>()[0], 3.5);

  Graph missing;
  ASSERT_TRUE(missing
                  .AddNode({"m",
                            "CustomOp",
                            {},
                            {{"function", "test.not_there"},
                             {"Tout", std::vector<DataType>{}}},
                            ""})
                  .ok());
  EXPECT_THAT(EvalStatus(missing, "m").message(),
              AllOf(HasSubstr("node 'm'"), HasSubstr("'test.not_there'")));
}

// A custom kernel that asks for an input or output the node does not have
// is stopped with a message naming the node and the index, not left to read
// past the node's inputs.
TEST(CustomOpDeathTest, AnInputIndexOutOfRangeIsAContractFailure) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_TRUE(RegisterCustomFunction("test.reads_input_3",
                                     [](KernelContext& ctx) -> Status {
                                       return ctx.SetOutput(0, ctx.input(3));
                                     })
                  .ok());
  ASSERT_TRUE(
      RegisterCustomFunction("test.asks_output_dtype_2",
                             [](KernelContext& ctx) -> Status {
                               return ctx.output_dtype(2) == DataType::kFloat32
                                          ? Status::OK()
                                          : InternalError("unreachable");
                             })
          .ok());
  for (const char* function :
       {"test.reads_input_3", "test.asks_output_dtype_2"}) {
    Graph g;
    auto a = g.Const("a", Tensor::Scalar<float>(1.5f));
    ASSERT_TRUE(
        g.AddNode({"c",
                   "CustomOp",
                   {a},
                   {{"function", function},
                    {"Tout", std::vector<DataType>{DataType::kFloat32}}},
                   ""})
            .ok());
    EXPECT_DEATH((void)EvalStatus(g, "c"),
                 std::string(function) == "test.reads_input_3"
                     ? "node 'c' .op CustomOp.: KernelContext input 3 of 1"
                     : "node 'c' .op CustomOp.: KernelContext output 2 of 1");
  }
}

}  // namespace
}  // namespace weft
