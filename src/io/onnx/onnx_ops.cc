// The converters, one per ONNX op type. Most ops have a weft op of the same
// name and attributes (Direct); the others adapt what an opset passes as an
// input into the attribute weft's op takes, or drop what inference ignores.
#include "io/onnx/onnx_ops.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "io/onnx/opset_versions.h"
#include "io/onnx/tensor_proto.h"
#include "weft/op_registry.h"

namespace weft::internal {
namespace {

using onnx::AttributeProto;
using Converter = Status (*)(const OnnxNode&, NodeDef*);

std::string AttrTypeOf(const AttributeProto& a) {
  return AttributeProto::AttributeType_Name(a.type());
}

Status WrongAttrType(const OnnxNode& n, const AttributeProto& a,
                     const char* expected) {
  return InvalidArgumentError(n.Where() + ": attribute '" + a.name() +
                              "' must be " + expected + ", got " +
                              AttrTypeOf(a));
}

// An ONNX attribute as the weft attribute type the op declares.
StatusOr<AttrValue> ConvertAttr(const OnnxNode& n, const AttributeProto& a,
                                AttrType type) {
  switch (type) {
    case AttrType::kInt:
      if (a.type() != AttributeProto::INT) return WrongAttrType(n, a, "INT");
      return AttrValue(static_cast<int64_t>(a.i()));
    case AttrType::kBool:
      if (a.type() != AttributeProto::INT) return WrongAttrType(n, a, "INT");
      if (a.i() != 0 && a.i() != 1) {
        return InvalidArgumentError(n.Where() + ": attribute '" + a.name() +
                                    "' must be 0 or 1, got " +
                                    std::to_string(a.i()));
      }
      return AttrValue(a.i() != 0);
    case AttrType::kFloat:
      if (a.type() != AttributeProto::FLOAT) {
        return WrongAttrType(n, a, "FLOAT");
      }
      return AttrValue(static_cast<double>(a.f()));
    case AttrType::kString:
      if (a.type() != AttributeProto::STRING) {
        return WrongAttrType(n, a, "STRING");
      }
      return AttrValue(a.s());
    case AttrType::kListInt:
      if (a.type() != AttributeProto::INTS) return WrongAttrType(n, a, "INTS");
      return AttrValue(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case AttrType::kListString:
      if (a.type() != AttributeProto::STRINGS) {
        return WrongAttrType(n, a, "STRINGS");
      }
      return AttrValue(
          std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case AttrType::kListFloat:
      if (a.type() != AttributeProto::FLOATS) {
        return WrongAttrType(n, a, "FLOATS");
      }
      return AttrValue(
          std::vector<double>(a.floats().begin(), a.floats().end()));
    case AttrType::kType: {
      if (a.type() != AttributeProto::INT) return WrongAttrType(n, a, "INT");
      const auto dtype = FromOnnxType(static_cast<int32_t>(a.i()));
      if (!dtype) {
        return UnimplementedError(
            n.Where() + ": attribute '" + a.name() + "': dtype " +
            OnnxTypeName(static_cast<int32_t>(a.i())) + " is not supported");
      }
      return AttrValue(*dtype);
    }
    case AttrType::kTensor: {
      if (a.type() != AttributeProto::TENSOR) {
        return WrongAttrType(n, a, "TENSOR");
      }
      WEFT_ASSIGN_OR_RETURN(
          Tensor t,
          TensorFromProto(a.t(), ExternalDataRoot{},
                          n.Where() + ", attribute '" + a.name() + "'"));
      return AttrValue(std::move(t));
    }
    default:
      return UnimplementedError(n.Where() + ": attribute '" + a.name() +
                                "' of type " + AttrTypeOf(a) +
                                " is not supported");
  }
}

// The node as weft op `op`: inputs [0, max_inputs) passed through (an
// omitted trailing input is dropped; an omitted inner one is unsupported;
// the caller converts inputs from max_inputs on),
// every attribute not in `ignored` converted through the op's schema.
Status Direct(const OnnxNode& n, NodeDef* out, const std::string& op,
              int max_inputs = -1, const std::set<std::string>& ignored = {}) {
  const OpDef* def = FindOpDef(op);
  if (def == nullptr) return InternalError("weft op '" + op + "' is missing");
  out->op = op;
  int last = n.num_inputs();
  if (max_inputs >= 0) last = std::min(last, max_inputs);
  while (last > 0 && !n.has_input(last - 1)) --last;
  for (int i = 0; i < last; ++i) {
    if (!n.has_input(i)) {
      return UnimplementedError(n.Where() + ": omitting input " +
                                std::to_string(i) + " is not supported");
    }
    out->inputs.push_back(n.input(i));
  }
  for (const AttributeProto& a : n.proto().attribute()) {
    if (ignored.count(a.name())) continue;
    const AttrDef* attr = nullptr;
    for (const AttrDef& d : def->attrs) {
      if (d.name == a.name()) attr = &d;
    }
    if (attr == nullptr) {
      return UnimplementedError(n.Where() + ": attribute '" + a.name() +
                                "' is not supported");
    }
    WEFT_ASSIGN_OR_RETURN(out->attrs[a.name()], ConvertAttr(n, a, attr->type));
  }
  return Status::OK();
}

// An attribute read directly (for converters that rename or adapt).
const AttributeProto* Attr(const OnnxNode& n, const char* name) {
  return n.FindAttr(name);
}

Status NoExtraOutputs(const OnnxNode& n, int supported) {
  for (int i = supported; i < n.num_outputs(); ++i) {
    if (n.has_output(i)) {
      return UnimplementedError(n.Where() + ": output " + std::to_string(i) +
                                " is not supported");
    }
  }
  return Status::OK();
}

// Inputs whose declared element types differ, where weft's op takes one
// type for all: weft has no such kernel.
Status SameDeclaredTypes(const OnnxNode& n) {
  int32_t first = 0;
  for (int i = 0; i < n.num_inputs(); ++i) {
    const int32_t t = n.declared_type(i);
    if (t == 0) continue;
    if (first == 0) first = t;
    if (t != first) {
      return UnimplementedError(n.Where() + ": inputs of different dtypes (" +
                                OnnxTypeName(first) + ", " + OnnxTypeName(t) +
                                ") are not supported");
    }
  }
  return Status::OK();
}

constexpr char kAdd[] = "Add", kSub[] = "Sub", kMul[] = "Mul", kDiv[] = "Div",
               kPow[] = "Pow", kMax[] = "Max", kMin[] = "Min", kSum[] = "Sum",
               kMean[] = "Mean", kRelu[] = "Relu", kNeg[] = "Neg",
               kAbs[] = "Abs", kExp[] = "Exp", kLog[] = "Log", kSqrt[] = "Sqrt",
               kReciprocal[] = "Reciprocal", kSigmoid[] = "Sigmoid",
               kTanh[] = "Tanh", kMatMul[] = "MatMul", kGemm[] = "Gemm",
               kIdentity[] = "Identity", kTranspose[] = "Transpose",
               kConcat[] = "Concat", kExpand[] = "Expand", kArgMax[] = "ArgMax",
               kArgMin[] = "ArgMin";

template <const char* kOp>
Status Same(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  return Direct(n, out, kOp);
}

// Pow: the exponent may have another dtype than the base from opset 12.
Status Pow(const OnnxNode& n, NodeDef* out) {
  if (n.opset() < 12) WEFT_RETURN_IF_ERROR(SameDeclaredTypes(n));
  return Same<kPow>(n, out);
}

// Softmax / LogSoftmax (and Hardmax): one axis (default -1) from opset 13;
// before, the input seen as 2-D at `axis` (default 1).
Status Softmax(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  WEFT_RETURN_IF_ERROR(Direct(n, out, n.op_type()));
  if (n.opset() < 13) {
    out->attrs["coerce_2d"] = true;
    if (!out->attrs.count("axis")) out->attrs["axis"] = int64_t{1};
  }
  return Status::OK();
}

// The seed of a random node that has none: a hash (FNV-1a) of its name, so
// that two unseeded nodes differ and a model draws the same numbers on
// every run and machine.
int64_t SeedFromName(const OnnxNode& n) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char c : n.name()) hash = (hash ^ c) * 0x100000001B3ull;
  return static_cast<int64_t>(hash >> 1);
}

// Dropout: in inference (training_mode a constant false, or a constant
// ratio of 0) Identity, or weft's Dropout when the mask is asked for;
// otherwise TrainingDropout, which draws seeded masks when the mode is true
// at Run.
Status Dropout(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 2));
  if (n.has_input(2)) {
    const Tensor* training = n.constant(2);
    const Tensor* ratio = n.constant(1);
    const bool inference =
        training != nullptr && training->dtype() == DataType::kBool &&
        training->NumElements() == 1 && !training->data<bool>()[0];
    const bool zero_ratio =
        ratio != nullptr && ratio->NumElements() == 1 &&
        ((ratio->dtype() == DataType::kFloat32 && *ratio->data<float>() == 0) ||
         (ratio->dtype() == DataType::kFloat64 && *ratio->data<double>() == 0));
    if (!inference && !zero_ratio) {
      // Training mode, or a mode known only at Run: random masks.
      out->op = "TrainingDropout";
      out->inputs = {n.input(0), n.input(2)};
      if (n.has_input(1)) out->inputs.push_back(n.input(1));
      out->attrs["seed"] = SeedFromName(n);
      return Status::OK();
    }
  }
  if (n.has_output(1)) {
    out->op = "Dropout";
  } else {
    out->op = "Identity";
  }
  out->inputs = {n.input(0)};
  return Status::OK();
}

