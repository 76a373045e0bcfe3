// GroupQueryAttention and RotaryEmbedding of com.microsoft, as ONNX
// Runtime's contrib operator schemas define them and its CPU kernels
// compute them (tests/onnx/contrib_ops checks each against ONNX Runtime
// 1.30).
#include "io/onnx/decoder_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace weft::internal {
namespace {

using onnx::TensorProto;

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

// x[..., begin:end] along the last axis.
std::string LastAxis(Expansion& e, const std::string& x, int64_t begin,
                     int64_t end) {
  return e.Add("Slice", {x, e.Ints({begin}), e.Ints({end}), e.Ints({-1})});
}

// x (rank `rank`, its last axis a head's `size` features, 0 when not known
// here) with its first `rotary` features rotated by the angles whose
// cosines and sines are `cos`
// and `sin` (broadcastable to x's leading axes, last axis rotary / 2): each
// pair (x1, x2), the two halves of the rotated features or, when
// `interleaved`, neighbours, becomes (x1 cos - x2 sin, x2 cos + x1 sin), as
// ONNX Runtime's rotary kernel computes it.
std::string Rotated(Expansion& e, const std::string& x, int64_t rank,
                    int64_t size, int64_t rotary, std::string cos,
                    std::string sin, bool interleaved) {
  const std::string rotated = rotary < size ? LastAxis(e, x, 0, rotary) : x;
  std::string x1, x2;
  if (interleaved) {
    // [..., rotary / 2, 2]: zeros keep the leading axes.
    std::vector<int64_t> pairs_shape;
    for (int64_t axis = 0; axis + 1 < rank; ++axis) pairs_shape.push_back(0);
    pairs_shape.push_back(-1);
    pairs_shape.push_back(2);
    const std::string pairs = e.Add("Reshape", {rotated, e.Ints(pairs_shape)});
    x1 = LastAxis(e, pairs, 0, 1);
    x2 = LastAxis(e, pairs, 1, 2);
    cos = e.Unsqueeze(cos, {-1});
    sin = e.Unsqueeze(sin, {-1});
  } else {
    x1 = LastAxis(e, rotated, 0, rotary / 2);
    x2 = LastAxis(e, rotated, rotary / 2, rotary);
  }
  const std::string real =
      e.Add("Sub", {e.Add("Mul", {x1, cos}), e.Add("Mul", {x2, sin})});
  const std::string imaginary =
      e.Add("Add", {e.Add("Mul", {x2, cos}), e.Add("Mul", {x1, sin})});
  std::string y = e.Add("Concat", {real, imaginary}, {IntAttr("axis", -1)});
  if (interleaved) {  // [..., rotary / 2, 2] back to [..., rotary].
    std::vector<int64_t> features(static_cast<size_t>(rank - 1), 0);
    features.push_back(-1);
    y = e.Add("Reshape", {y, e.Ints(features)});
  }
  if (rotary == size) return y;  // Else the rest, which may be empty.
  return e.Add("Concat", {y, LastAxis(e, x, rotary, kEnd)},
               {IntAttr("axis", -1)});
}

// The rotary dimension the caches give (twice their dim 1), checked
// against the head size when it is known (not 0).
StatusOr<int64_t> CacheRotaryDim(const Expansion& e, int cos_input,
                                 int64_t head_size) {
  const std::optional<int64_t> half = e.DeclaredDim(cos_input, 1);
  if (!half) {
    return UnimplementedError(
        e.Where() +
        ": cos_cache needs a declared shape [positions, rotary_dim / 2] (an "
        "initializer)");
  }
  if (*half <= 0 || (head_size > 0 && 2 * *half > head_size)) {
    return InvalidArgumentError(e.Where() + ": cos_cache's dim 1 is " +
                                std::to_string(*half) +
                                "; it must be positive and at most half the "
                                "head size (" +
                                std::to_string(head_size) + ")");
  }
  return 2 * *half;
}

// GroupQueryAttention's sizes, from its attributes and query's declared
// shape.
struct GroupedSizes {
  int64_t heads = 0, kv_heads = 0;
  int64_t head_size = 0;  // 0: not declared (then worked out at run time)
  bool packed = false;    // query holds Q, K and V
  int64_t parts() const { return packed ? heads + 2 * kv_heads : heads; }
};

StatusOr<GroupedSizes> SizesOfGroupedAttention(const Expansion& e) {
  GroupedSizes s;
  s.heads = IntOr(e.node(), "num_heads", 0);
  s.kv_heads = IntOr(e.node(), "kv_num_heads", 0);
  if (s.heads <= 0 || s.kv_heads <= 0 || s.heads % s.kv_heads != 0) {
    return InvalidArgumentError(
        e.Where() +
        ": num_heads and kv_num_heads must be positive, num_heads a multiple "
        "of kv_num_heads");
  }
  s.packed = !e.has_in(1);
  if (s.packed == e.has_in(2)) {
    return InvalidArgumentError(
        e.Where() +
        ": key and value must be both given, or both omitted (query then "
        "holds Q, K and V)");
  }
  const std::optional<int64_t> hidden = e.DeclaredDim(0, 2);
  if (!hidden) return s;
  if (*hidden % s.parts() != 0) {
    return InvalidArgumentError(
        e.Where() + ": query's hidden size " + std::to_string(*hidden) +
        " is not a whole number of heads (" + std::to_string(s.parts()) + ")");
  }
  s.head_size = *hidden / s.parts();
  return s;
}

// What GroupQueryAttention reads that weft does not: refused by name.
Status RefuseUnsupported(const Expansion& e) {
  static const char* const kInputs[] = {
      "position_ids", "attention_bias", "head_sink",    "k_scale",
      "v_scale",      "q_norm_weight",  "k_norm_weight"};
  for (int i = 9; i < e.num_inputs(); ++i) {
    if (e.has_in(i)) {
      return UnimplementedError(e.Where() + ": input " + std::to_string(i) +
                                " (" + kInputs[std::min(i - 9, 6)] +
                                ") is not supported");
    }
  }
  if (e.wants_out(3) || IntOr(e.node(), "qk_output", 0) != 0) {
    return UnimplementedError(e.Where() +
                              ": output_qk (qk_output) is not supported");
  }
  for (const char* quant : {"k_quant_type", "v_quant_type"}) {
    const onnx::AttributeProto* a = FindAttr(e.node(), quant);
    if (a != nullptr && a->s() != "NONE") {
      return UnimplementedError(e.Where() + ": " + quant + " '" + a->s() +
                                "' (a quantized cache) is not supported");
    }
  }
  if (IntOr(e.node(), "sliding_window_cache", 0) != 0 ||
      IntOr(e.node(), "causal", 1) != 1) {
    return UnimplementedError(
        e.Where() + ": sliding_window_cache and causal = 0 are not supported");
  }
  const int32_t type = e.Declared(0).elem_type;
  if (type != 0 && type != TensorProto::FLOAT) {
    return UnimplementedError(e.Where() + ": query of ONNX type " +
                              std::to_string(type) +
                              " (weft reads float32 here)");
  }
  return Status::OK();
}

// The present cache [batch, kv_heads, T, size] (T = max(total sequence
// length, the past cache's length)) as ONNX Runtime's kernel writes it
// without a shared buffer: row t of batch b is past[b, :, t] for t below
// past_b, new_rows[b, :, t - past_b] for the next `sequence` rows, zero
// after. Both caches gather the same rows: those of the past's and the new
// rows' heads laid end to end, one row of zeros after them, `rows`
// [batch, kv_heads, T] saying which (a gather of whole rows of `size`
// floats, each a copy). Flatten and Pad keep the size in the shapes weft
// infers before anything runs, so the attention's output shape is known
// there and the next layer's shapes follow (a Reshape to a computed shape
// would leave them open until folded, a layer per round of folding).
std::string Present(Expansion& e, const std::string& rows,
                    const std::string& past, const std::string& new_rows,
                    const std::string& output) {
  std::vector<std::string> parts;
  if (!past.empty()) {
    parts.push_back(e.Add("Flatten", {past}, {IntAttr("axis", 3)}));
  }
  const std::string flat_new =
      e.Add("Flatten", {new_rows}, {IntAttr("axis", 3)});
  parts.push_back(flat_new);
  // [1, size] zeros: none of the new rows, padded with one.
  parts.push_back(e.Add(
      "Pad", {e.Add("Slice", {flat_new, e.Ints({0}), e.Ints({0}), e.Ints({0})}),
              e.Ints({0, 0, 1, 0})}));
  return e.Add("Gather", {e.Add("Concat", parts, {IntAttr("axis", 0)}), rows},
               {IntAttr("axis", 0)}, output);
}

// Where a GroupQueryAttention's new tokens go, per batch row b.
struct NewTokens {
  std::string sequence;      // the new tokens' count, an int64 scalar
  std::string total_length;  // total_sequence_length, an int64 scalar
  std::string past_rows;     // past_b, [batch, 1]
  std::string positions;     // past_b + s, [batch, sequence]
};

// total_b = seqlens_k[b] + 1; past_b = total_b - sequence, or 0 for a first
// prompt (total_sequence_length = sequence). A past_b outside [0, the past
// cache's length] (seqlens_k that the cache and the new tokens do not hold)
// stops the Run with an error that names seqlens_k, before anything indexes
// with it.
NewTokens PlaceNewTokens(Expansion& e, const std::string& past_length) {
  NewTokens n;
  n.sequence = e.Dim(e.in(0), 1);
  const std::string total = e.Add(
      "Add", {e.Add("Cast", {e.in(5)}, {IntAttr("to", TensorProto::INT64)}),
              e.Int(1)});
  n.total_length = e.Add("Cast", {e.Add("Reshape", {e.in(6), e.Ints({})})},
                         {IntAttr("to", TensorProto::INT64)});
  const std::string past_rows =
      e.Add("Where", {e.Add("Equal", {n.total_length, n.sequence}), e.Int(0),
                      e.Add("Sub", {total, n.sequence})});
  const std::string& name = e.node().name();
  const std::string what =
      e.Where() +
      (name.empty() ? " (output '" + e.node().output(0) + "')"
                    : " '" + name + "'") +
      ": the cached tokens that seqlens_k says each batch row has "
      "(seqlens_k + 1 - the new tokens) must lie between 0 and past_key's "
      "length (dim 2)";
  const std::string checked = e.Fresh("CheckInRange");
  e.AddNode("CheckInRange", {past_rows, e.Int(0), past_length}, {checked},
            {StringAttr("what", what)}, "com.microsoft");
  n.past_rows = e.Unsqueeze(checked, {1});
  n.positions = e.Add(
      "Add",
      {n.past_rows,
       e.Unsqueeze(e.Add("Range", {e.Int(0), n.sequence, e.Int(1)}), {0})});
  return n;
}

// Which row of [the past's rows; the new rows; a zero row] each row of the
// present caches [batch, kv_heads, T] is (see Present), T the length of
// `t` ([1, T]).
std::string PresentRowIndex(Expansion& e, int64_t kv_heads, const NewTokens& n,
                            const std::string& past_length,
                            const std::string& t) {
  const std::string batch_heads =
      e.Add("Mul", {e.Dim(e.in(0), 0), e.Int(kv_heads)});
  const std::string heads = e.Add(
      "Reshape", {e.Add("Range", {e.Int(0), batch_heads, e.Int(1)}),
                  e.Ints({-1, kv_heads, 1})});  // b * kv + head: [b, kv, 1]
  const std::string first = e.Unsqueeze(n.past_rows, {1});  // [b, 1, 1]
  const std::string row = e.Unsqueeze(t, {0});              // [1, 1, T]
  const std::string past_total = e.Add("Mul", {batch_heads, past_length});
  const std::string from_past =
      e.Add("Add", {e.Add("Mul", {heads, past_length}), row});
  const std::string from_new = e.Add(
      "Add", {e.Add("Add", {past_total, e.Add("Mul", {heads, n.sequence})}),
              e.Add("Sub", {row, first})});
  const std::string zero_row =
      e.Add("Add", {past_total, e.Add("Mul", {batch_heads, n.sequence})});
  return e.Add(
      "Where",
      {e.Add("Less", {row, first}), from_past,
       e.Add("Where", {e.Add("Less", {row, e.Add("Add", {first, n.sequence})}),
                       from_new, zero_row})});
}

// The scale: the attribute, else 1 / sqrt(size) in float32 (worked out at
// run time from query's shape when the size is not declared: the same two
// correctly rounded operations).
std::string AttentionScale(Expansion& e, const GroupedSizes& s) {
  const float given = FloatOr(e.node(), "scale", 0.0f);
  if (given != 0.0f) return e.Scalar(given);
  if (s.head_size > 0) {
    return e.Scalar(1.0f / std::sqrt(static_cast<float>(s.head_size)));
  }
  const std::string size_value =
      e.Add("Div", {e.Dim(e.in(0), 2), e.Int(s.parts())});
  return e.Add("Reciprocal",
               {e.Add("Sqrt", {e.Add("Cast", {size_value},
                                     {IntAttr("to", TensorProto::FLOAT)})})});
}

// Softmax(scores) V over the present caches into output 0: scores [batch,
// kv_heads, group, sequence, T] from q and present_k, softcapped, the keys
// a query may not see (later ones, and those before its local window) at
// the lowest float; smooth softmax adds a logit of 0 beside the keys.
void AttendOverCache(Expansion& e, const std::string& q,
                     const std::string& present_k, const std::string& present_v,
                     const std::string& scale, const NewTokens& n,
                     const std::string& t) {
  std::string scores = e.Add(
      "Mul",
      {e.Add("MatMul", {q, e.Unsqueeze(e.Add("Transpose", {present_k},
                                             {IntsAttr("perm", {0, 1, 3, 2})}),
                                       {2})}),
       scale});
  const float softcap = FloatOr(e.node(), "softcap", 0.0f);
  if (softcap > 0.0f) {
    scores = e.Add("Mul",
                   {e.Add("Tanh", {e.Add("Div", {scores, e.Scalar(softcap)})}),
                    e.Scalar(softcap)});
  }
  const std::string key = e.Unsqueeze(t, {0, 1, 2});  // [1, 1, 1, 1, T]
  const std::string query_position =
      e.Unsqueeze(n.positions, {1, 2, 4});  // [batch, 1, 1, sequence, 1]
  std::string hidden = e.Add("Greater", {key, query_position});
  const int64_t window = IntOr(e.node(), "local_window_size", -1);
  if (window > 0) {
    hidden = e.Add(
        "Or",
        {hidden, e.Add("Less", {key, e.Add("Sub", {query_position,
                                                   e.Int(window - 1)})})});
  }
  scores =
      e.Add("Where",
            {hidden, e.Scalar(std::numeric_limits<float>::lowest()), scores});
  std::string probs;
  if (IntOr(e.node(), "smooth_softmax", 0) == 1) {
    // exp(x_j) / (1 + sum exp(x)).
    const std::string padded =
        e.Add("Pad", {scores, e.Ints({0, 0, 0, 0, 0, 0, 0, 0, 0, 1})});
    probs =
        LastAxis(e, e.Add("Softmax", {padded}, {IntAttr("axis", -1)}), 0, -1);
  } else {
    probs = e.Add("Softmax", {scores}, {IntAttr("axis", -1)});
  }
  const std::string context = e.Add(
      "MatMul", {probs, e.Unsqueeze(present_v, {2})});  // [b, kv, g, s, size]
  e.Add("Reshape",
        {e.Add("Transpose", {context}, {IntsAttr("perm", {0, 3, 1, 2, 4})}),
         e.Ints({0, 0, -1})},
        {}, e.out(0));
}

// The node's inputs checked; the rotary dimension (0 without do_rotary).
StatusOr<int64_t> CheckGroupedAttention(const Expansion& e,
                                        const GroupedSizes& s) {
  WEFT_RETURN_IF_ERROR(RefuseUnsupported(e));
  if (e.has_in(3) != e.has_in(4) || e.has_in(7) != e.has_in(8)) {
    return InvalidArgumentError(
        e.Where() +
        ": past_key and past_value, and cos_cache and sin_cache, come in "
        "pairs");
  }
  if (IntOr(e.node(), "do_rotary", 0) == 0) return 0;
  if (!e.has_in(7)) {
    return InvalidArgumentError(e.Where() +
                                ": do_rotary needs cos_cache and sin_cache");
  }
  return CacheRotaryDim(e, 7, s.head_size);
}

}  // namespace

