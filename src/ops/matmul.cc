// MatMul (NumPy matmul semantics: batch dimensions broadcast, and a 1-D
// operand is a row (A) or a column (B) whose dimension the output drops;
// weft's transpose_a / transpose_b swap the last two dimensions, and alpha,
// which the graph passes set, scales each product as a Mul after it would;
// integer products wrap, as NumPy's) and Gemm (ONNX: Y = alpha * op(A)
// op(B) + beta * C).
//
// The output of each 2-D product is cut into tiles (ChooseTiles) that threads
// claim through ParallelFor; each tile is one single-threaded product over
// the full inner dimension (GemmTile: Eigen or BLIS, chosen per CPU). Why this
// is deterministic: a tile's shape, and so the kernel's blocking and
// summation order for each element, depends only on the matrix sizes, never
// on the thread count or on which thread computes it. Why no thread but
// weft's computes: Eigen's products use threads only with OpenMP or
// EIGEN_USE_THREADS, and weft builds with neither; the BLIS build is the
// serial one (docs/kernels.md).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "framework/op_registry_impl.h"
#include "kernels/bf16_gemm.h"
#include "kernels/gemm_tile.h"
#include "kernels/packed_gemm.h"
#include "ops/broadcast.h"
#include "ops/dnnl_matmul.h"
#include "ops/fused_activation.h"
#include "ops/matmul_tiles.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// The shapes of a (batched) product: matrix dims, the broadcast batch, and
// whether A or B was a vector (its row or column dimension is then not in
// the output).
struct MatMulShape {
  MatMulDims d{-1, -1, -1};
  PartialShape batch = PartialShape::UnknownRank();
  bool a_vector = false, b_vector = false;

  // batch + [m] + [n], the vectors' dimensions left out. REQUIRES: the
  // batch's rank is known.
  std::vector<int64_t> OutputDims() const {
    std::vector<int64_t> dims = batch.dims();
    if (!a_vector) dims.push_back(d.m);
    if (!b_vector) dims.push_back(d.n);
    return dims;
  }
};

// A 1-D operand as the matrix NumPy makes of it: A [k] as [1, k], B [k] as
// [k, 1]. `transposed`: weft's transpose attribute, which has no meaning
// for a vector (ONNX never sets it).
StatusOr<PartialShape> AsMatrix(const PartialShape& s, bool is_a,
                                bool transposed) {
  const char* name = is_a ? "A" : "B";
  if (!s.rank_known() || s.rank() >= 2) return s;
  if (s.rank() == 0) {
    return InvalidArgumentError(std::string("MatMul needs inputs of rank >= "
                                            "1; ") +
                                name + " is a scalar");
  }
  if (transposed) {
    return InvalidArgumentError(std::string("transpose_") + (is_a ? "a" : "b") +
                                " needs " + name + " of rank >= 2; " + name +
                                " has shape " + s.ToString());
  }
  return is_a ? PartialShape({1, s.dim(0)}) : PartialShape({s.dim(0), 1});
}

StatusOr<MatMulShape> CheckShapes(const PartialShape& given_a,
                                  const PartialShape& given_b, bool ta,
                                  bool tb) {
  WEFT_ASSIGN_OR_RETURN(const PartialShape a, AsMatrix(given_a, true, ta));
  WEFT_ASSIGN_OR_RETURN(const PartialShape b, AsMatrix(given_b, false, tb));
  MatMulShape out;
  out.a_vector = given_a.rank_known() && given_a.rank() == 1;
  out.b_vector = given_b.rank_known() && given_b.rank() == 1;
  int64_t kb = -1;
  if (a.rank_known()) {
    out.d.m = a.dim(a.rank() - (ta ? 1 : 2));
    out.d.k = a.dim(a.rank() - (ta ? 2 : 1));
  }
  if (b.rank_known()) {
    kb = b.dim(b.rank() - (tb ? 1 : 2));
    out.d.n = b.dim(b.rank() - (tb ? 2 : 1));
  }
  if (out.d.k >= 0 && kb >= 0 && out.d.k != kb) {
    return InvalidArgumentError(
        "inner dimensions do not match: A " + given_a.ToString() +
        (ta ? " (transposed)" : "") + " and B " + given_b.ToString() +
        (tb ? " (transposed)" : ""));
  }
  if (out.d.k < 0) out.d.k = kb;
  if (a.rank_known() && b.rank_known()) {
    auto batch_of = [](const PartialShape& s) {
      return PartialShape(
          std::vector<int64_t>(s.dims().begin(), s.dims().end() - 2));
    };
    auto batch = BroadcastShapes(batch_of(a), batch_of(b));
    if (!batch.ok()) {
      return InvalidArgumentError(
          "batch dimensions of A " + given_a.ToString() + " and B " +
          given_b.ToString() + " cannot be broadcast together");
    }
    out.batch = *batch;
  }
  return out;
}

// op(A)'s rows, a batched A's matrices stacked, where A's shape is known
// when the kernel is built and A is not transposed; else 0.
int64_t KnownRows(const KernelConstruction& c, bool ta) {
  if (ta || c.input_shapes().empty()) return 0;
  const PartialShape& a = c.input_shapes()[0];
  if (!a.IsFullyDefined() || a.rank() < 2) return 0;
  const Shape shape = a.ToShape();
  const int64_t k = shape.dim(shape.rank() - 1);
  return k > 0 ? shape.NumElements() / k : 0;
}

// Products of fewer rows keep weft's paths (one row: RunRowTimesPacked).
constexpr int64_t kMinDnnlRows = 2;