// BatchNormalization: inference, or with training_mode = 1 weft's
// BatchNormalizationTraining (batch statistics; the running mean and
// variance as outputs 1 and 2). Opsets before 9 had `spatial`, of which
// weft implements the default (1).
Status BatchNormalization(const OnnxNode& n, NodeDef* out) {
  if (const AttributeProto* a = Attr(n, "training_mode"); a && a->i() != 0) {
    // Batch statistics, and the running ones as outputs 1 and 2.
    WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 3));
    return Direct(n, out, "BatchNormalizationTraining", -1, {"training_mode"});
  }
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  if (const AttributeProto* a = Attr(n, "spatial"); a && a->i() != 1) {
    return UnimplementedError(n.Where() + ": spatial = 0 is not supported");
  }
  return Direct(n, out, "BatchNormalization", -1,
                {"training_mode", "spatial", "is_test", "consumed_inputs"});
}

// Pad: pads and value attributes before 11, inputs (pads, constant_value)
// from 11, and from 18 an axes input that says which axes the pads are
// for. weft's Pad takes the present ones in order and flags which.
Status Pad(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  if (n.opset() < 11) return Direct(n, out, "Pad", 1);
  WEFT_RETURN_IF_ERROR(Direct(n, out, "Pad", 2));
  if (n.num_inputs() < 2 || !n.has_input(1)) {
    return InvalidArgumentError(n.Where() + ": the pads input is missing");
  }
  if (n.has_input(2)) {
    out->inputs.push_back(n.input(2));
    out->attrs["has_value"] = true;
  }
  if (n.has_input(3)) {
    out->inputs.push_back(n.input(3));
    out->attrs["has_axes"] = true;
  }
  return Status::OK();
}

