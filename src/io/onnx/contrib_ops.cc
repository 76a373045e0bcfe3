// The expansions of com.microsoft ops into default-domain ONNX nodes. Each
// follows the op's definition in ONNX Runtime's contrib operator schemas
// (docs/ContribOperators.md there); docs/onnx.md lists them and what each
// becomes.
#include "io/onnx/contrib_ops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <utility>

#include "io/onnx/decoder_ops.h"

namespace weft::internal {
namespace {

using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;

Status NotChannelsLast(const Expansion& e) {
  if (IntOr(e.node(), "channels_last", 0) != 0) {
    return UnimplementedError(e.Where() +
                              ": channels_last = 1 is not supported");
  }
  return Status::OK();
}

// ---- Activations and the transformer optimizer's fusions.

Status Gelu(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 1));
  e.Add("Gelu", {e.in(0)}, {}, e.out(0));
  return Status::OK();
}

// Gelu(A + B).
Status BiasGelu(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 2));
  e.Add("Gelu", {e.Add("Add", {e.in(0), e.in(1)})}, {}, e.out(0));
  return Status::OK();
}

// Gelu's tanh approximation of X [+ bias].
Status FastGelu(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 1));
  const std::string x =
      e.has_in(1) ? e.Add("Add", {e.in(0), e.in(1)}) : e.in(0);
  e.Add("Gelu", {x}, {StringAttr("approximate", "tanh")}, e.out(0));
  return Status::OK();
}

// X * Sigmoid(alpha X), alpha 1.702 by default.
Status QuickGelu(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 1));
  const float alpha = FloatOr(e.node(), "alpha", 1.702f);
  const std::string scaled = e.Add("Mul", {e.in(0), e.Scalar(alpha)});
  e.Add("Mul", {e.in(0), e.Add("Sigmoid", {scaled})}, {}, e.out(0));
  return Status::OK();
}

// X + bias + skip.
Status BiasAdd(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 3));
  e.Add("Add", {e.Add("Add", {e.in(0), e.in(1)}), e.in(2)}, {}, e.out(0));
  return Status::OK();
}

// input + skip [+ bias], written to output 3 when asked for; `bias_input`
// is 4 for SkipLayerNormalization, 3 for the simplified form.
std::string SkipSum(Expansion& e, int bias_input) {
  if (!e.has_in(bias_input)) {
    return e.Add("Add", {e.in(0), e.in(1)}, {}, e.out(3));
  }
  return e.Add("Add", {e.Add("Add", {e.in(0), e.in(1)}), e.in(bias_input)}, {},
               e.out(3));
}

// LayerNormalization over the last axis of input + skip [+ bias]; outputs
// (output, mean, inv_std_var, input_skip_bias_sum). epsilon 1e-12 by
// default, as ONNX Runtime's.
Status SkipLayerNormalization(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 3));
  const std::string sum = SkipSum(e, 4);
  std::vector<std::string> outputs = {e.out(0), e.out(1), e.out(2)};
  while (outputs.size() > 1 && outputs.back().empty()) outputs.pop_back();
  if (outputs[0].empty()) outputs[0] = sum + "/normalized";
  e.AddNode("LayerNormalization", {sum, e.in(2), e.in(3)}, outputs,
            {IntAttr("axis", -1),
             FloatAttr("epsilon", FloatOr(e.node(), "epsilon", 1e-12f))});
  return Status::OK();
}

// RMS normalization of input + skip [+ bias] over the last axis:
// x / sqrt(mean(x^2) + epsilon) * gamma; outputs (output, mean (not
// computed by this form), inv_std_var, input_skip_bias_sum).
Status SkipSimplifiedLayerNormalization(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 3));
  if (e.wants_out(1)) {
    return UnimplementedError(e.Where() +
                              ": output 1 (mean) is not computed by the "
                              "simplified form");
  }
  const std::string sum = SkipSum(e, 3);
  const std::string mean_square =
      e.ReduceMean(e.Add("Mul", {sum, sum}), {-1}, 1);
  const float epsilon = FloatOr(e.node(), "epsilon", 1e-12f);
  const std::string inv_std =
      e.Add("Reciprocal",
            {e.Add("Sqrt", {e.Add("Add", {mean_square, e.Scalar(epsilon)})})},
            {}, e.out(2));
  e.Add("Mul", {e.Add("Mul", {sum, inv_std}), e.in(2)}, {}, e.out(0));
  return Status::OK();
}

// alpha * A' B' with A' and B' the operands, their last two axes swapped
// where transA / transB say: weft's MatMul has those attributes and alpha
// (the ONNX MatMul converter passes them through).
Status FusedMatMul(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 2));
  if (IntOr(e.node(), "transBatchA", 0) != 0 ||
      IntOr(e.node(), "transBatchB", 0) != 0) {
    return UnimplementedError(e.Where() +
                              ": transBatchA / transBatchB are not supported");
  }
  e.Add("MatMul", {e.in(0), e.in(1)},
        {IntAttr("transpose_a", IntOr(e.node(), "transA", 0) != 0),
         IntAttr("transpose_b", IntOr(e.node(), "transB", 0) != 0),
         FloatAttr("alpha", FloatOr(e.node(), "alpha", 1.0f))},
        e.out(0));
  return Status::OK();
}

