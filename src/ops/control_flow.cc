// If, Loop and Scan: ONNX's control flow, as nodes that call subgraphs
// (kGraph attributes, weft/graph.h's Subgraph). Each subgraph is compiled
// once, when its node is, and every run of it goes through the executor on
// the pools of the calling Run (runtime/kernel_services.h): independent body
// nodes overlap on the inter-op pool, body kernels split over the intra-op
// pool, and a loop on a one-thread inter-op pool still completes because
// the waiting thread runs the body's nodes itself.
//
// Outer-scope reads arrive as the node's last `num_captures` inputs and
// bind the subgraph's last parameters; the ONNX importer makes them so.
#include <unistd.h>

#include <cstring>
#include <limits>

#include "framework/op_registry_impl.h"
#include "ops/registry.h"
#include "runtime/kernel_services.h"
#include "weft/container.h"

namespace weft::internal {
namespace {

using Binding = CompiledSubgraph::Binding;

Binding DtypeOnly(DataType dtype) { return Binding{dtype, {}}; }

// Checks that `subgraph`'s output `i` has `dtype`, for the node's output
// `what`.
Status CheckOutputDtype(const CompiledSubgraph& subgraph, int i, DataType dtype,
                        const std::string& what) {
  if (subgraph.output_dtype(i) != dtype) {
    return InvalidArgumentError(subgraph.what() + ": output " +
                                std::to_string(i) + " is " +
                                DataTypeName(subgraph.output_dtype(i)) +
                                ", but " + what + " is " + DataTypeName(dtype));
  }
  return Status::OK();
}

Status CheckOutputCount(const CompiledSubgraph& subgraph, int expected,
                        const std::string& why) {
  if (subgraph.num_outputs() != expected) {
    return InvalidArgumentError(
        subgraph.what() + " has " + std::to_string(subgraph.num_outputs()) +
        " outputs; " + why + " make " + std::to_string(expected));
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<CompiledSubgraph>> CompileAttr(
    const KernelConstruction& c, const char* attr,
    std::span<const Binding> bindings) {
  const SubgraphPtr& subgraph = c.attr<SubgraphPtr>(attr);
  WEFT_RETURN_IF_ERROR(c.status());
  const std::string what = "attribute '" + std::string(attr) + "'";
  if (subgraph == nullptr) return InvalidArgumentError(what + " is empty");
  return CompiledSubgraph::Compile(*subgraph, bindings, what);
}

// A one-element tensor's value as bool or int64 (cond, trip count).
StatusOr<bool> ScalarBool(const Tensor& t, const std::string& what) {
  if (t.NumElements() != 1) {
    return InvalidArgumentError(what + " has " +
                                std::to_string(t.NumElements()) +
                                " elements; it must have one");
  }
  return *t.data<bool>();
}

// Half the machine's memory: what the scan outputs of one Loop or Scan may
// hold when the session sets no memory_limit_bytes. A loop that runs away
// (a trip count of 10^15 and an output per iteration) fails with a message
// instead of taking the machine down.
int64_t DefaultStackLimitBytes() {
  static const int64_t limit = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return int64_t{4} << 30;
    return static_cast<int64_t>(pages) * page / 2;
  }();
  return limit;
}

// Makes `t` the scalar `value`, writing into its buffer when no other
// handle shares it (the body let go of last iteration's), else into a new
// one (the body kept it: a carried or scanned iteration number).
template <class T>
void SetScalar(Tensor& t, T value) {
  if (t.RefCountIsOne() && t.dtype() == DataTypeOf<T>()) {
    *t.data<T>() = value;
  } else {
    t = Tensor::Scalar<T>(value);
  }
}

// The error for outputs collected over iterations (or items) that pass the
// stacking limit: `what` would hold more than `limit_bytes` after `step`.
Status StackLimitExceeded(const std::string& what, int64_t limit_bytes,
                          const std::string& step) {
  return ResourceExhaustedError(
      what + " would hold more than " + std::to_string(limit_bytes) +
      " bytes after " + step +
      " (SessionOptions::memory_limit_bytes, or half the machine's memory "
      "when it is not set)");
}

// Per-iteration tensors of one scan output, stacked at the end.
class Stacker {
 public:
  Stacker(std::string what, int64_t limit_bytes)
      : what_(std::move(what)), limit_bytes_(limit_bytes) {}

  Status Add(Tensor slice, int64_t iteration) {
    if (!slices_.empty() && !(slice.shape() == slices_[0].shape())) {
      return InvalidArgumentError(
          what_ + ": iteration " + std::to_string(iteration) + " gives shape " +
          slice.shape().ToString() + ", iteration 0 gave " +
          slices_[0].shape().ToString() + "; every iteration must agree");
    }
    bytes_ += static_cast<int64_t>(slice.size_bytes());
    if (bytes_ > limit_bytes_) {
      return StackLimitExceeded(what_, limit_bytes_,
                                "iteration " + std::to_string(iteration));
    }
    slices_.push_back(std::move(slice));
    return Status::OK();
  }

  // Bytes one more iteration adds, once there has been one.
  int64_t slice_bytes() const {
    return slices_.empty() ? 0 : static_cast<int64_t>(slices_[0].size_bytes());
  }

  // The slices stacked along `axis` (of the result's rank), in the order
  // added or reversed. With no slices, `empty_shape` (the subgraph's output
  // shape when fully known) gives the element shape.
  StatusOr<Tensor> Stack(DataType dtype, int64_t axis, bool reverse,
                         const PartialShape& empty_shape) const {
    std::vector<int64_t> element;
    if (!slices_.empty()) {
      element = slices_[0].shape().dims();
    } else if (empty_shape.IsFullyDefined()) {
      element = empty_shape.dims();
    }
    const int64_t rank = static_cast<int64_t>(element.size()) + 1;
    if (axis < -rank || axis >= rank) {
      return InvalidArgumentError(what_ + ": axis " + std::to_string(axis) +
                                  " is out of range for rank " +
                                  std::to_string(rank));
    }
    if (axis < 0) axis += rank;
    const int64_t count = static_cast<int64_t>(slices_.size());
    std::vector<int64_t> dims = element;
    dims.insert(dims.begin() + axis, count);
    WEFT_ASSIGN_OR_RETURN(Tensor out,
                          Tensor::CreateUninitialized(dtype, Shape(dims)));
    if (count == 0) return out;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= element[d];
    const size_t inner =
        slices_[0].size_bytes() / static_cast<size_t>(outer > 0 ? outer : 1);
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t t = 0; t < count; ++t) {
      const Tensor& slice = slices_[reverse ? count - 1 - t : t];
      const char* src = static_cast<const char*>(slice.raw_data());
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(dst + (o * count + t) * inner, src + o * inner, inner);
      }
    }
    return out;
  }