// A constant 2-D float32 B, packed once, when the kernel is built: in bf16
// where the session's precision is bf16 (and the session checked the CPU
// has the units), else into oneDNN's layout where its products run and A's
// rows are known (DnnlWeightProduct), else for the float micro-kernel where
// the tile kernel is BLIS or the session asks for batch invariance. Every Run's
// tiles then read it instead of packing their columns of B again.
class PackedWeight {
 public:
  // a_rows: op(A)'s rows (a batched A's stacked) where the shapes are known
  // when the kernel is built, else 0. The bf16 and micro-kernel packings
  // do not depend on them: those come from `cache` (the session's, null
  // outside one), so that the graphs a session compiles for other feed
  // shapes share them. oneDNN's product is made for its rows.
  PackedWeight(const Tensor* b, bool tb, bool batch_invariant, bool bf16,
               int64_t a_rows, PreparedWeights* cache)
      : batch_invariant_(batch_invariant) {
    if (b == nullptr || b->dtype() != DataType::kFloat32 ||
        b->shape().rank() != 2) {
      return;
    }
    const int64_t rows = b->shape().dim(0), cols = b->shape().dim(1);
    const int64_t depth = tb ? cols : rows, width = tb ? rows : cols;
    const std::string layout = tb ? "transposed" : "plain";
    if (bf16 && CpuHasBf16Products()) {
      // oneDNN's tile products where the CPU has AMX (for A's known rows,
      // not under batch invariance: its sums' order may follow the rows),
      // and weft's own kernel for every other product against this B.
      if (!batch_invariant && a_rows >= kMinDnnlRows &&
          DnnlBf16ProductsAvailable()) {
        dnnl_ = DnnlWeightProduct::Make(b->data<float>(), tb, a_rows, depth,
                                        width, DnnlProductPrecision::kBf16);
      }
      bf16_ = PreparedOrMade<Bf16PackedWeights>(
          cache, *b, "Bf16PackedWeights/" + layout, [&] {
            return std::make_shared<const Bf16PackedWeights>(
                b->data<float>(), cols, tb, depth, width);
          });
    } else if (!batch_invariant && a_rows >= kMinDnnlRows &&
               DnnlMatMulAvailable() &&
               (dnnl_ = DnnlWeightProduct::Make(b->data<float>(), tb, a_rows,
                                                depth, width)) != nullptr) {
      // oneDNN's products (docs/kernels.md); BLIS's panels are not made.
    } else if (ActiveGemmKernel() == GemmKernel::kBlis || batch_invariant) {
      packed_ = PreparedOrMade<PackedOperand>(
          cache, *b, "PackedOperand/right/" + layout, [&] {
            return std::make_shared<const PackedOperand>(PackedOperand::Pack(
                PackedOperand::Side::kRight, {b->data<float>(), cols, tb},
                depth, width));
          });
    } else {
      return;
    }
    source_ = *b;
  }

  // The packed op(B) when this Run's B is the tensor it was packed from (a
  // Run may feed the Const's output instead), else null.
  const PackedOperand* For(const Tensor& b) const {
    return packed_ && b.raw_data() == source_.raw_data() ? packed_.get()
                                                         : nullptr;
  }
  // The same for the bf16 packing.
  const Bf16PackedWeights* Bf16For(const Tensor& b) const {
    return bf16_ && b.raw_data() == source_.raw_data() ? bf16_.get() : nullptr;
  }
  // The same for oneDNN's.
  const DnnlWeightProduct* DnnlFor(const Tensor& b) const {
    return dnnl_ && b.raw_data() == source_.raw_data() ? dnnl_.get() : nullptr;
  }
  int64_t bytes() const {
    return (packed_ ? packed_->bytes() : 0) + (bf16_ ? bf16_->bytes() : 0) +
           (dnnl_ ? dnnl_->bytes() : 0);
  }
  // SessionOptions::batch_invariant: every product against this B takes
  // the packed path, whatever its number of rows (the one-row and few-row
  // paths sum in other orders).
  bool batch_invariant() const { return batch_invariant_; }

 private:
  bool batch_invariant_ = false;
  std::shared_ptr<const PackedOperand> packed_;
  std::shared_ptr<const Bf16PackedWeights> bf16_;
  std::unique_ptr<const DnnlWeightProduct> dnnl_;
  Tensor source_;
};

// Below this many rows of A, packing A's rows for the micro-kernel costs more
// than it saves (a batch-1 classifier: 1 x 1000 x 512 ran at 17 GFLOP/s
// through it, 30 through bli_sgemm's unpacked path, on an AMD EPYC Zen 4), so
// such products keep GemmTile; one row times a constant B runs
// RunRowTimesPacked instead. Decided by m alone: one product, one path.
bool UsesPackedWeight(const MatMulDims& d) {
  return d.m >= 4 * FloatMicroKernel().mr;
}

// Products of at most this many of BLIS's mc-row blocks (4 x 144 rows on
// Zen 4) share one packing of A (RunOverSharedRows): a depth block of those
// panels then still fits in a core's L2 beside B's panels. Larger products
// keep row tiles. Decided by the shapes and the CPU alone.
constexpr int64_t kMaxSharedRowBlocks = 4;