// FusedConv's and FusedGemm's activation of `x`, written to `output`.
Status Activation(Expansion& e, const std::string& x,
                  const std::string& output) {
  const AttributeProto* a = FindAttr(e.node(), "activation");
  const std::string kind = a != nullptr ? a->s() : "";
  std::vector<float> params;
  if (const AttributeProto* p = FindAttr(e.node(), "activation_params")) {
    params.assign(p->floats().begin(), p->floats().end());
  }
  for (const char* name :
       {"activation_alpha", "activation_beta", "activation_gamma"}) {
    if (const AttributeProto* p = FindAttr(e.node(), name)) {
      params.push_back(p->f());
    }
  }
  auto param = [&](size_t i, float fallback) {
    return i < params.size() ? params[i] : fallback;
  };
  if (kind.empty()) {
    e.Add("Identity", {x}, {}, output);
  } else if (kind == "Relu" || kind == "Tanh" || kind == "Sigmoid") {
    e.Add(kind, {x}, {}, output);
  } else if (kind == "LeakyRelu") {
    e.Add(kind, {x}, {FloatAttr("alpha", param(0, 0.01f))}, output);
  } else if (kind == "HardSigmoid") {
    e.Add(
        kind, {x},
        {FloatAttr("alpha", param(0, 0.2f)), FloatAttr("beta", param(1, 0.5f))},
        output);
  } else if (kind == "Clip" && params.size() == 2) {
    e.Add(kind, {x, e.Scalar(params[0]), e.Scalar(params[1])}, {}, output);
  } else {
    return UnimplementedError(e.Where() + ": activation '" + kind +
                              "' is not supported");
  }
  return Status::OK();
}

// Conv(X, W, B) [+ Z], then the activation.
Status FusedConv(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 2));
  std::string y =
      e.Add("Conv", {e.in(0), e.in(1), e.in(2)},
            AttrsBut(e.node(), {"activation", "activation_params"}));
  if (e.has_in(3)) y = e.Add("Add", {y, e.in(3)});
  return Activation(e, y, e.out(0));
}

// Gemm, then the activation.
Status FusedGemm(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 2));
  const std::string y =
      e.Add("Gemm", {e.in(0), e.in(1), e.in(2)},
            AttrsBut(e.node(), {"activation", "activation_alpha",
                                "activation_beta", "activation_gamma"}));
  return Activation(e, y, e.out(0));
}

// ---- The QOperator form of quantized models.

// com.microsoft's QuantizeLinear, DequantizeLinear and QLinearConv (channels
// first), and GatherND, GridSample and Trilu (which it had before ONNX did)
// are the default domain's.
Status SameAsDefault(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NotChannelsLast(e));
  std::vector<std::string> inputs(e.node().input().begin(),
                                  e.node().input().end());
  std::vector<std::string> outputs(e.node().output().begin(),
                                   e.node().output().end());
  e.AddNode(e.node().op_type(), inputs, outputs,
            AttrsBut(e.node(), {"channels_last"}));
  return Status::OK();
}

// Q(f(DQ(X))) for ops of one quantized input: X, X_scale, X_zero_point,
// Y_scale, Y_zero_point (the zero points optional); `compute` appends f's
// nodes and returns f(x).
Status UnaryQuantized(
    Expansion& e,
    const std::function<std::string(const std::string&)>& compute) {
  WEFT_RETURN_IF_ERROR(NeedInputsAt(e, {0, 1, 3}));
  WEFT_ASSIGN_OR_RETURN(const std::string zero, e.OutputZero(4, 0, 2));
  const std::string x = e.Add("DequantizeLinear", {e.in(0), e.in(1), e.in(2)});
  e.Add("QuantizeLinear", {compute(x), e.in(3), zero}, {}, e.out(0));
  return Status::OK();
}

// UnaryQuantized of one op with these attributes.
Status UnaryQuantizedOp(Expansion& e, const std::string& op,
                        const std::vector<AttributeProto>& attrs) {
  return UnaryQuantized(
      e, [&](const std::string& x) { return e.Add(op, {x}, attrs); });
}

Status QLinearSigmoid(Expansion& e) {
  return UnaryQuantizedOp(e, "Sigmoid", {});
}

Status QLinearLeakyRelu(Expansion& e) {
  return UnaryQuantizedOp(
      e, "LeakyRelu", {FloatAttr("alpha", FloatOr(e.node(), "alpha", 0.01f))});
}