// Causal grouped-query self-attention over a key/value cache, as ONNX
// Runtime's CPU kernel computes it. Per batch row b: total_b =
// seqlens_k[b] + 1 keys; the new tokens sit at past_b = total_b - sequence
// (0 for a first prompt: total_sequence_length = sequence), at positions
// past_b, past_b + 1, ... (the rotary angles' rows when do_rotary). The
// present cache holds the past cache's first past_b rows, then the new
// keys and values, then zeros; query s attends keys past_b + s and before
// (and, with local_window_size W > 0, the last W of those, the query's own
// among them: ONNX Runtime 1.30's window, which tests/onnx/contrib_ops
// checks). Heads are grouped: query head h reads kv head h / (num_heads /
// kv_num_heads).
Status GroupQueryAttention(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputsAt(e, {0, 5, 6}));
  if (e.opset() < 13) {
    return UnimplementedError(e.Where() +
                              ": needs a model of opset 13 or later, not " +
                              std::to_string(e.opset()));
  }
  WEFT_ASSIGN_OR_RETURN(const GroupedSizes s, SizesOfGroupedAttention(e));
  WEFT_ASSIGN_OR_RETURN(const int64_t rotary_dim, CheckGroupedAttention(e, s));
  const int64_t group = s.heads / s.kv_heads, size = s.head_size;

  // Q as [batch, kv_heads, group, sequence, size]; K and V as [batch,
  // kv_heads, sequence, size]. Packed, query splits by heads ([batch,
  // sequence, heads, size] first): sizes in heads are constants, where
  // sizes in features would be computed from query's shape.
  std::string q = e.in(0), k, v;
  if (s.packed) {
    const std::vector<std::string> parts =
        e.Split(e.Add("Reshape", {e.in(0), e.Ints({0, 0, s.parts(), -1})}), 2,
                {s.heads, s.kv_heads, s.kv_heads});
    q = parts[0];
    k = e.Add("Transpose", {parts[1]}, {IntsAttr("perm", {0, 2, 1, 3})});
    v = e.Add("Transpose", {parts[2]}, {IntsAttr("perm", {0, 2, 1, 3})});
  } else {
    k = Heads(e, e.in(1), s.kv_heads, {0, 2, 1, 3});
    v = Heads(e, e.in(2), s.kv_heads, {0, 2, 1, 3});
  }
  q = e.Add("Transpose",
            {e.Add("Reshape", {q, e.Ints({0, 0, s.kv_heads, group, -1})})},
            {IntsAttr("perm", {0, 2, 3, 1, 4})});

  const std::string past_length = e.has_in(3) ? e.Dim(e.in(3), 2) : e.Int(0);
  const NewTokens n = PlaceNewTokens(e, past_length);
  if (rotary_dim > 0) {
    const bool interleaved = IntOr(e.node(), "rotary_interleaved", 0) != 0;
    const std::string cos =
        e.Add("Gather", {e.in(7), n.positions}, {IntAttr("axis", 0)});
    const std::string sin =
        e.Add("Gather", {e.in(8), n.positions}, {IntAttr("axis", 0)});
    q = Rotated(e, q, 5, size, rotary_dim, e.Unsqueeze(cos, {1, 2}),
                e.Unsqueeze(sin, {1, 2}), interleaved);
    k = Rotated(e, k, 4, size, rotary_dim, e.Unsqueeze(cos, {1}),
                e.Unsqueeze(sin, {1}), interleaved);
  }

  const std::string t = e.Unsqueeze(
      e.Add("Range",
            {e.Int(0), e.Add("Max", {n.total_length, past_length}), e.Int(1)}),
      {0});  // [1, T]
  const std::string rows = PresentRowIndex(e, s.kv_heads, n, past_length, t);
  const std::string present_k = Present(e, rows, e.in(3), k, e.out(1));
  const std::string present_v = Present(e, rows, e.in(4), v, e.out(2));
  AttendOverCache(e, q, present_k, present_v, AttentionScale(e, s), n, t);
  return Status::OK();
}

