// Kernels: the code that computes an op. A kernel sees only its
// KernelContext: inputs, outputs, attributes, and ParallelFor on the intra-op
// pool; never a pool, a session or the executor.
//
//   class SquareKernel : public weft::OpKernel {
//    public:
//     weft::Status Compute(weft::KernelContext& ctx) const override {
//       const weft::Tensor& x = ctx.input(0);
//       WEFT_ASSIGN_OR_RETURN(weft::Tensor* y, ctx.AllocateOutput(0,
//       x.shape())); ctx.ParallelFor(x.NumElements(), 1.0, [&](int64_t b,
//       int64_t e) {
//         for (int64_t i = b; i < e; ++i)
//           y->data<float>()[i] = x.data<float>()[i] * x.data<float>()[i];
//       });
//       return weft::Status::OK();
//     }
//   };
//   weft::RegisterKernel("Square", weft::KernelFactoryFor<SquareKernel>());
#ifndef WEFT_KERNEL_H_
#define WEFT_KERNEL_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/attr.h"
#include "weft/parallel_for.h"
#include "weft/prepared_weights.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

// What a kernel factory sees once, when the graph is compiled.
class KernelConstruction {
 public:
  KernelConstruction(const std::string& node_name, const std::string& op,
                     const AttrMap& attrs,
                     const std::vector<DataType>& input_dtypes,
                     const std::vector<DataType>& output_dtypes,
                     const std::vector<PartialShape>& input_shapes,
                     const std::vector<PartialShape>& output_shapes,
                     const std::vector<const Tensor*>& constant_inputs,
                     bool batch_invariant = false, bool bf16 = false,
                     PreparedWeights* prepared_weights = nullptr)
      : node_name_(node_name),
        op_(op),
        attrs_(attrs),
        input_dtypes_(input_dtypes),
        output_dtypes_(output_dtypes),
        input_shapes_(input_shapes),
        output_shapes_(output_shapes),
        constant_inputs_(constant_inputs),
        batch_invariant_(batch_invariant),
        bf16_(bf16),
        prepared_weights_(prepared_weights) {}

  const std::string& node_name() const { return node_name_; }
  const std::string& op() const { return op_; }
  // Attributes with defaults filled in, type-checked against the op.
  const AttrMap& attrs() const { return attrs_; }
  // Attribute `name`, which the op declares with C++ type T. Asking for one
  // it does not declare, or as another type, returns an empty T and makes
  // status() (and so compiling the graph) an error naming the attribute.
  template <class T>
  const T& attr(const std::string& name) const {
    return AttrOrRecordError<T>(attrs_, name, &status_);
  }
  // The first error attr() met.
  const Status& status() const { return status_; }
  const std::vector<DataType>& input_dtypes() const { return input_dtypes_; }
  const std::vector<DataType>& output_dtypes() const { return output_dtypes_; }
  const std::vector<PartialShape>& input_shapes() const {
    return input_shapes_;
  }
  const std::vector<PartialShape>& output_shapes() const {
    return output_shapes_;
  }
  // Input i's value when a Const node produces it, else null. Every Run
  // reads that same tensor unless a Run feeds the Const's output, so a
  // kernel may prepare from it once (pack a weight) and must check at
  // Compute that its input is still that tensor (the same raw_data()).
  const Tensor* constant_input(int i) const {
    return i >= 0 && i < static_cast<int>(constant_inputs_.size())
               ? constant_inputs_[i]
               : nullptr;
  }

  // SessionOptions::batch_invariant: the kernel must compute each row of
  // the first dimension the same way whatever the number of rows.
  bool batch_invariant() const { return batch_invariant_; }
  // SessionOptions::precision is "bf16" (and the session checked that the
  // CPU has bf16 units): a float convolution or a product against a
  // constant weight may round its operands to bf16 and sum in float32.
  bool bf16() const { return bf16_; }
  // The session's cache of prepared constants (weft/prepared_weights.h),
  // shared by every graph it compiles; null where there is none (a graph
  // compiled outside a session): then the kernel prepares its own.
  PreparedWeights* prepared_weights() const { return prepared_weights_; }

 private:
  const std::string& node_name_;
  const std::string& op_;
  const AttrMap& attrs_;
  const std::vector<DataType>& input_dtypes_;
  const std::vector<DataType>& output_dtypes_;
  const std::vector<PartialShape>& input_shapes_;
  const std::vector<PartialShape>& output_shapes_;
  const std::vector<const Tensor*>& constant_inputs_;
  const bool batch_invariant_;
  const bool bf16_;
  PreparedWeights* const prepared_weights_;
  mutable Status status_;
};

