// Nesting depth of JSON text, found without parsing it: the check every
// reader of untrusted JSON (graph files, the server's requests) makes
// before handing the text to a parser that recurses once per level.
#ifndef WEFT_JSON_DEPTH_H_
#define WEFT_JSON_DEPTH_H_

#include <cstddef>
#include <optional>
#include <string_view>

namespace weft {

// The byte offset of the first '[' or '{' that opens level `limit + 1`
// (strings and their escapes skipped), or nullopt when the text nests no
// deeper than `limit`. Costs one pass and no allocation.
std::optional<size_t> FindJsonNestingPast(std::string_view json, int limit);

}  // namespace weft

#endif  // WEFT_JSON_DEPTH_H_
