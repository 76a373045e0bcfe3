#include "kernels/gemm_tile.h"

#include <blis.h>
#include <cpuid.h>
#include <oneapi/dnnl/dnnl.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "kernels/blis_config.h"
#include "kernels/one_openmp_thread.h"
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

// oneDNN's sgemm is row-major with cblas's arguments; it multiplies float32
// only, so float64 tiles keep Eigen's kernel. One OpenMP thread: the tile
// runs on its calling weft thread alone, and its blocking (so its bits)
// depends on the shape alone. A call oneDNN refuses (it checks only the
// arguments, which the caller's shapes make valid) is a bug: it aborts
// rather than leave C unwritten.
template <class T>
void DnnlTile(int64_t m, int64_t n, int64_t k, const GemmOperand<T>& a,
              const GemmOperand<T>& b, T* c, int64_t ldc, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if (k <= 0) {  // oneDNN would ask for leading dimensions of at least 1.
      if (!accumulate) {
        for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
      }
      return;
    }
    // A stored matrix of one row may come with any ld; oneDNN checks it
    // against the row's length.
    const int64_t lda = std::max(a.ld, a.transposed ? m : k);
    const int64_t ldb = std::max(b.ld, b.transposed ? k : n);
    OneOpenMpThread one_thread;
    const dnnl_status_t status = dnnl_sgemm(
        a.transposed ? 'T' : 'N', b.transposed ? 'T' : 'N', m, n, k, 1.0f,
        a.data, lda, b.data, ldb, accumulate ? 1.0f : 0.0f, c, ldc);
    if (status != dnnl_success) {
      std::fprintf(stderr,
                   "weft: dnnl_sgemm refused a %lld x %lld x %lld tile "
                   "(status %d)\n",
                   static_cast<long long>(m), static_cast<long long>(n),
                   static_cast<long long>(k), static_cast<int>(status));
      std::abort();
    }
  } else {
    EigenTile(m, n, k, a, b, c, ldc, accumulate);
  }
}

GemmKernel ChooseActiveKernel() {
  if (const char* env = std::getenv("WEFT_GEMM_KERNEL")) {
    if (auto kernel = ParseGemmKernel(env)) return *kernel;
    EmitWarning(WarningCategory::kConfiguration,
                std::string("ignoring WEFT_GEMM_KERNEL=") + env +
                    " (expected eigen, blis or dnnl)");
  }
  return GemmKernelForCpu(ThisCpu());
}

}  // namespace

std::string_view GemmKernelName(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kBlis:
      return "blis";
    case GemmKernel::kDnnl:
      return "dnnl";
    case GemmKernel::kEigen:
      break;
  }
  return "eigen";
}

std::optional<GemmKernel> ParseGemmKernel(std::string_view name) {
  if (name == "eigen") return GemmKernel::kEigen;
  if (name == "blis") return GemmKernel::kBlis;
  if (name == "dnnl") return GemmKernel::kDnnl;
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
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0) {
    const int base = static_cast<int>((eax >> 8) & 0xf);
    cpu.family =
        base + (base == 0xf ? static_cast<int>((eax >> 20) & 0xff) : 0);
  }
  return cpu;
}

GemmKernel GemmKernelForCpu(const CpuIdentity& cpu) {
  if (cpu.amd && cpu.avx2_fma) return GemmKernel::kBlis;
  if (cpu.intel && cpu.avx512) return GemmKernel::kDnnl;
  return GemmKernel::kEigen;
}

GemmKernel ActiveGemmKernel() {
  static const GemmKernel kernel = ChooseActiveKernel();
  return kernel;
}

bool GemmKernelFromEnvironment() {
  const char* env = std::getenv("WEFT_GEMM_KERNEL");
  return env != nullptr && ParseGemmKernel(env).has_value();
}

Status CheckGemmKernelEnvironment() {
  const char* env = std::getenv("WEFT_GEMM_KERNEL");
  if (env == nullptr || ParseGemmKernel(env)) return Status::OK();
  return InvalidArgumentError(std::string("WEFT_GEMM_KERNEL=") + env +
                              " is not a tile kernel (eigen, blis or dnnl; "
                              "unset it for the per-CPU choice, "
                              "docs/kernels.md)");
}

std::string DescribeActiveGemmKernel() {
  std::string name(GemmKernelName(ActiveGemmKernel()));
  if (ActiveGemmKernel() == GemmKernel::kBlis) {
    name += " " + ActiveBlisConfig().description;
  }
  if (GemmKernelFromEnvironment()) return name + " (WEFT_GEMM_KERNEL)";
  // The reason is the rule's branch (GemmKernelForCpu), not a second copy
  // of its conditions.
  switch (GemmKernelForCpu(ThisCpu())) {
    case GemmKernel::kBlis:
      return name + " (per CPU: AMD with AVX2 and FMA)";
    case GemmKernel::kDnnl:
      return name + " (per CPU: Intel with AVX-512)";
    case GemmKernel::kEigen:
      break;
  }
  return name +
         " (per CPU: neither AMD with AVX2 and FMA nor Intel with AVX-512)";
}

template <class T>
void GemmTile(GemmKernel kernel, int64_t m, int64_t n, int64_t k,
              GemmOperand<T> a, GemmOperand<T> b, T* c, int64_t ldc,
              bool accumulate) {
  if (m <= 0 || n <= 0) return;
  switch (kernel) {
    case GemmKernel::kBlis:
      BlisTile(m, n, k, a, b, c, ldc, accumulate);
      return;
    case GemmKernel::kDnnl:
      DnnlTile(m, n, k, a, b, c, ldc, accumulate);
      return;
    case GemmKernel::kEigen:
      break;
  }
  EigenTile(m, n, k, a, b, c, ldc, accumulate);
}

template void GemmTile<float>(GemmKernel, int64_t, int64_t, int64_t,
                              GemmOperand<float>, GemmOperand<float>, float*,
                              int64_t, bool);
template void GemmTile<double>(GemmKernel, int64_t, int64_t, int64_t,
                               GemmOperand<double>, GemmOperand<double>,
                               double*, int64_t, bool);

}  // namespace weft::internal
