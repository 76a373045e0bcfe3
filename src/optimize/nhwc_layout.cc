// nhwc-layout: 2-D float32 convolutions with a constant W run channels-last
// (NhwcConv, src/ops/nhwc_ops.h: the op registry's ChannelsLastConvFn) where
// oneDNN's AVX-512 kernels run, or its AVX2 ones in a graph that holds a
// depthwise convolution; so do quantized ones (QLinearConv on uint8
// x with constant int8 weights of zero point 0, as NhwcQLinearConv) where
// the int8 kernel is VNNI.
//
// The pass walks the graph in dependency order and gives tensors an NHWC
// twin. A convertible convolution reads its input's twin (an NchwToNhwc is
// added where the input has none) and makes a twin of its output. Nodes
// between convolutions follow when their inputs all have twins: element-wise
// activations, Add/Sub/Mul/Div of two same-shaped tensors, QLinearAdd of
// two same-shaped tensors, MaxPool (NhwcMaxPool, float or quantized),
// Concat over channels (over axis 3 instead), and
// GlobalAveragePool (NhwcGlobalAveragePool, whose [N, C, 1, 1] output is
// NCHW again). A converted node keeps its name as an NhwcToNchw of its twin
// where something still reads it in NCHW, or where it is a graph end, and
// is removed otherwise. So a chain of convolutions changes layout twice:
// once in, once out.
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "framework/op_registry_impl.h"
#include "optimize/passes.h"

namespace weft::internal {
namespace {

constexpr char kPass[] = "nhwc-layout";

// "n:0" and "n" name the same tensor.
std::string Canonical(const std::string& input) {
  if (input.size() > 2 && input.compare(input.size() - 2, 2, ":0") == 0) {
    return input.substr(0, input.size() - 2);
  }
  return input;
}

bool IsUnaryFollower(const std::string& op) {
  return op == "Relu" || op == "Clip" || op == "LeakyRelu" ||
         op == "HardSwish" || op == "Sigmoid";
}

bool IsBinaryFollower(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
}

// Whether a float Conv or FusedConv of the graph is depthwise: a constant
// filter of one input channel per group over an input of more than one.
bool HasDepthwiseConv(GraphEditor& graph) {
  for (int i = 0; i < graph.size(); ++i) {
    const NodeDef& node = graph.node(i);
    if ((node.op != "Conv" && node.op != "FusedConv") ||
        node.inputs.size() < 2) {
      continue;
    }
    const Tensor* w = graph.Constant(node.inputs[1]);
    const std::optional<PartialShape> x = graph.Shape(node.inputs[0]);
    if (w != nullptr && w->dtype() == DataType::kFloat32 &&
        w->shape().rank() == 4 && w->shape().dim(1) == 1 && x &&
        x->rank() == 4 && x->dim(1) > 1) {
      return true;
    }
  }
  return false;
}

class NhwcLayout {
 public:
  explicit NhwcLayout(GraphEditor& graph)
      : graph_(graph), converted_(graph.size(), 0) {}

  int Run() {
    for (int i : DependencyOrder(graph_)) {
      const NodeDef& node = graph_.node(i);
      if (graph_.HasControlInputs(i)) continue;
      if (node.op == "Conv" || node.op == "FusedConv") {
        ConvertConv(i);
      } else if (node.op == "QLinearConv") {
        ConvertQLinearConv(i);
      } else if (IsUnaryFollower(node.op) || IsBinaryFollower(node.op) ||
                 node.op == "MaxPool" || node.op == "Concat" ||
                 node.op == "QLinearAdd") {
        ConvertFollower(i);
      } else if (node.op == "GlobalAveragePool") {
        ConvertGlobalAveragePool(i);
      }
    }
    int rewrites = 0;
    // Nodes the walk added come after converted_'s end.
    for (int i = 0; i < static_cast<int>(converted_.size()); ++i) {
      if (converted_[i] == 0) continue;
      ++rewrites;
      const NodeDef& node = graph_.node(i);
      const std::string twin = twins_.at(node.name);
      if (NeededAsNchw(i)) {
        graph_.Replace(
            i, NodeDef{node.name, "NhwcToNchw", {twin}, {}, node.device});
      } else {
        graph_.Remove(i, {kPass, twin});
      }
    }
    graph_.Commit();
    return rewrites + in_place_ + ReadImagesFromPlanes();
  }