 private:
  std::string what_;
  int64_t limit_bytes_;
  int64_t bytes_ = 0;
  std::vector<Tensor> slices_;
};

int64_t StackLimitBytes(KernelContext& ctx) {
  const int64_t session_limit = SessionMemoryLimitBytes(ctx);
  return session_limit > 0 ? session_limit : DefaultStackLimitBytes();
}

// --- If ----------------------------------------------------------------------

class IfKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    auto kernel = std::unique_ptr<IfKernel>(new IfKernel());
    std::vector<Binding> bindings;
    for (size_t i = 1; i < c.input_dtypes().size(); ++i) {
      bindings.push_back({c.input_dtypes()[i], c.input_shapes()[i]});
    }
    const auto& tout = c.attr<std::vector<DataType>>("Tout");
    for (const char* branch : {"then_branch", "else_branch"}) {
      WEFT_ASSIGN_OR_RETURN(auto compiled, CompileAttr(c, branch, bindings));
      WEFT_RETURN_IF_ERROR(CheckOutputCount(
          *compiled, static_cast<int>(tout.size()), "the node's outputs"));
      for (size_t i = 0; i < tout.size(); ++i) {
        WEFT_RETURN_IF_ERROR(
            CheckOutputDtype(*compiled, static_cast<int>(i), tout[i],
                             "the node's output " + std::to_string(i)));
      }
      (branch[0] == 't' ? kernel->then_ : kernel->else_) = std::move(compiled);
    }
    return std::unique_ptr<OpKernel>(std::move(kernel));
  }

  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(bool cond, ScalarBool(ctx.input(0), "cond"));
    const CompiledSubgraph& branch = cond ? *then_ : *else_;
    std::vector<Tensor> inputs;
    for (int i = 1; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i));
    SubgraphRunner runner(ctx, branch);
    std::vector<Tensor> outputs;
    WEFT_RETURN_IF_ERROR(runner.Run(inputs, &outputs, 0));
    for (size_t i = 0; i < outputs.size(); ++i) {
      WEFT_RETURN_IF_ERROR(ctx.SetOutput(static_cast<int>(i), outputs[i]));
    }
    return Status::OK();
  }

 private:
  IfKernel() = default;
  std::unique_ptr<CompiledSubgraph> then_;
  std::unique_ptr<CompiledSubgraph> else_;
};

// --- Loop --------------------------------------------------------------------