// Resize: opset 10 passes (X, scales) with asymmetric coordinates and floor
// for nearest; from 11, (X, roi, scales, sizes), any of the last three
// omitted. weft's op takes the present ones in order and flags which.
Status Resize(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  WEFT_RETURN_IF_ERROR(Direct(n, out, "Resize", 1));
  if (n.opset() < 11) {
    if (!n.has_input(1)) {
      return InvalidArgumentError(n.Where() + ": scales is missing");
    }
    out->inputs.push_back(n.input(1));
    out->attrs["has_scales"] = true;
    out->attrs["coordinate_transformation_mode"] = std::string("asymmetric");
    out->attrs["nearest_mode"] = std::string("floor");
    return Status::OK();
  }
  const char* flags[] = {"has_roi", "has_scales", "has_sizes"};
  for (int i = 1; i <= 3; ++i) {
    if (!n.has_input(i)) continue;
    out->inputs.push_back(n.input(i));
    out->attrs[flags[i - 1]] = true;
  }
  return Status::OK();
}

// DynamicQuantizeLinear: three outputs (y, y_scale, y_zero_point).
Status DynamicQuantizeLinear(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 3));
  return Direct(n, out, "DynamicQuantizeLinear");
}

// Unique: up to four outputs; no axis attribute means the flattened input.
Status Unique(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 4));
  WEFT_RETURN_IF_ERROR(Direct(n, out, "Unique"));
  out->attrs["has_axis"] = int64_t{Attr(n, "axis") != nullptr ? 1 : 0};
  return Status::OK();
}

// Upsample (opsets 9 to 10, deprecated for Resize): (X, scales) as Resize
// at opset 10. Opsets 7 and 8 gave the scales as an attribute.
Status Upsample(const OnnxNode& n, NodeDef* out) {
  if (n.opset() < 9) {
    return UnimplementedError(n.Where() +
                              ": Upsample before opset 9 (scales as an "
                              "attribute) is not supported");
  }
  return Resize(n, out);
}

// Scatter (opsets 9 to 10, deprecated): ScatterElements under its old name.
Status Scatter(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  return Direct(n, out, "ScatterElements");
}

// RNN, GRU, LSTM: X, W, R, then any of B, sequence_lens, initial_h,
// initial_c (LSTM), P (LSTM) omitted or not; weft's op takes the present ones
// in order and lists their ONNX indices. Output 0 (Y) may be omitted.
Status Recurrent(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, n.op_type() == "LSTM" ? 3 : 2));
  if (n.num_inputs() < 3 || !n.has_input(1) || !n.has_input(2)) {
    return InvalidArgumentError(n.Where() + ": needs X, W and R");
  }
  if (!Attr(n, "hidden_size")) {
    return UnimplementedError(n.Where() +
                              ": hidden_size must be given (weft does not "
                              "infer it from W)");
  }
  WEFT_RETURN_IF_ERROR(Direct(n, out, n.op_type(), 3));
  std::vector<int64_t> present;
  for (int i = 3; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) continue;
    out->inputs.push_back(n.input(i));
    present.push_back(i);
  }
  out->attrs["optional_inputs"] = std::move(present);
  return Status::OK();
}

// SoftmaxCrossEntropyLoss: log_prob is output 1 when asked for.
Status SoftmaxCrossEntropyLoss(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 2));
  return Direct(n, out, "SoftmaxCrossEntropyLoss");
}