// c[i][j] = sum over p of a(i, p) * b(p, j), for rows x cols elements
// (row stride ldc), in unsigned arithmetic: an integer product wraps as
// NumPy's does, and integer sums do not depend on their order. The tile
// kernels are float-only; integer MatMul is rare in models (index
// arithmetic, counts), so a plain loop, rows outside, B's rows streamed.
template <class T>
void IntegerTile(const GemmOperand<T>& a, const GemmOperand<T>& b, int64_t rows,
                 int64_t cols, int64_t k, T* c, int64_t ldc) {
  using U = std::make_unsigned_t<T>;
  auto at = [](const GemmOperand<T>& m, int64_t i, int64_t j) {
    return static_cast<U>(m.transposed ? m.data[j * m.ld + i]
                                       : m.data[i * m.ld + j]);
  };
  std::vector<U> row(static_cast<size_t>(cols));
  for (int64_t i = 0; i < rows; ++i) {
    std::fill(row.begin(), row.end(), U{0});
    for (int64_t p = 0; p < k; ++p) {
      const U x = at(a, i, p);
      for (int64_t j = 0; j < cols; ++j) {
        row[static_cast<size_t>(j)] += static_cast<U>(x * at(b, p, j));
      }
    }
    for (int64_t j = 0; j < cols; ++j) {
      c[i * ldc + j] = static_cast<T>(row[static_cast<size_t>(j)]);
    }
  }
}

// C[r0:r0+rows, c0:c0+cols] = op(A)[r0:r0+rows, :] * op(B)[:, c0:c0+cols]
// for one matrix of a batch (a, b, c point at that matrix); packed_b, when
// given, is op(B) already packed.
template <class T>
void MultiplyTile(const T* a, const T* b, T* c, const MatMulDims& d, bool ta,
                  bool tb, int64_t r0, int64_t rows, int64_t c0, int64_t cols,
                  const PackedOperand* packed_b) {
  // A is m x k (or k x m when transposed), B is k x n (or n x k), row-major.
  const GemmOperand<T> a_rows{ta ? a + r0 : a + r0 * d.k, ta ? d.m : d.k, ta};
  const GemmOperand<T> b_cols{tb ? b + c0 * d.k : b + c0, tb ? d.k : d.n, tb};
  if constexpr (std::is_integral_v<T>) {
    IntegerTile(a_rows, b_cols, rows, cols, d.k, c + r0 * d.n + c0, d.n);
  } else {
    if constexpr (std::is_same_v<T, float>) {
      if (packed_b != nullptr) {
        const GemmInput b_input = c0 % packed_b->width() == 0
                                      ? GemmInput::Packed(*packed_b, c0)
                                      : GemmInput::Plain(b_cols);
        PackedGemmTile(rows, cols, d.k, GemmInput::Plain(a_rows), b_input,
                       {c + r0 * d.n + c0, d.n}, /*accumulate=*/false);
        return;
      }
    }
    // Float products take DynamicProductKernel(), as the fused attention's
    // do (its bits); float64 ones the tile kernel, which oneDNN lacks.
    const GemmKernel kernel =
        std::is_same_v<T, float> ? DynamicProductKernel() : ActiveGemmKernel();
    GemmTile(kernel, rows, cols, d.k, a_rows, b_cols, c + r0 * d.n + c0, d.n,
             /*accumulate=*/false);
  }
}

// What Gemm does to a finished tile: C = alpha * C + beta * bias, with bias
// broadcast to (m, n), then FusedGemm's activation. MatMul passes none.
template <class T>
struct Epilogue {
  T alpha = T(1);
  T beta = T(0);
  const Tensor* bias = nullptr;
  const BroadcastIndexer* bias_index = nullptr;
  ActivationSpec activation;
};

template <class T>
bool IsIdentity(const Epilogue<T>& e) {
  return e.alpha == T(1) && e.bias == nullptr &&
         e.activation.kind == FusedActivation::kNone;
}

// Applies the epilogue to rows [r0, r0 + rows) x columns [c0, c0 + cols)
// of the m x n matrix c (row stride n).
template <class T>
void FinishTile(const Epilogue<T>& epilogue, T* c, int64_t n, int64_t r0,
                int64_t rows, int64_t c0, int64_t cols) {
  // Integer products have no epilogue: alpha, bias and activations come
  // from the float passes and Gemm, which take no integers.
  if constexpr (!std::is_integral_v<T>) {
    if (IsIdentity(epilogue)) return;
    for (int64_t i = r0; i < r0 + rows; ++i) {
      int64_t bias_off = 0, unused = 0;
      if (epilogue.bias_index) {
        epilogue.bias_index->RowOffsets(i, &bias_off, &unused);
      }
      const T* bias = epilogue.bias
                          ? epilogue.bias->template data<T>() + bias_off
                          : nullptr;
      const int64_t bias_stride =
          epilogue.bias_index ? epilogue.bias_index->a_inner_stride() : 0;
      T* row = c + i * n;
      for (int64_t j = c0; j < c0 + cols; ++j) {
        T& v = row[j];
        v *= epilogue.alpha;
        if (bias) v += epilogue.beta * bias[j * bias_stride];
      }
    }
    ApplyActivationRows(epilogue.activation, c + r0 * n + c0, rows, cols, n);
  }
}

