// FusedAttention: scaled dot-product attention over the heads of Q, K and V
// held as [batch, sequence, width] matrices, made by the attention-fusion
// pass from the chain exported models spell it as:
//
//   Reshape/Transpose of Q, K, V into heads -> MatMul (alpha) [-> Div]
//     [-> Add mask]
//     -> Softmax -> MatMul -> Transpose -> Reshape to [batch, sequence, heads
//     * size]
//
// Inputs q [B, Sq, Wq], k [B, Sk, Wk], v [B, Sk, Wv] (float32; one tensor
// may be all three, read at different columns) and an optional float32
// mask broadcastable to the scores [B, H, Sq, Sk]. Head h of Q is columns
// [q_offset + h D, q_offset + (h + 1) D) of q (D = head_size), and so for K
// and V. The output is [B, Sq, H D], head h's context in columns [h D,
// (h + 1) D).
//
// Why: the chain moves every head through memory five times (the Split, the
// three head Transposes, the context's Transpose) and the scores twice
// more (Add, Softmax); here Q and V are read in place, K's heads are
// transposed once, and a tile of scores is scaled, masked and normalised
// while it is in cache.
//
// Bits: those of the chain. Each product is cut into MatMul's tiles
// (ChooseTiles) and run by the same tile kernel on the same values; each
// score is scaled by alpha as MatMul's epilogue does, divided by `divisor`
// as a Div node after the product divides (1: none), the mask added as Add
// adds it, and each row normalised by Softmax's own row function. A tile is
// computed by one thread in a fixed order, so the output does not depend on
// the thread count either.
#include <algorithm>
#include <vector>

#include "framework/op_registry_impl.h"
#include "kernels/gemm_tile.h"
#include "kernels/softmax_row.h"
#include "kernels/transpose_rows.h"
#include "ops/dnnl_matmul.h"
#include "ops/matmul_tiles.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// The attribute names, shared with the pass that writes them.
constexpr char kNumHeads[] = "num_heads";
constexpr char kHeadSize[] = "head_size";

// Where the scores' element (b, h, i, j) of the mask lies: the mask's
// strides, right-aligned to [B, H, Sq, Sk], 0 along its broadcast dims.
struct MaskStrides {
  int64_t b = 0, h = 0, i = 0, j = 0;
};

