// RowPieces: every output row in exactly one piece, top to bottom, sizes
// within a unit with the larger ones at the ends, whole units but for the
// last piece, and each piece's input rows and padding those of its windows.
#include "ops/conv_row_pieces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace weft::internal {
namespace {

struct Geometry {
  int64_t in_rows, kernel, stride, dilation, pad_top, pad_bottom;
  int64_t OutRows() const {
    const int64_t extent = (kernel - 1) * dilation + 1;
    return (in_rows + pad_top + pad_bottom - extent) / stride + 1;
  }
};

TEST(RowPiecesTest, CoverTheRowsTopToBottomWithTheLargerPiecesAtTheEnds) {
  const Geometry geometries[] = {
      {28, 3, 1, 1, 1, 1},   // MobileNetV2's 28 x 28 layers.
      {14, 1, 1, 1, 0, 0},   // Its 14 x 14 1 x 1 ones.
      {112, 3, 2, 1, 1, 1},  // A strided 3 x 3.
      {224, 7, 2, 1, 3, 3},  // ResNet's stem.
      {27, 5, 1, 2, 4, 4},   // Dilated.
      {7, 3, 1, 1, 1, 1},    // More pieces asked than units.
  };
  for (const Geometry& g : geometries) {
    const int64_t out_rows = g.OutRows();
    for (int64_t align : {1, 2, 4}) {
      const int64_t units = (out_rows + align - 1) / align;
      for (int64_t count = 1; count <= 9; ++count) {
        SCOPED_TRACE("in " + std::to_string(g.in_rows) + ", kernel " +
                     std::to_string(g.kernel) + ", align " +
                     std::to_string(align) + ", count " +
                     std::to_string(count));
        const std::vector<RowPiece> pieces =
            RowPieces(g.in_rows, out_rows, g.kernel, g.stride, g.dilation,
                      g.pad_top, count, align);
        ASSERT_EQ(static_cast<int64_t>(pieces.size()), std::min(count, units));
        const auto n = static_cast<int64_t>(pieces.size());
        int64_t next = 0;
        for (int64_t j = 0; j < n; ++j) {
          const RowPiece& p = pieces[static_cast<size_t>(j)];
          EXPECT_EQ(p.out_begin, next) << "piece " << j;
          ASSERT_GT(p.out_rows, 0) << "piece " << j;
          next = p.out_begin + p.out_rows;
          if (j + 1 < n) EXPECT_EQ(next % align, 0) << "piece " << j;
          // Its windows: the first reads from row first, the last up to
          // row last (exclusive), the part outside the image padding.
          const int64_t extent = (g.kernel - 1) * g.dilation + 1;
          const int64_t first = p.out_begin * g.stride - g.pad_top;
          const int64_t last = (next - 1) * g.stride - g.pad_top + extent;
          EXPECT_EQ(p.in_begin, std::max<int64_t>(first, 0));
          EXPECT_EQ(p.in_begin + p.in_rows, std::min(last, g.in_rows));
          EXPECT_EQ(p.pad_top, p.in_begin - first);
          EXPECT_EQ(p.pad_bottom, last - (p.in_begin + p.in_rows));
        }
        EXPECT_EQ(next, out_rows);
        // Sizes in units: within one of each other, never smaller at a
        // place nearer an end than at one further in (the last piece's
        // possibly cut unit counts whole).
        std::vector<int64_t> size(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) {
          const RowPiece& p = pieces[static_cast<size_t>(j)];
          size[static_cast<size_t>(j)] =
              (p.out_begin + p.out_rows + align - 1) / align -
              p.out_begin / align;
        }
        const auto [smallest, largest] =
            std::minmax_element(size.begin(), size.end());
        EXPECT_LE(*largest - *smallest, 1);
        for (int64_t j = 0; j + 1 < n - 1 - j; ++j) {
          const size_t outer = static_cast<size_t>(j);
          const size_t inner = static_cast<size_t>(j + 1);
          const size_t outer_back = static_cast<size_t>(n - 1 - j);
          const size_t inner_back = static_cast<size_t>(n - 2 - j);
          EXPECT_GE(size[outer], size[inner]) << "piece " << j;
          EXPECT_GE(size[outer_back], size[inner_back])
              << "piece " << n - 1 - j;
        }
      }
    }
  }
}

TEST(RowPiecesTest, GivesTheExampleSizes) {
  // 27 rows in 6: 5, 5, 4, 4, 4, 5 (the first, the last, then the second
  // take the three rows over 6 x 4).
  std::vector<int64_t> rows;
  for (const RowPiece& p : RowPieces(27, 27, 1, 1, 1, 0, 6, 1)) {
    rows.push_back(p.out_rows);
  }
  EXPECT_EQ(rows, (std::vector<int64_t>{5, 5, 4, 4, 4, 5}));
  // 28 rows in 8: 4, 4, 3, 3, 3, 3, 4, 4.
  rows.clear();
  for (const RowPiece& p : RowPieces(28, 28, 1, 1, 1, 0, 8, 1)) {
    rows.push_back(p.out_rows);
  }
  EXPECT_EQ(rows, (std::vector<int64_t>{4, 4, 3, 3, 3, 3, 4, 4}));
}

}  // namespace
}  // namespace weft::internal
