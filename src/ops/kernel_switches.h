// The on/off variables that override a per-CPU kernel rule, for
// side-by-side measurements (docs/configuration.md): "1" turns the kernel
// on, "0" off, unset leaves the rule. Strict like the other WEFT_*
// variables: any other value fails Session::Create with InvalidArgument
// naming it (CheckKernelSwitchEnvironment), rather than being ignored.
#ifndef WEFT_SRC_OPS_KERNEL_SWITCHES_H_
#define WEFT_SRC_OPS_KERNEL_SWITCHES_H_

#include <optional>

#include "weft/status.h"

namespace weft::internal {

enum class KernelSwitch {
  kNhwcConv,           // WEFT_NHWC_CONV: channels-last convolutions (oneDNN)
  kConvWinograd,       // WEFT_CONV_WINOGRAD: their 3 x 3 stride-1 layers as
                       // oneDNN's Winograd
  kDnnlMatMul,         // WEFT_DNNL_MATMUL: products with a constant weight
                       // through oneDNN
  kNchwWinograd,       // WEFT_NCHW_WINOGRAD: NCHW 3 x 3 stride-1 layers as
                       // Winograd over BLIS tiles
  kDnnlDynamicMatMul,  // WEFT_DNNL_DYNAMIC_MATMUL: products without a
                       // packed weight on oneDNN's sgemm tiles
  kDnnlBf16MatMul,     // WEFT_DNNL_BF16_MATMUL: precision bf16's products
                       // with a constant weight through oneDNN
  kDnnlInt8,           // WEFT_DNNL_INT8: int8 products with a
                       // constant weight through oneDNN
};

// The variable's name, "WEFT_NHWC_CONV" and so on.
const char* KernelSwitchVariable(KernelSwitch kernel_switch);

// What the variable says: nullopt when it is unset or says neither 0 nor
// 1 (CheckKernelSwitchEnvironment reports the latter).
std::optional<bool> KernelSwitchSetting(KernelSwitch kernel_switch);

// `rule`, unless the variable says 0 or 1. Callers keep the answer (read
// once per process), as a kernel choice must not change between Runs.
bool KernelSwitchOr(KernelSwitch kernel_switch, bool rule);

// InvalidArgument naming the first switch whose variable is set to
// anything but 0 or 1.
Status CheckKernelSwitchEnvironment();

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_KERNEL_SWITCHES_H_