// UnaryQuantizedOp of a pool that reads channels first. With channels_last
// = 1 (as ONNX Runtime's NHWC transformer writes), the dequantized input
// is transposed to channels first around it and back; the permutations
// need the input's rank, from its declared shape.
Status QuantizedPool(Expansion& e, const std::string& op,
                     const std::vector<AttributeProto>& attrs) {
  if (IntOr(e.node(), "channels_last", 0) == 0) {
    return UnaryQuantizedOp(e, op, attrs);
  }
  const std::optional<std::vector<int64_t>> dims = e.DeclaredDims(0);
  if (!dims || dims->size() < 3) {
    return UnimplementedError(e.Where() +
                              ": channels_last = 1 needs input 0's declared "
                              "rank (3 or more)");
  }
  const int64_t rank = static_cast<int64_t>(dims->size());
  std::vector<int64_t> to_first = {0, rank - 1}, to_last = {0};
  for (int64_t i = 1; i < rank - 1; ++i) to_first.push_back(i);
  for (int64_t i = 2; i < rank; ++i) to_last.push_back(i);
  to_last.push_back(1);
  return UnaryQuantized(e, [&](const std::string& x) {
    const std::string first =
        e.Add("Transpose", {x}, {IntsAttr("perm", to_first)});
    return e.Add("Transpose", {e.Add(op, {first}, attrs)},
                 {IntsAttr("perm", to_last)});
  });
}

Status QLinearGlobalAveragePool(Expansion& e) {
  return QuantizedPool(e, "GlobalAveragePool", {});
}

Status QLinearAveragePool(Expansion& e) {
  return QuantizedPool(e, "AveragePool", AttrsBut(e.node(), {"channels_last"}));
}

Status QLinearReduceMean(Expansion& e) {
  const AttributeProto* axes = FindAttr(e.node(), "axes");
  if (axes == nullptr) {
    return InvalidArgumentError(e.Where() + ": attribute 'axes' is required");
  }
  const std::vector<int64_t> axis_list(axes->ints().begin(),
                                       axes->ints().end());
  return UnaryQuantized(e, [&](const std::string& x) {
    return e.ReduceMean(x, axis_list, IntOr(e.node(), "keepdims", 1));
  });
}

// Q(DQ(A) op DQ(B)): A, A_scale, A_zero_point, B, B_scale, B_zero_point,
// C_scale, C_zero_point (the zero points optional).
Status BinaryQuantized(Expansion& e, const std::string& op) {
  WEFT_RETURN_IF_ERROR(NeedInputsAt(e, {0, 1, 3, 4, 6}));
  WEFT_ASSIGN_OR_RETURN(const std::string zero, e.OutputZero(7, 0, 2));
  const std::string a = e.Add("DequantizeLinear", {e.in(0), e.in(1), e.in(2)});
  const std::string b = e.Add("DequantizeLinear", {e.in(3), e.in(4), e.in(5)});
  e.Add("QuantizeLinear", {e.Add(op, {a, b}), e.in(6), zero}, {}, e.out(0));
  return Status::OK();
}

Status QLinearAdd(Expansion& e) { return BinaryQuantized(e, "Add"); }
Status QLinearMul(Expansion& e) { return BinaryQuantized(e, "Mul"); }

// Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input.
Status QLinearConcat(Expansion& e) {
  if (e.num_inputs() < 5 || (e.num_inputs() - 2) % 3 != 0) {
    return InvalidArgumentError(
        e.Where() +
        ": takes Y_scale, Y_zero_point and a (tensor, scale, zero point) "
        "triple per input");
  }
  WEFT_RETURN_IF_ERROR(NeedInputs(e, e.num_inputs()));
  std::vector<std::string> parts;
  for (int i = 2; i < e.num_inputs(); i += 3) {
    parts.push_back(
        e.Add("DequantizeLinear", {e.in(i), e.in(i + 1), e.in(i + 2)}));
  }
  e.Add("QuantizeLinear",
        {e.Add("Concat", parts, AttrsBut(e.node(), {})), e.in(0), e.in(1)}, {},
        e.out(0));
  return Status::OK();
}

