// MatMulNBits: Y = A W [+ bias], W [K, N] kept in the block-quantized codes
// of ONNX Runtime's com.microsoft MatMulNBits (its weight-only 4-bit
// quantizer's form) and dequantized where it is multiplied
// (kernels/nbit_product.h). The ONNX importer turns the com.microsoft node
// into this op with its scales and zero points as float32 [N, k_blocks]
// (src/io/onnx/contrib_ops.cc), so every zero-point form ONNX Runtime takes
// arrives here as one.
//
// A constant weight is repacked once into panels of 16 columns
// (NBitPanels, the same bytes as the codes). Panels are split over the
// intra-op threads; each output element is summed in an order that depends
// on K and the block size alone (nbit_product.h), so results are bitwise
// the same at every thread setting and batch size.
#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/op_registry_impl.h"
#include "kernels/nbit_product.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "weft/float16.h"
#include "weft/prepared_weights.h"

namespace weft::internal {
namespace {

constexpr int64_t kMaxNBitDim = (int64_t{1} << 31) - 1;

// A tensor's bytes hashed (std::hash, within this process), as text.
std::string ContentsHash(const Tensor& t) {
  const std::string_view bytes(static_cast<const char*>(t.raw_data()),
                               t.size_bytes());
  return std::to_string(std::hash<std::string_view>{}(bytes));
}

class MatMulNBitsKernel : public OpKernel {
 public:
  explicit MatMulNBitsKernel(const KernelConstruction& c)
      : k_(c.attr<int64_t>("K")),
        n_(c.attr<int64_t>("N")),
        bits_(c.attr<int64_t>("bits")),
        block_(c.attr<int64_t>("block_size")) {
    // A constant weight (B, scales and zero points from Const nodes, as
    // a quantized model's are once the session has folded them) is
    // repacked once; Compute checks that a Run reads those same tensors.
    const Tensor* b = c.constant_input(1);
    const Tensor* scales = c.constant_input(2);
    const Tensor* zeros = c.constant_input(3);
    if (b == nullptr || scales == nullptr || zeros == nullptr) return;
    auto weight = WeightOf(*b, *scales, *zeros);
    if (!weight.ok()) return;  // Compute reports it.
    // Shared with this node's kernels in the session's other compiles (one
    // per set of feed shapes): B is the same Const there, while the folded
    // scales and zero points may be new tensors (the session's fold cache
    // hands the same ones back only where their folding did not depend on
    // the shapes), so their contents name the panels with B (hashed only
    // where there is a cache).
    auto make = [&] { return std::make_shared<const NBitPanels>(*weight); };
    PreparedWeights* cache = c.prepared_weights();
    packed_ = cache == nullptr ? make()
                               : cache->GetOrMake<NBitPanels>(
                                     *b,
                                     "MatMulNBits/K=" + std::to_string(k_) +
                                         "/N=" + std::to_string(n_) +
                                         "/bits=" + std::to_string(bits_) +
                                         "/block=" + std::to_string(block_) +
                                         "/scales=" + ContentsHash(*scales) +
                                         "/zeros=" + ContentsHash(*zeros),
                                     make);
    if (packed_ == nullptr) return;
    packed_from_ = {b->raw_data(), scales->raw_data(), zeros->raw_data()};
  }