// A product whose B was packed at construction and whose A has few rows
// (two towers' 64 x 512 x 512, an encoder's 128 x 256 x 1024): op(A) is
// packed once, its row panels split over the pool, into this thread's kept
// buffer, and C is cut into column tiles that each read those panels and
// their own columns of B. Against row tiles, every panel of B is read once
// per product rather than once per row tile, and no rows are lost to
// partial mr-row panels at tile edges (two 32-row tiles of a 64-row product
// ran 12 panels of 6 rows where 11 cover it): 64 x 512 x 512, one core of an
// AMD EPYC Zen 4, docs/kernels.md. The bits are those of the row tiles:
// every element is summed over the same depth blocks by the same
// micro-kernel, whatever the tile that holds it.
void RunOverSharedRows(KernelContext& ctx, const GemmOperand<float>& a,
                       int64_t rows, const MatMulDims& d,
                       const PackedOperand& b, float* c,
                       const Epilogue<float>& epilogue) {
  const MicroKernelShape& shape = FloatMicroKernel();
  const int64_t row_panels = (rows + shape.mr - 1) / shape.mr;
  // Kept between calls, so that a steady Run allocates nothing. Only this
  // thread names it: a lambda run by a helper would name the helper's.
  thread_local PanelBuffer kept;
  float* const panels = kept.Get(PanelView::Floats(rows, d.k, shape.mr));
  // About 0.3 ns per packed float (a strided gather).
  ctx.ParallelFor(row_panels, 0.3 * static_cast<double>(shape.mr * d.k),
                  [&](int64_t begin, int64_t end) {
                    PackOuterRange(PackedOperand::Side::kLeft, a, rows, d.k,
                                   begin * shape.mr, end * shape.mr, panels);
                  });
  const PanelView view{panels, row_panels * shape.mr, d.k, shape.mr};
  // Column tiles of whole nr panels, about eight per product so that two
  // or four threads share them evenly; their width changes no bits.
  const int64_t col_panels = (d.n + shape.nr - 1) / shape.nr;
  const int64_t tile_cols = (col_panels + 7) / 8 * shape.nr;
  const int64_t tiles = (d.n + tile_cols - 1) / tile_cols;
  const double tile_cost = 0.02 * static_cast<double>(rows) *
                           static_cast<double>(tile_cols) *
                           static_cast<double>(d.k);
  ctx.ParallelFor(tiles, tile_cost, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t c0 = t * tile_cols;
      const int64_t cols = std::min(tile_cols, d.n - c0);
      PackedGemmTile(rows, cols, d.k, GemmInput::Panels(view, 0),
                     GemmInput::Packed(b, c0), {c + c0, d.n},
                     /*accumulate=*/false);
      FinishTile(epilogue, c, d.n, 0, rows, c0, cols);
    }
  });
}

// Sums over one depth block of a packed column panel: sums[i][j] +=
// x[p] * panel[p][j] for the depth indices p = i mod 4 (four chains, so
// that the multiply-adds do not wait on each other). kNr is the panel
// width when known at compile time (the sums then stay in registers), else
// 0 and `nr` gives it.
template <int64_t kNr>
void AccumulatePanel(const float* x, const float* panel, int64_t depth,
                     int64_t nr, float (*sums)[64]) {
  const int64_t width = kNr > 0 ? kNr : nr;
  int64_t p = 0;
  for (; p + 4 <= depth; p += 4) {
    const float* row = panel + p * width;
    for (int64_t j = 0; j < width; ++j) {
      sums[0][j] += x[p] * row[j];
      sums[1][j] += x[p + 1] * row[width + j];
      sums[2][j] += x[p + 2] * row[2 * width + j];
      sums[3][j] += x[p + 3] * row[3 * width + j];
    }
  }
  for (; p < depth; ++p) {
    for (int64_t j = 0; j < width; ++j) {
      sums[p % 4][j] += x[p] * panel[p * width + j];
    }
  }
}

// Panels of RunRowTimesPacked summed side by side, depth block by depth block.
constexpr int64_t kRowGroupPanels = 8;

// One row of op(A) times a B packed at construction (a batch-1 classifier:
// 1 x 512 x 1000). The micro-kernel would compute mr rows for the one (a
// sixth of its work useful), and bli_sgemm ran it at about 30 GFLOP/s on an
// AMD EPYC Zen 4. Each column's sum runs over the depth in a fixed order
// (AccumulatePanel's four chains, added pairwise at the end); column tiles
// of whole panels, about eight per product: the bits do not depend on the
// thread count. B comes from memory in a model (MobileNetV2's 5 MB
// classifier): it is read kRowGroupPanels panels at a time, depth block by
// depth block, where those panels lie next to each other (1 x 1280 x 1000,
// B evicted between Runs, one core of an AMD EPYC Zen 4: medians 375-418
// -> 243-278 us; a stream of 5 MB from memory takes about 235 us there).
void RunRowTimesPacked(KernelContext& ctx, const GemmOperand<float>& a,
                       const MatMulDims& d, const PackedOperand& b, float* c,
                       const Epilogue<float>& epilogue) {
  const int64_t nr = b.width(), kc = FloatMicroKernel().kc;
  const PanelView& view = b.view();
  const int64_t col_panels = (d.n + nr - 1) / nr;
  const int64_t tile_panels = (col_panels + 7) / 8;
  const int64_t tiles = (col_panels + tile_panels - 1) / tile_panels;
  // The row, contiguous: A's own, or a transposed column gathered into a
  // buffer kept between calls.
  const float* x = a.data;
  if (a.transposed) {
    thread_local std::vector<float> kept;
    kept.resize(static_cast<size_t>(d.k));
    for (int64_t p = 0; p < d.k; ++p) kept[p] = a.data[p * a.ld];
    x = kept.data();  // Named here: a helper has its own `kept`.
  }
  ctx.ParallelFor(
      tiles, 0.5 * static_cast<double>(tile_panels * nr * d.k),
      [&](int64_t begin, int64_t end) {
        float sums[kRowGroupPanels][4][64];
        for (int64_t t = begin; t < end; ++t) {
          const int64_t first = t * tile_panels;
          const int64_t last = std::min(col_panels, first + tile_panels);
          for (int64_t g0 = first; g0 < last; g0 += kRowGroupPanels) {
            const int64_t g1 = std::min(last, g0 + kRowGroupPanels);
            for (auto& panel_sums : sums) {
              for (auto& chain : panel_sums) std::fill(chain, chain + nr, 0.0f);
            }
            // Depth blocks outside, the group's panels inside. Each column's
            // sum still runs over the depth in order (the same bits).
            for (int64_t p0 = 0; p0 < d.k; p0 += kc) {
              const int64_t depth = std::min(kc, d.k - p0);
              for (int64_t panel = g0; panel < g1; ++panel) {
                const float* w = view.Panels(p0, panel * nr);
                if (nr == 16) {
                  AccumulatePanel<16>(x + p0, w, depth, nr, sums[panel - g0]);
                } else {
                  AccumulatePanel<0>(x + p0, w, depth, nr, sums[panel - g0]);
                }
              }
            }
            for (int64_t panel = g0; panel < g1; ++panel) {
              const int64_t c0 = panel * nr;
              const int64_t cols = std::min(nr, d.n - c0);
              const auto& s = sums[panel - g0];
              for (int64_t j = 0; j < cols; ++j) {
                c[c0 + j] = (s[0][j] + s[1][j]) + (s[2][j] + s[3][j]);
              }
            }
          }
          const int64_t c0 = first * nr;
          FinishTile(epilogue, c, d.n, 0, 1, c0, std::min(last * nr, d.n) - c0);
        }
      });
}

