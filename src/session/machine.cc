// weft/machine.h: reports drawn from the threading and kernel floors, here
// at the top of the library where both are in reach.
#include "weft/machine.h"

#include <cstdlib>

#include "kernels/bf16_gemm.h"
#include "kernels/blis_config.h"
#include "kernels/gemm_tile.h"
#include "kernels/int8_gemm.h"
#include "kernels/math_rows.h"
#include "ops/dnnl_matmul.h"
#include "runtime/core_budget.h"
#include "threading/cpu_info.h"
#include "threading/threading_env.h"

namespace weft {

std::vector<ThreadingVariableReading> ReadThreadingVariables() {
  const internal::ThreadingEnvironment env = internal::ReadThreadingEnvironment(
      [](const char* name) { return std::getenv(name); }, AutoCpuBudget());
  std::vector<ThreadingVariableReading> readings;
  readings.reserve(env.seen.size());
  for (const internal::EnvReading& r : env.seen) {
    readings.push_back({r.name, r.value, r.effect, r.understood});
  }
  return readings;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  return internal::FormatCpuList(cpus);
}

std::vector<int> CoresFirstPinOrder(const CpuBudget& budget) {
  return internal::PinOrder(internal::PinForm::kCoresFirst, budget);
}

std::string ActiveGemmKernelDescription() {
  return internal::DescribeActiveGemmKernel();
}

std::string DynamicProductKernelDescription() {
  return internal::DescribeDynamicProductKernel();
}

std::string PackedProductKernelDescription() {
  return "blis " + internal::ActiveBlisConfig().description;
}

std::string ActiveInt8KernelDescription() {
  return internal::DescribeActiveInt8Kernel();
}

std::string MathRowsDescription() {
  return internal::DescribeActiveMathRowsPath();
}

std::string Bf16ProductKernelDescription() {
  return internal::DescribeBf16ProductKernel();
}

std::string Int8ProductKernelDescription() {
  return internal::DescribeInt8ProductKernel();
}

std::string Bf16UnitsDescription() {
  const std::string units = internal::DescribeCpuBf16Units();
  switch (internal::ThisCpuBf16Support()) {
    case internal::Bf16Support::kNone:
      return units + " (precision bf16 refused)";
    case internal::Bf16Support::kAvailable:
      return units + " (precision bf16 available)";
    case internal::Bf16Support::kSlowerThanFp32:
      break;
  }
  return units +
         " (precision bf16 available, but slower than fp32 on this CPU: " +
         internal::kBf16SlowerThanFp32Reason + ")";
}

int KernelsComputingNow() { return internal::CoreBudget::running(); }

// Not a CoreBudget::Running member: the public header keeps the runtime's
// types out of sight, so the scope counts through the same two calls.
ComputingScope::ComputingScope()
    : counted_(!internal::CoreBudget::CountsHere()) {
  if (counted_) internal::CoreBudget::EnterComputing();
}

ComputingScope::~ComputingScope() {
  if (counted_) internal::CoreBudget::LeaveComputing();
}

}  // namespace weft
