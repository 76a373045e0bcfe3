#include "kernels/gemm_tile.h"

#include <blis.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "kernels/blis_config.h"
#include "weft/warnings.h"

namespace weft::internal {
namespace {

template <class T>
using RowMajor =
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap =
    Eigen::Map<const RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using MutableMap =
    Eigen::Map<RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

// The stored matrix behind op(X), which is rows x cols.
template <class T>
ConstMap<T> Stored(const GemmOperand<T>& x, int64_t rows, int64_t cols) {
  return x.transposed
             ? ConstMap<T>(x.data, cols, rows, Eigen::OuterStride<>(x.ld))
             : ConstMap<T>(x.data, rows, cols, Eigen::OuterStride<>(x.ld));
}

template <class T, class Lhs, class Rhs>
void EigenAssign(MutableMap<T>& out, const Lhs& lhs, const Rhs& rhs,
                 bool accumulate) {
  if (accumulate) {
    out.noalias() += lhs * rhs;
  } else {
    out.noalias() = lhs * rhs;
  }
}

template <class T>
void EigenTile(int64_t m, int64_t n, int64_t k, const GemmOperand<T>& a,
               const GemmOperand<T>& b, T* c, int64_t ldc, bool accumulate) {
  MutableMap<T> out(c, m, n, Eigen::OuterStride<>(ldc));
  const ConstMap<T> sa = Stored(a, m, k), sb = Stored(b, k, n);
  // Four cases so that Eigen sees each transpose as an expression, which its
  // product packs directly, instead of a copy.
  if (!a.transposed && !b.transposed) {
    EigenAssign(out, sa, sb, accumulate);
  } else if (!a.transposed) {
    EigenAssign(out, sa, sb.transpose(), accumulate);
  } else if (!b.transposed) {
    EigenAssign(out, sa.transpose(), sb, accumulate);
  } else {
    EigenAssign(out, sa.transpose(), sb.transpose(), accumulate);
  }
}

// BLIS takes a row stride and a column stride per operand, so a row-major
// matrix is (ld, 1) and a transpose is BLIS_TRANSPOSE of the stored matrix.
template <class T>
void BlisTile(int64_t m, int64_t n, int64_t k, const GemmOperand<T>& a,
              const GemmOperand<T>& b, T* c, int64_t ldc, bool accumulate) {
  T one = 1, beta = accumulate ? T(1) : T(0);
  const trans_t ta = a.transposed ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
  const trans_t tb = b.transposed ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
  // BLIS's typed API takes non-const pointers but does not write A or B.
  T* pa = const_cast<T*>(a.data);
  T* pb = const_cast<T*>(b.data);
  cntx_t* cntx = ActiveBlisConfig().cntx;
  if constexpr (std::is_same_v<T, float>) {
    bli_sgemm_ex(ta, tb, m, n, k, &one, pa, a.ld, 1, pb, b.ld, 1, &beta, c, ldc,
                 1, cntx, nullptr);
  } else {
    bli_dgemm_ex(ta, tb, m, n, k, &one, pa, a.ld, 1, pb, b.ld, 1, &beta, c, ldc,
                 1, cntx, nullptr);
  }
}

GemmKernel ChooseActiveKernel() {
  if (const char* env = std::getenv("WEFT_GEMM_KERNEL")) {
    if (auto kernel = ParseGemmKernel(env)) return *kernel;
    EmitWarning(WarningCategory::kConfiguration,
                std::string("ignoring WEFT_GEMM_KERNEL=") + env +
                    " (expected eigen or blis)");
  }
  return GemmKernelForCpu(ThisCpu());
}

}  // namespace

std::string_view GemmKernelName(GemmKernel kernel) {
  return kernel == GemmKernel::kBlis ? "blis" : "eigen";
}

std::optional<GemmKernel> ParseGemmKernel(std::string_view name) {
  if (name == "eigen") return GemmKernel::kEigen;
  if (name == "blis") return GemmKernel::kBlis;
  return std::nullopt;
}

CpuIdentity ThisCpu() {
  __builtin_cpu_init();
  CpuIdentity cpu;
  cpu.amd = __builtin_cpu_is("amd");
  cpu.intel = __builtin_cpu_is("intel");
  cpu.avx2_fma =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  cpu.avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return cpu;
}

GemmKernel GemmKernelForCpu(const CpuIdentity& cpu) {
  return cpu.amd && cpu.avx2_fma ? GemmKernel::kBlis : GemmKernel::kEigen;
}

GemmKernel ActiveGemmKernel() {
  static const GemmKernel kernel = ChooseActiveKernel();
  return kernel;
}

Status CheckGemmKernelEnvironment() {
  const char* env = std::getenv("WEFT_GEMM_KERNEL");
  if (env == nullptr || ParseGemmKernel(env)) return Status::OK();
  return InvalidArgumentError(std::string("WEFT_GEMM_KERNEL=") + env +
                              " is not a tile kernel (eigen or blis; unset "
                              "it for the per-CPU choice, docs/kernels.md)");
}

std::string DescribeActiveGemmKernel() {
  std::string name(GemmKernelName(ActiveGemmKernel()));
  if (ActiveGemmKernel() == GemmKernel::kBlis) {
    name += " " + ActiveBlisConfig().description;
  }
  const char* env = std::getenv("WEFT_GEMM_KERNEL");
  if (env != nullptr && ParseGemmKernel(env)) {
    return name + " (WEFT_GEMM_KERNEL)";
  }
  const CpuIdentity cpu = ThisCpu();
  return name + (cpu.amd && cpu.avx2_fma
                     ? " (per CPU: AMD with AVX2 and FMA)"
                     : " (per CPU: not an AMD CPU with AVX2 and FMA)");
}

template <class T>
void GemmTile(GemmKernel kernel, int64_t m, int64_t n, int64_t k,
              GemmOperand<T> a, GemmOperand<T> b, T* c, int64_t ldc,
              bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (kernel == GemmKernel::kBlis) {
    BlisTile(m, n, k, a, b, c, ldc, accumulate);
  } else {
    EigenTile(m, n, k, a, b, c, ldc, accumulate);
  }
}

template void GemmTile<float>(GemmKernel, int64_t, int64_t, int64_t,
                              GemmOperand<float>, GemmOperand<float>, float*,
                              int64_t, bool);
template void GemmTile<double>(GemmKernel, int64_t, int64_t, int64_t,
                               GemmOperand<double>, GemmOperand<double>,
                               double*, int64_t, bool);

}  // namespace weft::internal
