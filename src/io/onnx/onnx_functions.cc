#include "io/onnx/onnx_functions.h"

namespace weft::internal {

FunctionTable IndexFunctions(const onnx::ModelProto& model) {
  FunctionTable table;
  for (const onnx::FunctionProto& f : model.functions()) {
    table[{f.domain(), f.name()}] = &f;
  }
  return table;
}

StatusOr<FunctionSize> MeasureExpansion(
    const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
    const FunctionTable& functions, int depth,
    std::map<const onnx::FunctionProto*, FunctionSize>* sizes) {
  FunctionSize total{.nodes = 0, .height = 1};
  for (const onnx::NodeProto& node : nodes) {
    auto it = functions.find({node.domain(), node.op_type()});
    if (it == functions.end()) {
      ++total.nodes;
    } else {
      const onnx::FunctionProto* f = it->second;
      auto known = sizes->find(f);
      if (known == sizes->end() && depth < kMaxFunctionDepth) {
        StatusOr<FunctionSize> body =
            MeasureExpansion(f->node(), functions, depth + 1, sizes);
        if (!body.ok()) {
          return body.status().WithContext("function '" + f->name() + "'");
        }
        known = sizes->emplace(f, *body).first;
      }
      if (known == sizes->end() ||
          depth + known->second.height > kMaxFunctionDepth) {
        return InvalidArgumentError("function '" + f->name() +
                                    "': calls of model-local functions nest "
                                    "deeper than " +
                                    std::to_string(kMaxFunctionDepth) +
                                    " (does it call itself?)");
      }
      total.nodes += known->second.nodes;
      total.height = std::max(total.height, known->second.height + 1);
    }
    if (total.nodes > kMaxExpandedNodes) {
      return InvalidArgumentError(
          "expanding model-local functions gives more than " +
          std::to_string(kMaxExpandedNodes) + " nodes");
    }
  }
  return total;
}

void ExpandFunctions(
    const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
    const FunctionTable& functions, ExpandedNodes* out, int64_t* calls) {
  for (const onnx::NodeProto& node : nodes) {
    auto it = functions.find({node.domain(), node.op_type()});
    if (it == functions.end()) {
      out->nodes.push_back(&node);
      continue;
    }
    const onnx::FunctionProto& f = *it->second;
    const std::string prefix = (node.name().empty() ? f.name() : node.name()) +
                               "/" + std::to_string((*calls)++) + "/";
    std::map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size(); ++i) {
      rename[f.input(i)] = i < node.input_size() ? node.input(i) : "";
    }
    for (int i = 0; i < f.output_size(); ++i) {
      rename[f.output(i)] = i < node.output_size() && !node.output(i).empty()
                                ? node.output(i)
                                : prefix + f.output(i);
    }
    auto name_of = [&](const std::string& value) -> std::string {
      if (value.empty()) return value;
      auto r = rename.find(value);
      return r != rename.end() ? r->second : prefix + value;
    };
    google::protobuf::RepeatedPtrField<onnx::NodeProto>& body =
        out->bodies.emplace_back();
    for (const onnx::NodeProto& b : f.node()) {
      onnx::NodeProto* copy = body.Add();
      *copy = b;
      copy->set_name(prefix + b.name());
      for (int i = 0; i < copy->input_size(); ++i) {
        copy->set_input(i, name_of(b.input(i)));
      }
      for (int i = 0; i < copy->output_size(); ++i) {
        copy->set_output(i, name_of(b.output(i)));
      }
      copy->clear_attribute();
      for (const onnx::AttributeProto& a : b.attribute()) {
        if (a.ref_attr_name().empty()) {
          *copy->add_attribute() = a;
          continue;
        }
        for (const onnx::AttributeProto& given : node.attribute()) {
          if (given.name() == a.ref_attr_name()) {
            onnx::AttributeProto* bound = copy->add_attribute();
            *bound = given;
            bound->set_name(a.name());
          }
        }
      }
    }
    ExpandFunctions(body, functions, out, calls);
  }
}

}  // namespace weft::internal
