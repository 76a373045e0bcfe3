#include "ops/quantized_matmul_packed.h"

#include <algorithm>
#include <vector>

#include "kernels/int_division.h"

namespace weft::internal {
namespace {

// Below this many row panels, B's columns are split into blocks as well.
constexpr int64_t kMinJobs = 8;

}  // namespace

Int8ProductWeights Int8ProductWeights::Prepare(const int8_t* b, int64_t k,
                                               int64_t n) {
  std::vector<int8_t> columns(static_cast<size_t>(k * n));
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t j = 0; j < n; ++j) columns[j * k + kk] = b[kk * n + j];
  }
  Int8ProductWeights w;
  w.packed = PackedInt8Weights(columns.data(), n, k);
  w.k = k;
  w.n = n;
  return w;
}

void MultiplyInt8(KernelContext& ctx, const void* a, bool a_signed,
                  int64_t rows, int32_t a_zero, const Int8ProductWeights& b,
                  const int8_t* b_zero, bool b_zero_per_n,
                  const ProductSumsFn& emit) {
  const int64_t k = b.k, n = b.n;
  const int64_t quads = Int8Quads(k);
  const int64_t panel_bytes = Int8ColumnPanelBytes(k);
  const int64_t row_panels = CeilDiv(rows, kInt8Cols);
  const int64_t column_panels = b.packed.panels();
  int64_t blocks = 1;
  while (row_panels * blocks < kMinJobs && blocks < column_panels) ++blocks;
  const int64_t panels_per_block = CeilDiv(column_panels, blocks);
  blocks = CeilDiv(column_panels, panels_per_block);
  // A taken as unsigned: an int8 A plus 128, its zero point too.
  const uint8_t flip = a_signed ? 0x80 : 0;
  const int32_t zero = a_signed ? a_zero + 128 : a_zero;
  bool any_b_zero = false;
  if (b_zero != nullptr) {
    for (int64_t j = 0; j < (b_zero_per_n ? n : 1); ++j) {
      any_b_zero = any_b_zero || b_zero[j] != 0;
    }
  }
  const Int8Kernel kernel = ActiveInt8Kernel();
  const auto* bytes = static_cast<const uint8_t*>(a);
  const double cost =
      static_cast<double>(kInt8Cols * k * panels_per_block * kInt8Rows) / 16.0;
  ctx.ParallelFor(row_panels * blocks, cost, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> panel(static_cast<size_t>(panel_bytes));
    int32_t row_sums[kInt8Cols];
    int32_t acc[kInt8Rows * kInt8Cols];
    for (int64_t job = begin; job < end; ++job) {
      const int64_t block = job % blocks, rp = job / blocks;
      const int64_t first = rp * kInt8Cols;
      const int64_t count = std::min(kInt8Cols, rows - first);
      PackInt8RowPanel(bytes + first * k, k, k, count, flip, panel.data());
      if (any_b_zero) {
        for (int64_t i = 0; i < count; ++i) {
          int32_t sum = 0;
          const uint8_t* row = bytes + (first + i) * k;
          for (int64_t kk = 0; kk < k; ++kk) sum += row[kk] ^ flip;
          row_sums[i] = sum;
        }
      }
      const int64_t cp_end =
          std::min(column_panels, (block + 1) * panels_per_block);
      for (int64_t cp = block * panels_per_block; cp < cp_end; ++cp) {
        const int64_t cols_here = std::min(kInt8Rows, n - cp * kInt8Rows);
        Int8PanelProduct(kernel, b.packed.panel(cp), panel.data(), quads,
                         cols_here, count, acc, kInt8Cols);
        for (int64_t c = 0; c < cols_here; ++c) {
          const int64_t j = cp * kInt8Rows + c;
          const int32_t bz =
              b_zero == nullptr ? 0 : b_zero[b_zero_per_n ? j : 0];
          const int32_t shift =
              -zero * b.packed.row_sums()[static_cast<size_t>(j)] +
              static_cast<int32_t>(k) * zero * bz;
          int32_t* sums = acc + c * kInt8Cols;
          for (int64_t i = 0; i < count; ++i) sums[i] += shift;
          if (bz != 0) {
            for (int64_t i = 0; i < count; ++i) sums[i] -= bz * row_sums[i];
          }
        }
        emit(first, count, cp * kInt8Rows, cols_here, acc);
      }
    }
  });
}

std::optional<DirectProductWeights> DirectProductWeights::Prepare(
    const int8_t* b, int64_t k, int64_t n) {
  if (k % 4 != 0 || k == 0 || n == 0) return std::nullopt;
  std::vector<int8_t> columns(static_cast<size_t>(k * n));
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t j = 0; j < n; ++j) columns[j * k + kk] = b[kk * n + j];
  }
  DirectProductWeights d;
  d.w = DirectConvWeights(columns.data(), n, k, 1);
  d.k = k;
  d.n = n;
  return d;
}