// alpha (A - a_zero)(B - b_zero) a_scale b_scale + C alpha a_scale b_scale
// (C int32, quantized with scale alpha a_scale b_scale), quantized to
// (y_scale, y_zero_point) when given, else float.
Status QGemm(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 5));
  const bool trans_b = IntOr(e.node(), "transB", 0) != 0;
  const std::string a = e.Add("DequantizeLinear", {e.in(0), e.in(1), e.in(2)});
  // b_scale is per column of B: axis 0 of a transposed B.
  const std::string b = e.Add("DequantizeLinear", {e.in(3), e.in(4), e.in(5)},
                              {IntAttr("axis", trans_b ? 0 : 1)});
  const float alpha = FloatOr(e.node(), "alpha", 1.0f);
  std::vector<std::string> gemm_inputs = {a, b};
  if (e.has_in(6)) {
    const std::string c =
        e.Add("Cast", {e.in(6)}, {IntAttr("to", TensorProto::FLOAT)});
    gemm_inputs.push_back(e.Add("Mul", {c, e.Add("Mul", {e.in(1), e.in(4)})}));
  }
  const bool quantized = e.has_in(7);
  const std::string y =
      e.Add("Gemm", gemm_inputs,
            {FloatAttr("alpha", alpha), FloatAttr("beta", alpha),
             IntAttr("transA", IntOr(e.node(), "transA", 0)),
             IntAttr("transB", trans_b ? 1 : 0)},
            quantized ? "" : e.out(0));
  if (quantized) {
    WEFT_ASSIGN_OR_RETURN(const std::string zero, e.OutputZero(8, 0, 2));
    e.Add("QuantizeLinear", {y, e.in(7), zero}, {}, e.out(0));
  }
  return Status::OK();
}

// Float(MatMulInteger(A, B, a_zero, b_zero)) * a_scale * b_scale [+ bias],
// the form the matmul-integer-fusion pass reads.
std::string IntegerProductToFloat(Expansion& e, const std::string& a,
                                  const std::string& a_scale,
                                  const std::string& a_zero, int b, int b_scale,
                                  int b_zero, int bias) {
  const std::string sums =
      e.Add("MatMulInteger", {a, e.in(b), a_zero, e.in(b_zero)});
  const std::string as_float =
      e.Add("Cast", {sums}, {IntAttr("to", TensorProto::FLOAT)});
  const std::string scale = e.Add("Mul", {a_scale, e.in(b_scale)});
  if (!e.has_in(bias)) return e.Add("Mul", {as_float, scale}, {}, e.out(0));
  return e.Add("Add", {e.Add("Mul", {as_float, scale}), e.in(bias)}, {},
               e.out(0));
}

// A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias.
Status MatMulIntegerToFloat(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 4));
  IntegerProductToFloat(e, e.in(0), e.in(2), e.in(4), 1, 3, 5, 6);
  return Status::OK();
}

// A (float, quantized to uint8 by its range), B, b_scale, b_zero_point,
// bias.
Status DynamicQuantizeMatMul(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 3));
  const std::vector<std::string> a = {e.Fresh("a_quantized"),
                                      e.Fresh("a_scale"), e.Fresh("a_zero")};
  e.AddNode("DynamicQuantizeLinear", {e.in(0)}, a);
  IntegerProductToFloat(e, a[0], a[1], a[2], 1, 2, 3, 4);
  return Status::OK();
}

// ---- Weight-only block quantization (MatMulNBits), as ONNX Runtime's
// MatMul4BitsQuantizer / MatMulNBitsQuantizer write it.

// The `bits`-bit codes packed low first in the bytes of `packed` (any
// shape [..., bytes]) as uint8 values, one a byte: [..., bytes, 8 / bits]
// (the caller reshapes). Code i of a byte is (byte << (8 - (i + 1) bits))
// >> (8 - bits), in uint8 arithmetic, which drops the bits above it.
std::string UnpackCodes(Expansion& e, const std::string& packed, int64_t bits) {
  std::vector<int> left;
  for (int64_t i = 0; i < 8 / bits; ++i) {
    left.push_back(static_cast<int>(8 - (i + 1) * bits));
  }
  const std::string shifted =
      e.Add("BitShift", {e.Unsqueeze(packed, {-1}), e.UInt8s(left)},
            {StringAttr("direction", "LEFT")});
  return e.Add("BitShift",
               {shifted, e.UInt8s({static_cast<int>(8 - bits)}, true)},
               {StringAttr("direction", "RIGHT")});
}