// OptionalHasElement: from opset 18 the input may be omitted, an empty
// optional, so the answer is a constant false.
Status OptionalHasElement(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  if (n.has_input(0)) return Direct(n, out, "OptionalHasElement");
  out->op = "Const";
  out->inputs.clear();
  out->attrs = {{"value", Tensor::Scalar(false)}, {"dtype", DataType::kBool}};
  return Status::OK();
}

// StringSplit (20): the pieces and their counts.
Status StringSplit(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 2));
  return Direct(n, out, "StringSplit");
}

// MaxPool: Indices is output 1 when asked for.
Status MaxPool(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 2));
  return Direct(n, out, "MaxPool");
}

// Cast to bfloat16 truncates in ONNX's reference before opset 19 (and the
// node suite expects it), and rounds to nearest even from 19, as weft's
// Cast does by default. `saturate` (19, default 1) applies to float8
// outputs only; weft's Cast takes it as it is. Opset 24's `round_mode`
// concerns float8e8m0, which weft does not read.
Status CastOf(const OnnxNode& n, NodeDef* out, int inputs) {
  WEFT_RETURN_IF_ERROR(Direct(n, out, "Cast", inputs));
  if (n.opset() < 19) {
    out->attrs["bfloat16_rounding"] = std::string("truncate");
  }
  return Status::OK();
}

Status Cast(const OnnxNode& n, NodeDef* out) { return CastOf(n, out, -1); }

Status Reshape(const OnnxNode& n, NodeDef* out) {
  return Direct(n, out, "Reshape", 2);
}

// Split's sizes: an attribute before 13, an optional input from 13; from
// 18 the num_outputs attribute may ask for equal parts instead (the last
// one smaller), which weft's Split makes when it has no sizes.
Status Split(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(Direct(n, out, "Split", n.opset() >= 13 ? 2 : 1));
  const int64_t outputs = n.num_outputs();
  if (const AttributeProto* a = Attr(n, "num_outputs")) {
    if (n.opset() < 18) {
      return UnimplementedError(n.Where() +
                                ": attribute 'num_outputs' is not part of "
                                "Split before opset 18");
    }
    if (n.has_input(1)) {
      return InvalidArgumentError(
          n.Where() + ": give either the split input or num_outputs, not both");
    }
    if (a->i() != outputs) {
      return InvalidArgumentError(
          n.Where() + ": num_outputs is " + std::to_string(a->i()) +
          " but the node has " + std::to_string(outputs) + " outputs");
    }
  }
  out->attrs["num_outputs"] = outputs;
  return Status::OK();
}

// Slice's bounds: attributes before 10, inputs (with steps) from 10.
Status Slice(const OnnxNode& n, NodeDef* out) {
  if (n.opset() >= 10 && n.num_inputs() < 3) {
    return InvalidArgumentError(n.Where() + ": needs data, starts and ends");
  }
  return Direct(n, out, "Slice", n.opset() < 10 ? 1 : 5);
}

// ReduceSum takes axes as an input from opset 13, the other reductions from
// 18; weft's reductions take it as an optional second input.
Status Reduce(const OnnxNode& n, NodeDef* out) {
  const bool axes_input =
      n.opset() >= 18 || (n.op_type() == "ReduceSum" && n.opset() >= 13);
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  return Direct(n, out, n.op_type(), axes_input ? 2 : 1);
}

// GroupNormalization: scale and bias per group at opset 18, per channel
// from 21 (which also adds stash_type; weft computes in double).
Status GroupNormalization(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  if (const AttributeProto* a = Attr(n, "stash_type"); a && a->i() != 1) {
    return UnimplementedError(n.Where() + ": stash_type " +
                              std::to_string(a->i()) + " is not supported");
  }
  WEFT_RETURN_IF_ERROR(
      Direct(n, out, "GroupNormalization", -1, {"stash_type"}));
  out->attrs["per_channel"] = n.opset() >= 21;
  return Status::OK();
}

Status LayerNormalization(const OnnxNode& n, NodeDef* out) {
  if (const AttributeProto* a = Attr(n, "stash_type"); a && a->i() != 1) {
    return UnimplementedError(n.Where() + ": stash_type " +
                              std::to_string(a->i()) + " is not supported");
  }
  return Direct(n, out, "LayerNormalization", -1, {"stash_type"});
}

// RoiAlign: opset 10 had no coordinate_transformation_mode and behaved as
// "output_half_pixel"; 16 added it with "half_pixel" the default.
Status RoiAlign(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  WEFT_RETURN_IF_ERROR(Direct(n, out, "RoiAlign"));
  if (n.opset() < 16) {
    out->attrs["coordinate_transformation_mode"] =
        std::string("output_half_pixel");
  }
  return Status::OK();
}

