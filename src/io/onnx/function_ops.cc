// The expansions of the default-domain ops that ONNX defines as functions
// (function_ops.h). Each follows the op's text in ONNX's operator
// changelog (docs/Changelog.md there); docs/onnx.md says what each becomes
// and which forms are refused.
#include "io/onnx/function_ops.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace weft::internal {
namespace {

using onnx::TensorProto;

constexpr int64_t kSinceOpset = 23;

// The rank the model declares for input i, if it declares a shape.
std::optional<size_t> DeclaredRank(const Expansion& e, int i) {
  const std::optional<std::vector<int64_t>> dims = e.DeclaredDims(i);
  if (!dims) return std::nullopt;
  return dims->size();
}

// Axes [start, end) of x's shape, an int64 vector.
std::string ShapeSlice(Expansion& e, const std::string& x, int64_t start,
                       int64_t end) {
  return e.Add("Slice", {e.Add("Shape", {x}), e.Ints({start}), e.Ints({end})});
}

// ---- RMSNormalization (23).

// x / sqrt(mean(x^2 over axes [axis, rank)) + epsilon) * scale, the first
// stage in float32 (stash_type 1, the default) and cast back to x's type.
Status RMSNormalization(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 2));
  const int64_t axis = IntOr(e.node(), "axis", -1);
  const float epsilon = FloatOr(e.node(), "epsilon", 1e-5f);
  if (IntOr(e.node(), "stash_type", TensorProto::FLOAT) != TensorProto::FLOAT) {
    return UnimplementedError(
        e.Where() +
        ": stash_type other than 1 (float32) is not supported; weft computes "
        "the mean square in float32");
  }
  const std::optional<size_t> rank = DeclaredRank(e, 0);
  if (rank && (axis < -static_cast<int64_t>(*rank) ||
               axis >= static_cast<int64_t>(*rank))) {
    return InvalidArgumentError(e.Where() + ": axis " + std::to_string(axis) +
                                " is out of range for rank " +
                                std::to_string(*rank));
  }
  // The normalised axes: counted from the back when they can be (the
  // reductions then see constant axes), else from the fed rank at run time:
  // a non-negative axis without a declared rank, and one so far from the
  // back that listing it would take more than kMostConstantAxes entries (an
  // undeclared rank and axis -2^62 from a hostile file must not become 2^62
  // constants; a tensor fed there would need that many dimensions).
  constexpr int64_t kMostConstantAxes = 64;
  std::string axes;
  std::optional<std::vector<int64_t>> constant_axes;
  if (axis < 0 || rank) {
    const int64_t first = axis < 0 ? axis : axis - static_cast<int64_t>(*rank);
    if (first >= -kMostConstantAxes) {
      std::vector<int64_t> back;
      for (int64_t a = first; a < 0; ++a) back.push_back(a);
      constant_axes = std::move(back);
    }
  }
  // Before opset 18 ReduceMean takes its axes as an attribute, a constant
  // (SimplifiedLayerNormalization is read at any opset).
  if (e.opset() < 18 && !constant_axes) {
    return UnimplementedError(
        e.Where() + ": at opset " + std::to_string(e.opset()) + ", axis " +
        std::to_string(axis) +
        " needs the input's declared rank (the reduction's axes must be "
        "constant before opset 18)");
  }
  if (constant_axes && e.opset() >= 18) {
    axes = e.Ints(*constant_axes);
  } else if (!constant_axes) {
    const std::string fed_rank = e.Add("Size", {e.Add("Shape", {e.in(0)})});
    const std::string start =
        axis < 0 ? e.Add("Add", {fed_rank, e.Int(axis)}) : e.Int(axis);
    axes = e.Add("Range", {start, fed_rank, e.Int(1)});
  }
  const int32_t type = e.Declared(0).elem_type;
  const bool cast = type != 0 && type != TensorProto::FLOAT;
  std::string x = e.in(0);
  if (cast) x = e.Add("Cast", {x}, {IntAttr("to", TensorProto::FLOAT)});
  const std::string square = e.Add("Mul", {x, x});
  const std::string mean_square =
      e.opset() >= 18
          ? e.Add("ReduceMean", {square, axes}, {IntAttr("keepdims", 1)})
          : e.ReduceMean(square, *constant_axes, 1);
  const std::string rms =
      e.Add("Sqrt", {e.Add("Add", {mean_square, e.Scalar(epsilon)})});
  std::string normalized = e.Add("Div", {x, rms});
  if (cast) normalized = e.Add("Cast", {normalized}, {IntAttr("to", type)});
  e.Add("Mul", {normalized, e.in(1)}, {}, e.out(0));
  // ONNX Runtime's SimplifiedLayerNormalization has a second output, the
  // reciprocal of the root mean square (float32, the axes kept).
  if (e.wants_out(1)) e.Add("Reciprocal", {rms}, {}, e.out(1));
  return Status::OK();
}

