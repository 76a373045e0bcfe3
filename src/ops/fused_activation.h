// What FusedConv and FusedGemm do to a finished output tile while it is
// still in cache: add a residual tensor, then apply an activation. The graph
// pass that makes these ops (src/optimize/fusion_passes.cc) replaces an Add
// and an activation node, so each function here computes exactly what that
// node's kernel computes, element for element: a fused graph gives the same
// bits as the unfused one.
#ifndef WEFT_SRC_OPS_FUSED_ACTIVATION_H_
#define WEFT_SRC_OPS_FUSED_ACTIVATION_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/math_rows.h"
#include "kernels/vector_math.h"
#include "weft/attr.h"
#include "weft/status.h"

namespace weft::internal {

enum class FusedActivation {
  kNone,
  kRelu,
  kClip,
  kLeakyRelu,
  kHardSwish,
  kGelu
};

struct ActivationSpec {
  FusedActivation kind = FusedActivation::kNone;
  double alpha = 0;  // Clip: min; LeakyRelu: alpha.
  double beta = 0;   // Clip: max.
};

// The ONNX ops a fused kernel accepts as its `activation` attribute,
// registered as fusable with FusedConv (OpRegistry::MarkFusableActivation)
// for the fusion pass.
inline constexpr const char* kFusableActivations[] = {
    "Relu", "Clip", "LeakyRelu", "HardSwish", "Gelu"};

// From the `activation` ("" for none) and `activation_params` attributes:
// Clip takes [min, max], LeakyRelu [alpha], the others nothing.
inline StatusOr<ActivationSpec> ParseActivation(
    const std::string& name, const std::vector<double>& params) {
  ActivationSpec spec;
  size_t want = 0;
  if (name.empty()) {
    spec.kind = FusedActivation::kNone;
  } else if (name == "Relu") {
    spec.kind = FusedActivation::kRelu;
  } else if (name == "Clip") {
    spec.kind = FusedActivation::kClip;
    want = 2;
  } else if (name == "LeakyRelu") {
    spec.kind = FusedActivation::kLeakyRelu;
    want = 1;
  } else if (name == "HardSwish") {
    spec.kind = FusedActivation::kHardSwish;
  } else if (name == "Gelu") {
    spec.kind = FusedActivation::kGelu;
  } else {
    return InvalidArgumentError(
        "activation \"" + name +
        "\" is not one of \"\", Relu, Clip, LeakyRelu, HardSwish, Gelu");
  }
  if (params.size() != want) {
    return InvalidArgumentError(
        "activation " + name + " takes " + std::to_string(want) +
        " activation_params, got " + std::to_string(params.size()));
  }
  if (want > 0) spec.alpha = params[0];
  if (want > 1) spec.beta = params[1];
  return spec;
}

// A fused kernel's activation from its node's attributes: none when the
// node has no `activation` attribute (plain Conv or Gemm), else
// ParseActivation's result.
inline StatusOr<ActivationSpec> ActivationFromAttrs(const AttrMap& attrs) {
  auto name = attrs.find("activation");
  if (name == attrs.end()) return ActivationSpec{};
  auto params = attrs.find("activation_params");
  const std::string* text = name->second.get_if<std::string>();
  const std::vector<double>* values =
      params == attrs.end() ? nullptr
                            : params->second.get_if<std::vector<double>>();
  if (text == nullptr) {
    return InvalidArgumentError("activation must be a string");
  }
  return ParseActivation(*text, values ? *values : std::vector<double>{});
}

// Clip's bound for T, saturated as ClipKernel does.
template <class T>
T SaturateBound(double v) {
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) {
    return std::numeric_limits<T>::lowest();
  }
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  return static_cast<T>(v);
}

// Applies the activation to n elements in place (T is float or double).
template <class T>
void ApplyActivation(const ActivationSpec& spec, T* data, int64_t n) {
  static_assert(std::is_floating_point_v<T>);
  switch (spec.kind) {
    case FusedActivation::kNone:
      return;
    case FusedActivation::kRelu:  // As ReluKernel.
      for (int64_t i = 0; i < n; ++i) data[i] = std::max(data[i], T(0));
      return;
    case FusedActivation::kClip: {  // As ClipKernel: NaN stays NaN.
      const T lo = SaturateBound<T>(spec.alpha);
      const T hi = SaturateBound<T>(spec.beta);
      for (int64_t i = 0; i < n; ++i) {
        const T low = data[i] < lo ? lo : data[i];
        data[i] = low > hi ? hi : low;
      }
      return;
    }
    case FusedActivation::kLeakyRelu: {  // As activation_ops.cc.
      const T a = static_cast<T>(spec.alpha);
      for (int64_t i = 0; i < n; ++i) {
        data[i] = data[i] < T(0) ? a * data[i] : data[i];
      }
      return;
    }
    case FusedActivation::kHardSwish:  // As activation_ops.cc.
      for (int64_t i = 0; i < n; ++i) {
        const T x = data[i];
        data[i] = x * std::clamp(x / T(6) + T(0.5), T(0), T(1));
      }
      return;
    case FusedActivation::kGelu:  // As GeluKernel: 0.5 x erfc(-x / sqrt 2).
      if constexpr (std::is_same_v<T, float>) {
        GeluRow(data, data, n);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          const T x = data[i];
          data[i] = T(0.5) * x * std::erfc(-x * T(0.70710678118654752440));
        }
      }
      return;
  }
}

// ApplyActivation over a block of `rows` x `cols` elements with row stride
// `ld`: float32 Gelu's rows in one GeluRows call (the same bits as row by
// row; the rows overlap on the vector unit).
template <class T>
void ApplyActivationRows(const ActivationSpec& spec, T* data, int64_t rows,
                         int64_t cols, int64_t ld) {
  if constexpr (std::is_same_v<T, float>) {
    if (spec.kind == FusedActivation::kGelu) {
      GeluRows(data, ld, data, ld, rows, cols);
      return;
    }
  }
  for (int64_t r = 0; r < rows; ++r) ApplyActivation(spec, data + r * ld, cols);
}

// The fused epilogue over a block of `rows` x `cols` outputs with row
// stride `ld`: out += residual (when given; it points at the same element
// of a tensor of the output's shape), then the activation.
template <class T>
void FinishBlock(const ActivationSpec& spec, const T* residual, T* out,
                 int64_t rows, int64_t cols, int64_t ld) {
  if (residual != nullptr) {
    for (int64_t r = 0; r < rows; ++r) {
      T* row = out + r * ld;
      const T* z = residual + r * ld;
      for (int64_t j = 0; j < cols; ++j) row[j] = row[j] + z[j];
    }
  }
  ApplyActivationRows(spec, out, rows, cols, ld);
}

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_FUSED_ACTIVATION_H_