  int64_t prepared_bytes() const override {
    return packed_ ? packed_->bytes() : 0;
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    if (a.shape().rank() < 1 || a.shape().dim(a.shape().rank() - 1) != k_) {
      return InvalidArgumentError(
          "A has shape " + a.shape().ToString() +
          ": its last dimension must be K = " + std::to_string(k_));
    }
    const float* bias = nullptr;
    if (ctx.num_inputs() > 4) {
      const Tensor& b = ctx.input(4);
      if (b.dtype() != DataType::kFloat32 || b.NumElements() != n_) {
        return InvalidArgumentError(
            "bias must be float32 with N = " + std::to_string(n_) +
            " values, got " + b.DebugString());
      }
      bias = b.data<float>();
    }
    NBitPanels per_run;
    const NBitPanels* w = packed_.get();
    if (!IsPacked(ctx)) {
      WEFT_ASSIGN_OR_RETURN(NBitWeight weight,
                            WeightOf(ctx.input(1), ctx.input(2), ctx.input(3)));
      per_run = NBitPanels(weight);
      w = &per_run;
    }
    const int64_t rows = a.NumElements() / k_;
    std::vector<int64_t> dims = a.shape().dims();
    dims.back() = n_;
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape(dims)));
    // float16 A and Y are computed in float32, as weft's other float16
    // kernels are.
    const bool half = a.dtype() == DataType::kFloat16;
    std::vector<float> a_float, y_float;
    const float* x = nullptr;
    float* out = nullptr;
    if (half) {
      a_float.assign(a.data<Float16>(), a.data<Float16>() + a.NumElements());
      y_float.resize(static_cast<size_t>(rows * n_));
      x = a_float.data();
      out = y_float.data();
    } else {
      x = a.data<float>();
      out = y->data<float>();
    }
    // Pieces of whole panel pairs, the kernel's widest tile: a piece of an
    // odd count would end in a tile of one panel, which shares each
    // broadcast of A with half as many weights. A pair multiplies 32
    // columns' K codes into every row.
    const int64_t pairs = (w->panels() + 1) / 2;
    const double pair_ns =
        0.05 * static_cast<double>(2 * kNBitPanelColumns * k_ *
                                   std::max<int64_t>(rows, 1));
    ctx.ParallelFor(pairs, pair_ns, [&](int64_t first_pair, int64_t end_pair) {
      const int64_t first = 2 * first_pair;
      const int64_t end = std::min(w->panels(), 2 * end_pair);
      NBitProduct(*w, x, k_, rows, out, n_, first, end - first);
      if (bias == nullptr) return;
      const int64_t from = first * kNBitPanelColumns;
      const int64_t to = std::min(n_, end * kNBitPanelColumns);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = from; j < to; ++j) out[r * n_ + j] += bias[j];
      }
    });
    if (half) {
      Float16* y16 = y->data<Float16>();
      for (size_t i = 0; i < y_float.size(); ++i) y16[i] = y_float[i];
    }
    return Status::OK();
  }

 private:
  // B, scales and zero points checked against the attributes.
  StatusOr<NBitWeight> WeightOf(const Tensor& b, const Tensor& scales,
                                const Tensor& zeros) const {
    if (k_ <= 0 || n_ <= 0 || k_ > kMaxNBitDim || n_ > kMaxNBitDim) {
      return InvalidArgumentError("K and N must be from 1 to 2^31 - 1");
    }
    NBitWeight w;
    w.k = k_;
    w.n = n_;
    w.bits = bits_;
    w.block = block_;
    const int64_t blocks = w.blocks();
    if (b.NumElements() != n_ * blocks * w.bytes_per_block()) {
      return InvalidArgumentError(
          "B has " + std::to_string(b.NumElements()) + " bytes; N = " +
          std::to_string(n_) + " columns of " + std::to_string(blocks) +
          " blocks of " + std::to_string(w.bytes_per_block()) + " bytes need " +
          std::to_string(n_ * blocks * w.bytes_per_block()));
    }
    if (scales.NumElements() != n_ * blocks ||
        zeros.NumElements() != n_ * blocks) {
      return InvalidArgumentError(
          "scales and zero points need N * k_blocks = " +
          std::to_string(n_ * blocks) + " values each, got " +
          std::to_string(scales.NumElements()) + " and " +
          std::to_string(zeros.NumElements()));
    }
    w.codes = b.data<uint8_t>();
    w.scales = scales.data<float>();
    w.zeros = zeros.data<float>();
    return w;
  }

  bool IsPacked(const KernelContext& ctx) const {
    return packed_from_[0] != nullptr &&
           ctx.input(1).raw_data() == packed_from_[0] &&
           ctx.input(2).raw_data() == packed_from_[1] &&
           ctx.input(3).raw_data() == packed_from_[2];
  }

  const int64_t k_, n_, bits_, block_;
  std::shared_ptr<const NBitPanels> packed_;
  std::array<const void*, 3> packed_from_ = {nullptr, nullptr, nullptr};
};

Status MatMulNBitsShape(InferenceContext& ctx) {
  const int64_t k = ctx.attr<int64_t>("K");
  const int64_t n = ctx.attr<int64_t>("N");
  const int64_t bits = ctx.attr<int64_t>("bits");
  const int64_t block = ctx.attr<int64_t>("block_size");
  WEFT_RETURN_IF_ERROR(ctx.status());
  // Below 2^31 each, so that the sizes derived from them (N * k_blocks *
  // bytes a block, at most about 2^62) fit in int64.
  if (k <= 0 || n <= 0 || k > kMaxNBitDim || n > kMaxNBitDim) {
    return InvalidArgumentError("K and N must be from 1 to 2^31 - 1, got " +
                                std::to_string(k) + " and " +
                                std::to_string(n));
  }
  if (bits != 2 && bits != 4 && bits != 8) {
    return InvalidArgumentError("bits must be 2, 4 or 8, got " +
                                std::to_string(bits));
  }
  if (block < 16 || (block & (block - 1)) != 0 || block > (int64_t{1} << 20)) {
    return InvalidArgumentError(
        "block_size must be a power of two from 16 to 2^20, got " +
        std::to_string(block));
  }
  const PartialShape& a = ctx.input_shape(0);
  if (!a.rank_known()) {
    ctx.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  if (a.rank() < 1) {
    return InvalidArgumentError("A must have at least one dimension");
  }
  std::vector<int64_t> dims = a.dims();
  if (dims.back() >= 0 && dims.back() != k) {
    return InvalidArgumentError(
        "A has shape " + a.ToString() +
        ": its last dimension must be K = " + std::to_string(k));
  }
  dims.back() = n;
  ctx.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

constexpr OpSummary kSummaries[] = {
    {"MatMulNBits",
     "A times a weight kept in 2-, 4- or 8-bit codes quantized in blocks "
     "along K (ONNX Runtime's weight-only form), dequantized as it is "
     "multiplied"},
};

}  // namespace

void RegisterMatMulNBitsOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("MatMulNBits")
          .Input(ArgDef::Typed("A", "T"))
          .Input(ArgDef::Fixed("B", DataType::kUInt8))
          .Input(ArgDef::Fixed("scales", DataType::kFloat32))
          .Input(ArgDef::Fixed("zero_points", DataType::kFloat32))
          .Input(ArgDef::AnyList("bias"))
          .Output(ArgDef::Typed("Y", "T"))
          .Attr("T", AttrType::kType, std::nullopt,
                std::vector<DataType>{DataType::kFloat32, DataType::kFloat16})
          .Attr("K", AttrType::kInt, std::nullopt)
          .Attr("N", AttrType::kInt, std::nullopt)
          .Attr("bits", AttrType::kInt, int64_t{4})
          .Attr("block_size", AttrType::kInt, std::nullopt)
          .SetShapeFn(MatMulNBitsShape)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "MatMulNBits", KernelFactoryFor<MatMulNBitsKernel>()));
}

}  // namespace weft::internal