// ONNX Runtime's rotary embedding: input [batch, sequence, hidden] or
// [batch, heads, sequence, size], position_ids [batch, sequence] or one
// offset (positions offset, offset + 1, ...), caches [positions,
// rotary_dim / 2]. rotary_embedding_dim (with num_heads) rotates the first
// features of each head only; without it the head size is the caches'
// rotary dimension.
Status MicrosoftRotaryEmbedding(Expansion& e) {
  WEFT_RETURN_IF_ERROR(NeedInputs(e, 4));
  if (e.opset() < 13) {
    return UnimplementedError(e.Where() +
                              ": needs a model of opset 13 or "
                              "later, not " +
                              std::to_string(e.opset()));
  }
  if (IntOr(e.node(), "is_packed_batching", 0) != 0 ||
      FloatOr(e.node(), "scale", 1.0f) != 1.0f) {
    return UnimplementedError(e.Where() +
                              ": is_packed_batching and scale are not "
                              "supported");
  }
  const std::optional<std::vector<int64_t>> x = e.DeclaredDims(0);
  const std::optional<std::vector<int64_t>> ids = e.DeclaredDims(1);
  if (!x || (x->size() != 3 && x->size() != 4) || x->back() <= 0 || !ids ||
      ids->empty() || ids->size() > 2) {
    return UnimplementedError(
        e.Where() +
        ": input needs a declared shape of rank 3 or 4 with a fixed last "
        "axis, and position_ids a declared rank of 1 (an offset) or 2");
  }
  const bool three_d = x->size() == 3;
  const int64_t heads = IntOr(e.node(), "num_heads", 0);
  const int64_t given_dim = IntOr(e.node(), "rotary_embedding_dim", 0);
  int64_t size = x->back();
  if (three_d) {
    if (heads > 0) {
      if (size % heads != 0) {
        return InvalidArgumentError(e.Where() + ": hidden size " +
                                    std::to_string(size) +
                                    " is not a multiple of num_heads");
      }
      size /= heads;
    } else {
      WEFT_ASSIGN_OR_RETURN(size, CacheRotaryDim(e, 2, size));
    }
  }
  WEFT_ASSIGN_OR_RETURN(const int64_t cache_dim, CacheRotaryDim(e, 2, size));
  const int64_t rotary = given_dim > 0 ? given_dim : cache_dim;
  if (rotary != cache_dim) {
    return InvalidArgumentError(e.Where() + ": rotary_embedding_dim " +
                                std::to_string(rotary) +
                                " is not twice cos_cache's dim 1 (" +
                                std::to_string(cache_dim / 2) + ")");
  }
  // [batch, sequence] positions, or [1, sequence] from an offset.
  std::string positions = e.in(1);
  if (ids->size() == 1) {
    const std::string sequence = e.Dim(e.in(0), three_d ? 1 : 2);
    positions = e.Unsqueeze(
        e.Add("Add", {e.Add("Reshape", {e.in(1), e.Ints({})}),
                      e.Add("Range", {e.Int(0), sequence, e.Int(1)})}),
        {0});
  }
  const std::string cos =
      e.Add("Gather", {e.in(2), positions}, {IntAttr("axis", 0)});
  const std::string sin =
      e.Add("Gather", {e.in(3), positions}, {IntAttr("axis", 0)});
  // 3-D: [batch, sequence, heads, size], the angles at a heads axis of 1;
  // 4-D: the heads axis is 1.
  const std::vector<int64_t> heads_axis = {three_d ? 2 : 1};
  std::string input = e.in(0);
  if (three_d) input = e.Add("Reshape", {input, e.Ints({0, 0, -1, size})});
  const std::string y = Rotated(
      e, input, 4, size, rotary, e.Unsqueeze(cos, heads_axis),
      e.Unsqueeze(sin, heads_axis), IntOr(e.node(), "interleaved", 0) != 0);
  if (three_d) {
    e.Add("Reshape", {y, e.Ints({0, 0, -1})}, {}, e.out(0));
  } else {
    e.Add("Identity", {y}, {}, e.out(0));
  }
  return Status::OK();
}

}  // namespace weft::internal