// Y = A B' [+ bias], B' the dequantized [N, K] weight: column n's codes in
// blocks of block_size along K, each (code - zero_point) * scale with the
// block's scale and zero point. Inputs: A [..., K], B uint8 [N, k_blocks,
// block_size * bits / 8] (codes packed low first), scales [N * k_blocks]
// or [N, k_blocks], zero_points (uint8 packed the same way, each row of N
// padded to whole bytes; or unpacked, of the scales' type; 2^(bits - 1)
// when omitted), g_idx (refused), bias [N]. accuracy_level only lets ONNX
// Runtime compute in lower precision; weft computes in float32.
//
// Becomes weft's MatMulNBits op, which keeps B's codes and dequantizes them
// as it multiplies (src/ops/matmul_nbits.cc), with the scales and zero
// points made float32 [N, k_blocks] here.
Status MatMulNBits(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 3));
  const int64_t k = IntOr(e.node(), "K", 0);
  const int64_t n = IntOr(e.node(), "N", 0);
  const int64_t bits = IntOr(e.node(), "bits", 4);
  const int64_t block = IntOr(e.node(), "block_size", 0);
  constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;
  if (k <= 0 || n <= 0 || k > kMaxDim || n > kMaxDim) {
    return InvalidArgumentError(
        e.Where() + ": K and N must be from 1 to 2^31 - 1, got " +
        std::to_string(k) + " and " + std::to_string(n));
  }
  if (bits != 2 && bits != 4 && bits != 8) {
    return UnimplementedError(e.Where() + ": bits = " + std::to_string(bits) +
                              " (weft takes 2, 4 and 8)");
  }
  if (block < 16 || (block & (block - 1)) != 0 || block > (int64_t{1} << 20)) {
    return InvalidArgumentError(
        e.Where() + ": block_size must be a power of two, at least 16, got " +
        std::to_string(block));
  }
  if (e.has_in(4)) {
    return UnimplementedError(e.Where() +
                              ": g_idx (input 4, deprecated by ONNX Runtime) "
                              "is not supported");
  }
  if (e.opset() < 13) {
    return UnimplementedError(e.Where() +
                              ": needs the model's default-domain opset 13 or "
                              "later (it is " +
                              std::to_string(e.opset()) + ")");
  }
  const int64_t blocks = (k + block - 1) / block;
  const int64_t blob = block * bits / 8;
  if (const auto dims = e.DeclaredDims(1);
      dims && *dims != std::vector<int64_t>{n, blocks, blob}) {
    std::string shown;
    for (int64_t d : *dims)
      shown += (shown.empty() ? "" : ", ") + std::to_string(d);
    return InvalidArgumentError(
        e.Where() + ": B must have shape [N, k_blocks, blob_size] = [" +
        std::to_string(n) + ", " + std::to_string(blocks) + ", " +
        std::to_string(blob) + "] for K = " + std::to_string(k) +
        ", block_size = " + std::to_string(block) +
        ", bits = " + std::to_string(bits) + ", got [" + shown + "]");
  }
  const int32_t a_type = e.Declared(0).elem_type;
  if (a_type != 0 && a_type != TensorProto::FLOAT &&
      a_type != TensorProto::FLOAT16) {
    return UnimplementedError(e.Where() +
                              ": A must be float or float16 (weft does not "
                              "take this form in another type)");
  }
  const auto as_float = [&](const std::string& x) {
    return e.Add("Cast", {x}, {IntAttr("to", TensorProto::FLOAT)});
  };
  // Scales and zero points as float32 [N, k_blocks], whatever their form:
  // small, and constant in a quantized model, so they fold at compile.
  const std::string per_block = e.Ints({n, blocks});
  std::string zero;
  if (!e.has_in(3)) {
    zero = e.Add(
        "Expand",
        {e.Scalar(static_cast<float>(int64_t{1} << (bits - 1))), per_block});
  } else if (e.Declared(3).elem_type == TensorProto::UINT8) {
    const std::string padded = e.Add(
        "Reshape",
        {UnpackCodes(e, e.Add("Reshape", {e.in(3), e.Ints({n, -1})}), bits),
         e.Ints({n, -1})});
    zero = as_float(
        e.Add("Slice", {padded, e.Ints({0}), e.Ints({blocks}), e.Ints({1})}));
  } else {
    zero = e.Add("Reshape", {as_float(e.in(3)), per_block});
  }
  std::vector<std::string> inputs = {
      e.in(0), e.in(1), e.Add("Reshape", {as_float(e.in(2)), per_block}), zero};
  if (e.has_in(5)) inputs.push_back(as_float(e.in(5)));
  // weft's MatMulNBits (src/ops/matmul_nbits.cc), which keeps B's codes.
  e.AddNode("MatMulNBits", inputs, {e.out(0)},
            {IntAttr("K", k), IntAttr("N", n), IntAttr("bits", bits),
             IntAttr("block_size", block)},
            kMicrosoftDomain);
  return Status::OK();
}

// ---- BERT's embedding and attention, as the transformer optimizer fuses
// them.

