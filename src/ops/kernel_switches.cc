#include "ops/kernel_switches.h"

#include <cstdlib>
#include <string>
#include <string_view>

namespace weft::internal {
namespace {

struct SwitchFacts {
  KernelSwitch kernel_switch;
  const char* variable;
  const char* subject;  // What "1" turns on, for the error message.
};

constexpr SwitchFacts kSwitches[] = {
    {KernelSwitch::kNhwcConv, "WEFT_NHWC_CONV",
     "the channels-last convolutions"},
    {KernelSwitch::kConvWinograd, "WEFT_CONV_WINOGRAD",
     "their 3 x 3 layers as Winograd"},
    {KernelSwitch::kDnnlMatMul, "WEFT_DNNL_MATMUL",
     "the constant-weight products through oneDNN"},
    {KernelSwitch::kNchwWinograd, "WEFT_NCHW_WINOGRAD",
     "the NCHW 3 x 3 layers as Winograd"},
    {KernelSwitch::kDnnlDynamicMatMul, "WEFT_DNNL_DYNAMIC_MATMUL",
     "oneDNN's tiles for the products without a packed weight"},
    {KernelSwitch::kDnnlBf16MatMul, "WEFT_DNNL_BF16_MATMUL",
     "precision bf16's constant-weight products through oneDNN"},
    {KernelSwitch::kDnnlInt8, "WEFT_DNNL_INT8",
     "the int8 constant-weight products through oneDNN"},
};

const SwitchFacts& FactsOf(KernelSwitch kernel_switch) {
  for (const SwitchFacts& facts : kSwitches) {
    if (facts.kernel_switch == kernel_switch) return facts;
  }
  return kSwitches[0];  // Unreachable: every enumerator has a row.
}

// "1" on, "0" off; nullopt for an unset variable or any other value.
std::optional<bool> ParseSwitch(const char* value) {
  if (value == nullptr) return std::nullopt;
  const std::string_view text(value);
  if (text == "0" || text == "1") return text == "1";
  return std::nullopt;
}

}  // namespace

const char* KernelSwitchVariable(KernelSwitch kernel_switch) {
  return FactsOf(kernel_switch).variable;
}

std::optional<bool> KernelSwitchSetting(KernelSwitch kernel_switch) {
  return ParseSwitch(std::getenv(KernelSwitchVariable(kernel_switch)));
}

bool KernelSwitchOr(KernelSwitch kernel_switch, bool rule) {
  return KernelSwitchSetting(kernel_switch).value_or(rule);
}

Status CheckKernelSwitchEnvironment() {
  for (const SwitchFacts& facts : kSwitches) {
    const char* value = std::getenv(facts.variable);
    if (value == nullptr || ParseSwitch(value).has_value()) continue;
    return InvalidArgumentError(
        std::string(facts.variable) + "=" + value +
        " is neither 0 nor 1 (it turns " + facts.subject +
        " on or off against the CPU's rule; unset it for the rule)");
  }
  return Status::OK();
}

}  // namespace weft::internal
