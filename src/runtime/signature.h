// Matching a node against its op definition: attribute types and defaults,
// input arity and dtypes, inferred type attributes, output dtypes.
#ifndef WEFT_SRC_RUNTIME_SIGNATURE_H_
#define WEFT_SRC_RUNTIME_SIGNATURE_H_

#include <vector>

#include "weft/attr.h"
#include "weft/op_registry.h"

namespace weft::internal {

struct ResolvedSignature {
  AttrMap attrs;  // Every declared attribute, type-checked.
  std::vector<DataType> output_dtypes;
};

// Checks `attrs` (unknown or mistyped attributes; an int is accepted where a
// float is declared), matches `input_dtypes` against the op's inputs
// (inferring type attributes and list lengths the node leaves out), fills
// defaults, reports missing attributes and disallowed dtypes, and derives
// the output dtypes. Messages name the attribute or input.
StatusOr<ResolvedSignature> ResolveSignature(
    const OpDef& def, const AttrMap& attrs,
    const std::vector<DataType>& input_dtypes);

// Converts `value` to `type` where the conversion loses nothing (int to
// float, bool to int 0/1, list(int) to list(float)); nullopt when it
// cannot.
std::optional<AttrValue> CoerceAttr(const AttrValue& value, AttrType type);

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_SIGNATURE_H_