// InvalidArgument naming the mask's shape when it does not broadcast to
// the scores [B, H, Sq, Sk] without growing them.
StatusOr<MaskStrides> StridesOfMask(const Shape& mask,
                                    const std::vector<int64_t>& scores) {
  if (mask.rank() > 4) {
    return InvalidArgumentError("FusedAttention's mask " + mask.ToString() +
                                " has more dims than the scores " +
                                Shape(scores).ToString());
  }
  int64_t strides[4] = {0, 0, 0, 0};
  int64_t stride = 1;
  for (int d = mask.rank() - 1; d >= 0; --d) {
    const int at = 4 - mask.rank() + d;
    const int64_t dim = mask.dim(d);
    if (dim != 1 && dim != scores[static_cast<size_t>(at)]) {
      return InvalidArgumentError("FusedAttention's mask " + mask.ToString() +
                                  " does not broadcast to the scores " +
                                  Shape(scores).ToString());
    }
    strides[at] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  return MaskStrides{strides[0], strides[1], strides[2], strides[3]};
}

// One of Q, K, V: a [B, S, W] float32 tensor, its heads from `offset` on.
struct HeadSource {
  const float* data;
  int64_t rows;    // S
  int64_t width;   // W: the stride between two positions of a head
  int64_t offset;  // the first column of head 0
};

class FusedAttentionKernel : public OpKernel {
 public:
  explicit FusedAttentionKernel(const KernelConstruction& c)
      : heads_(c.attr<int64_t>(kNumHeads)),
        size_(c.attr<int64_t>(kHeadSize)),
        offsets_{c.attr<int64_t>("q_offset"), c.attr<int64_t>("k_offset"),
                 c.attr<int64_t>("v_offset")},
        alpha_(static_cast<float>(c.attr<double>("alpha"))),
        divisor_(static_cast<float>(c.attr<double>("divisor"))) {}

  Status Compute(KernelContext& ctx) const override {
    if (heads_ <= 0 || size_ <= 0) {
      return InvalidArgumentError(
          "FusedAttention needs num_heads and head_size > 0; got " +
          std::to_string(heads_) + " and " + std::to_string(size_));
    }
    HeadSource sources[3];
    static constexpr const char* kNames[3] = {"q", "k", "v"};
    int64_t batch = -1;
    for (int i = 0; i < 3; ++i) {
      const Tensor& x = ctx.input(i);
      const Shape& s = x.shape();
      if (x.dtype() != DataType::kFloat32 || s.rank() != 3) {
        return InvalidArgumentError(
            std::string("FusedAttention's ") + kNames[i] +
            " must be a float32 [batch, sequence, width] tensor; got " +
            std::string(DataTypeName(x.dtype())) + " " + s.ToString());
      }
      // Compared by division: hostile attributes must not overflow.
      const int64_t columns = s.dim(2);
      if (offsets_[i] < 0 || offsets_[i] > columns || heads_ > columns ||
          size_ > (columns - offsets_[i]) / heads_) {
        return InvalidArgumentError(
            std::string("FusedAttention's ") + kNames[i] + " " + s.ToString() +
            " has no room for " + std::to_string(heads_) + " heads of " +
            std::to_string(size_) + " columns from column " +
            std::to_string(offsets_[i]));
      }
      if (batch >= 0 && s.dim(0) != batch) {
        return InvalidArgumentError(
            "FusedAttention's q, k and v must have one batch size; got " +
            ctx.input(0).shape().ToString() + " and " + s.ToString());
      }
      batch = s.dim(0);
      sources[i] = {x.data<float>(), s.dim(1), s.dim(2), offsets_[i]};
    }
    if (sources[1].rows != sources[2].rows) {
      return InvalidArgumentError(
          "FusedAttention's k and v must have one sequence length; got " +
          ctx.input(1).shape().ToString() + " and " +
          ctx.input(2).shape().ToString());
    }
    const std::vector<int64_t> scores = {batch, heads_, sources[0].rows,
                                         sources[1].rows};
    const float* mask = nullptr;
    MaskStrides mask_strides;
    if (ctx.num_inputs() > 4) {
      return InvalidArgumentError(
          "FusedAttention takes q, k, v and at most one mask; got " +
          std::to_string(ctx.num_inputs()) + " inputs");
    }
    if (ctx.num_inputs() == 4) {
      const Tensor& m = ctx.input(3);
      if (m.dtype() != DataType::kFloat32) {
        return InvalidArgumentError(
            "FusedAttention's mask must be float32; got " +
            std::string(DataTypeName(m.dtype())));
      }
      WEFT_ASSIGN_OR_RETURN(mask_strides, StridesOfMask(m.shape(), scores));
      mask = m.data<float>();
    }
    WEFT_ASSIGN_OR_RETURN(
        Tensor * out, ctx.AllocateOutputUninitialized(
                          0, Shape({batch, sources[0].rows, heads_ * size_})));
    if (out->NumElements() == 0) return Status::OK();
    float* const y = out->data<float>();
    if (sources[1].rows == 0) {  // No keys: the products over them are zero.
      std::fill(y, y + out->NumElements(), 0.0f);
      return Status::OK();
    }
    Run(ctx, sources, mask, mask_strides, batch, y);
    return Status::OK();
  }

 private:
  void Run(KernelContext& ctx, const HeadSource (&src)[3], const float* mask,
           const MaskStrides& ms, int64_t batch, float* y) const {
    const int64_t sq = src[0].rows, sk = src[1].rows, d = size_;
    const int64_t pairs = batch * heads_;
    // K's heads transposed to [D, Sk] each, as the chain's Transpose
    // writes them: the scores' product then reads the same B. Kept between
    // Runs; only this thread names it.
    thread_local std::vector<float> kept_keys;
    kept_keys.resize(static_cast<size_t>(pairs * d * sk));
    float* const keys = kept_keys.data();
    const HeadSource& k = src[1];
    ctx.ParallelFor(pairs, 0.5 * static_cast<double>(d * sk),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t p = begin; p < end; ++p) {
                        const float* from = k.data +
                                            (p / heads_) * sk * k.width +
                                            k.offset + (p % heads_) * d;
                        TransposeRows<sizeof(float)>(
                            reinterpret_cast<const char*>(from), k.width, d, sk,
                            reinterpret_cast<char*>(keys + p * d * sk));
                      }
                    });
    // MatMul's tiles of both products: their rows depend on Sq alone, so
    // one row tile of queries goes through both.
    const TileShape score_tile = ChooseTiles({sq, d, sk});
    const TileShape context_tile = ChooseTiles({sq, sk, d});
    const int64_t row_tiles = (sq + score_tile.rows - 1) / score_tile.rows;
    const int64_t width = heads_ * d;
    const double task_cost = 0.04 * static_cast<double>(score_tile.rows) *
                             static_cast<double>(sk * d);
    ctx.ParallelFor(
        pairs * row_tiles, task_cost, [&](int64_t begin, int64_t end) {
          thread_local std::vector<float> kept_scores;
          kept_scores.resize(static_cast<size_t>(score_tile.rows * sk));
          float* const s = kept_scores.data();
          for (int64_t t = begin; t < end; ++t) {
            const int64_t pair = t / row_tiles, b = pair / heads_,
                          h = pair % heads_;
            const int64_t r0 = (t % row_tiles) * score_tile.rows;
            const int64_t rows = std::min(score_tile.rows, sq - r0);
            const GemmOperand<float> q_rows{src[0].data +
                                                (b * sq + r0) * src[0].width +
                                                src[0].offset + h * d,
                                            src[0].width};
            const float* keys_t = keys + pair * d * sk;
            for (int64_t c0 = 0; c0 < sk; c0 += score_tile.cols) {
              const int64_t cols = std::min(score_tile.cols, sk - c0);
              GemmTile(DynamicProductKernel(), rows, cols, d, q_rows,
                       GemmOperand<float>{keys_t + c0, sk}, s + c0, sk,
                       /*accumulate=*/false);
            }
            for (int64_t i = 0; i < rows; ++i) {
              float* row = s + i * sk;
              if (alpha_ != 1.0f) {
                for (int64_t j = 0; j < sk; ++j) row[j] *= alpha_;
              }
              if (divisor_ != 1.0f) {  // x / 1 is x: skipped.
                for (int64_t j = 0; j < sk; ++j) row[j] = row[j] / divisor_;
              }
              if (mask != nullptr) {
                const float* m = mask + b * ms.b + h * ms.h + (r0 + i) * ms.i;
                for (int64_t j = 0; j < sk; ++j) row[j] = row[j] + m[j * ms.j];
              }
              SoftmaxContiguousRow<false>(row, row, sk);
            }
            const HeadSource& v = src[2];
            const GemmOperand<float> probs{s, sk};
            for (int64_t c0 = 0; c0 < d; c0 += context_tile.cols) {
              const int64_t cols = std::min(context_tile.cols, d - c0);
              GemmTile(DynamicProductKernel(), rows, cols, sk, probs,
                       GemmOperand<float>{
                           v.data + b * sk * v.width + v.offset + h * d + c0,
                           v.width},
                       y + (b * sq + r0) * width + h * d + c0, width,
                       /*accumulate=*/false);
            }
          }
        });
  }

  const int64_t heads_, size_;
  const int64_t offsets_[3];
  const float alpha_, divisor_;
};

