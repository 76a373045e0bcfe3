// The library's own names for the public "did you mean" helpers
// (weft/suggest.h), so that code under src/ keeps calling them as
// internal::DidYouMean and the like.
#ifndef WEFT_SRC_FRAMEWORK_SUGGEST_H_
#define WEFT_SRC_FRAMEWORK_SUGGEST_H_

#include "weft/suggest.h"

namespace weft::internal {

using weft::ClosestNames;
using weft::DidYouMean;
using weft::SuggestAttr;
using weft::SuggestOp;

}  // namespace weft::internal

#endif  // WEFT_SRC_FRAMEWORK_SUGGEST_H_
