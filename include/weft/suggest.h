// "Did you mean" for names a user mistyped (ops, attributes, options,
// flags), for every front end (the CLI, Python, the coming server) to word
// its refusals the same way.
#ifndef WEFT_SUGGEST_H_
#define WEFT_SUGGEST_H_

#include <string>
#include <string_view>
#include <vector>

#include "weft/op_registry.h"

namespace weft {

// The candidates closest to `name`, at most three: one equal but for case
// alone, else those within an edit distance of max(1, |name| / 3)
// (insertions, deletions, substitutions, case changes counting half),
// nearest first.
std::vector<std::string> ClosestNames(
    std::string_view name, const std::vector<std::string>& candidates);

// " — did you mean 'Relu'?", " — did you mean 'A' or 'B'?", or "".
std::string DidYouMean(std::string_view name,
                       const std::vector<std::string>& candidates);

// For an op name no op has: DidYouMean over every registered op.
std::string SuggestOp(std::string_view op);

// For an attribute `op` does not declare: DidYouMean over its attributes,
// then the list of them ("; MatMul's attributes: T, transpose_a, ...").
std::string SuggestAttr(std::string_view attr, const OpDef& op);

}  // namespace weft

#endif  // WEFT_SUGGEST_H_