namespace {

// -a_zero * (column j's sum of B), wrapping as the int32 sums do.
std::vector<int32_t> ZeroPointOffsets(const DirectProductWeights& b,
                                      int32_t a_zero) {
  std::vector<int32_t> offset(static_cast<size_t>(b.n));
  for (int64_t j = 0; j < b.n; ++j) {
    offset[static_cast<size_t>(j)] = static_cast<int32_t>(
        0u - static_cast<uint32_t>(a_zero) *
                 static_cast<uint32_t>(b.w.row_sums()[static_cast<size_t>(j)]));
  }
  return offset;
}

// Jobs of (block of 64 columns, tile of kDirectPixels rows), the rows of
// one block together so that its weights stay in cache; tile(job, rows
// pointer array, count, first row) does one.
template <class Tile>
void ForEachDirectTile(KernelContext& ctx, const uint8_t* a, int64_t rows,
                       const DirectProductWeights& b, Tile tile) {
  const int64_t tiles = CeilDiv(rows, kDirectPixels);
  const int64_t blocks = b.w.blocks();
  const double cost =
      static_cast<double>(kDirectPixels * kDirectBlock * b.k) / 64.0;
  ctx.ParallelFor(blocks * tiles, cost, [&](int64_t begin, int64_t end) {
    const uint8_t* row_of[kDirectPixels];
    for (int64_t job = begin; job < end; ++job) {
      const int64_t block = job / tiles, first = job % tiles * kDirectPixels;
      const int64_t count = std::min(kDirectPixels, rows - first);
      for (int64_t i = 0; i < count; ++i) row_of[i] = a + (first + i) * b.k;
      tile(block, row_of, count, first);
    }
  });
}

}  // namespace

namespace {

// The tiles of A's rows times B with the zero point's offsets in `out`,
// each tile's outputs at out.y plus its first row times N elements of
// `element_bytes`; tile(kernel, weights, block, rows, count, tap, out).
template <class Tile>
void MultiplyDirectInto(KernelContext& ctx, const uint8_t* a, int64_t rows,
                        int32_t a_zero, const DirectProductWeights& b,
                        RequantizedOutput out, int64_t element_bytes,
                        Tile tile) {
  std::vector<int32_t> offset = ZeroPointOffsets(b, a_zero);
  if (out.offset != nullptr) {  // A bias per column, wrapping as sums do.
    for (int64_t j = 0; j < b.n; ++j) {
      offset[static_cast<size_t>(j)] = static_cast<int32_t>(
          static_cast<uint32_t>(offset[static_cast<size_t>(j)]) +
          static_cast<uint32_t>(out.offset[j]));
    }
  }
  out.offset = offset.data();
  out.m = b.n;
  out.ldy = b.n;
  const Int8Kernel kernel = ActiveInt8Kernel();
  const int64_t tap = 0;
  ForEachDirectTile(ctx, a, rows, b,
                    [&](int64_t block, const uint8_t* const* row_of,
                        int64_t count, int64_t first) {
                      RequantizedOutput tile_out = out;
                      tile_out.y = static_cast<uint8_t*>(out.y) +
                                   first * b.n * element_bytes;
                      tile(kernel, b.w, block, row_of, count, &tap, tile_out);
                    });
}

}  // namespace

void MultiplyUint8Direct(KernelContext& ctx, const uint8_t* a, int64_t rows,
                         int32_t a_zero, const DirectProductWeights& b,
                         int32_t* y_int32) {
  RequantizedOutput out;
  out.y = y_int32;
  MultiplyDirectInto(ctx, a, rows, a_zero, b, out, sizeof(int32_t),
                     DirectConvTileSums);
}

void MultiplyUint8DirectRequantized(KernelContext& ctx, const uint8_t* a,
                                    int64_t rows, int32_t a_zero,
                                    const DirectProductWeights& b,
                                    RequantizedOutput out) {
  MultiplyDirectInto(ctx, a, rows, a_zero, b, out, 1,
                     DirectConvTileRequantized);
}

void MultiplyUint8DirectScaled(KernelContext& ctx, const uint8_t* a,
                               int64_t rows, int32_t a_zero,
                               const DirectProductWeights& b,
                               RequantizedOutput out,
                               const ActivationSpec& activation,
                               const float* residual) {
  if (activation.kind == FusedActivation::kNone && residual == nullptr) {
    MultiplyDirectInto(ctx, a, rows, a_zero, b, out, sizeof(float),
                       DirectConvTileScaled);
    return;
  }
  MultiplyDirectInto(
      ctx, a, rows, a_zero, b, out, sizeof(float),
      [&](Int8Kernel kernel, const DirectConvWeights& w, int64_t block,
          const uint8_t* const* row_of, int64_t count, const int64_t* tap,
          const RequantizedOutput& tile_out) {
        DirectConvTileScaled(kernel, w, block, row_of, count, tap, tile_out);
        const int64_t first = block * kDirectBlock;
        const int64_t cols = std::min(kDirectBlock, b.n - first);
        // The tile's rows start where its outputs do: tile_out.y.
        const int64_t row0 =
            (static_cast<float*>(tile_out.y) - static_cast<float*>(out.y)) /
            b.n;
        float* tile = static_cast<float*>(tile_out.y) + first;
        if (residual != nullptr) {
          for (int64_t i = 0; i < count; ++i) {
            float* y = tile + i * b.n;
            const float* z = residual + (row0 + i) * b.n + first;
            for (int64_t j = 0; j < cols; ++j) y[j] = y[j] + z[j];
          }
        }
        ApplyActivationRows(activation, tile, count, cols, b.n);
      });
}

void ActivateRows(KernelContext& ctx, const ActivationSpec& activation,
                  float* y, int64_t rows, int64_t n) {
  if (activation.kind == FusedActivation::kNone) return;
  ctx.ParallelFor(rows, static_cast<double>(n), [&](int64_t r0, int64_t r1) {
    ApplyActivationRows(activation, y + r0 * n, r1 - r0, n, n);
  });
}

}  // namespace weft::internal
