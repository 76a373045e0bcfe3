// The com.microsoft ops of decoder language models as ONNX Runtime's tools
// and onnxruntime-genai's model builder write them: GroupQueryAttention
// (grouped-query self-attention over a key/value cache, rotary embedding
// inside) and RotaryEmbedding. Expanded at load into default-domain nodes
// (contrib_ops.h), like the domain's other ops.
#ifndef WEFT_SRC_IO_ONNX_DECODER_OPS_H_
#define WEFT_SRC_IO_ONNX_DECODER_OPS_H_

#include "io/onnx/expansion.h"
#include "weft/status.h"

namespace weft::internal {

// Inputs query, key, value, past_key, past_value, seqlens_k,
// total_sequence_length, cos_cache, sin_cache; outputs output, present_key,
// present_value. docs/onnx.md says what is read and what is refused.
Status GroupQueryAttention(Expansion& e);

// Inputs input, position_ids, cos_cache, sin_cache; output 0.
Status MicrosoftRotaryEmbedding(Expansion& e);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_ONNX_DECODER_OPS_H_
