// The single-threaded matrix product that every product tile of weft runs
// (MatMul, Gemm, Conv). weft's pools split a product into tiles of fixed
// shape; this is the kernel inside one tile, taken from a library:
//
//   kEigen  Eigen 3.4's product (header-only, any CPU)
//   kBlis   BLIS, serial build (Debian libblis-serial-dev, linked statically;
//           it picks its micro-kernel for the CPU at run time)
//   kDnnl   oneDNN's dnnl_sgemm (Debian libdnnl-dev, its JIT kernels for the
//           CPU) for float32, under OneOpenMpThread; Eigen's for float64,
//           which oneDNN does not multiply
//
// Which one runs is decided once per process from the CPU, never from a
// timing, so one machine always gives the same bits (docs/kernels.md has the
// measurements behind the rule). No kernel starts a thread.
#ifndef WEFT_SRC_KERNELS_GEMM_TILE_H_
#define WEFT_SRC_KERNELS_GEMM_TILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "weft/status.h"

namespace weft::internal {

enum class GemmKernel { kEigen, kBlis, kDnnl };

std::string_view GemmKernelName(GemmKernel kernel);
std::optional<GemmKernel> ParseGemmKernel(std::string_view name);

// What the CPU rule looks at.
struct CpuIdentity {
  bool amd = false;
  bool intel = false;
  bool avx2_fma = false;
  bool avx512 = false;  // F, CD, DQ, BW and VL: what BLIS's skx kernels use.
  // CPUID's display family (base plus extended): AMD's Zen 3 and Zen 4 are
  // 19h (25), Zen 5 is 1Ah (26).
  int family = 0;
};
CpuIdentity ThisCpu();

// The rule: BLIS on AMD CPUs with AVX2 and FMA (measured faster than Eigen
// and on par with OpenBLAS there), oneDNN on Intel CPUs with AVX-512
// (measured faster than Eigen, BLIS and OpenBLAS on an Intel Xeon, Emerald
// Rapids), Eigen elsewhere.
GemmKernel GemmKernelForCpu(const CpuIdentity& cpu);

// The kernel of this process: WEFT_GEMM_KERNEL ("eigen", "blis" or "dnnl")
// when set, for side-by-side measurements; otherwise
// GemmKernelForCpu(ThisCpu()). Read once; an unknown name is ignored with a
// warning on stderr.
GemmKernel ActiveGemmKernel();

// Whether WEFT_GEMM_KERNEL chose ActiveGemmKernel() (a valid name is set).
bool GemmKernelFromEnvironment();

// InvalidArgument naming WEFT_GEMM_KERNEL when it is set to anything but
// eigen, blis or dnnl: Session::Create fails on it, as on the other WEFT_*
// variables, rather than run with another kernel than the one asked for.
Status CheckGemmKernelEnvironment();

// How the active kernel was chosen, for `weft info`: "blis (per CPU: AMD
// with AVX2 and FMA)" or "eigen (WEFT_GEMM_KERNEL)".
std::string DescribeActiveGemmKernel();

// A row-major matrix operand: element (i, j) of the stored matrix is
// data[i * ld + j]; `transposed` uses the stored matrix's transpose.
template <class T>
struct GemmOperand {
  const T* data;
  int64_t ld;
  bool transposed = false;
};

// C = op(A) * op(B) + (accumulate ? C : 0), with op(A) m x k, op(B) k x n
// and C m x n row-major with leading dimension ldc. Single-threaded; for a
// given kernel and shape, each element's summation order is fixed.
// Instantiated for float and double.
template <class T>
void GemmTile(GemmKernel kernel, int64_t m, int64_t n, int64_t k,
              GemmOperand<T> a, GemmOperand<T> b, T* c, int64_t ldc,
              bool accumulate);

template <class T>
void GemmTile(int64_t m, int64_t n, int64_t k, GemmOperand<T> a,
              GemmOperand<T> b, T* c, int64_t ldc, bool accumulate) {
  GemmTile(ActiveGemmKernel(), m, n, k, a, b, c, ldc, accumulate);
}

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_GEMM_TILE_H_