  // An int8 convolution of group 1 over at most four channels (a network's
  // first layer, on the image) whose channels-last input only it reads
  // reads the NCHW tensor itself (x_layout "NCHW"): it copies its input
  // into a padded buffer anyway, and gathers the channels while it does,
  // so the NchwToNhwc and its pass over memory go.
  int ReadImagesFromPlanes() {
    int rewrites = 0;
    for (int i = 0; i < graph_.size(); ++i) {
      const NodeDef& conv = graph_.node(i);
      if (!graph_.alive(i) || conv.op != "NhwcQLinearConv" ||
          AttrOr<int64_t>(conv, "group", 1) != 1 ||
          AttrOr<std::string>(conv, "x_layout", "NHWC") != "NHWC") {
        continue;
      }
      const NodeUse in = graph_.Producer(conv.inputs[0]);
      if (in.node < 0 || graph_.node(in.node).op != "NchwToNhwc" ||
          graph_.SoleConsumer(in.node) != i ||
          graph_.HasControlInputs(in.node)) {
        continue;
      }
      // W is a constant (the pass converts no other QLinearConv): its
      // shape without inferring the graph's again.
      const Tensor* w = graph_.Constant(conv.inputs[3]);
      if (w == nullptr || w->shape().rank() != 4 || w->shape().dim(1) > 4) {
        continue;
      }
      NodeDef reading_planes = conv;
      reading_planes.inputs[0] = graph_.node(in.node).inputs[0];
      reading_planes.attrs["x_layout"] = std::string("NCHW");
      graph_.Remove(in.node, {kPass, conv.name});
      graph_.Replace(i, std::move(reading_planes));
      ++rewrites;
    }
    graph_.Commit();
    return rewrites;
  }

 private:
  // The NHWC twin of a tensor, or "" when it has none.
  std::string TwinOf(const std::string& input) const {
    auto it = twins_.find(Canonical(input));
    return it == twins_.end() ? std::string() : it->second;
  }

  // The twin, made by an NchwToNhwc when the tensor has none yet.
  std::string TwinOrConversion(const std::string& input,
                               const std::string& device) {
    std::string twin = TwinOf(input);
    if (!twin.empty()) return twin;
    twin = graph_.UniqueName(Canonical(input) + "/to_nhwc");
    graph_.Add(NodeDef{twin, "NchwToNhwc", {input}, {}, device});
    twins_[Canonical(input)] = twin;
    return twin;
  }

  bool IsFloat4d(const std::string& input) {
    return Is4d(input) && graph_.Dtype(input) == DataType::kFloat32;
  }

  // Float32, or quantized (uint8, int8): what the layout moves.
  bool IsLayout4d(const std::string& input) {
    const std::optional<DataType> dtype = graph_.Dtype(input);
    return Is4d(input) &&
           (dtype == DataType::kFloat32 || dtype == DataType::kUInt8 ||
            dtype == DataType::kInt8);
  }

  bool Is4d(const std::string& input) {
    const std::optional<PartialShape> shape = graph_.Shape(input);
    return shape && shape->IsFullyDefined() && shape->rank() == 4;
  }

  bool IsScalarConstant(const std::string& input) {
    const Tensor* t = graph_.Constant(input);
    return t != nullptr && t->NumElements() == 1;
  }

  // The channels-last op's attributes for convolution `node` over input x
  // and constant filter w, where the op registry has a form for its op on
  // this CPU and it takes these sizes; else nullopt.
  std::optional<AttrMap> ChannelsLastAttrs(const NodeDef& node,
                                           const std::string& x,
                                           const Tensor& w) {
    const ChannelsLastConvFn* channels_last =
        OpRegistry::Global().FindChannelsLastConv(node.op);
    if (channels_last == nullptr) return std::nullopt;
    return (*channels_last)(node, graph_.Shape(x)->ToShape(), w.shape());
  }

