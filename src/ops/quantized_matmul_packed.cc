#include "ops/quantized_matmul_packed.h"

#include <algorithm>
#include <vector>

#include "kernels/int_division.h"
#include "weft/function_ref.h"

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
    const int8_t* b, int64_t k, int64_t n, bool with_dnnl) {
  if (k % 4 != 0 || k == 0 || n == 0) return std::nullopt;
  std::vector<int8_t> columns(static_cast<size_t>(k * n));
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t j = 0; j < n; ++j) columns[j * k + kk] = b[kk * n + j];
  }
  DirectProductWeights d;
  d.w = DirectConvWeights(columns.data(), n, k, 1);
  d.k = k;
  d.n = n;
  if (with_dnnl) d.dnnl = DnnlWeightProduct::MakeInt8(b, k, n);
  return d;
}

int64_t DirectProductWeights::bytes() const {
  return w.bytes() + (dnnl ? dnnl->bytes() : 0);
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

// Jobs of (block of 64 columns, tile of kDirectPixels rows) over A's rows
// [first_row, rows), the rows of one block together so that its weights
// stay in cache; tile(job's block, rows pointer array, count, first row)
// does one.
template <class Tile>
void ForEachDirectTile(KernelContext& ctx, const uint8_t* a, int64_t first_row,
                       int64_t rows, const DirectProductWeights& b, Tile tile) {
  const int64_t tiles = CeilDiv(rows - first_row, kDirectPixels);
  const int64_t blocks = b.w.blocks();
  const double cost =
      static_cast<double>(kDirectPixels * kDirectBlock * b.k) / 64.0;
  ctx.ParallelFor(blocks * tiles, cost, [&](int64_t begin, int64_t end) {
    const uint8_t* row_of[kDirectPixels];
    for (int64_t job = begin; job < end; ++job) {
      const int64_t block = job / tiles;
      const int64_t first = first_row + job % tiles * kDirectPixels;
      const int64_t count = std::min(kDirectPixels, rows - first);
      for (int64_t i = 0; i < count; ++i) row_of[i] = a + (first + i) * b.k;
      tile(block, row_of, count, first);
    }
  });
}

// Called after each tile's outputs are written: rows [first row, + rows)
// and columns [first column, + columns) of the output.
using TileWrittenFn = FunctionRef<void(int64_t, int64_t, int64_t, int64_t)>;

// A's rows times B, with the zero point's offsets (and out.offset, a bias
// per column) added, written in `form` into out.y (elements of
// element_bytes, N a row). Whole tiles of kDnnlTileRows rows run on
// oneDNN's plan where B has one, the rest on the direct tiles.
void MultiplyDirectInto(KernelContext& ctx, const uint8_t* a, int64_t rows,
                        int32_t a_zero, const DirectProductWeights& b,
                        RequantizedOutput out, DirectOutputForm form,
                        int64_t element_bytes, TileWrittenFn written) {
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
  const auto at_row = [&](int64_t row) {
    RequantizedOutput from = out;
    from.y = static_cast<uint8_t*>(out.y) + row * b.n * element_bytes;
    return from;
  };
  int64_t direct_from = 0;
  if (b.dnnl != nullptr && rows >= kDnnlTileRows) {
    const int64_t whole = rows / kDnnlTileRows * kDnnlTileRows;
    const bool ran = b.dnnl->RunInt8(
        ctx, a, whole,
        [&](int64_t r0, int64_t r, int64_t c0, int64_t cols,
            const int32_t* sums, int64_t ld) {
          DirectSumsInto(form, sums, ld, r, c0, cols, at_row(r0));
          written(r0, r, c0, cols);
        });
    if (ran) direct_from = whole;  // Else the direct tiles redo them all.
  }
  if (direct_from == rows) return;
  const Int8Kernel kernel = ActiveInt8Kernel();
  const int64_t tap = 0;
  ForEachDirectTile(ctx, a, direct_from, rows, b,
                    [&](int64_t block, const uint8_t* const* row_of,
                        int64_t count, int64_t first) {
                      const RequantizedOutput tile_out = at_row(first);
                      switch (form) {
                        case DirectOutputForm::kSums:
                          DirectConvTileSums(kernel, b.w, block, row_of, count,
                                             &tap, tile_out);
                          break;
                        case DirectOutputForm::kRequantized:
                          DirectConvTileRequantized(kernel, b.w, block, row_of,
                                                    count, &tap, tile_out);
                          break;
                        case DirectOutputForm::kScaled:
                          DirectConvTileScaled(kernel, b.w, block, row_of,
                                               count, &tap, tile_out);
                          break;
                      }
                      const int64_t c0 = block * kDirectBlock;
                      written(first, count, c0,
                              std::min(kDirectBlock, b.n - c0));
                    });
}

const auto kNothingMore = [](int64_t, int64_t, int64_t, int64_t) {};

}  // namespace

void MultiplyUint8Direct(KernelContext& ctx, const uint8_t* a, int64_t rows,
                         int32_t a_zero, const DirectProductWeights& b,
                         int32_t* y_int32) {
  RequantizedOutput out;
  out.y = y_int32;
  MultiplyDirectInto(ctx, a, rows, a_zero, b, out, DirectOutputForm::kSums,
                     sizeof(int32_t), kNothingMore);
}

void MultiplyUint8DirectRequantized(KernelContext& ctx, const uint8_t* a,
                                    int64_t rows, int32_t a_zero,
                                    const DirectProductWeights& b,
                                    RequantizedOutput out) {
  MultiplyDirectInto(ctx, a, rows, a_zero, b, out,
                     DirectOutputForm::kRequantized, 1, kNothingMore);
}

void MultiplyUint8DirectScaled(KernelContext& ctx, const uint8_t* a,
                               int64_t rows, int32_t a_zero,
                               const DirectProductWeights& b,
                               RequantizedOutput out,
                               const ActivationSpec& activation,
                               const float* residual) {
  if (activation.kind == FusedActivation::kNone && residual == nullptr) {
    MultiplyDirectInto(ctx, a, rows, a_zero, b, out, DirectOutputForm::kScaled,
                       sizeof(float), kNothingMore);
    return;
  }
  // The residual, then the activation, on each tile while it is in cache.
  float* y = static_cast<float*>(out.y);
  const int64_t n = b.n;
  MultiplyDirectInto(
      ctx, a, rows, a_zero, b, out, DirectOutputForm::kScaled, sizeof(float),
      [&](int64_t row0, int64_t count, int64_t c0, int64_t cols) {
        float* tile = y + row0 * n + c0;
        if (residual != nullptr) {
          for (int64_t i = 0; i < count; ++i) {
            float* row = tile + i * n;
            const float* z = residual + (row0 + i) * n + c0;
            for (int64_t j = 0; j < cols; ++j) row[j] = row[j] + z[j];
          }
        }
        ApplyActivationRows(activation, tile, count, cols, n);
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