// Inputs: [M] [cond] v_initial (N) captures (C). Body: (iteration, cond,
// v (N), captures (C)) -> (cond, v (N), scan outputs (K)). Outputs: the
// final v (N), then the K scan outputs stacked along a new first axis.
class LoopKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    auto kernel = std::unique_ptr<LoopKernel>(new LoopKernel());
    LoopKernel& k = *kernel;
    k.has_trip_count_ = c.attr<bool>("has_trip_count");
    k.has_condition_ = c.attr<bool>("has_condition");
    k.num_captures_ = c.attr<int64_t>("num_captures");
    const auto& tout = c.attr<std::vector<DataType>>("Tout");
    WEFT_RETURN_IF_ERROR(c.status());
    const auto& in = c.input_dtypes();
    k.first_carried_ = (k.has_trip_count_ ? 1 : 0) + (k.has_condition_ ? 1 : 0);
    const int64_t carried =
        static_cast<int64_t>(in.size()) - k.first_carried_ - k.num_captures_;
    if (k.num_captures_ < 0 || carried < 0 ||
        carried > static_cast<int64_t>(tout.size())) {
      return InvalidArgumentError(
          std::to_string(in.size()) + " inputs do not fit has_trip_count, " +
          "has_condition, num_captures = " + std::to_string(k.num_captures_) +
          " and " + std::to_string(tout.size()) + " outputs");
    }
    k.num_carried_ = static_cast<int>(carried);
    k.num_scans_ = static_cast<int>(tout.size()) - k.num_carried_;
    for (size_t i = k.num_carried_; i < tout.size(); ++i) {
      // Scan outputs stack fixed-size elements byte by byte.
      if (IsContainerType(tout[i]) || tout[i] == DataType::kString) {
        return InvalidArgumentError(
            "scan output " + std::to_string(i - k.num_carried_) + " is " +
            DataTypeName(tout[i]) +
            "; scan outputs must be tensors of numbers or bools");
      }
    }
    if (k.has_trip_count_ && in[0] != DataType::kInt64) {
      return InvalidArgumentError(std::string("the trip count M is ") +
                                  DataTypeName(in[0]) + "; it must be int64");
    }
    if (k.has_condition_ && in[k.first_carried_ - 1] != DataType::kBool) {
      return InvalidArgumentError(std::string("the condition is ") +
                                  DataTypeName(in[k.first_carried_ - 1]) +
                                  "; it must be bool");
    }
    std::vector<Binding> bindings = {DtypeOnly(DataType::kInt64),
                                     DtypeOnly(DataType::kBool)};
    for (int i = 0; i < k.num_carried_; ++i) {
      // An optional may enter where the body gives its contents (ONNX
      // lets a value stand for an optional of it): each iteration's
      // value is wrapped to feed the next.
      const bool wrapped = in[k.first_carried_ + i] == OptionalOf(tout[i]);
      k.wrap_carried_.push_back(wrapped);
      if (in[k.first_carried_ + i] != tout[i] && !wrapped) {
        return InvalidArgumentError(
            "loop-carried value " + std::to_string(i) + " enters as " +
            DataTypeName(in[k.first_carried_ + i]) + " but the node outputs " +
            DataTypeName(tout[i]));
      }
      bindings.push_back(DtypeOnly(in[k.first_carried_ + i]));
    }
    for (int64_t i = 0; i < k.num_captures_; ++i) {
      const size_t at = k.first_carried_ + k.num_carried_ + i;
      bindings.push_back({in[at], c.input_shapes()[at]});
    }
    WEFT_ASSIGN_OR_RETURN(k.body_, CompileAttr(c, "body", bindings));
    WEFT_RETURN_IF_ERROR(
        CheckOutputCount(*k.body_, 1 + static_cast<int>(tout.size()),
                         "the condition, " + std::to_string(k.num_carried_) +
                             " loop-carried values and " +
                             std::to_string(k.num_scans_) + " scan outputs"));
    WEFT_RETURN_IF_ERROR(
        CheckOutputDtype(*k.body_, 0, DataType::kBool, "the condition"));
    for (size_t i = 0; i < tout.size(); ++i) {
      WEFT_RETURN_IF_ERROR(
          CheckOutputDtype(*k.body_, static_cast<int>(i) + 1, tout[i],
                           "the node's output " + std::to_string(i)));
    }
    return std::unique_ptr<OpKernel>(std::move(kernel));
  }

  Status Compute(KernelContext& ctx) const override {
    int64_t trip_count = std::numeric_limits<int64_t>::max();
    if (has_trip_count_) {
      const Tensor& m = ctx.input(0);
      if (m.NumElements() != 1) {
        return InvalidArgumentError("the trip count M has " +
                                    std::to_string(m.NumElements()) +
                                    " elements; it must have one");
      }
      trip_count = *m.data<int64_t>();
      if (trip_count < 0) {
        return InvalidArgumentError("the trip count M is " +
                                    std::to_string(trip_count) +
                                    "; it must be >= 0");
      }
    }
    bool cond = true;
    if (has_condition_) {
      WEFT_ASSIGN_OR_RETURN(
          cond, ScalarBool(ctx.input(first_carried_ - 1), "the condition"));
    }
    std::vector<Tensor> inputs(2 + num_carried_ + num_captures_);
    for (int i = 0; i < num_carried_ + num_captures_; ++i) {
      inputs[2 + i] = ctx.input(first_carried_ + i);
    }
    const int64_t limit = StackLimitBytes(ctx);
    std::vector<Stacker> scans;
    for (int k = 0; k < num_scans_; ++k) {
      scans.emplace_back("scan output " + std::to_string(k), limit);
    }
    SubgraphRunner runner(ctx, *body_);
    std::vector<Tensor> outputs;
    int64_t i = 0;
    for (; i < trip_count && cond; ++i) {
      SetScalar(inputs[0], i);
      SetScalar(inputs[1], cond);
      WEFT_RETURN_IF_ERROR(runner.Run(inputs, &outputs, i));
      WEFT_ASSIGN_OR_RETURN(
          bool next, ScalarBool(outputs[0], "the body's condition output"));
      // Without a condition input the body's condition is ignored (ONNX).
      if (has_condition_) cond = next;
      for (int k = 0; k < num_carried_; ++k) {
        if (wrap_carried_[k]) {
          WEFT_ASSIGN_OR_RETURN(
              inputs[2 + k],
              MakeOptional(outputs[1 + k].dtype(), std::move(outputs[1 + k])));
        } else {
          inputs[2 + k] = std::move(outputs[1 + k]);
        }
      }
      for (int k = 0; k < num_scans_; ++k) {
        WEFT_RETURN_IF_ERROR(
            scans[k].Add(std::move(outputs[1 + num_carried_ + k]), i));
      }
      if (i == 0) WEFT_RETURN_IF_ERROR(CheckProjectedBytes(scans, trip_count));
    }
    for (int k = 0; k < num_carried_; ++k) {
      Tensor value = inputs[2 + k];
      if (wrap_carried_[k]) {
        const Tensor* contents = OptionalValue(value);
        if (contents == nullptr) {
          return InvalidArgumentError(
              "loop-carried value " + std::to_string(k) +
              " is an empty optional after the last iteration; the node "
              "outputs " +
              DataTypeName(ctx.output_dtype(k)));
        }
        value = *contents;
      }
      WEFT_RETURN_IF_ERROR(ctx.SetOutput(k, std::move(value)));
    }
    for (int k = 0; k < num_scans_; ++k) {
      const int out = num_carried_ + k;
      WEFT_ASSIGN_OR_RETURN(Tensor stacked,
                            scans[k].Stack(ctx.output_dtype(out), 0, false,
                                           body_->output_shape(1 + out)));
      WEFT_RETURN_IF_ERROR(ctx.SetOutput(out, std::move(stacked)));
    }
    return Status::OK();
  }

 private:
  LoopKernel() = default;

  // A loop bounded by its trip count alone: after one iteration, whether
  // all of them would fit the stacking limit, so that an absurd M fails at
  // once instead of after filling memory.
  Status CheckProjectedBytes(const std::vector<Stacker>& scans,
                             int64_t trip_count) const {
    if (!has_trip_count_ || has_condition_ || scans.empty()) {
      return Status::OK();
    }
    int64_t per_iteration = 0;
    for (const Stacker& s : scans) per_iteration += s.slice_bytes();
    if (per_iteration > 0 &&
        trip_count > DefaultStackLimitBytes() / per_iteration) {
      return ResourceExhaustedError(
          "the trip count M = " + std::to_string(trip_count) + " times " +
          std::to_string(per_iteration) +
          " bytes of scan outputs per iteration is more than half the "
          "machine's memory");
    }
    return Status::OK();
  }

  bool has_trip_count_ = false;
  bool has_condition_ = false;
  int64_t num_captures_ = 0;
  int first_carried_ = 0;
  int num_carried_ = 0;
  int num_scans_ = 0;
  std::vector<bool> wrap_carried_;  // Enters as an optional of its type.
  std::unique_ptr<CompiledSubgraph> body_;
};