// op(A)'s `rows` rows (a batched A's matrices stacked) rounded to bf16 over
// the pool, into the calling thread's buffer (kept between products: no
// allocation once it is large enough). Only this thread names it, as above.
const Bf16Rows& RoundRowsToBf16(KernelContext& ctx, const GemmOperand<float>& a,
                                int64_t rows, int64_t depth) {
  thread_local Bf16Rows kept;
  Bf16Rows& bf16_rows = kept;
  bf16_rows.Reset(rows, depth);
  // About 0.5 ns per rounded float.
  ctx.ParallelFor(rows, 0.5 * static_cast<double>(depth),
                  [&](int64_t begin, int64_t end) {
                    bf16_rows.Fill(a.data, a.ld, a.transposed, begin, end);
                  });
  return bf16_rows;
}

// A product against a B packed in bf16 (SessionOptions::precision): op(A)'s
// `rows` rows (a batched A's matrices stacked, B being 2-D) rounded to bf16
// over the pool, then tasks of a column block by kBf16TaskRows rows, a
// block's tasks next to each other so that a thread's consecutive tasks
// reuse that block from its cache. Each element is one chain over the
// depth (kernels/bf16_gemm.h): the bits depend on nothing but the
// operands, so neither on the thread count nor on the row count.
void RunBf16Product(KernelContext& ctx, const GemmOperand<float>& a,
                    int64_t rows, const MatMulDims& d,
                    const Bf16PackedWeights& b, float* c,
                    const Epilogue<float>& epilogue) {
  constexpr int64_t kBf16TaskRows = 48;
  const Bf16Rows& bf16_rows = RoundRowsToBf16(ctx, a, rows, d.k);
  const int64_t row_groups = (rows + kBf16TaskRows - 1) / kBf16TaskRows;
  // About 0.01 ns per multiply-add (two per vdpbf16ps lane).
  const double task_cost = 0.01 * static_cast<double>(kBf16TaskRows) *
                           static_cast<double>(kBf16BlockCols) *
                           static_cast<double>(d.k);
  ctx.ParallelFor(b.blocks() * row_groups, task_cost,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t t = begin; t < end; ++t) {
                      const int64_t block = t / row_groups;
                      const int64_t r0 = (t % row_groups) * kBf16TaskRows;
                      const int64_t r1 = std::min(rows, r0 + kBf16TaskRows);
                      Bf16Product(bf16_rows, r0, r1, b, block, block + 1,
                                  c + r0 * d.n, d.n);
                      const int64_t c0 = block * kBf16BlockCols;
                      FinishTile(epilogue, c, d.n, r0, r1 - r0, c0,
                                 std::min(kBf16BlockCols, d.n - c0));
                    }
                  });
}

// A product through a bf16 plan of oneDNN's (DnnlBf16ProductsAvailable):
// op(A)'s rows (a batched A's stacked; not transposed) rounded to bf16 over
// the pool, then oneDNN's tiles. False if oneDNN failed a call: the caller
// computes C another way.
bool RunDnnlBf16Product(KernelContext& ctx, const float* a, const MatMulDims& d,
                        const DnnlWeightProduct& product, float* c,
                        const Epilogue<float>& epilogue) {
  return product.Run(
      ctx,
      RoundRowsToBf16(ctx, {a, d.k, /*transposed=*/false}, product.rows(), d.k),
      c, [&](int64_t r0, int64_t tile_rows, int64_t c0, int64_t cols) {
        FinishTile(epilogue, c, d.n, r0, tile_rows, c0, cols);
      });
}

