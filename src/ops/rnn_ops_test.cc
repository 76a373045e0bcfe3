// GRU's h gate against ONNX's formulas, in both of its forms.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_support/session_util.h"

namespace weft {
namespace {

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// One GRU step of one row by ONNX's equations, gates z, r, h:
//   z = sigmoid(x Wz^T + h Rz^T + Wbz + Rbz), r likewise,
//   linear_before_reset 0: hh = tanh(x Wh^T + (r (.) h) Rh^T + Rbh + Wbh)
//   linear_before_reset 1: hh = tanh(x Wh^T + r (.) (h Rh^T + Rbh) + Wbh)
//   h' = (1 - z) (.) hh + z (.) h
std::vector<double> GruStep(const std::vector<float>& x,
                            const std::vector<float>& w,
                            const std::vector<float>& r,
                            const std::vector<float>& b,
                            const std::vector<float>& h, bool linear) {
  const size_t hidden = h.size(), in = x.size();
  auto input_part = [&](size_t row) {
    double acc = b[row];
    for (size_t i = 0; i < in; ++i) acc += x[i] * w[row * in + i];
    return acc;
  };
  auto state_part = [&](size_t row, const std::vector<double>& state) {
    double acc = 0;
    for (size_t i = 0; i < hidden; ++i) acc += state[i] * r[row * hidden + i];
    return acc;
  };
  const std::vector<double> hd(h.begin(), h.end());
  std::vector<double> z(hidden), reset(hidden), out(hidden);
  for (size_t j = 0; j < hidden; ++j) {
    z[j] = Sigmoid(input_part(j) + state_part(j, hd) + b[3 * hidden + j]);
    reset[j] = Sigmoid(input_part(hidden + j) + state_part(hidden + j, hd) +
                       b[4 * hidden + j]);
  }
  std::vector<double> scaled(hidden);
  for (size_t i = 0; i < hidden; ++i) scaled[i] = reset[i] * hd[i];
  for (size_t j = 0; j < hidden; ++j) {
    const size_t row = 2 * hidden + j;
    const double recurrent =
        linear ? reset[j] * (state_part(row, hd) + b[3 * hidden + row])
               : state_part(row, scaled) + b[3 * hidden + row];
    const double candidate = std::tanh(input_part(row) + recurrent);
    out[j] = (1 - z[j]) * candidate + z[j] * hd[j];
  }
  return out;
}

// Weights that give each unit its own reset gate: the h gate's product
// then tells r (.) h (linear_before_reset 0, ONNX's default and Keras's
// reset_after=False) from r (.) (h R^T) (1, PyTorch's GRU). The ONNX node
// tests' GRU cases use one value for every weight, which makes every
// unit's gate the same and the two forms agree.
TEST(GruTest, TheHGateReadsTheResetStateAsOnnxDefinesIt) {
  const std::vector<float> x = {0.7f, -0.3f};
  const std::vector<float> w = {0.2f, -0.5f, 0.9f,  0.1f, -0.4f, 0.6f,
                                1.1f, -0.8f, -0.3f, 0.7f, 0.5f,  0.25f};
  const std::vector<float> r = {0.3f, -0.6f, 0.8f, 0.2f, -1.2f, 0.9f,
                                1.5f, -0.4f, 0.6f, 1.3f, -0.7f, 0.45f};
  const std::vector<float> b = {0.1f, -0.2f, 0.3f,  0.05f, -0.15f, 0.4f,
                                0.2f, 0.35f, -0.1f, 0.25f, 0.3f,   -0.45f};
  const std::vector<float> h0 = {0.5f, -1.0f};
  for (int64_t linear : {0, 1}) {
    SCOPED_TRACE("linear_before_reset " + std::to_string(linear));
    Graph g;
    g.Const("x", Tensor::FromVector<float>({1, 1, 2}, x));
    g.Const("w", Tensor::FromVector<float>({1, 6, 2}, w));
    g.Const("r", Tensor::FromVector<float>({1, 6, 2}, r));
    g.Const("b", Tensor::FromVector<float>({1, 12}, b));
    g.Const("h0", Tensor::FromVector<float>({1, 1, 2}, h0));
    test::MustAdd(g,
                  {"gru",
                   "GRU",
                   {"x", "w", "r", "b", "h0"},
                   {{"hidden_size", AttrValue(int64_t{2})},
                    // B and initial_h: ONNX inputs 3 and 5.
                    {"optional_inputs", AttrValue(std::vector<int64_t>{3, 5})},
                    {"linear_before_reset", AttrValue(linear)}},
                   ""});
    auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
    ASSERT_NE(session, nullptr);
    const Tensor y = test::MustRun(*session, {"gru"}).at(0);
    const std::vector<double> want = GruStep(x, w, r, b, h0, linear != 0);
    const std::vector<float> got = test::Values<float>(y);
    ASSERT_EQ(got.size(), want.size());
    for (size_t j = 0; j < want.size(); ++j) {
      EXPECT_NEAR(got[j], want[j], 1e-6) << "unit " << j;
    }
  }
}

// activation_alpha and activation_beta are consumed in the order of the
// activations, each value by the next activation that reads one (ONNX
// Runtime, keras2onnx, tf2onnx); one past the end of its list takes the
// ONNX operator's default. A bidirectional RNN on x = -2 with W = 1 and
// R = 0 shows each direction's activation of -2 alone.
TEST(RnnTest, ActivationParametersGoToTheActivationsThatReadThem) {
  struct Case {
    std::vector<std::string> activations;
    std::vector<double> alphas, betas;
    float forward, reverse;
  };
  const Case cases[] = {
      // LeakyRelu is the first to read an alpha: 0.5, not 0.01.
      {{"Tanh", "LeakyRelu"}, {0.5}, {}, std::tanh(-2.0f), -1.0f},
      // HardSigmoid takes 0.3 and 0.1; Affine's defaults are 1 and 0.
      {{"HardSigmoid", "Affine"}, {0.3}, {0.1}, 0.0f, -2.0f},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.activations[0] + ", " + c.activations[1]);
    Graph g;
    g.Const("x", Tensor::FromVector<float>({1, 1, 1}, {-2}));
    g.Const("w", Tensor::FromVector<float>({2, 1, 1}, {1, 1}));
    g.Const("r", Tensor::FromVector<float>({2, 1, 1}, {0, 0}));
    test::MustAdd(g, {"rnn",
                      "RNN",
                      {"x", "w", "r"},
                      {{"hidden_size", AttrValue(int64_t{1})},
                       {"direction", AttrValue(std::string("bidirectional"))},
                       {"activations", AttrValue(c.activations)},
                       {"activation_alpha", AttrValue(c.alphas)},
                       {"activation_beta", AttrValue(c.betas)}},
                      ""});
    auto session = test::MustCreate(g, test::PerSessionOptions(1, 1));
    ASSERT_NE(session, nullptr);
    const std::vector<float> y =
        test::Values<float>(test::MustRun(*session, {"rnn"}).at(0));
    ASSERT_EQ(y.size(), 2u);
    EXPECT_NEAR(y[0], c.forward, 1e-6);
    EXPECT_NEAR(y[1], c.reverse, 1e-6);
  }
}

}  // namespace
}  // namespace weft
