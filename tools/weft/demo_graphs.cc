#include "demo_graphs.h"

namespace weft::cli {
namespace {

GraphFile TwoSpinBranches() {
  GraphFile f;
  Graph& g = f.graph;
  auto left = g.Spin("left_spin", 20'000);
  auto right = g.Spin("right_spin", 20'000);
  g.Add("join", left, right);
  f.outputs = {"join"};
  return f;
}

GraphFile MatMulBranches() {
  GraphFile f;
  Graph& g = f.graph;
  const Shape square{512, 512};
  std::string branch_out[2];
  for (int b = 0; b < 2; ++b) {
    const std::string prefix = b == 0 ? "left" : "right";
    std::string x =
        g.RandomUniform(prefix + "_x", DataType::kFloat32, square, 10 + b);
    for (int i = 0; i < 4; ++i) {
      auto w = g.RandomUniform(prefix + "_w" + std::to_string(i),
                               DataType::kFloat32, square, 100 + 10 * b + i);
      x = g.MatMul(prefix + "_matmul" + std::to_string(i), x, w);
    }
    branch_out[b] = x;
  }
  g.Add("join", branch_out[0], branch_out[1]);
  f.outputs = {"join"};
  return f;
}

GraphFile Mlp() {
  GraphFile f;
  Graph& g = f.graph;
  const int64_t batch = 256;
  const int64_t widths[] = {784, 1024, 1024, 10};
  std::string h = g.Placeholder("x", DataType::kFloat32, {batch, widths[0]});
  for (int layer = 0; layer < 3; ++layer) {
    const std::string l = "layer" + std::to_string(layer + 1);
    auto w = g.RandomUniform(l + "_w", DataType::kFloat32,
                             {widths[layer], widths[layer + 1]}, 200 + layer);
    auto b = g.RandomUniform(l + "_b", DataType::kFloat32, {widths[layer + 1]},
                             300 + layer);
    h = g.Add(l + "_bias", g.MatMul(l + "_matmul", h, w), b);
    if (layer < 2) h = g.Relu(l + "_relu", h);
  }
  f.outputs = {h};
  return f;
}

}  // namespace

std::vector<DemoGraph> DemoGraphs() {
  return {
      {"two_spin_branches.json",
       "(a) two independent CPU-bound branches (Spin, 20 ms each) joined by "
       "Add",
       TwoSpinBranches()},
      {"matmul_branches.json",
       "(b) two branches of four chained 512x512 MatMuls joined by Add",
       MatMulBranches()},
      {"mlp.json", "(c) a three-layer MLP (784-1024-1024-10) on a batch of 256",
       Mlp()},
  };
}

}  // namespace weft::cli
