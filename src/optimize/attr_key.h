// A node's attributes written as one exact string, for the passes that
// know nodes by what they compute (common-subexpression-elimination, and
// constant folding's cache across a session's compiles: fold_cache.h).
#ifndef WEFT_SRC_OPTIMIZE_ATTR_KEY_H_
#define WEFT_SRC_OPTIMIZE_ATTR_KEY_H_

#include <optional>
#include <string>

#include "weft/graph.h"

namespace weft::internal {

// What a tensor-valued attribute becomes in the key.
enum class TensorAttrs {
  // Its dtype, shape and a hash of its bytes, for tensors up to 64 KiB
  // (larger ones refuse the node): equal keys then still need the tensors
  // compared bit for bit (Tensor::BitwiseEqual).
  kHashedUpTo64KiB,
  // Refuses the node: its key must say all of what it computes.
  kRefused,
};

// The attributes written exactly (doubles by their bits, strings with
// their lengths); nullopt where the node must not be matched: a graph
// attribute, or a tensor `tensors` refuses.
std::optional<std::string> AttrKey(const AttrMap& attrs, TensorAttrs tensors);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPTIMIZE_ATTR_KEY_H_