// --- SequenceMap -------------------------------------------------------------

// Inputs: input_sequence, additional inputs (sequences or tensors), captures
// (C). The body runs once per item of input_sequence, taking item i of each
// sequence input and each tensor input whole; the node's outputs are
// sequences of the body's outputs. Every sequence input must be as long as
// input_sequence.
class SequenceMapKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    auto kernel = std::unique_ptr<SequenceMapKernel>(new SequenceMapKernel());
    SequenceMapKernel& k = *kernel;
    const int64_t captures = c.attr<int64_t>("num_captures");
    const auto& tout = c.attr<std::vector<DataType>>("Tout");
    WEFT_RETURN_IF_ERROR(c.status());
    const auto& in = c.input_dtypes();
    if (captures < 0 || captures >= static_cast<int64_t>(in.size())) {
      return InvalidArgumentError(
          std::to_string(in.size()) +
          " inputs do not fit num_captures = " + std::to_string(captures));
    }
    k.num_mapped_ = static_cast<int>(in.size() - captures);
    if (!IsSequenceType(in[0])) {
      return InvalidArgumentError(
          std::string("input_sequence must be a sequence, got ") +
          DataTypeName(in[0]));
    }
    std::vector<Binding> bindings;
    for (size_t i = 0; i < in.size(); ++i) {
      const bool mapped = static_cast<int>(i) < k.num_mapped_;
      k.per_item_.push_back(mapped && IsSequenceType(in[i]));
      bindings.push_back(k.per_item_.back()
                             ? DtypeOnly(ContainedType(in[i]))
                             : Binding{in[i], c.input_shapes()[i]});
    }
    WEFT_ASSIGN_OR_RETURN(k.body_, CompileAttr(c, "body", bindings));
    WEFT_RETURN_IF_ERROR(CheckOutputCount(
        *k.body_, static_cast<int>(tout.size()), "the node's outputs"));
    for (size_t i = 0; i < tout.size(); ++i) {
      if (!IsSequenceType(tout[i])) {
        return InvalidArgumentError("output " + std::to_string(i) + " is " +
                                    DataTypeName(tout[i]) +
                                    "; SequenceMap's outputs are sequences");
      }
      WEFT_RETURN_IF_ERROR(CheckOutputDtype(
          *k.body_, static_cast<int>(i), ContainedType(tout[i]),
          "the items of the node's output " + std::to_string(i)));
    }
    return std::unique_ptr<OpKernel>(std::move(kernel));
  }

  Status Compute(KernelContext& ctx) const override {
    const size_t length = SequenceItems(ctx.input(0)).size();
    for (int i = 1; i < num_mapped_; ++i) {
      if (per_item_[i] && SequenceItems(ctx.input(i)).size() != length) {
        return InvalidArgumentError(
            "input " + std::to_string(i) + " holds " +
            std::to_string(SequenceItems(ctx.input(i)).size()) +
            " items, input_sequence " + std::to_string(length) +
            "; they must agree");
      }
    }
    std::vector<Tensor> inputs(ctx.num_inputs());
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (!per_item_[i]) inputs[i] = ctx.input(i);
    }
    const int64_t limit = StackLimitBytes(ctx);
    int64_t bytes = 0;
    std::vector<std::vector<Tensor>> items(ctx.num_outputs());
    SubgraphRunner runner(ctx, *body_);
    std::vector<Tensor> outputs;
    for (size_t n = 0; n < length; ++n) {
      for (int i = 0; i < num_mapped_; ++i) {
        if (per_item_[i]) inputs[i] = SequenceItems(ctx.input(i))[n];
      }
      WEFT_RETURN_IF_ERROR(
          runner.Run(inputs, &outputs, static_cast<int64_t>(n)));
      for (size_t k = 0; k < outputs.size(); ++k) {
        bytes += static_cast<int64_t>(outputs[k].size_bytes());
        items[k].push_back(std::move(outputs[k]));
      }
      if (bytes > limit) {
        return StackLimitExceeded("the output sequences", limit,
                                  "item " + std::to_string(n));
      }
    }
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      WEFT_ASSIGN_OR_RETURN(Tensor seq,
                            MakeSequence(ContainedType(ctx.output_dtype(k)),
                                         std::move(items[k])));
      WEFT_RETURN_IF_ERROR(ctx.SetOutput(k, std::move(seq)));
    }
    return Status::OK();
  }

 private:
  SequenceMapKernel() = default;
  int num_mapped_ = 0;
  std::vector<bool> per_item_;  // Per input: the body takes one item.
  std::unique_ptr<CompiledSubgraph> body_;
};