// ---- RotaryEmbedding (23).

// Rotates the first rotary_embedding_dim (default: all) features of each
// head by the position's angle: pairs (x1, x2) are the two halves, or
// neighbours when interleaved; (x1 cos - x2 sin, x1 sin + x2 cos). X is
// [batch, heads, sequence, size], or [batch, sequence, heads * size] with
// num_heads; the caches are [batch, sequence, dim / 2], or [positions,
// dim / 2] read at position_ids.
Status RotaryEmbedding(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 3));
  const int64_t heads = IntOr(e.node(), "num_heads", 0);
  const int64_t rotary_dim = IntOr(e.node(), "rotary_embedding_dim", 0);
  const bool interleaved = IntOr(e.node(), "interleaved", 0) != 0;
  const std::optional<size_t> rank = DeclaredRank(e, 0);
  if (rank && *rank != 3 && *rank != 4) {
    return InvalidArgumentError(e.Where() + ": X must be of rank 3 or 4, not " +
                                std::to_string(*rank));
  }
  // Without a declared rank, num_heads says 3-D (it must come with one).
  const bool three_d = rank ? *rank == 3 : heads > 0;
  if (three_d && heads <= 0) {
    return InvalidArgumentError(
        e.Where() + ": a 3-D X needs a positive num_heads attribute");
  }
  if (rotary_dim < 0 || rotary_dim % 2 != 0) {
    return InvalidArgumentError(e.Where() +
                                ": rotary_embedding_dim must be even and not "
                                "negative, not " +
                                std::to_string(rotary_dim));
  }
  std::string x = e.in(0);
  if (three_d) x = e.Add("Reshape", {x, e.Ints({0, 0, heads, -1})});
  // x is [batch, sequence, heads, size] (3-D) or [batch, heads, sequence,
  // size]; the caches get a heads axis of 1 to match.
  const std::vector<int64_t> heads_axis = {three_d ? 2 : 1};
  std::string cos = e.in(1), sin = e.in(2);
  if (e.has_in(3)) {
    cos = e.Add("Gather", {cos, e.in(3)}, {IntAttr("axis", 0)});
    sin = e.Add("Gather", {sin, e.in(3)}, {IntAttr("axis", 0)});
  }
  cos = e.Unsqueeze(cos, heads_axis);
  sin = e.Unsqueeze(sin, heads_axis);
  std::string rotated = x, passed;
  if (rotary_dim > 0) {
    rotated =
        e.Add("Slice", {x, e.Ints({0}), e.Ints({rotary_dim}), e.Ints({-1})});
    passed = e.Add(
        "Slice", {x, e.Ints({rotary_dim}),
                  e.Ints({std::numeric_limits<int64_t>::max()}), e.Ints({-1})});
  }
  // Interleaved pairs become a last axis of 2, halves stay on the last axis.
  std::string pairs = rotated;
  if (interleaved) {
    pairs = e.Add("Reshape", {rotated, e.Ints({0, 0, 0, -1, 2})});
    cos = e.Unsqueeze(cos, {-1});
    sin = e.Unsqueeze(sin, {-1});
  }
  const std::string x1 = e.Fresh("Split"), x2 = e.Fresh("Split");
  e.AddNode("Split", {pairs}, {x1, x2},
            {IntAttr("axis", -1), IntAttr("num_outputs", 2)});
  const std::string real =
      e.Add("Sub", {e.Add("Mul", {cos, x1}), e.Add("Mul", {sin, x2})});
  const std::string imaginary =
      e.Add("Add", {e.Add("Mul", {sin, x1}), e.Add("Mul", {cos, x2})});
  std::string y = e.Add("Concat", {real, imaginary}, {IntAttr("axis", -1)});
  if (interleaved) y = e.Add("Reshape", {y, e.Add("Shape", {rotated})});
  if (!passed.empty()) {
    y = e.Add("Concat", {y, passed}, {IntAttr("axis", -1)});
  }
  // The last node writes output 0.
  if (three_d) {
    e.Add("Reshape", {y, e.Add("Shape", {e.in(0)})}, {}, e.out(0));
  } else {
    e.Add("Identity", {y}, {}, e.out(0));
  }
  return Status::OK();
}

