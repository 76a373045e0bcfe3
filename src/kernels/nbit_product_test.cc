// The products with block-quantized codes (nbit_product.h): each path
// against a float64 reference of the dequantized weight, and the promise of
// the summation order: a row's outputs do not depend on the rows or the
// panels computed with it.
#include "kernels/nbit_product.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace weft::internal {
namespace {

struct Case {
  int64_t k, n, bits, block;
};

// A random weight in ONNX Runtime's layout, with its dequantized values.
struct RandomWeight {
  std::vector<uint8_t> codes;
  std::vector<float> scales, zeros;
  std::vector<double> dense;  // [k][n]
  NBitWeight view;

  RandomWeight(const Case& c, std::mt19937* rng) {
    view.k = c.k;
    view.n = c.n;
    view.bits = c.bits;
    view.block = c.block;
    const int64_t blocks = view.blocks();
    codes.assign(static_cast<size_t>(c.n * blocks * view.bytes_per_block()), 0);
    std::uniform_int_distribution<int> code(0, (1 << c.bits) - 1);
    std::uniform_real_distribution<float> scale(0.01f, 0.1f);
    for (uint8_t& byte : codes) {
      for (int64_t i = 0; i < 8 / c.bits; ++i) {
        byte = static_cast<uint8_t>(byte | (code(*rng) << (i * c.bits)));
      }
    }
    for (int64_t i = 0; i < c.n * blocks; ++i) {
      scales.push_back(scale(*rng));
      // Integer zero points, and fractional ones (as float zero points
      // may be).
      zeros.push_back(static_cast<float>(code(*rng)) +
                      (i % 3 == 0 ? 0.25f : 0));
    }
    view.codes = codes.data();
    view.scales = scales.data();
    view.zeros = zeros.data();
    dense.assign(static_cast<size_t>(c.k * c.n), 0);
    const int64_t per_byte = 8 / c.bits;
    for (int64_t j = 0; j < c.n; ++j) {
      for (int64_t k = 0; k < c.k; ++k) {
        const int64_t b = k / c.block, i = k % c.block;
        const uint8_t byte = codes[static_cast<size_t>(
            (j * blocks + b) * view.bytes_per_block() + i / per_byte)];
        const int q = (byte >> ((i % per_byte) * c.bits)) & ((1 << c.bits) - 1);
        dense[static_cast<size_t>(k * c.n + j)] =
            (q -
             static_cast<double>(zeros[static_cast<size_t>(j * blocks + b)])) *
            scales[static_cast<size_t>(j * blocks + b)];
      }
    }
  }
};

std::vector<float> RandomRows(int64_t rows, int64_t k, std::mt19937* rng) {
  std::normal_distribution<float> normal;
  std::vector<float> a(static_cast<size_t>(rows * k));
  for (float& x : a) x = normal(*rng);
  return a;
}

std::vector<float> Product(const NBitPanels& w, const std::vector<float>& a,
                           int64_t rows, bool vector_path) {
  std::vector<float> y(static_cast<size_t>(rows * w.n()), -1.0f);
  NBitProduct(w, a.data(), w.k(), rows, y.data(), w.n(), 0, w.panels(),
              vector_path);
  return y;
}

std::string Name(const Case& c) {
  return "K " + std::to_string(c.k) + ", N " + std::to_string(c.n) + ", " +
         std::to_string(c.bits) + " bits, blocks of " + std::to_string(c.block);
}

const Case kCases[] = {{20, 6, 4, 16},    {64, 37, 4, 32}, {100, 33, 4, 64},
                       {48, 17, 8, 16},   {40, 16, 2, 16}, {33, 50, 2, 32},
                       {256, 64, 4, 128}, {70, 31, 8, 32}};

TEST(NBitProductTest, BothPathsGiveTheDequantizedProduct) {
  std::mt19937 rng(7);
  for (const Case& c : kCases) {
    RandomWeight w(c, &rng);
    const NBitPanels panels(w.view);
    const int64_t rows = 11;
    const std::vector<float> a = RandomRows(rows, c.k, &rng);
    for (bool vector_path : {false, true}) {
      const std::vector<float> y = Product(panels, a, rows, vector_path);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < c.n; ++j) {
          double expected = 0, magnitude = 0;
          for (int64_t k = 0; k < c.k; ++k) {
            const double term = a[static_cast<size_t>(r * c.k + k)] *
                                w.dense[static_cast<size_t>(k * c.n + j)];
            expected += term;
            magnitude += std::fabs(term);
          }
          EXPECT_NEAR(y[static_cast<size_t>(r * c.n + j)], expected,
                      1e-5 * magnitude + 1e-6)
              << Name(c) << ", row " << r << ", column " << j
              << (vector_path ? ", vector path" : ", portable path");
        }
      }
    }
  }
}

TEST(NBitProductTest, ARowsOutputsDoNotDependOnTheRowsOrPanelsBesideIt) {
  std::mt19937 rng(11);
  for (const Case& c : kCases) {
    RandomWeight w(c, &rng);
    const NBitPanels panels(w.view);
    const int64_t rows = 13;  // tiles of 8 and 5 rows
    const std::vector<float> a = RandomRows(rows, c.k, &rng);
    for (bool vector_path : {false, true}) {
      const std::vector<float> batch = Product(panels, a, rows, vector_path);
      for (int64_t r = 0; r < rows; ++r) {
        const std::vector<float> row(a.begin() + r * c.k,
                                     a.begin() + (r + 1) * c.k);
        const std::vector<float> alone = Product(panels, row, 1, vector_path);
        for (int64_t j = 0; j < c.n; ++j) {
          EXPECT_EQ(alone[static_cast<size_t>(j)],
                    batch[static_cast<size_t>(r * c.n + j)])
              << Name(c) << ", row " << r << ", column " << j;
        }
      }
      // The panels one at a time, as threads may split them.
      std::vector<float> split(static_cast<size_t>(rows * c.n));
      for (int64_t p = 0; p < panels.panels(); ++p) {
        NBitProduct(panels, a.data(), c.k, rows, split.data(), c.n, p, 1,
                    vector_path);
      }
      EXPECT_EQ(split, batch) << Name(c);
    }
  }
}

}  // namespace
}  // namespace weft::internal