// --- Scan (ONNX opset 9 and later) -----------------------------------------

// Inputs: state (N), scan inputs (M), captures (C). Body: (state (N), one
// slice of each scan input (M), captures (C)) -> (state (N), scan output
// slices (K)). Outputs: the final state (N), then the K scan outputs.
class ScanKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    auto kernel = std::unique_ptr<ScanKernel>(new ScanKernel());
    ScanKernel& k = *kernel;
    const int64_t scan_inputs = c.attr<int64_t>("num_scan_inputs");
    const int64_t captures = c.attr<int64_t>("num_captures");
    const auto& tout = c.attr<std::vector<DataType>>("Tout");
    k.input_axes_ = c.attr<std::vector<int64_t>>("scan_input_axes");
    k.input_directions_ = c.attr<std::vector<int64_t>>("scan_input_directions");
    k.output_axes_ = c.attr<std::vector<int64_t>>("scan_output_axes");
    k.output_directions_ =
        c.attr<std::vector<int64_t>>("scan_output_directions");
    k.batched_ = c.attr<bool>("batched");
    WEFT_RETURN_IF_ERROR(c.status());
    const auto& in = c.input_dtypes();
    const int64_t state =
        static_cast<int64_t>(in.size()) - scan_inputs - captures;
    if (scan_inputs < 1 || captures < 0 || state < 0 ||
        state > static_cast<int64_t>(tout.size())) {
      return InvalidArgumentError(
          std::to_string(in.size()) + " inputs do not fit num_scan_inputs = " +
          std::to_string(scan_inputs) +
          ", num_captures = " + std::to_string(captures) + " and " +
          std::to_string(tout.size()) + " outputs");
    }
    k.num_state_ = static_cast<int>(state);
    k.num_scan_inputs_ = static_cast<int>(scan_inputs);
    k.num_captures_ = static_cast<int>(captures);
    k.num_scan_outputs_ = static_cast<int>(tout.size()) - k.num_state_;
    WEFT_RETURN_IF_ERROR(
        CheckListLength("scan_input_axes", k.input_axes_, k.num_scan_inputs_));
    WEFT_RETURN_IF_ERROR(CheckListLength(
        "scan_input_directions", k.input_directions_, k.num_scan_inputs_));
    WEFT_RETURN_IF_ERROR(CheckListLength("scan_output_axes", k.output_axes_,
                                         k.num_scan_outputs_));
    WEFT_RETURN_IF_ERROR(CheckListLength(
        "scan_output_directions", k.output_directions_, k.num_scan_outputs_));
    std::vector<Binding> bindings;
    for (int i = 0; i < k.num_state_; ++i) {
      if (in[i] != tout[i]) {
        return InvalidArgumentError(
            "state " + std::to_string(i) + " enters as " + DataTypeName(in[i]) +
            " but the node outputs " + DataTypeName(tout[i]));
      }
      bindings.push_back(DtypeOnly(in[i]));
    }
    for (int i = 0; i < k.num_scan_inputs_; ++i) {
      bindings.push_back(DtypeOnly(in[k.num_state_ + i]));
    }
    for (int i = 0; i < k.num_captures_; ++i) {
      const size_t at = k.num_state_ + k.num_scan_inputs_ + i;
      bindings.push_back({in[at], c.input_shapes()[at]});
    }
    WEFT_ASSIGN_OR_RETURN(k.body_, CompileAttr(c, "body", bindings));
    WEFT_RETURN_IF_ERROR(CheckOutputCount(
        *k.body_, static_cast<int>(tout.size()),
        std::to_string(k.num_state_) + " state values and " +
            std::to_string(k.num_scan_outputs_) + " scan outputs"));
    for (size_t i = 0; i < tout.size(); ++i) {
      WEFT_RETURN_IF_ERROR(
          CheckOutputDtype(*k.body_, static_cast<int>(i), tout[i],
                           "the node's output " + std::to_string(i)));
    }
    return std::unique_ptr<OpKernel>(std::move(kernel));
  }

  Status Compute(KernelContext& ctx) const override {
    std::vector<Tensor> in(static_cast<size_t>(ctx.num_inputs()));
    for (int i = 0; i < ctx.num_inputs(); ++i) in[i] = ctx.input(i);
    SubgraphRunner runner(ctx, *body_);
    std::vector<Tensor> results;
    if (!batched_) {
      WEFT_RETURN_IF_ERROR(ScanOnce(ctx, runner, in, &results));
    } else {
      WEFT_RETURN_IF_ERROR(ScanBatch(ctx, runner, in, &results));
    }
    for (size_t i = 0; i < results.size(); ++i) {
      WEFT_RETURN_IF_ERROR(ctx.SetOutput(static_cast<int>(i), results[i]));
    }
    return Status::OK();
  }

 private:
  ScanKernel() = default;

  // Opset 8's form: every state and scan input has a batch axis first, and
  // each batch entry is scanned on its own (the scan axis is then the
  // entry's first); the results are stacked back along the batch axis.
  Status ScanBatch(KernelContext& ctx, SubgraphRunner& runner,
                   const std::vector<Tensor>& in,
                   std::vector<Tensor>* results) const {
    const int batched = num_state_ + num_scan_inputs_;
    const int64_t batch = in[0].shape().rank() > 0 ? in[0].shape().dim(0) : -1;
    for (int i = 0; i < batched; ++i) {
      if (in[i].shape().rank() == 0 || in[i].shape().dim(0) != batch) {
        return InvalidArgumentError("input " + std::to_string(i) +
                                    " has shape " + in[i].shape().ToString() +
                                    "; every state and scan input needs "
                                    "the batch axis first (" +
                                    std::to_string(batch) + ")");
      }
    }
    const int64_t limit = StackLimitBytes(ctx);
    std::vector<Stacker> stacks;
    for (int k = 0; k < num_state_ + num_scan_outputs_; ++k) {
      stacks.emplace_back("output " + std::to_string(k), limit);
    }
    std::vector<Tensor> entry = in;
    std::vector<Tensor> out;
    for (int64_t b = 0; b < batch; ++b) {
      for (int i = 0; i < batched; ++i) {
        std::vector<int64_t> dims = in[i].shape().dims();
        dims.erase(dims.begin());
        WEFT_ASSIGN_OR_RETURN(
            entry[i], Tensor::CreateUninitialized(in[i].dtype(), Shape(dims)));
        const size_t bytes = entry[i].size_bytes();
        std::memcpy(entry[i].raw_data(),
                    static_cast<const char*>(in[i].raw_data()) + b * bytes,
                    bytes);
      }
      WEFT_RETURN_IF_ERROR(ScanOnce(ctx, runner, entry, &out));
      for (size_t k = 0; k < out.size(); ++k) {
        WEFT_RETURN_IF_ERROR(stacks[k].Add(std::move(out[k]), b));
      }
    }
    results->clear();
    for (int k = 0; k < num_state_ + num_scan_outputs_; ++k) {
      WEFT_ASSIGN_OR_RETURN(Tensor stacked,
                            stacks[k].Stack(ctx.output_dtype(k), 0, false,
                                            PartialShape::UnknownRank()));
      results->push_back(std::move(stacked));
    }
    return Status::OK();
  }

  // One scan over `in` (state, scan inputs, captures): `results` receives
  // the final state, then the stacked scan outputs.
  Status ScanOnce(KernelContext& ctx, SubgraphRunner& runner,
                  const std::vector<Tensor>& in,
                  std::vector<Tensor>* results) const {
    // Each scan input as (outer, length, inner bytes) around its axis.
    struct View {
      int64_t outer = 1;
      int64_t length = 0;
      size_t inner = 0;
      std::vector<int64_t> slice_dims;
      bool reverse = false;
    };
    std::vector<View> views(num_scan_inputs_);
    int64_t length = -1;
    for (int m = 0; m < num_scan_inputs_; ++m) {
      const Tensor& x = in[num_state_ + m];
      const std::vector<int64_t> dims = x.shape().dims();
      const int64_t rank = static_cast<int64_t>(dims.size());
      int64_t axis = input_axes_.empty() ? 0 : input_axes_[m];
      if (axis < -rank || axis >= rank) {
        return InvalidArgumentError("scan input " + std::to_string(m) +
                                    ": axis " + std::to_string(axis) +
                                    " is out of range for shape " +
                                    x.shape().ToString());
      }
      if (axis < 0) axis += rank;
      View& v = views[m];
      for (int64_t d = 0; d < axis; ++d) v.outer *= dims[d];
      v.length = dims[axis];
      v.slice_dims = dims;
      v.slice_dims.erase(v.slice_dims.begin() + axis);
      v.inner = DataTypeSize(x.dtype());
      for (int64_t d = axis + 1; d < rank; ++d) v.inner *= dims[d];
      v.reverse = !input_directions_.empty() && input_directions_[m] == 1;
      if (length >= 0 && v.length != length) {
        return InvalidArgumentError("scan input " + std::to_string(m) +
                                    " has " + std::to_string(v.length) +
                                    " steps along its axis, scan input 0 "
                                    "has " +
                                    std::to_string(length));
      }
      length = v.length;
    }
    std::vector<Tensor> inputs(num_state_ + num_scan_inputs_ + num_captures_);
    for (int i = 0; i < num_state_; ++i) inputs[i] = in[i];
    for (int i = 0; i < num_captures_; ++i) {
      const int at = num_state_ + num_scan_inputs_ + i;
      inputs[at] = in[at];
    }
    const int64_t limit = StackLimitBytes(ctx);
    std::vector<Stacker> scans;
    for (int k = 0; k < num_scan_outputs_; ++k) {
      scans.emplace_back("scan output " + std::to_string(k), limit);
    }
    std::vector<Tensor> outputs;
    for (int64_t t = 0; t < length; ++t) {
      for (int m = 0; m < num_scan_inputs_; ++m) {
        const View& v = views[m];
        const Tensor& x = in[num_state_ + m];
        WEFT_ASSIGN_OR_RETURN(
            Tensor slice,
            Tensor::CreateUninitialized(x.dtype(), Shape(v.slice_dims)));
        const int64_t step = v.reverse ? v.length - 1 - t : t;
        const char* src = static_cast<const char*>(x.raw_data());
        char* dst = static_cast<char*>(slice.raw_data());
        for (int64_t o = 0; o < v.outer; ++o) {
          std::memcpy(dst + o * v.inner, src + (o * v.length + step) * v.inner,
                      v.inner);
        }
        inputs[num_state_ + m] = std::move(slice);
      }
      WEFT_RETURN_IF_ERROR(runner.Run(inputs, &outputs, t));
      for (int i = 0; i < num_state_; ++i) inputs[i] = outputs[i];
      for (int k = 0; k < num_scan_outputs_; ++k) {
        WEFT_RETURN_IF_ERROR(
            scans[k].Add(std::move(outputs[num_state_ + k]), t));
      }
    }
    results->assign(inputs.begin(), inputs.begin() + num_state_);
    for (int k = 0; k < num_scan_outputs_; ++k) {
      const int out = num_state_ + k;
      WEFT_ASSIGN_OR_RETURN(
          Tensor stacked,
          scans[k].Stack(
              ctx.output_dtype(out), output_axes_.empty() ? 0 : output_axes_[k],
              !output_directions_.empty() && output_directions_[k] == 1,
              body_->output_shape(out)));
      results->push_back(std::move(stacked));
    }
    return Status::OK();
  }

  static Status CheckListLength(const char* name,
                                const std::vector<int64_t>& list, int count) {
    if (!list.empty() && static_cast<int>(list.size()) != count) {
      return InvalidArgumentError(
          std::string(name) + " has " + std::to_string(list.size()) +
          " entries; it needs " + std::to_string(count));
    }
    for (int64_t v : list) {
      if (std::string_view(name).ends_with("directions") && v != 0 && v != 1) {
        return InvalidArgumentError(std::string(name) + " holds " +
                                    std::to_string(v) + "; only 0 and 1 exist");
      }
    }
    return Status::OK();
  }

  bool batched_ = false;
  int num_state_ = 0;
  int num_scan_inputs_ = 0;
  int num_captures_ = 0;
  int num_scan_outputs_ = 0;
  std::vector<int64_t> input_axes_;
  std::vector<int64_t> input_directions_;
  std::vector<int64_t> output_axes_;
  std::vector<int64_t> output_directions_;
  std::unique_ptr<CompiledSubgraph> body_;
};