// Word, position [and segment] embeddings summed (output 2 when asked for)
// and layer-normalized over the last axis (output 0, epsilon 1e-12 by
// default); output 1, mask_index, is the number of ones in each row of the
// mask (int32 [batch]), zeros without one. Inputs: input_ids, segment_ids,
// word_embedding, position_embedding, segment_embedding, gamma, beta,
// mask, position_ids (positions 0, 1, ... when omitted).
Status EmbedLayerNormalization(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputsAt(e, {0, 2, 3, 5}));
  const std::string ids = e.in(0);
  auto gather = [&](const std::string& table, const std::string& indices) {
    return e.Add("Gather", {table, indices}, {IntAttr("axis", 0)});
  };
  const std::string positions =
      e.has_in(8) ? e.in(8) : e.Unsqueeze(e.Positions(ids, 1), {0});
  std::string sum =
      e.Add("Add", {gather(e.in(2), ids), gather(e.in(3), positions)});
  if (e.has_in(1) && e.has_in(4)) {
    sum = e.Add("Add", {sum, gather(e.in(4), e.in(1))});
  }
  if (e.wants_out(2)) e.Add("Identity", {sum}, {}, e.out(2));
  e.Add("LayerNormalization", {sum, e.in(5), e.in(6)},
        {IntAttr("axis", -1),
         FloatAttr("epsilon", FloatOr(e.node(), "epsilon", 1e-12f))},
        e.out(0));
  if (e.wants_out(1)) {
    // Without a mask, ids - ids: zeros of the ids' shape.
    const std::string mask = e.has_in(7) ? e.in(7) : e.Add("Sub", {ids, ids});
    e.Add("Cast", {e.ReduceSum(mask, {1}, 0)},
          {IntAttr("to", TensorProto::INT32)}, e.out(1));
    e.DeclareOutput(1, {TensorProto::INT32, std::vector<int64_t>{-1}});
  }
  return Status::OK();
}

// Attention's sizes: the hidden sizes of Q, K and V (qkv_hidden_sizes, or
// the weights' columns in three) and the heads'.
struct AttentionSizes {
  std::vector<int64_t> hidden;  // Q, K, V.
  int64_t heads = 0;
  int64_t head_size = 0;  // Of Q and K.
};

StatusOr<AttentionSizes> SizesOfAttention(Expansion& e) {
  AttentionSizes sizes;
  sizes.heads = IntOr(e.node(), "num_heads", 0);
  if (sizes.heads <= 0) {
    return InvalidArgumentError(e.Where() +
                                ": attribute 'num_heads' must be positive");
  }
  if (const AttributeProto* a = FindAttr(e.node(), "qkv_hidden_sizes")) {
    sizes.hidden.assign(a->ints().begin(), a->ints().end());
  } else {
    const std::optional<std::vector<int64_t>> w = e.DeclaredDims(1);
    if (!w || w->size() != 2 || (*w)[1] <= 0) {
      return UnimplementedError(
          e.Where() +
          ": the weights need a declared shape [input_hidden, 3 * hidden] "
          "(an initializer), or qkv_hidden_sizes");
    }
    if ((*w)[1] % 3 != 0) {
      return InvalidArgumentError(e.Where() + ": the weights' " +
                                  std::to_string((*w)[1]) +
                                  " columns are not three equal parts");
    }
    sizes.hidden.assign(3, (*w)[1] / 3);
  }
  if (sizes.hidden.size() != 3 || sizes.hidden[0] != sizes.hidden[1] ||
      sizes.hidden[0] <= 0 || sizes.hidden[2] <= 0 ||
      sizes.hidden[0] % sizes.heads != 0 ||
      sizes.hidden[2] % sizes.heads != 0) {
    return InvalidArgumentError(e.Where() +
                                ": the Q, K and V hidden sizes must be three "
                                "positive multiples of num_heads, Q's equal "
                                "to K's");
  }
  sizes.head_size = sizes.hidden[0] / sizes.heads;
  return sizes;
}

// Which keys the mask (input `mask`) hides from which queries: true where
// hidden, broadcastable to the scores [batch, heads, sequence, total]. A
// raw mask [batch, total] or [batch, sequence, total] hides its zeros; a
// 1-D index holds the lengths [batch] of right-padded rows, or the end and
// start positions [2 * batch] of left-padded ones.
StatusOr<std::string> HiddenByMask(Expansion& e, int mask, const char* what,
                                   const std::string& keys_of) {
  const std::optional<std::vector<int64_t>> dims = e.DeclaredDims(mask);
  if (!dims || dims->empty() || dims->size() > 3) {
    return UnimplementedError(
        e.Where() + ": " + what +
        " needs a declared shape of rank 1, 2 or 3 (its form depends on the "
        "rank)");
  }
  const std::string index =
      e.Add("Cast", {e.in(mask)}, {IntAttr("to", TensorProto::INT64)});
  if (dims->size() > 1) {
    const std::string hidden = e.Add("Equal", {index, e.Int(0)});
    return dims->size() == 2 ? e.Unsqueeze(hidden, {1, 2})
                             : e.Unsqueeze(hidden, {1});
  }
  // Ends are the first `batch` values, starts the next ones, or 0 when the
  // index holds lengths alone (those of [2 * batch] padded with zeros).
  const std::string batch = e.Unsqueeze(e.Dim(keys_of, 0), {0});
  const std::string ends = e.Add("Slice", {index, e.Ints({0}), batch});
  const std::string padded = e.Add(
      "Concat", {index, e.Add("Sub", {ends, ends})}, {IntAttr("axis", 0)});
  const std::string starts =
      e.Add("Slice", {padded, batch, e.Add("Mul", {batch, e.Ints({2})})});
  const std::string positions = e.Unsqueeze(e.Positions(keys_of, 1), {0});
  const std::string outside = e.Add(
      "Or", {e.Add("Not", {e.Add("Less", {positions, e.Unsqueeze(ends, {1})})}),
             e.Add("Less", {positions, e.Unsqueeze(starts, {1})})});
  return e.Unsqueeze(outside, {1, 2});
}