double AttentionCost(const InferenceContext& ctx) {
  const PartialShape& q = ctx.input_shape(0);
  const PartialShape& k = ctx.input_shape(1);
  if (!q.IsFullyDefined() || !k.IsFullyDefined() || q.rank() != 3 ||
      k.rank() != 3) {
    return 1e5;
  }
  // Two products of B H Sq Sk D multiply-adds, about 0.02 ns each on one
  // core (MatMul's figure).
  const double width = static_cast<double>(ctx.attr<int64_t>(kNumHeads)) *
                       static_cast<double>(ctx.attr<int64_t>(kHeadSize));
  return 0.04 * static_cast<double>(q.dim(0)) * static_cast<double>(q.dim(1)) *
         static_cast<double>(k.dim(1)) * width;
}

constexpr OpSummary kSummaries[] = {
    {"FusedAttention",
     "softmax(alpha Q K^T / divisor + mask) V per head, Q, K and V read in "
     "place from [batch, sequence, width] tensors (made by the "
     "attention-fusion pass)"},
};

}  // namespace

void RegisterAttentionOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("FusedAttention")
          .Input(ArgDef::Fixed("q", DataType::kFloat32))
          .Input(ArgDef::Fixed("k", DataType::kFloat32))
          .Input(ArgDef::Fixed("v", DataType::kFloat32))
          .Input(ArgDef::AnyList("mask"))
          .Output(ArgDef::Fixed("y", DataType::kFloat32))
          .Attr(kNumHeads, AttrType::kInt)
          .Attr(kHeadSize, AttrType::kInt)
          .Attr("q_offset", AttrType::kInt, int64_t{0})
          .Attr("k_offset", AttrType::kInt, int64_t{0})
          .Attr("v_offset", AttrType::kInt, int64_t{0})
          .Attr("alpha", AttrType::kFloat, 1.0)
          .Attr("divisor", AttrType::kFloat, 1.0)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const PartialShape& q = ctx.input_shape(0);
            int64_t width = 0;
            if (__builtin_mul_overflow(ctx.attr<int64_t>(kNumHeads),
                                       ctx.attr<int64_t>(kHeadSize), &width) ||
                width < 0) {
              return InvalidArgumentError(
                  "FusedAttention's num_heads x head_size is out of range");
            }
            if (q.rank_known() && q.rank() != 3) {
              return InvalidArgumentError(
                  "FusedAttention's q must have rank 3; got " + q.ToString());
            }
            if (!q.rank_known()) {
              ctx.set_output(0, PartialShape({-1, -1, width}));
              return Status::OK();
            }
            ctx.set_output(0, PartialShape({q.dim(0), q.dim(1), width}));
            return Status::OK();
          })
          .SetCostFn(AttentionCost)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "FusedAttention", KernelFactoryFor<FusedAttentionKernel>()));
}

}  // namespace weft::internal