// STFT (signal, frame_step[, window][, frame_length]): either optional input
// may be omitted; weft's node lists those given and says which.
Status Stft(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  WEFT_RETURN_IF_ERROR(Direct(n, out, "STFT", 2));
  if (!n.has_input(1)) {
    return InvalidArgumentError(n.Where() + ": input 'frame_step' is missing");
  }
  out->attrs["has_window"] = n.has_input(2);
  out->attrs["has_frame_length"] = n.has_input(3);
  for (int i = 2; i < 4; ++i) {
    if (n.has_input(i)) out->inputs.push_back(n.input(i));
  }
  return Status::OK();
}

// The random ops. ONNX's seed is a float and optional: weft's is an int,
// and a node without one gets SeedFromName. A -Like op or Bernoulli without
// `dtype` takes its input's.
Status RandomOp(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  const bool has_input =
      n.op_type().ends_with("Like") || n.op_type() == "Bernoulli";
  out->op = n.op_type();
  if (has_input) out->inputs.push_back(n.input(0));
  for (const AttributeProto& a : n.proto().attribute()) {
    if (a.name() == "seed") {
      if (a.type() != AttributeProto::FLOAT) {
        return WrongAttrType(n, a, "FLOAT");
      }
      // |seed| < 2^63, or the conversion to int64 is undefined.
      if (!std::isfinite(a.f()) || std::fabs(a.f()) >= 0x1p63f) {
        return InvalidArgumentError(n.Where() + ": seed " +
                                    std::to_string(a.f()) +
                                    " is not an integer in the int64 range");
      }
      out->attrs["seed"] = static_cast<int64_t>(a.f());
      continue;
    }
    AttrType type = AttrType::kFloat;
    if (a.name() == "dtype") {
      type = AttrType::kType;
    } else if (a.name() == "shape") {
      if (a.type() != AttributeProto::INTS) {
        return WrongAttrType(n, a, "INTS");
      }
      out->attrs["shape"] =
          PartialShape(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
      continue;
    } else if (a.name() != "low" && a.name() != "high" && a.name() != "mean" &&
               a.name() != "scale") {
      return UnimplementedError(n.Where() + ": attribute '" + a.name() +
                                "' is not supported");
    }
    WEFT_ASSIGN_OR_RETURN(out->attrs[a.name()], ConvertAttr(n, a, type));
  }
  if (out->attrs.count("seed") == 0) out->attrs["seed"] = SeedFromName(n);
  if (has_input && out->attrs.count("dtype") == 0) {
    const auto dtype = FromOnnxType(n.declared_type(0));
    if (!dtype) {
      return UnimplementedError(n.Where() +
                                ": no dtype attribute and the input's type is "
                                "not declared");
    }
    out->attrs["dtype"] = *dtype;
  }
  return Status::OK();
}

// Adagrad, Adam, Momentum (ai.onnx.preview.training): R, T, then the tensors;
// weft's node counts them.
Status TrainingOptimizer(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(Direct(n, out, n.op_type()));
  if (out->inputs.size() != static_cast<size_t>(n.num_inputs())) {
    return InvalidArgumentError(n.Where() + ": an input is empty");
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (!n.has_output(i)) {
      return UnimplementedError(n.Where() + ": omitting output " +
                                std::to_string(i) + " is not supported");
    }
  }
  out->attrs["num_inputs"] = static_cast<int64_t>(n.num_inputs() - 2);
  out->attrs["num_outputs"] = static_cast<int64_t>(n.num_outputs());
  return Status::OK();
}

// A com.microsoft op that an expansion wrote for the weft op of its name
// (IsConvertedContribOp); a node of that name in another domain is refused,
// `hint` appended.
Status ConvertedContribOp(const OnnxNode& n, NodeDef* out,
                          const std::string& hint) {
  if (!IsConvertedContribOp(n.proto().domain(), n.op_type())) {
    return UnimplementedError(n.Where() + ": op '" + n.op_type() +
                              "' is not supported" + hint);
  }
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  return Direct(n, out, n.op_type());
}

// weft's MatMulNBits, from the expansion of com.microsoft MatMulNBits
// (contrib_ops.cc): A, B, scales and zero points (float32 [N, k_blocks])
// [, bias]. The default domain has no such op.
Status MatMulNBits(const OnnxNode& n, NodeDef* out) {
  return ConvertedContribOp(n, out, " (com.microsoft has one)");
}

// weft's CheckInRange, from the expansion of com.microsoft
// GroupQueryAttention (decoder_ops.cc): a value checked before it indexes.
Status CheckInRange(const OnnxNode& n, NodeDef* out) {
  return ConvertedContribOp(n, out, "");
}

// The ops whose weft form has the ONNX name, inputs and attributes.
Status SameName(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  return Direct(n, out, n.op_type());
}

// Squeeze / Unsqueeze: axes an attribute before 13, an optional input from.
Status AxesOp(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  return Direct(n, out, n.op_type(), n.opset() >= 13 ? 2 : 1);
}

// Clip: min and max attributes before 11, optional inputs from 11. weft's
// kernel takes the inputs in order; for an omitted min before a given max,
// a constant float max becomes the attribute, and any other max is the
// node's one bound input with max_only set. From 11 an omitted bound is the
// input type's lowest or highest value, not opset 6's float range (a double
// beyond float's range stays as it is): the attributes say +-infinity,
// which the kernel saturates to its type.
Status Clip(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  if (n.opset() < 11) return Direct(n, out, "Clip", 1);
  if (!n.has_input(1)) {
    WEFT_RETURN_IF_ERROR(Direct(n, out, "Clip", 1));
    out->attrs["min"] = -std::numeric_limits<double>::infinity();
    out->attrs["max"] = std::numeric_limits<double>::infinity();
    if (!n.has_input(2)) return Status::OK();
    const Tensor* max = n.constant(2);
    if (max == nullptr || max->NumElements() != 1 ||
        (max->dtype() != DataType::kFloat32 &&
         max->dtype() != DataType::kFloat64)) {
      // A max known at Run (or not float): the one bound input is the max.
      out->inputs.push_back(n.input(2));
      out->attrs["max_only"] = true;
      return Status::OK();
    }
    out->attrs["max"] = max->dtype() == DataType::kFloat32
                            ? double{*max->data<float>()}
                            : *max->data<double>();
    return Status::OK();
  }
  return Direct(n, out, "Clip", 3);
}

// ConstantOfShape: `value` defaults to float32 0; the output dtype is the
// value's.
Status ConstantOfShape(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(Direct(n, out, "ConstantOfShape"));
  auto it = out->attrs.find("value");
  if (it == out->attrs.end()) {
    out->attrs["value"] = Tensor::Scalar(0.0f);
    it = out->attrs.find("value");
  }
  out->attrs["dtype"] = it->second.get_if<Tensor>()->dtype();
  return Status::OK();
}

// The dtype attribute a converter needs from input i's declared type.
StatusOr<DataType> DeclaredDtype(const OnnxNode& n, int i) {
  const int32_t declared = n.declared_type(i);
  if (declared == 0) {
    return UnimplementedError(n.Where() + ": the type of input " +
                              std::to_string(i) +
                              " must be declared (value_info) for this op");
  }
  const auto dtype = FromOnnxType(declared);
  if (!dtype) {
    return UnimplementedError(n.Where() + ": dtype " + OnnxTypeName(declared) +
                              " is not supported");
  }
  return *dtype;
}

// EyeLike: the output dtype is the attribute's, else the input's.
Status EyeLike(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(Direct(n, out, "EyeLike"));
  if (!out->attrs.count("dtype")) {
    WEFT_ASSIGN_OR_RETURN(DataType dtype, DeclaredDtype(n, 0));
    out->attrs["dtype"] = dtype;
  }
  return Status::OK();
}

// CastLike: Cast to the declared type of the second input.
Status CastLike(const OnnxNode& n, NodeDef* out) {
  WEFT_ASSIGN_OR_RETURN(DataType dtype, DeclaredDtype(n, 1));
  WEFT_RETURN_IF_ERROR(CastOf(n, out, 1));
  out->attrs["to"] = dtype;
  return Status::OK();
}

// DFT: the axis an attribute (default 1) before 20, an optional scalar
// input (default -2) from 20, which weft needs as a constant.
Status Dft(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  if (n.opset() < 20) return Direct(n, out, "DFT");
  WEFT_RETURN_IF_ERROR(Direct(n, out, "DFT", 2));
  int64_t axis = -2;
  if (n.has_input(2)) {
    const Tensor* given = n.constant(2);
    if (given == nullptr || given->NumElements() != 1 ||
        (given->dtype() != DataType::kInt64 &&
         given->dtype() != DataType::kInt32)) {
      return UnimplementedError(
          n.Where() +
          ": the axis input must be a constant int32 or int64 "
          "scalar");
    }
    axis = given->dtype() == DataType::kInt64 ? given->data<int64_t>()[0]
                                              : given->data<int32_t>()[0];
  }
  out->attrs["axis"] = axis;
  return Status::OK();
}

// DeformConv: B and mask are both optional, so a mask may follow an
// omitted B; the weft op takes whichever are given after offset, and
// attributes that say which.
Status DeformConv(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  WEFT_RETURN_IF_ERROR(Direct(n, out, "DeformConv", 3));
  if (out->inputs.size() != 3) {
    return InvalidArgumentError(n.Where() +
                                ": inputs X, W and offset are required");
  }
  for (int i : {3, 4}) {
    if (n.has_input(i)) out->inputs.push_back(n.input(i));
  }
  out->attrs["has_bias"] = n.has_input(3);
  out->attrs["has_mask"] = n.has_input(4);
  return Status::OK();
}

// GridSample: opset 20 renamed the modes (linear, cubic) and allowed
// volumetric grids (weft's kernel samples those linearly or nearest).
Status GridSample(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  WEFT_RETURN_IF_ERROR(Direct(n, out, "GridSample"));
  if (n.opset() >= 20) {
    const AttributeProto* mode = Attr(n, "mode");
    const std::string name = mode != nullptr ? mode->s() : "linear";
    if (name == "linear" || name == "cubic" || name == "nearest") {
      out->attrs["mode"] = name == "linear"  ? std::string("bilinear")
                           : name == "cubic" ? std::string("bicubic")
                                             : name;
    }
  }
  return Status::OK();
}

// QuantizeLinear: `saturate` (19) applies to float8 outputs only.
// `precision` (23) names the type x / y_scale is
// divided in; weft's kernel divides in float32, the only scale type it
// takes, so float32 (or unset, the scale's type) is what it computes.
Status QuantizeLinear(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  if (const AttributeProto* precision = Attr(n, "precision");
      precision != nullptr && precision->i() != 0 &&
      precision->i() != onnx::TensorProto::FLOAT) {
    return UnimplementedError(
        n.Where() + ": precision " + std::to_string(precision->i()) +
        " (an ONNX element type) is not supported: weft divides x by y_scale "
        "in float32 (precision 1)");
  }
  return Direct(n, out, "QuantizeLinear", -1, {"precision"});
}

// Compress: ONNX flattens the input when the node has no axis.
Status Compress(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(Direct(n, out, "Compress"));
  out->attrs["has_axis"] = int64_t{Attr(n, "axis") != nullptr ? 1 : 0};
  return Status::OK();
}

// TopK: K is an input from opset 10 (an attribute before).
Status TopK(const OnnxNode& n, NodeDef* out) {
  if (n.opset() < 10) {
    return UnimplementedError(n.Where() + ": opset " +
                              std::to_string(n.opset()) +
                              " (k as an attribute) is not supported");
  }
  return Direct(n, out, "TopK");
}

// Optional: with an input, the optional holding it; without, an empty
// optional of the type the `type` attribute gives.
Status OptionalOp(const OnnxNode& n, NodeDef* out) {
  WEFT_RETURN_IF_ERROR(NoExtraOutputs(n, 1));
  if (n.has_input(0)) return Direct(n, out, "Optional", 1, {"type"});
  out->op = "EmptyOptional";
  const AttributeProto* type = n.FindAttr("type");
  if (type == nullptr || type->type() != AttributeProto::TYPE_PROTO) {
    return InvalidArgumentError(n.Where() +
                                ": an Optional without an input needs the "
                                "'type' attribute");
  }
  WEFT_ASSIGN_OR_RETURN(
      int32_t code,
      OnnxValueTypeCode(type->tp(), n.Where() + ", attribute 'type'"));
  const auto dtype = FromOnnxValueType(code);
  if (!dtype || IsOptionalType(*dtype)) {
    return UnimplementedError(n.Where() + ": attribute 'type': " +
                              OnnxValueTypeString(code) + " is not supported");
  }
  out->attrs["V"] = *dtype;
  return Status::OK();
}

// ONNX ops whose weft op has the same name, inputs and attributes.
// clang-format off
constexpr const char* kSameNameOps[] = {
    "Shape", "Size", "Flatten", "Range", "Tile", "Trilu", "DepthToSpace",
    "SpaceToDepth", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
    "And", "Or", "Xor", "Not", "Where", "IsNaN", "IsInf", "Sin", "Cos", "Tan",
    "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erf",
    "Floor", "Ceil", "Round", "Sign", "Softplus", "Softsign", "LeakyRelu",
    "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "ThresholdedRelu",
    "Shrink", "PRelu", "Mod", "Gather", "GatherElements", "ScatterElements",
    "GatherND", "ScatterND", "OneHot", "CumSum", "Conv", "ConvTranspose",
    "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool",
    "LpNormalization", "Mish", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
    "BitwiseNot", "CenterCropPad", "Col2Im",
    "InstanceNormalization", "LRN", "NegativeLogLikelihoodLoss", "BitShift",
    "HannWindow", "HammingWindow", "BlackmanWindow", "NonZero",
    "ReverseSequence", "Det", "MeanVarianceNormalization", "DequantizeLinear",
    "MatMulInteger", "QLinearMatMul", "ConvInteger", "QLinearConv", "MaxUnpool", "MelWeightMatrix", "TfIdfVectorizer", "NonMaxSuppression", "Einsum", "Gelu", "AffineGrid",
    "SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceAt",
    "SequenceErase", "SequenceLength", "SplitToSequence", "ConcatFromSequence",
    "OptionalGetElement", "StringNormalizer",
    "StringConcat", "RegexFullMatch", "ImageDecoder",
};
// clang-format on

const std::map<std::string, Converter>& Converters() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, Converter>{
        {"Add", Same<kAdd>},
        {"Sub", Same<kSub>},
        {"Mul", Same<kMul>},
        {"Div", Same<kDiv>},
        {"Pow", Pow},
        {"Max", Same<kMax>},
        {"Min", Same<kMin>},
        {"Sum", Same<kSum>},
        {"Mean", Same<kMean>},
        {"Relu", Same<kRelu>},
        {"Neg", Same<kNeg>},
        {"Abs", Same<kAbs>},
        {"Exp", Same<kExp>},
        {"Log", Same<kLog>},
        {"Sqrt", Same<kSqrt>},
        {"Reciprocal", Same<kReciprocal>},
        {"Sigmoid", Same<kSigmoid>},
        {"Tanh", Same<kTanh>},
        {"MatMul", Same<kMatMul>},
        {"Gemm", Same<kGemm>},
        {"Identity", Same<kIdentity>},
        {"Transpose", Same<kTranspose>},
        {"Concat", Same<kConcat>},
        {"Expand", Same<kExpand>},
        {"ArgMax", Same<kArgMax>},
        {"ArgMin", Same<kArgMin>},
        {"Softmax", Softmax},
        {"LogSoftmax", Softmax},
        {"Dropout", Dropout},
        {"Cast", Cast},
        {"Reshape", Reshape},
        {"Split", Split},
        {"Slice", Slice},
        {"ReduceSum", Reduce},
        {"ReduceMean", Reduce},
        {"ReduceMax", Reduce},
        {"ReduceMin", Reduce},
        {"ReduceProd", Reduce},
        {"ReduceL1", Reduce},
        {"ReduceL2", Reduce},
        {"ReduceSumSquare", Reduce},
        {"ReduceLogSum", Reduce},
        {"ReduceLogSumExp", Reduce},
        {"LayerNormalization", LayerNormalization},
        {"GroupNormalization", GroupNormalization},
        {"RoiAlign", RoiAlign},
        {"STFT", Stft},
        {"MatMulNBits", MatMulNBits},
        {"CheckInRange", CheckInRange},
        {"Adagrad", TrainingOptimizer},
        {"Adam", TrainingOptimizer},
        {"Momentum", TrainingOptimizer},
        {"StringSplit", StringSplit},
        {"OptionalHasElement", OptionalHasElement},
        {"RandomUniform", RandomOp},
        {"RandomNormal", RandomOp},
        {"RandomUniformLike", RandomOp},
        {"RandomNormalLike", RandomOp},
        {"Bernoulli", RandomOp},
        {"Squeeze", AxesOp},
        {"Unsqueeze", AxesOp},
        {"Clip", Clip},
        {"ConstantOfShape", ConstantOfShape},
        {"EyeLike", EyeLike},
        {"CastLike", CastLike},
        {"QuantizeLinear", QuantizeLinear},
        {"DFT", Dft},
        {"GridSample", GridSample},
        {"DeformConv", DeformConv},
        {"Compress", Compress},
        {"Hardmax", Softmax},
        {"TopK", TopK},
        {"BatchNormalization", BatchNormalization},
        {"Pad", Pad},
        {"MaxPool", MaxPool},
        {"SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLoss},
        {"Resize", Resize},
        {"Upsample", Upsample},
        {"Unique", Unique},
        {"DynamicQuantizeLinear", DynamicQuantizeLinear},
        {"Scatter", Scatter},
        {"RNN", Recurrent},
        {"GRU", Recurrent},
        {"LSTM", Recurrent},
        {"Optional", OptionalOp},
    };
    for (const char* op : kSameNameOps) t->emplace(op, SameName);
    return t;
  }();
  return *table;
}

}  // namespace