// ---- Attention (23).

// Attention's inputs: Q, K, V, attn_mask, past_key, past_value.
constexpr int kMask = 3, kPastKey = 4, kPastValue = 5;

// -inf where `hidden`, else 0: an attention bias.
std::string Bias(Expansion& e, const std::string& hidden) {
  return e.Add("Where",
               {hidden, e.Scalar(-std::numeric_limits<float>::infinity()),
                e.Scalar(0.0f)});
}

// The head size of Q, when the model declares it.
std::optional<int64_t> DeclaredHeadSize(const Expansion& e, bool three_d,
                                        int64_t q_heads) {
  if (!three_d) return e.DeclaredDim(0, 3);
  const std::optional<int64_t> hidden = e.DeclaredDim(0, 2);
  if (!hidden || *hidden % q_heads != 0) return std::nullopt;
  return *hidden / q_heads;
}

// Whether Q's heads are K's (multi-head attention, not grouped-query).
bool SameHeads(const Expansion& e, bool three_d, int64_t q_heads,
               int64_t kv_heads) {
  if (three_d) return q_heads == kv_heads;
  const std::optional<int64_t> q = e.DeclaredDim(0, 1);
  const std::optional<int64_t> k = e.DeclaredDim(1, 1);
  return q && k && *q == *k;
}

// x [batch, heads, rows, n] times y [batch, kv_heads, n, m] for grouped
// heads (heads a multiple of kv_heads): x as [batch, kv_heads, group, rows,
// n] against y with a head axis of 1, which MatMul broadcasts without
// copying y; the product back as [batch, heads, rows, m], with batch,
// heads and rows those of `q_like`.
std::string GroupedProduct(Expansion& e, const std::string& x,
                           const std::string& y,
                           const std::string& kv_head_count,
                           const std::string& q_like) {
  const std::string grouped_x =
      e.Add("Reshape", {x, e.Add("Concat",
                                 {ShapeSlice(e, x, 0, 1), kv_head_count,
                                  e.Ints({-1}), ShapeSlice(e, x, 2, 4)},
                                 {IntAttr("axis", 0)})});
  const std::string grouped = e.Add("MatMul", {grouped_x, e.Unsqueeze(y, {2})});
  return e.Add(
      "Reshape",
      {grouped,
       e.Add("Concat", {ShapeSlice(e, q_like, 0, 3), ShapeSlice(e, y, 3, 4)},
             {IntAttr("axis", 0)})});
}

Status CheckAttentionAttributes(Expansion& e) {
  const int64_t mode = IntOr(e.node(), "qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) {
    return InvalidArgumentError(e.Where() + ": qk_matmul_output_mode " +
                                std::to_string(mode) + " is not 0 to 3");
  }
  if (const onnx::AttributeProto* a = FindAttr(e.node(), "softmax_precision")) {
    const int32_t type = e.Declared(0).elem_type;
    if (a->i() != (type != 0 ? type : TensorProto::FLOAT)) {
      return UnimplementedError(
          e.Where() + ": softmax_precision " + std::to_string(a->i()) +
          " differs from Q's type; weft computes the softmax in Q's type");
    }
  }
  if (e.has_in(kPastKey) != e.has_in(kPastValue)) {
    return InvalidArgumentError(
        e.Where() + ": past_key and past_value must be given together");
  }
  if (e.wants_out(1) != e.wants_out(2)) {
    return InvalidArgumentError(
        e.Where() + ": present_key and present_value must be asked together");
  }
  if (e.has_in(kMask)) {
    const int32_t type = e.Declared(kMask).elem_type;
    if (type != TensorProto::BOOL && type != TensorProto::FLOAT &&
        (type == 0 || type != e.Declared(0).elem_type)) {
      return UnimplementedError(
          e.Where() +
          ": attn_mask needs a declared type, bool or Q's float type" +
          (type == 0 ? " (it has none)" : ""));
    }
  }
  return Status::OK();
}