// Control flow costs what its subgraphs cost; the executor measures that.
// Until then: expensive, so that the first Run does not inline it.
double SubgraphCost(const InferenceContext&) { return 1e6; }

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"If", "runs then_branch or else_branch on its inputs, by cond"},
    {"Loop",
     "runs its body while cond holds, up to M times; stacks scan outputs"},
    {"Scan", "runs its body over slices of its scan inputs, carrying state"},
    {"SequenceMap",
     "runs its body on each item of its sequences, giving sequences"},
};

}  // namespace

void RegisterControlFlowOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  const std::vector<int64_t> none;
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("If")
                              .Input(ArgDef::Fixed("cond", DataType::kBool))
                              .Input(ArgDef::AnyList("inputs"))
                              .Output(ArgDef::TypeList("outputs", "Tout"))
                              .Attr("then_branch", AttrType::kGraph)
                              .Attr("else_branch", AttrType::kGraph)
                              .Attr("Tout", AttrType::kListType)
                              .AcceptsAnyValue("Tout")
                              .AcceptsAnyValue("inputs")
                              .SetCostFn(SubgraphCost)
                              .Build()));
  CheckRegistered(registry.RegisterKernel("If", &IfKernel::Create));
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("Loop")
                              .Input(ArgDef::AnyList("inputs"))
                              .Output(ArgDef::TypeList("outputs", "Tout"))
                              .Attr("body", AttrType::kGraph)
                              .Attr("has_trip_count", AttrType::kBool, false)
                              .Attr("has_condition", AttrType::kBool, false)
                              .Attr("num_captures", AttrType::kInt, int64_t{0})
                              .Attr("Tout", AttrType::kListType)
                              .AcceptsAnyValue("Tout")
                              .AcceptsAnyValue("inputs")
                              .SetCostFn(SubgraphCost)
                              .Build()));
  CheckRegistered(registry.RegisterKernel("Loop", &LoopKernel::Create));
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("SequenceMap")
                              .Input(ArgDef::AnyList("inputs"))
                              .Output(ArgDef::TypeList("outputs", "Tout"))
                              .Attr("body", AttrType::kGraph)
                              .Attr("num_captures", AttrType::kInt, int64_t{0})
                              .Attr("Tout", AttrType::kListType)
                              .AcceptsAnyValue("Tout")
                              .AcceptsAnyValue("inputs")
                              .SetCostFn(SubgraphCost)
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("SequenceMap", &SequenceMapKernel::Create));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Scan")
          .Input(ArgDef::AnyList("inputs"))
          .Output(ArgDef::TypeList("outputs", "Tout"))
          .Attr("body", AttrType::kGraph)
          .Attr("num_scan_inputs", AttrType::kInt)
          .Attr("num_captures", AttrType::kInt, int64_t{0})
          .Attr("scan_input_axes", AttrType::kListInt, none)
          .Attr("scan_input_directions", AttrType::kListInt, none)
          .Attr("scan_output_axes", AttrType::kListInt, none)
          .Attr("scan_output_directions", AttrType::kListInt, none)
          .Attr("batched", AttrType::kBool, false)
          .Attr("Tout", AttrType::kListType)
          .SetCostFn(SubgraphCost)
          .Build()));
  CheckRegistered(registry.RegisterKernel("Scan", &ScanKernel::Create));
}

}  // namespace weft::internal