std::string OnnxNode::Where() const {
  return "node '" + (proto_.name().empty() ? name_ : proto_.name()) +
         "' (ONNX " + proto_.op_type() + ")";
}

const AttributeProto* OnnxNode::FindAttr(const std::string& name) const {
  for (const AttributeProto& a : proto_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

Status ConvertOnnxNode(const OnnxNode& node, NodeDef* out) {
  const auto& table = Converters();
  auto it = table.find(node.op_type());
  if (it == table.end()) {
    return UnimplementedError(node.Where() + ": op '" + node.op_type() +
                              "' is not supported");
  }
  // Every op weft converts reads at least its first input and writes its
  // first output, but for the recurrent ops, whose Y may go unused, the
  // random ops that take no input, and OptionalHasElement, whose omitted
  // input is an empty optional.
  const bool takes_no_input =
      node.op_type() == "RandomUniform" || node.op_type() == "RandomNormal" ||
      node.op_type() == "SequenceEmpty" || node.op_type() == "Optional" ||
      node.op_type() == "OptionalHasElement";
  if (!node.has_input(0) && !takes_no_input) {
    return InvalidArgumentError(node.Where() + ": input 0 is missing");
  }
  const bool recurrent = node.op_type() == "RNN" || node.op_type() == "GRU" ||
                         node.op_type() == "LSTM";
  if (!node.has_output(0) && !(recurrent && node.num_outputs() > 1)) {
    return InvalidArgumentError(node.Where() + ": output 0 is missing");
  }
  return it->second(node, out);
}

bool IsOnnxOpSupported(const std::string& op_type) {
  return op_type == "Constant" || op_type == "If" || op_type == "Loop" ||
         op_type == "Scan" || op_type == "SequenceMap" ||
         Converters().count(op_type) > 0;
}

}  // namespace weft::internal