// What Attend computes with: the heads of Q [batch, heads, sequence,
// size], K transposed [batch, heads, size, total] and V, the scale, the
// node's input indices of the mask and the attention bias (either may be
// omitted in the node), and the tensors whose axis 1 counts the keys and
// the queries.
struct AttentionHeads {
  std::string q, k, v;
  float scale;
  int mask_input;
  const char* mask_name;  // For messages.
  int bias_input;
  std::string keys_of, queries_of;
};

// Softmax(Q K' * scale + mask terms [+ attention bias]) V per head, merged
// back to [batch, sequence, heads * size] into output 0. A key the mask
// hides gets mask_filter_value added to its score (so a query whose keys
// are all hidden attends to them evenly); a key later than the query, when
// unidirectional, is never attended (ONNX Runtime's rule: its score
// becomes the lowest float).
Status Attend(Expansion& e, const AttentionHeads& h) {
  std::string scores =
      e.Add("Mul", {e.Add("MatMul", {h.q, h.k}), e.Scalar(h.scale)});
  if (e.has_in(h.mask_input)) {
    WEFT_ASSIGN_OR_RETURN(
        const std::string hidden,
        HiddenByMask(e, h.mask_input, h.mask_name, h.keys_of));
    const float filter = FloatOr(e.node(), "mask_filter_value", -10000.0f);
    scores = e.Add(
        "Add",
        {scores, e.Add("Where", {hidden, e.Scalar(filter), e.Scalar(0.0f)})});
  }
  if (IntOr(e.node(), "unidirectional", 0) != 0) {
    const std::string later =
        e.Add("Greater", {e.Unsqueeze(e.Positions(h.keys_of, 1), {0}),
                          e.Unsqueeze(e.Positions(h.queries_of, 1), {1})});
    scores =
        e.Add("Where",
              {later, e.Scalar(std::numeric_limits<float>::lowest()), scores});
  }
  if (e.has_in(h.bias_input)) {
    scores = e.Add("Add", {scores, e.in(h.bias_input)});
  }
  const std::string probs = e.Add("Softmax", {scores}, {IntAttr("axis", -1)});
  const std::string context =
      e.Add("Transpose", {e.Add("MatMul", {probs, h.v})},
            {IntsAttr("perm", {0, 2, 1, 3})});
  e.Add("Reshape", {context, e.Ints({0, 0, -1})}, {}, e.out(0));
  return Status::OK();
}

// Multi-head self-attention with merged Q/K/V weights (BERT's, as the
// transformer optimizer fuses it): inputs input, weights, bias, mask_index,
// past (refused), attention_bias, past_sequence_length (refused); output
// 1, present, refused. Softmax(Q K' * scale + mask terms) V per head.
Status Attention(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 2));
  if (e.has_in(4) || e.has_in(6) || e.wants_out(1) ||
      IntOr(e.node(), "do_rotary", 0) != 0 ||
      IntOr(e.node(), "past_present_share_buffer", 0) != 0) {
    return UnimplementedError(e.Where() +
                              ": past and present states and rotary "
                              "embeddings are not supported");
  }
  WEFT_ASSIGN_OR_RETURN(const AttentionSizes sizes, SizesOfAttention(e));
  std::string qkv = e.Add("MatMul", {e.in(0), e.in(1)});
  if (e.has_in(2)) qkv = e.Add("Add", {qkv, e.in(2)});
  const std::vector<std::string> parts = e.Split(qkv, 2, sizes.hidden);
  const std::string q = Heads(e, parts[0], sizes.heads, {0, 2, 1, 3});
  const std::string k = Heads(e, parts[1], sizes.heads, {0, 2, 3, 1});
  const std::string v = Heads(e, parts[2], sizes.heads, {0, 2, 1, 3});
  const float scale = FloatOr(
      e.node(), "scale", 1.0f / std::sqrt(static_cast<float>(sizes.head_size)));
  return Attend(e, {q, k, v, scale, 3, "mask_index", 5, e.in(0), e.in(0)});
}

