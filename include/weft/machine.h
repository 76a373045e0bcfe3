// What weft sees of the machine and of the process's environment, for
// reports (`weft info`): the threading variables it read and what each did,
// the CPU placement a pinning recipe would give, and the matrix-product
// kernel chosen for this CPU. The settings themselves are in
// weft/threading.h and weft/options.h.
#ifndef WEFT_MACHINE_H_
#define WEFT_MACHINE_H_

#include <string>
#include <vector>

#include "weft/threading.h"

namespace weft {

// One threading variable set in the environment (OMP_NUM_THREADS,
// TF_NUM_INTEROP_THREADS, WEFT_*, KMP_*, ...) and what weft made of it.
struct ThreadingVariableReading {
  std::string name;
  std::string value;
  std::string effect;  // "intra-op threads: 4", "not used: ... wins", ...
  bool understood = true;
};

// Every threading variable set in this process's environment, in the order
// of weft's table of them (docs/configuration.md).
std::vector<ThreadingVariableReading> ReadThreadingVariables();

// CPUs in the kernel's list format, runs collapsed: "0-3,8".
std::string FormatCpuList(const std::vector<int>& cpus);

// The CPUs that consecutive workers would be pinned to by the cores-first
// placement (one per physical core, then their SMT siblings), the one
// Intel's tuning guide asks for with KMP_AFFINITY=scatter.
std::vector<int> CoresFirstPinOrder(const CpuBudget& budget);

// The matrix-product tile kernel in use and why: "blis (per CPU: AMD with
// AVX2 and FMA)" or "eigen (WEFT_GEMM_KERNEL)".
std::string ActiveGemmKernelDescription();

// The tile kernel of the float products without a packed weight (two
// computed operands, as attention's) and why: "dnnl (per CPU: AMD family
// 1Ah with AVX-512)", "blis (the product tile kernel)";
// docs/kernels.md.
std::string DynamicProductKernelDescription();

// The BLIS configuration whose micro-kernel runs the float products with a
// packed weight where the tile kernel's own path does not (batch-invariant
// sessions: weft serve's batching, weft predict; NCHW convolutions): "skx
// (BLIS detected haswell)"; docs/kernels.md.
std::string PackedProductKernelDescription();

// The int8 product kernel in use and why: "vnni (per CPU: AVX-512 VNNI)",
// "generic (WEFT_INT8_KERNEL)"; docs/kernels.md.
std::string ActiveInt8KernelDescription();

// The loops that apply Gelu and Softmax's exponentials to whole rows, and
// why: "avx2 (per CPU: AVX2 and FMA, no AVX-512)", "portable
// (WEFT_MATH_ROWS)"; docs/kernels.md.
std::string MathRowsDescription();

// The CPU's bf16 units and what SessionOptions::precision = "bf16" does on
// them: "AVX-512 BF16 (precision bf16 available)", the same with ", but
// slower than fp32 on this CPU: ..." (an Intel CPU without AMX-BF16), or
// "none (precision bf16 refused)"; docs/kernels.md.
std::string Bf16UnitsDescription();

// The kernel of precision bf16's products with a constant weight, and why:
// "dnnl (per CPU: AMX-BF16)" (oneDNN's tile products), "weft AVX-512 BF16
// (per CPU: no AMX-BF16)", the same naming WEFT_DNNL_BF16_MATMUL where it
// chose, or "none (precision bf16 refused)"; docs/kernels.md. Batch-
// invariant sessions keep weft's own kernel.
std::string Bf16ProductKernelDescription();

// Which kernel computes the whole row tiles of the int8 products with a
// constant weight that run on the direct tiles (quantize_dynamic's
// MatMulInteger, QLinearMatMul), and why: "dnnl (per CPU: AMX-INT8)"
// (oneDNN's tile products), "weft (per CPU: no AMX-INT8)", either naming
// WEFT_DNNL_INT8 where it chose; docs/kernels.md. The sums are
// exact: the outputs' bits are the same either way.
std::string Int8ProductKernelDescription();

// Kernels computing now, in every session of the process, on any thread
// (the core budget's count: the intra-op helpers they enlist, at most the
// budget minus this count, are not included). For gauges such as the
// server's /metrics.
int KernelsComputingNow();

// While it lives, the calling thread counts against the process's core
// budget as a kernel computing does (KernelsComputingNow() includes it, and
// intra-op work enlists that many fewer helpers), unless it already counts
// (it is a kernel's thread, or inside another ComputingScope). For user
// code that computes on a thread of its own or of weft's, such as an input
// pipeline's map function, so that a pipeline and the Runs it feeds keep
// no more threads computing than the budget. Destroy it on the thread that
// made it.
class ComputingScope {
 public:
  ComputingScope();
  ~ComputingScope();
  ComputingScope(const ComputingScope&) = delete;
  ComputingScope& operator=(const ComputingScope&) = delete;

 private:
  bool counted_;
};

}  // namespace weft

#endif  // WEFT_MACHINE_H_
