// The library's access to a Graph's name index (leveldb's
// WriteBatchInternal pattern): the public header names no internal type.
#ifndef WEFT_SRC_FRAMEWORK_GRAPH_INTERNAL_H_
#define WEFT_SRC_FRAMEWORK_GRAPH_INTERNAL_H_

#include <utility>

#include "framework/name_index.h"
#include "weft/graph.h"

namespace weft {

// The opaque type Graph holds is a name index over its nodes.
class Graph::Index : public internal::NameIndex {};

class GraphInternal {
 public:
  // The graph's index, name -> position in graph.nodes(), moved out (the
  // nodes stay): a compiler that takes the graph over does not index its
  // names again.
  static internal::NameIndex TakeIndex(Graph& graph) {
    if (graph.index_ == nullptr) return {};  // Taken already.
    internal::NameIndex index = std::move(*graph.index_);
    graph.index_.reset();  // Graph indexes its nodes again if used again.
    return index;
  }
};

}  // namespace weft

#endif  // WEFT_SRC_FRAMEWORK_GRAPH_INTERNAL_H_