// Runs a (batched) product into `c`, whose shape is batch + [m, n].
// `weight` is B packed at construction, if it was.
template <class T>
void RunProduct(KernelContext& ctx, const Tensor& a, const Tensor& b, bool ta,
                bool tb, const MatMulDims& d, const Shape& batch, Tensor* c,
                const Epilogue<T>& epilogue, const PackedWeight& weight) {
  if (d.m == 0 || d.n == 0) return;
  const bool one_path = weight.batch_invariant();
  const PackedOperand* packed_b =
      one_path || UsesPackedWeight(d) ? weight.For(b) : nullptr;
  const int64_t batches = batch.NumElements();
  if constexpr (std::is_same_v<T, float>) {
    // A 2-D B: a batched A's matrices stack into one product (a transposed
    // batched A, which ONNX cannot write, keeps float32).
    const Bf16PackedWeights* bf16 = weight.Bf16For(b);
    const DnnlWeightProduct* dnnl = weight.DnnlFor(b);
    if (bf16 != nullptr && dnnl != nullptr && !ta &&
        batches * d.m == dnnl->rows() &&
        (batches == 1 || epilogue.bias == nullptr) &&
        RunDnnlBf16Product(ctx, a.data<float>(), d, *dnnl, c->data<float>(),
                           epilogue)) {
      return;
    }
    if (bf16 != nullptr && (batches == 1 || !ta) && d.k > 0) {
      RunBf16Product(ctx, {a.data<float>(), ta ? d.m : d.k, ta}, batches * d.m,
                     d, *bf16, c->data<float>(), epilogue);
      return;
    }
    // Through oneDNN where the plan was made for this many rows: a batched
    // A's matrices stack into one product, as below, where there is no bias.
    if (dnnl != nullptr && bf16 == nullptr && !ta &&
        batches * d.m == dnnl->rows() &&
        (batches == 1 || epilogue.bias == nullptr)) {
      float* out = c->data<float>();
      const bool done =
          dnnl->Run(ctx, a.data<float>(), out,
                    [&](int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
                      FinishTile(epilogue, out, d.n, r0, rows, c0, cols);
                    });
      if (done) return;  // Else C is computed again below.
    }
    const PackedOperand* packed = weight.For(b);
    if (!one_path && packed != nullptr && d.m == 1 && batches == 1 && d.k > 0 &&
        packed->width() <= 64) {
      RunRowTimesPacked(ctx, {a.data<float>(), ta ? d.m : d.k, ta}, d, *packed,
                        c->data<float>(), epilogue);
      return;
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    // A packed B is 2-D: a batched A without a transpose is then one
    // product of batches * m rows (the epilogue's bias is per (m, n) matrix,
    // so only a product without one merges them).
    const bool merge = batches == 1 || (!ta && epilogue.bias == nullptr);
    const int64_t rows = merge ? batches * d.m : 0;
    if (packed_b != nullptr && merge &&
        rows <= kMaxSharedRowBlocks * FloatMicroKernel().mc) {
      RunOverSharedRows(ctx, {a.data<float>(), ta ? d.m : d.k, ta}, rows, d,
                        *packed_b, c->data<float>(), epilogue);
      return;
    }
  }
  const int batch_rank = batch.rank();
  // Per batch dimension, the stride of A's and B's matrices (0: broadcast).
  auto batch_strides = [&](const Shape& s) {
    std::vector<int64_t> strides(batch_rank, 0);
    const int rank = s.rank() - 2;
    int64_t stride = s.dim(s.rank() - 1) * s.dim(s.rank() - 2);
    for (int i = rank - 1; i >= 0; --i) {
      const int o = batch_rank - rank + i;
      strides[o] = s.dim(i) == 1 ? 0 : stride;
      stride *= s.dim(i);
    }
    return strides;
  };
  const std::vector<int64_t> a_strides = batch_strides(a.shape());
  const std::vector<int64_t> b_strides = batch_strides(b.shape());
  const TileShape tile = ChooseTiles(d);
  const int64_t row_tiles = (d.m + tile.rows - 1) / tile.rows;
  const int64_t col_tiles = (d.n + tile.cols - 1) / tile.cols;
  const int64_t tiles = row_tiles * col_tiles;
  // About 0.02 ns per multiply-add on one core (a rough figure for either
  // tile kernel; the cost only decides how finely ParallelFor splits).
  const double tile_cost = 0.02 * static_cast<double>(tile.rows) *
                           static_cast<double>(tile.cols) *
                           static_cast<double>(std::max<int64_t>(d.k, 1));
  ctx.ParallelFor(batches * tiles, tile_cost, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t rest = t / tiles, a_off = 0, b_off = 0;
      for (int i = batch_rank - 1; i >= 0; --i) {
        const int64_t coord = rest % batch.dim(i);
        rest /= batch.dim(i);
        a_off += coord * a_strides[i];
        b_off += coord * b_strides[i];
      }
      T* c_matrix = c->data<T>() + (t / tiles) * d.m * d.n;
      const int64_t r0 = (t % tiles / col_tiles) * tile.rows;
      const int64_t c0 = (t % col_tiles) * tile.cols;
      const int64_t rows = std::min(tile.rows, d.m - r0);
      const int64_t cols = std::min(tile.cols, d.n - c0);
      // With k = 0 the tile is zeros, which GemmTile writes too.
      MultiplyTile(a.data<T>() + a_off, b.data<T>() + b_off, c_matrix, d, ta,
                   tb, r0, rows, c0, cols, packed_b);
      FinishTile(epilogue, c_matrix, d.n, r0, rows, c0, cols);
    }
  });
}

class MatMulKernel : public OpKernel {
 public:
  explicit MatMulKernel(const KernelConstruction& c)
      : ta_(c.attr<bool>("transpose_a")),
        tb_(c.attr<bool>("transpose_b")),
        alpha_(c.attr<double>("alpha")),
        weight_(c.constant_input(1), tb_, c.batch_invariant(), c.bf16(),
                KnownRows(c, ta_), c.prepared_weights()) {}

  int64_t prepared_bytes() const override { return weight_.bytes(); }