// What a kernel sees on every execution. Not thread-safe: one per execution.
class KernelContext {
 public:
  const std::string& node_name() const;
  const std::string& op() const;

  int num_inputs() const;
  // REQUIRES: 0 <= i < num_inputs(); checked (WEFT_CHECK).
  const Tensor& input(int i) const;

  int num_outputs() const;
  // REQUIRES: 0 <= i < num_outputs(); checked (WEFT_CHECK).
  DataType output_dtype(int i) const;
  // Allocates output i (zero-filled) with the dtype the op declares.
  StatusOr<Tensor*> AllocateOutput(int i, const Shape& shape);
  // As AllocateOutput without the zero fill: for kernels that write every
  // element (saves a pass over the output's memory).
  StatusOr<Tensor*> AllocateOutputUninitialized(int i, const Shape& shape);
  // Sets output i to an existing tensor (an input, to forward it).
  Status SetOutput(int i, Tensor tensor);
  // False when nothing in this Run reads output i (no consumer runs and it
  // is not fetched), as TensorFlow's OpKernelContext::output_required: a
  // kernel may then skip computing it (MaxPool's Indices). An output that is
  // not required may still be allocated.
  // REQUIRES: 0 <= i < num_outputs(); checked (WEFT_CHECK).
  bool output_required(int i) const;

  // ParallelFor / ParallelForFixedBlocks (weft/parallel_for.h) on the
  // session's intra-op pool; serial in this thread when intra = 1.
  void ParallelFor(int64_t n, double cost_per_unit_ns, RangeFn fn);
  void ParallelForFixedBlocks(int64_t n, int64_t block, RangeFn fn);
  // Threads a ParallelFor may use, counting this one.
  int intra_op_threads() const;

  // True once the Run is cancelled (an error elsewhere, a deadline, Close).
  // Long kernels should check between blocks and return
  // CancelledError() early.
  bool IsCancelled() const;
  // Waits up to `duration` without using CPU; returns false early when the
  // Run is cancelled.
  bool WaitFor(std::chrono::nanoseconds duration);

 private:
  // The executor makes contexts, and weft's own kernels reach the session's
  // resources (queues), through KernelContextInternal
  // (src/runtime/node_run.h).
  friend class KernelContextInternal;
  struct Run;  // One execution of one node; defined inside the library.
  explicit KernelContext(Run* run) : run_(run) {}

  void RecordShards(int threads);
  std::string IndexOutOfRange(const char* what, int i) const;
  int HelpersAllowed() const;
  Status Account(int output, int64_t bytes);
  StatusOr<Tensor*> Allocate(int output, const Shape& shape, bool zero_fill);

  Run* run_;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  // Called concurrently by overlapping Runs: must not modify the kernel.
  virtual Status Compute(KernelContext& ctx) const = 0;
  // Bytes the kernel prepared from its constant inputs when it was built
  // (packed weights), reported by `weft info`.
  virtual int64_t prepared_bytes() const { return 0; }
};

using KernelFactory = std::function<StatusOr<std::unique_ptr<OpKernel>>(
    const KernelConstruction&)>;

// A factory for a kernel class constructible from KernelConstruction, or
// default-constructible.
template <class K>
KernelFactory KernelFactoryFor() {
  return
      [](const KernelConstruction& c) -> StatusOr<std::unique_ptr<OpKernel>> {
        if constexpr (std::is_constructible_v<K, const KernelConstruction&>) {
          return std::unique_ptr<OpKernel>(std::make_unique<K>(c));
        } else {
          return std::unique_ptr<OpKernel>(std::make_unique<K>());
        }
      };
}

// Registers the CPU kernel of a registered op. AlreadyExists if it has one;
// NotFound if the op is not registered.
Status RegisterKernel(const std::string& op, KernelFactory factory);

// The kernel factory of an op, or null.
const KernelFactory* FindKernelFactory(const std::string& op);

// CustomOp: a node backed by a C++ callable, weft's tf.py_function. The node
//   {"op": "CustomOp", "attrs": {"function": "my_fn", "Tout": [float32],
//    "blocking": true}}
// calls the function registered under "my_fn"; Tout lists its output dtypes
// and the optional output_shapes their shapes. Mark it blocking when it waits
// (I/O, another Session::Run): it then runs on the blocking pool and holds no
// inter-op thread. Add "inter_op_bound": true when it also computes: a Run
// then runs at most as many such nodes at once as it has inter-op threads.
using CustomFunction = std::function<Status(KernelContext&)>;
Status RegisterCustomFunction(const std::string& name, CustomFunction fn);

}  // namespace weft

#endif  // WEFT_KERNEL_H_