// Multi-head attention of separate query [batch, sequence, hidden], key
// [batch, total, hidden] and value [batch, total, v_hidden] (each of
// declared rank 3): inputs query, key, value, bias (Q's, K's and V's, the
// hidden sizes from the declared shapes), key_padding_mask (a raw mask
// [batch, total] or lengths [batch]), attention_bias; the packed and
// cached forms, past and present refused.
Status MultiHeadAttention(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 3));
  if (e.has_in(6) || e.has_in(7) || e.has_in(8) || e.has_in(9) ||
      e.wants_out(1) || e.wants_out(2) || e.wants_out(3)) {
    return UnimplementedError(e.Where() +
                              ": past and present keys and values are "
                              "not supported");
  }
  const int64_t heads = IntOr(e.node(), "num_heads", 0);
  std::vector<int64_t> hidden;
  for (int i = 0; i < 3; ++i) {
    const std::optional<std::vector<int64_t>> dims = e.DeclaredDims(i);
    if (!dims || dims->size() != 3 || dims->back() <= 0) {
      return UnimplementedError(
          e.Where() +
          ": query, key and value need declared shapes [batch, sequence, "
          "hidden] (the packed and per-head forms are not supported)");
    }
    hidden.push_back(dims->back());
  }
  if (heads <= 0 || hidden[0] != hidden[1] || hidden[0] % heads != 0 ||
      hidden[2] % heads != 0) {
    return InvalidArgumentError(e.Where() +
                                ": num_heads must be positive and divide the "
                                "hidden sizes, the query's equal to the key's");
  }
  std::vector<std::string> qkv = {e.in(0), e.in(1), e.in(2)};
  if (e.has_in(3)) {
    const std::vector<std::string> bias = e.Split(e.in(3), 0, hidden);
    for (int i = 0; i < 3; ++i) qkv[i] = e.Add("Add", {qkv[i], bias[i]});
  }
  const float scale = FloatOr(e.node(), "scale",
                              1.0f / std::sqrt(static_cast<float>(hidden[0]) /
                                               static_cast<float>(heads)));
  return Attend(e, {Heads(e, qkv[0], heads, {0, 2, 1, 3}),
                    Heads(e, qkv[1], heads, {0, 2, 3, 1}),
                    Heads(e, qkv[2], heads, {0, 2, 1, 3}), scale, 4,
                    "key_padding_mask", 5, e.in(1), e.in(0)});
}

using Expander = Status (*)(Expansion&);

const std::map<std::string, Expander>& Expanders() {
  static const auto* const table = new std::map<std::string, Expander>{
      {"Attention", Attention},
      {"BiasAdd", BiasAdd},
      {"BiasGelu", BiasGelu},
      {"DequantizeLinear", SameAsDefault},
      {"DynamicQuantizeMatMul", DynamicQuantizeMatMul},
      {"EmbedLayerNormalization", EmbedLayerNormalization},
      {"FastGelu", FastGelu},
      {"FusedConv", FusedConv},
      {"FusedGemm", FusedGemm},
      {"FusedMatMul", FusedMatMul},
      {"Gelu", Gelu},
      {"GatherND", SameAsDefault},
      {"GridSample", SameAsDefault},
      {"GroupQueryAttention", GroupQueryAttention},
      {"MatMulIntegerToFloat", MatMulIntegerToFloat},
      {"MatMulNBits", MatMulNBits},
      {"MultiHeadAttention", MultiHeadAttention},
      {"QGemm", QGemm},
      {"QLinearAdd", QLinearAdd},
      {"QLinearAveragePool", QLinearAveragePool},
      {"QLinearConcat", QLinearConcat},
      {"QLinearConv", SameAsDefault},
      {"QLinearGlobalAveragePool", QLinearGlobalAveragePool},
      {"QLinearLeakyRelu", QLinearLeakyRelu},
      {"QLinearMul", QLinearMul},
      {"QLinearReduceMean", QLinearReduceMean},
      {"QLinearSigmoid", QLinearSigmoid},
      {"QuantizeLinear", SameAsDefault},
      {"QuickGelu", QuickGelu},
      {"RotaryEmbedding", MicrosoftRotaryEmbedding},
      {"SkipLayerNormalization", SkipLayerNormalization},
      {"SkipSimplifiedLayerNormalization", SkipSimplifiedLayerNormalization},
      {"Trilu", SameAsDefault},
  };
  return *table;
}

}  // namespace

bool IsContribOpSupported(const std::string& op_type) {
  return Expanders().count(op_type) > 0;
}

std::vector<std::string> SupportedContribOps() {
  std::vector<std::string> names;
  for (const auto& [name, expander] : Expanders()) names.push_back(name);
  return names;
}

Status ExpandContribOp(const onnx::NodeProto& node, int64_t opset,
                       const std::string& prefix, const DeclaredFn& declared,
                       Nodes* out, DeclaredOutputs* declared_outputs) {
  auto it = Expanders().find(node.op_type());
  if (it == Expanders().end()) {
    std::string known;
    for (const std::string& name : SupportedContribOps()) {
      known += (known.empty() ? "" : ", ") + name;
    }
    return UnimplementedError(
        "op '" + node.op_type() + "' of domain '" + kMicrosoftDomain +
        "' is not supported (weft reads these of it: " + known + ")");
  }
  Expansion expansion(node, opset, prefix, declared, out, declared_outputs);
  return it->second(expansion);
}

}  // namespace weft::internal