  // Node i computes `twin` in NHWC now.
  void Converted(int i, NodeDef twin_node) {
    twins_[graph_.node(i).name] = twin_node.name;
    converted_[i] = 1;
    graph_.Add(std::move(twin_node));
  }

  void ConvertConv(int i) {
    const NodeDef& node = graph_.node(i);
    const std::vector<std::string>& in = node.inputs;
    if (in.size() < 2 || !IsFloat4d(in[0]) || !IsFloat4d(node.name)) return;
    const Tensor* w = graph_.Constant(in[1]);
    if (w == nullptr || w->dtype() != DataType::kFloat32 ||
        w->shape().rank() != 4) {
      return;
    }
    const bool has_bias = in.size() > 2 && !in[2].empty();
    const bool residual = node.op == "FusedConv" && in.size() > 3;
    if (residual && (!has_bias || !IsFloat4d(in[3]))) return;
    std::optional<AttrMap> attrs = ChannelsLastAttrs(node, in[0], *w);
    if (!attrs) return;
    NodeDef conv{graph_.UniqueName(node.name + "/nhwc"),
                 "NhwcConv",
                 {TwinOrConversion(in[0], node.device), in[1]},
                 *std::move(attrs),
                 node.device};
    if (has_bias) conv.inputs.push_back(in[2]);
    if (residual) conv.inputs.push_back(TwinOrConversion(in[3], node.device));
    Converted(i, std::move(conv));
  }

  // QLinearConv (x, x_scale, x_zero_point, w, w_scale, w_zero_point,
  // y_scale, y_zero_point[, B]) with x uint8, w a constant int8 [M, C/g,
  // kh, kw] of zero points 0 and the scalars constant.
  void ConvertQLinearConv(int i) {
    const NodeDef& node = graph_.node(i);
    const std::vector<std::string>& in = node.inputs;
    if (in.size() < 8 || !Is4d(in[0]) || !Is4d(node.name) ||
        graph_.Dtype(in[0]) != DataType::kUInt8) {
      return;
    }
    const Tensor* w = graph_.Constant(in[3]);
    const Tensor* w_zero = graph_.Constant(in[5]);
    if (w == nullptr || w->dtype() != DataType::kInt8 ||
        w->shape().rank() != 4 || w_zero == nullptr ||
        w_zero->dtype() != DataType::kInt8) {
      return;
    }
    for (int64_t k = 0; k < w_zero->NumElements(); ++k) {
      if (w_zero->data<int8_t>()[k] != 0) return;
    }
    for (int k : {1, 2, 6, 7}) {
      if (!IsScalarConstant(in[static_cast<size_t>(k)])) return;
    }
    std::optional<AttrMap> attrs = ChannelsLastAttrs(node, in[0], *w);
    if (!attrs) return;
    NodeDef conv{graph_.UniqueName(node.name + "/nhwc"), "NhwcQLinearConv", in,
                 *std::move(attrs), node.device};
    conv.inputs[0] = TwinOrConversion(in[0], node.device);
    Converted(i, std::move(conv));
  }