// Q [batch, heads, sequence, size], K' [batch, kv_heads, size, total] and
// V [batch, kv_heads, total, v_size], the past prepended to K and V (and
// written as present_key and present_value when asked). K goes straight to
// K' where it can (the chain attention-fusion reads), else it is
// transposed after the past is prepended.
struct AttentionOperands {
  std::string q, k_transposed, v;
};

AttentionOperands PrepareOperands(Expansion& e, bool three_d, int64_t q_heads,
                                  int64_t kv_heads) {
  const bool past = e.has_in(kPastKey);
  AttentionOperands o;
  o.q = three_d ? Heads(e, e.in(0), q_heads, {0, 2, 1, 3}) : e.in(0);
  std::string k;
  if (three_d && !past && !e.wants_out(1)) {
    o.k_transposed = Heads(e, e.in(1), kv_heads, {0, 2, 3, 1});
  } else {
    k = three_d ? Heads(e, e.in(1), kv_heads, {0, 2, 1, 3}) : e.in(1);
  }
  o.v = three_d ? Heads(e, e.in(2), kv_heads, {0, 2, 1, 3}) : e.in(2);
  if (past) {
    k = e.Add("Concat", {e.in(kPastKey), k}, {IntAttr("axis", 2)});
    o.v = e.Add("Concat", {e.in(kPastValue), o.v}, {IntAttr("axis", 2)});
  }
  if (e.wants_out(1)) {
    e.Add("Identity", {k}, {}, e.out(1));
    e.Add("Identity", {o.v}, {}, e.out(2));
  }
  if (o.k_transposed.empty()) {
    o.k_transposed = e.Add("Transpose", {k}, {IntsAttr("perm", {0, 1, 3, 2})});
  }
  return o;
}

// attn_mask as a bias on the scores: a boolean mask is true where a key
// takes part (-inf elsewhere); a float mask is added as it is.
std::string MaskBias(Expansion& e) {
  if (e.Declared(kMask).elem_type != TensorProto::BOOL) return e.in(kMask);
  return e.Add("Where", {e.in(kMask), e.Scalar(0.0f),
                         e.Scalar(-std::numeric_limits<float>::infinity())});
}

// Whether each row of `biased` (last axis) is -inf throughout: [..., 1].
std::string HiddenRows(Expansion& e, const std::string& biased) {
  const std::string row_max =
      e.Add("ReduceMax", {biased, e.Ints({-1})}, {IntAttr("keepdims", 1)});
  return e.Add("Equal",
               {row_max, e.Scalar(-std::numeric_limits<float>::infinity())});
}

// The query rows the mask's bias hides wholly, as [batch, heads, sequence,
// 1] (the mask may broadcast along any of them); q gives the sizes.
std::string RowsHiddenByMask(Expansion& e, const std::string& mask_bias,
                             const std::string& q) {
  return e.Add("Expand", {HiddenRows(e, mask_bias),
                          e.Add("Concat", {ShapeSlice(e, q, 0, 3), e.Ints({1})},
                                {IntAttr("axis", 0)})});
}

// -inf where key j is later than query i may see: j > i + the past's
// length (is_causal's bottom-right alignment).
std::string CausalBias(Expansion& e, const std::string& scores) {
  std::string first_query = e.Positions(scores, 2);
  if (e.has_in(kPastKey)) {
    first_query = e.Add("Add", {first_query, e.Dim(e.in(kPastKey), 2)});
  }
  return Bias(e, e.Add("Greater", {e.Unsqueeze(e.Positions(scores, 3), {0}),
                                   e.Unsqueeze(first_query, {1})}));
}