  template <class T>
  Status RunIntegerProduct(KernelContext& ctx, const Tensor& a, const Tensor& b,
                           const MatMulShape& s, const Shape& batch,
                           Tensor* c) const {
    RunProduct<T>(ctx, a, b, ta_, tb_, s.d, batch, c, Epilogue<T>{}, weight_);
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& given_a = ctx.input(0);
    const Tensor& given_b = ctx.input(1);
    WEFT_ASSIGN_OR_RETURN(
        MatMulShape s, CheckShapes(given_a.shape(), given_b.shape(), ta_, tb_));
    const Shape batch = s.batch.ToShape();
    WEFT_ASSIGN_OR_RETURN(
        Tensor * c, ctx.AllocateOutputUninitialized(0, Shape(s.OutputDims())));
    // A vector operand as its matrix (no copy); the output's dropped
    // dimension is 1, so its elements lie as the product's.
    std::optional<Tensor> a_matrix, b_matrix;
    if (s.a_vector) a_matrix = given_a.WithShape(Shape{1, s.d.k});
    if (s.b_vector) b_matrix = given_b.WithShape(Shape{s.d.k, 1});
    const Tensor& a = a_matrix ? *a_matrix : given_a;
    const Tensor& b = b_matrix ? *b_matrix : given_b;
    Epilogue<float> scale32;
    scale32.alpha = static_cast<float>(alpha_);
    switch (a.dtype()) {
      case DataType::kInt32:
        return RunIntegerProduct<int32_t>(ctx, a, b, s, batch, c);
      case DataType::kInt64:
        return RunIntegerProduct<int64_t>(ctx, a, b, s, batch, c);
      case DataType::kUInt32:
        return RunIntegerProduct<uint32_t>(ctx, a, b, s, batch, c);
      case DataType::kUInt64:
        return RunIntegerProduct<uint64_t>(ctx, a, b, s, batch, c);
      default:
        break;
    }
    if (a.dtype() == DataType::kFloat16) {  // In float32, rounded once.
      WEFT_ASSIGN_OR_RETURN(Tensor a32, WidenToFloat32(a));
      WEFT_ASSIGN_OR_RETURN(Tensor b32, WidenToFloat32(b));
      WEFT_ASSIGN_OR_RETURN(Tensor c32,
                            Tensor::Create(DataType::kFloat32, c->shape()));
      RunProduct<float>(ctx, a32, b32, ta_, tb_, s.d, batch, &c32, scale32,
                        weight_);
      NarrowToFloat16(c32, c);
    } else if (a.dtype() == DataType::kFloat32) {
      RunProduct<float>(ctx, a, b, ta_, tb_, s.d, batch, c, scale32, weight_);
    } else {
      Epilogue<double> scale64;
      scale64.alpha = alpha_;
      RunProduct<double>(ctx, a, b, ta_, tb_, s.d, batch, c, scale64, weight_);
    }
    return Status::OK();
  }

 private:
  const bool ta_;
  const bool tb_;
  const double alpha_;
  const PackedWeight weight_;
};

class GemmOpKernel : public OpKernel {
 public:
  // Gemm, or FusedGemm when the node has an `activation` attribute.
  explicit GemmOpKernel(const KernelConstruction& c)
      : alpha_(c.attr<double>("alpha")),
        beta_(c.attr<double>("beta")),
        ta_(c.attr<int64_t>("transA") != 0),
        tb_(c.attr<int64_t>("transB") != 0),
        activation_(ActivationFromAttrs(c.attrs())),
        weight_(c.constant_input(1), tb_, c.batch_invariant(), c.bf16(),
                KnownRows(c, ta_), c.prepared_weights()) {}

  int64_t prepared_bytes() const override { return weight_.bytes(); }

  Status Compute(KernelContext& ctx) const override {
    WEFT_RETURN_IF_ERROR(activation_.status());
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.shape().rank() != 2 || b.shape().rank() != 2) {
      return InvalidArgumentError("Gemm needs 2-D A and B");
    }
    WEFT_ASSIGN_OR_RETURN(MatMulShape s,
                          CheckShapes(a.shape(), b.shape(), ta_, tb_));
    const Shape out_shape{s.d.m, s.d.n};
    const Tensor* bias = ctx.num_inputs() > 2 ? &ctx.input(2) : nullptr;
    std::optional<BroadcastIndexer> index;
    if (bias != nullptr) {
      auto shape = BroadcastShapes(bias->shape(), out_shape);
      if (!shape.ok() || !(shape->ToShape() == out_shape)) {
        return InvalidArgumentError("C of shape " + bias->shape().ToString() +
                                    " does not broadcast to " +
                                    out_shape.ToString());
      }
      index.emplace(bias->shape(), out_shape, out_shape);
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * c,
                          ctx.AllocateOutputUninitialized(0, out_shape));
    if (a.dtype() == DataType::kFloat16) {  // In float32, rounded once.
      WEFT_ASSIGN_OR_RETURN(Tensor a32, WidenToFloat32(a));
      WEFT_ASSIGN_OR_RETURN(Tensor b32, WidenToFloat32(b));
      Tensor bias32;
      if (bias != nullptr) {
        WEFT_ASSIGN_OR_RETURN(bias32, WidenToFloat32(*bias));
      }
      WEFT_ASSIGN_OR_RETURN(Tensor c32,
                            Tensor::Create(DataType::kFloat32, out_shape));
      Epilogue<float> e{static_cast<float>(alpha_), static_cast<float>(beta_),
                        bias ? &bias32 : nullptr, index ? &*index : nullptr,
                        ActivationSpec{}};  // FusedGemm has no float16.
      RunProduct<float>(ctx, a32, b32, ta_, tb_, s.d, Shape{}, &c32, e,
                        weight_);
      NarrowToFloat16(c32, c);
    } else if (a.dtype() == DataType::kFloat32) {
      Epilogue<float> e{static_cast<float>(alpha_), static_cast<float>(beta_),
                        bias, index ? &*index : nullptr, *activation_};
      RunProduct<float>(ctx, a, b, ta_, tb_, s.d, Shape{}, c, e, weight_);
    } else {
      Epilogue<double> e{alpha_, beta_, bias, index ? &*index : nullptr,
                         *activation_};
      RunProduct<double>(ctx, a, b, ta_, tb_, s.d, Shape{}, c, e, weight_);
    }
    return Status::OK();
  }

 private:
  const double alpha_, beta_;
  const bool ta_, tb_;
  // FusedGemm's (float32 and float64 only: the float16 path has none); an
  // error fails Compute.
  const StatusOr<ActivationSpec> activation_;
  const PackedWeight weight_;
};