  void ConvertFollower(int i) {
    const NodeDef& node = graph_.node(i);
    if (node.inputs.empty() || !IsLayout4d(node.name)) return;
    const bool quantized_ok =
        node.op == "MaxPool" || node.op == "Concat" || node.op == "QLinearAdd";
    if (!quantized_ok && !IsFloat4d(node.name)) return;
    NodeDef twin{graph_.UniqueName(node.name + "/nhwc"), node.op, node.inputs,
                 node.attrs, node.device};
    if (IsUnaryFollower(node.op)) {
      twin.inputs[0] = TwinOf(node.inputs[0]);
      if (twin.inputs[0].empty()) return;
    } else if (IsBinaryFollower(node.op)) {
      if (node.inputs.size() != 2 || !IsFloat4d(node.inputs[0]) ||
          !IsFloat4d(node.inputs[1]) ||
          !(graph_.Shape(node.inputs[0])->dims() ==
            graph_.Shape(node.inputs[1])->dims())) {
        return;
      }
      for (int k = 0; k < 2; ++k) {
        twin.inputs[k] = TwinOf(node.inputs[k]);
        if (twin.inputs[k].empty()) return;
      }
    } else if (node.op == "QLinearAdd") {
      // (A, A_scale, A_zero, B, B_scale, B_zero, C_scale, C_zero): element
      // by element, so any layout of same-shaped A and B.
      if (node.inputs.size() != 8 || !Is4d(node.inputs[0]) ||
          !Is4d(node.inputs[3]) ||
          !(graph_.Shape(node.inputs[0])->dims() ==
            graph_.Shape(node.inputs[3])->dims())) {
        return;
      }
      for (int k : {0, 3}) {
        twin.inputs[static_cast<size_t>(k)] =
            TwinOf(node.inputs[static_cast<size_t>(k)]);
        if (twin.inputs[static_cast<size_t>(k)].empty()) return;
      }
    } else if (node.op == "MaxPool") {
      // Only Y: NhwcMaxPool has no Indices.
      for (const NodeUse& use : graph_.uses(i)) {
        if (use.slot != 0 || use.control) return;
      }
      if (AttrOr(node, "storage_order", int64_t{0}) != 0) return;
      twin.op = "NhwcMaxPool";
      twin.attrs.erase("storage_order");
      twin.attrs.erase("T");
      twin.inputs = {TwinOf(node.inputs[0])};
      if (twin.inputs[0].empty()) return;
    } else {  // Concat over channels.
      const int64_t axis = AttrOr(node, "axis", int64_t{0});
      if (axis != 1 && axis != -3) return;
      for (std::string& input : twin.inputs) {
        input = TwinOf(input);
        if (input.empty()) return;
      }
      twin.attrs["axis"] = int64_t{3};
    }
    Converted(i, std::move(twin));
  }

  void ConvertGlobalAveragePool(int i) {
    const NodeDef& node = graph_.node(i);
    if (node.inputs.size() != 1 || !IsFloat4d(node.inputs[0])) return;
    const std::string twin = TwinOf(node.inputs[0]);
    if (twin.empty()) return;
    graph_.Replace(
        i,
        NodeDef{node.name, "NhwcGlobalAveragePool", {twin}, {}, node.device});
    in_place_nodes_.insert(i);
    ++in_place_;
  }

  // Whether a node not converted reads node i, or nothing does (a graph
  // end, which a Run may fetch).
  bool NeededAsNchw(int i) const {
    if (graph_.uses(i).empty()) return true;
    for (const NodeUse& use : graph_.uses(i)) {
      if (use.control) return true;
      if (converted_[use.node] == 0 && in_place_nodes_.count(use.node) == 0) {
        return true;
      }
    }
    return false;
  }

  GraphEditor& graph_;
  std::vector<char> converted_;  // By node index, for the graph as given.
  std::unordered_map<std::string, std::string> twins_;
  std::unordered_set<int> in_place_nodes_;
  int in_place_ = 0;
};

}  // namespace

int ConvertToNhwc(GraphEditor& graph) {
  // Conv has a channels-last form only where NhwcConv's kernels run, and
  // QLinearConv only where the int8 kernel is VNNI.
  const OpRegistry& registry = OpRegistry::Global();
  const bool float_form = registry.FindChannelsLastConv("Conv") != nullptr;
  const bool int8_form =
      registry.FindChannelsLastConv("QLinearConv") != nullptr;
  if (!float_form && !int8_form) return 0;
  if (float_form && !int8_form && registry.ChannelsLastOnlyWithDepthwise() &&
      !HasDepthwiseConv(graph)) {
    return 0;
  }
  return NhwcLayout(graph).Run();
}

}  // namespace weft::internal