// Y from the context [batch, heads, sequence, v_size]: merged to [batch,
// sequence, heads * v_size] for 3-D inputs, and zero in the rows
// `hidden_rows` ([batch, heads, sequence, 1], or "" for none) names.
void WriteAttentionOutput(Expansion& e, const std::string& context,
                          bool three_d, const std::string& hidden_rows) {
  if (!three_d) {
    if (hidden_rows.empty()) {
      e.Add("Identity", {context}, {}, e.out(0));
    } else {
      e.Add("Where", {hidden_rows, e.Scalar(0.0f), context}, {}, e.out(0));
    }
    return;
  }
  const std::string merged =
      e.Add("Reshape",
            {e.Add("Transpose", {context}, {IntsAttr("perm", {0, 2, 1, 3})}),
             e.Ints({0, 0, -1})},
            {}, hidden_rows.empty() ? e.out(0) : "");
  if (hidden_rows.empty()) return;
  // The merged rows as [batch, sequence, heads, v_size] against the hidden
  // rows as [batch, sequence, heads, 1].
  const std::string per_head =
      e.Add("Reshape",
            {merged, e.Add("Concat",
                           {ShapeSlice(e, hidden_rows, 0, 1),
                            ShapeSlice(e, hidden_rows, 2, 3),
                            ShapeSlice(e, hidden_rows, 1, 2), e.Ints({-1})},
                           {IntAttr("axis", 0)})});
  const std::string zeroed = e.Add(
      "Where",
      {e.Add("Transpose", {hidden_rows}, {IntsAttr("perm", {0, 2, 1, 3})}),
       e.Scalar(0.0f), per_head});
  e.Add("Reshape", {zeroed, e.Add("Shape", {merged})}, {}, e.out(0));
}

// Softmax(Q K' * scale [softcapped] + attn_mask bias + causal bias) V per
// head, for multi-head, grouped-query and multi-query attention, self or
// cross, with past keys and values; 3-D inputs [batch, sequence, heads *
// size] need q_num_heads and kv_num_heads. ONNX scales Q and K by
// sqrt(scale) each; weft scales their product (the same value, rounded
// once). A query row that every key's bias hides gives zeros, as the op's
// text says.
Status Attention(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 3));
  WEFT_RETURN_IF_ERROR(CheckAttentionAttributes(e));
  const int64_t q_heads = IntOr(e.node(), "q_num_heads", 0);
  const int64_t kv_heads = IntOr(e.node(), "kv_num_heads", 0);
  const std::optional<size_t> rank = DeclaredRank(e, 0);
  if (rank && *rank != 3 && *rank != 4) {
    return InvalidArgumentError(e.Where() + ": Q must be of rank 3 or 4, not " +
                                std::to_string(*rank));
  }
  const bool three_d = rank ? *rank == 3 : q_heads > 0;
  if (three_d && (q_heads <= 0 || kv_heads <= 0 || q_heads % kv_heads != 0)) {
    return InvalidArgumentError(
        e.Where() +
        ": 3-D Q, K and V need positive q_num_heads and kv_num_heads, the "
        "first a multiple of the second");
  }
  const bool same_heads = SameHeads(e, three_d, q_heads, kv_heads);
  const AttentionOperands operands =
      PrepareOperands(e, three_d, q_heads, kv_heads);
  const std::string& q = operands.q;
  const std::string& k_transposed = operands.k_transposed;
  const std::string& v = operands.v;

  // Q K': grouped-query heads as [batch, kv_heads, group, ...] against K's
  // [batch, kv_heads, 1, ...], which MatMul broadcasts without copying K.
  std::string scores;
  std::string kv_head_count;  // [kv_heads] for the grouped form.
  if (same_heads) {
    scores = e.Add("MatMul", {q, k_transposed});
  } else {
    kv_head_count = ShapeSlice(e, k_transposed, 1, 2);
    scores = GroupedProduct(e, q, k_transposed, kv_head_count, q);
  }
  if (const onnx::AttributeProto* a = FindAttr(e.node(), "scale")) {
    scores = e.Add("Mul", {scores, e.Scalar(a->f())});
  } else if (const std::optional<int64_t> head_size =
                 DeclaredHeadSize(e, three_d, q_heads)) {
    scores = e.Add(
        "Mul",
        {scores, e.Scalar(1.0f / std::sqrt(static_cast<float>(*head_size)))});
  } else {
    const std::string fed_size = e.Add("Cast", {ShapeSlice(e, q, 3, 4)},
                                       {IntAttr("to", TensorProto::FLOAT)});
    scores = e.Add("Div", {scores, e.Add("Sqrt", {fed_size})});
  }
  const int64_t mode = IntOr(e.node(), "qk_matmul_output_mode", 0);
  auto maybe_output = [&](int64_t at_mode, const std::string& value) {
    if (mode == at_mode && e.wants_out(3)) {
      e.Add("Identity", {value}, {}, e.out(3));
    }
  };
  maybe_output(0, scores);
  const float softcap = FloatOr(e.node(), "softcap", 0.0f);
  if (softcap != 0.0f) {
    scores = e.Add("Mul",
                   {e.Add("Tanh", {e.Add("Div", {scores, e.Scalar(softcap)})}),
                    e.Scalar(softcap)});
  }
  maybe_output(1, scores);
  // A query row that every key's bias hides gives zeros. Where the mask
  // alone can hide a row (no causal bias, no softmax output asked), the
  // rows are found from the mask and zeroed in Y, which keeps the chain
  // attention-fusion fuses; else the probabilities' rows are.
  const bool causal = IntOr(e.node(), "is_causal", 0) != 0;
  const bool guard_probabilities =
      e.has_in(kMask) && (causal || (mode == 3 && e.wants_out(3)));
  std::string mask_bias, hidden_rows;
  if (e.has_in(kMask)) {
    mask_bias = MaskBias(e);
    scores = e.Add("Add", {scores, mask_bias});
    if (!guard_probabilities) {
      hidden_rows = RowsHiddenByMask(e, mask_bias, q);
    }
  }
  if (causal) scores = e.Add("Add", {scores, CausalBias(e, scores)});
  maybe_output(2, scores);
  std::string probabilities = e.Add("Softmax", {scores}, {IntAttr("axis", -1)});
  if (guard_probabilities) {
    probabilities =
        e.Add("Where", {HiddenRows(e, scores), e.Scalar(0.0f), probabilities});
  }
  maybe_output(3, probabilities);

  std::string context;
  if (same_heads) {
    context = e.Add("MatMul", {probabilities, v});
  } else {
    context = GroupedProduct(e, probabilities, v, kv_head_count, q);
  }
  WriteAttentionOutput(e, context, three_d, hidden_rows);
  return Status::OK();
}

