// Signal processing (ONNX names): the window functions HannWindow,
// HammingWindow and BlackmanWindow (opset 17). A window is a generalized
// cosine sum, w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), with
// N = size for a periodic window (the default: for spectral analysis) and
// size - 1 for a symmetric one (for filter design). Each element is computed
// in double from its index alone, on one thread, so the values do not
// depend on the thread count.
#include <cmath>
#include <numbers>
#include <optional>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

struct CosineSum {
  double a0, a1, a2;
};

// The coefficients of the ONNX definitions: Hann's 0.5 and 0.5, Hamming's
// 25/46 and 21/46, Blackman's 0.42, 0.5 and 0.08.
constexpr CosineSum kHann{0.5, 0.5, 0};
constexpr CosineSum kHamming{25.0 / 46.0, 21.0 / 46.0, 0};
constexpr CosineSum kBlackman{0.42, 0.5, 0.08};

// Windows longer than this are refused: a size is a model's, not a
// user's, and a corrupt one should fail rather than allocate terabytes.
constexpr int64_t kMaxWindowSize = int64_t{1} << 31;

template <const CosineSum& kSum>
class WindowKernel : public OpKernel {
 public:
  explicit WindowKernel(const KernelConstruction& c)
      : periodic_(c.attr<int64_t>("periodic") != 0) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& size_input = ctx.input(0);
    if (size_input.NumElements() != 1) {
      return InvalidArgumentError("size must be a scalar, got shape " +
                                  size_input.shape().ToString());
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                          IntsFromTensor(size_input, "size"));
    const int64_t size = sizes.front();
    if (size < 0 || size > kMaxWindowSize) {
      return InvalidArgumentError("size " + std::to_string(size) +
                                  " is out of range [0, 2^31]");
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, Shape{size}));
    const double period = static_cast<double>(periodic_ ? size : size - 1);
    return DispatchNumeric(y->dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      T* out = y->data<T>();
      if (period == 0) {
        // A symmetric window of one point, where ONNX's reference divides
        // by zero: 1, as in PyTorch's windows.
        if (size == 1) out[0] = T(1);
        return Status::OK();
      }
      for (int64_t n = 0; n < size; ++n) {
        const double x = 2 * std::numbers::pi * static_cast<double>(n) / period;
        out[n] = static_cast<T>(kSum.a0 - kSum.a1 * std::cos(x) +
                                kSum.a2 * std::cos(2 * x));
      }
      return Status::OK();
    });
  }

 private:
  const bool periodic_;
};

void RegisterWindow(OpRegistry& registry, const char* name,
                    KernelFactory factory) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder(name)
          .Input(ArgDef::Typed("size", "T"))
          .Output(ArgDef::Typed("output", "output_datatype"))
          .Attr("output_datatype", AttrType::kType, DataType::kFloat32,
                kNumericTypes)
          .Attr("T", AttrType::kType, std::nullopt,
                {DataType::kInt32, DataType::kInt64})
          .Attr("periodic", AttrType::kInt, int64_t{1})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, PartialShape({-1}));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(name, std::move(factory)));
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"BlackmanWindow",
     "Blackman window of a given size (periodic or symmetric)"},
    {"HammingWindow", "Hamming window of a given size (periodic or symmetric)"},
    {"HannWindow", "Hann window of a given size (periodic or symmetric)"},
};

}  // namespace

void RegisterSignalOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  RegisterWindow(registry, "HannWindow",
                 KernelFactoryFor<WindowKernel<kHann>>());
  RegisterWindow(registry, "HammingWindow",
                 KernelFactoryFor<WindowKernel<kHamming>>());
  RegisterWindow(registry, "BlackmanWindow",
                 KernelFactoryFor<WindowKernel<kBlackman>>());
}

}  // namespace weft::internal
