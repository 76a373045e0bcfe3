// How MatMul cuts a product's output into tiles, shared with the fused
// attention kernel (attention.cc), whose products must be cut the same way
// to give MatMul's bits.
#ifndef WEFT_SRC_OPS_MATMUL_TILES_H_
#define WEFT_SRC_OPS_MATMUL_TILES_H_

#include <algorithm>
#include <cstdint>

namespace weft::internal {

struct MatMulDims {
  int64_t m, k, n;
};

// Output tile size: rows x cols of C computed by one single-threaded call.
// It depends only on the matrix sizes, never on the thread count, so results
// are the same for every configuration. Large tiles run Eigen's kernel best
// (measured on a 2-vCPU Intel Xeon guest, docs/kernels.md: 512 x 512 tiles
// of a 2048 product reach ~90 GFLOP/s on one core, 64 x 256 tiles ~47); at
// least two row tiles keep two cores busy on small products.
struct TileShape {
  int64_t rows, cols;
};

inline TileShape ChooseTiles(const MatMulDims& d) {
  constexpr int64_t kMaxTile = 512;
  auto round_up16 = [](int64_t x) { return (x + 15) / 16 * 16; };
  return {std::clamp<int64_t>(round_up16((d.m + 1) / 2), 16, kMaxTile),
          std::clamp<int64_t>(d.n, 1, kMaxTile)};
}

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_MATMUL_TILES_H_