using Expander = Status (*)(Expansion&);

// Each op's expansion and the attributes its text defines: any other is
// refused by name, never ignored.
struct FunctionOp {
  Expander expand;
  std::set<std::string> attributes;
  int64_t since = kSinceOpset;  // The first opset that defines it.
  int max_outputs = 1;
};

const std::map<std::string, FunctionOp>& Expanders() {
  static const auto* const table = new std::map<std::string, FunctionOp>{
      {"Attention",
       {Attention,
        {"is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode",
         "scale", "softcap", "softmax_precision"},
        kSinceOpset,
        4}},
      {"RMSNormalization",
       {RMSNormalization, {"axis", "epsilon", "stash_type"}}},
      // ONNX Runtime's RMS normalization, which it registers in the
      // default domain from opset 1 and its transformer optimizer writes
      // (T5, Llama, ...): RMSNormalization's meaning, and inv_std_var.
      {"SimplifiedLayerNormalization",
       {RMSNormalization, {"axis", "epsilon", "stash_type"}, 1, 2}},
      {"RotaryEmbedding",
       {RotaryEmbedding, {"interleaved", "num_heads", "rotary_embedding_dim"}}},
  };
  return *table;
}

}  // namespace

bool IsFunctionOpExpanded(const std::string& op_type) {
  return Expanders().count(op_type) > 0;
}

Status ExpandFunctionOp(const onnx::NodeProto& node, int64_t opset,
                        const std::string& prefix, const DeclaredFn& declared,
                        Nodes* out, DeclaredOutputs* declared_outputs) {
  auto it = Expanders().find(node.op_type());
  WEFT_CHECK(it != Expanders().end(), "not an expanded default-domain op");
  Expansion expansion(node, opset, prefix, declared, out, declared_outputs);
  if (opset < it->second.since) {
    return InvalidArgumentError(expansion.Where() + " is defined from opset " +
                                std::to_string(it->second.since) +
                                "; the model imports opset " +
                                std::to_string(opset));
  }
  if (node.output_size() > it->second.max_outputs) {
    return InvalidArgumentError(
        expansion.Where() + " has " + std::to_string(node.output_size()) +
        " outputs; it has at most " + std::to_string(it->second.max_outputs));
  }
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (it->second.attributes.count(a.name()) == 0) {
      return UnimplementedError(expansion.Where() + ": attribute '" + a.name() +
                                "' is not supported");
    }
  }
  return it->second.expand(expansion);
}

}  // namespace weft::internal