double ProductCost(const InferenceContext& ctx) {
  const PartialShape& out = ctx.output_shapes()[0];
  const PartialShape& a = ctx.input_shape(0);
  if (!out.IsFullyDefined() || !a.IsFullyDefined() || a.rank() < 2) return 1e5;
  const double k =
      static_cast<double>(std::min(a.dim(a.rank() - 1), a.dim(a.rank() - 2)));
  // About 0.02 ns per multiply-add on one core; k is a guess when
  // transposed, which is fine for an estimate.
  return 0.02 * static_cast<double>(out.ToShape().NumElements()) * k;
}

// Gemm's definition, under `name` (Gemm and FusedGemm), for `types`.
OpDefBuilder GemmDef(const char* name, const std::vector<DataType>& types) {
  OpDefBuilder b =
      OpDefBuilder(name)
          .Input(ArgDef::Typed("A", "T"))
          .Input(ArgDef::Typed("B", "T"))
          .Input(ArgDef::AnyList("C"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt, types)
          .Attr("alpha", AttrType::kFloat, 1.0)
          .Attr("beta", AttrType::kFloat, 1.0)
          .Attr("transA", AttrType::kInt, int64_t{0})
          .Attr("transB", AttrType::kInt, int64_t{0})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            if (ctx.num_inputs() > 3) {
              return InvalidArgumentError("takes A, B and an optional C");
            }
            if (ctx.num_inputs() == 3 &&
                ctx.input_dtype(2) != ctx.input_dtype(0)) {
              return InvalidArgumentError("C must have A's dtype");
            }
            for (int i = 0; i < 2; ++i) {
              if (ctx.input_shape(i).rank_known() &&
                  ctx.input_shape(i).rank() != 2) {
                return InvalidArgumentError("Gemm needs 2-D A and B, got " +
                                            ctx.input_shape(i).ToString());
              }
            }
            WEFT_ASSIGN_OR_RETURN(
                MatMulShape s,
                CheckShapes(ctx.input_shape(0), ctx.input_shape(1),
                            ctx.attr<int64_t>("transA") != 0,
                            ctx.attr<int64_t>("transB") != 0));
            ctx.set_output(0, PartialShape({s.d.m, s.d.n}));
            return Status::OK();
          })
          .SetCostFn(ProductCost);
  return b;
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"FusedGemm", "Gemm + activation in one pass (made by the graph passes)"},
    {"Gemm", "alpha * op(A) op(B) + beta * C"},
    {"MatMul",
     "matrix product with NumPy batching (tiled over intra-op threads)"},
};

}  // namespace

void RegisterMatMulOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("MatMul")
          .Input(ArgDef::Typed("A", "T"))
          .Input(ArgDef::Typed("B", "T"))
          .Output(ArgDef::Typed("Y", "T"))
          // ONNX MatMul-13's types but bfloat16.
          .Attr("T", AttrType::kType, std::nullopt,
                {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                 DataType::kInt32, DataType::kInt64, DataType::kUInt32,
                 DataType::kUInt64})
          .Attr("transpose_a", AttrType::kBool, false)
          .Attr("transpose_b", AttrType::kBool, false)
          .Attr("alpha", AttrType::kFloat, 1.0)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            WEFT_ASSIGN_OR_RETURN(
                MatMulShape s,
                CheckShapes(ctx.input_shape(0), ctx.input_shape(1),
                            ctx.attr<bool>("transpose_a"),
                            ctx.attr<bool>("transpose_b")));
            if (!s.batch.rank_known()) {
              ctx.set_output(0, PartialShape::UnknownRank());
              return Status::OK();
            }
            ctx.set_output(0, PartialShape(s.OutputDims()));
            return Status::OK();
          })
          .SetCostFn(ProductCost)
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("MatMul", KernelFactoryFor<MatMulKernel>()));

  CheckRegistered(
      registry.RegisterOp(GemmDef("Gemm", kFloatTypesWithHalf).Build()));
  CheckRegistered(
      registry.RegisterKernel("Gemm", KernelFactoryFor<GemmOpKernel>()));
  // Made by the graph passes (src/optimize/): Gemm, then the activation.
  CheckRegistered(registry.RegisterOp(
      GemmDef("FusedGemm", kFloatTypes)
          .Attr("activation", AttrType::kString, std::string())
          .Attr("activation_params", AttrType::kListFloat,
                std::vector<double>{})
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("FusedGemm", KernelFactoryFor<GemmOpKernel>()));
}

}  // namespace weft::internal
