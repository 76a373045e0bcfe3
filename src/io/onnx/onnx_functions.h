// Model-local functions (ModelProto::functions): indexed by (domain,
// name) and expanded at load, each call replaced by the function's body,
// with bounds on nesting and size that a hostile file cannot pass.
#ifndef WEFT_SRC_IO_ONNX_ONNX_FUNCTIONS_H_
#define WEFT_SRC_IO_ONNX_ONNX_FUNCTIONS_H_

#include <google/protobuf/repeated_ptr_field.h>
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "weft/status.h"

namespace weft::internal {

// Model-local functions (ModelProto::functions) by (domain, name).
using FunctionTable =
    std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*>;

FunctionTable IndexFunctions(const onnx::ModelProto& model);

// Calls of model-local functions nest at most this deep (a function that
// calls itself would never end), and expand to at most this many nodes (a
// hostile file of 16 levels of functions that each call the next three
// times would otherwise ask for 43 million).
constexpr int kMaxFunctionDepth = 16;
constexpr size_t kMaxExpandedNodes = size_t{1} << 20;

// One graph's nodes with the calls of model-local functions expanded. The
// graph's own nodes are referred to where they are, so a model without
// functions copies nothing (its Constant nodes may hold large tensors);
// the renamed function bodies are owned here (a deque: its elements stay
// where they are as more are added).
struct ExpandedNodes {
  std::vector<const onnx::NodeProto*> nodes;
  std::deque<google::protobuf::RepeatedPtrField<onnx::NodeProto>> bodies;
};

// What a model-local function's body expands to: its nodes, and how deep
// the calls inside it nest (1 for a body without calls).
struct FunctionSize {
  size_t nodes = 0;
  int height = 0;
};

// The size of what `nodes` expand to, called at nesting depth `depth`,
// counted without expanding them, so that a file whose calls multiply past
// kMaxExpandedNodes is refused at once instead of after building a million
// nodes (16 levels of four calls each took 14 s to refuse). Each function's
// size is kept in `sizes` once known; the depth check also ends a function
// that calls itself.
StatusOr<FunctionSize> MeasureExpansion(
    const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
    const FunctionTable& functions, int depth,
    std::map<const onnx::FunctionProto*, FunctionSize>* sizes);

// Appends `nodes` to `out` with every call of a model-local function
// replaced by the function's body: its formal inputs and outputs renamed
// to the call's (an omitted optional input to ""), its other values and
// nodes prefixed with "<call>/" so they stay unique, and each attribute
// that refers to the call's (ref_attr_name) given the call's value, or
// dropped when the call has none. Calls inside a body expand too.
// Limitation: names read inside a body node's own graph attributes are
// not renamed. REQUIRES: MeasureExpansion accepted `nodes` (so the calls
// nest at most kMaxFunctionDepth deep and expand to at most
// kMaxExpandedNodes nodes).
void ExpandFunctions(
    const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
    const FunctionTable& functions, ExpandedNodes* out, int64_t* calls);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_ONNX_ONNX_FUNCTIONS_H_
