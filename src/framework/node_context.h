// How an error names the node it is about, everywhere in the runtime:
// "node 'y' (op MatMul)".
#ifndef WEFT_SRC_FRAMEWORK_NODE_CONTEXT_H_
#define WEFT_SRC_FRAMEWORK_NODE_CONTEXT_H_

#include <string>
#include <string_view>

namespace weft::internal {

inline std::string NodeContext(std::string_view name, std::string_view op) {
  std::string out = "node '";
  out.append(name).append("' (op ").append(op).append(")");
  return out;
}

}  // namespace weft::internal

#endif  // WEFT_SRC_FRAMEWORK_NODE_CONTEXT_H_
