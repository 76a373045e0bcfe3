// The OpenBLAS peer of the product benchmarks. weft links BLIS statically
// for its own tiles; this checks that the benchmark's cblas_sgemm is still
// OpenBLAS's (pthread build), so a "peer" row never measures another BLAS.
#ifndef WEFT_BENCH_OPENBLAS_PEER_H_
#define WEFT_BENCH_OPENBLAS_PEER_H_

#include <cblas.h>
#include <dlfcn.h>

#include <string>

namespace weft_bench {

// Empty when cblas_sgemm comes from OpenBLAS; otherwise what it came from.
inline std::string CblasSgemmIsNotOpenBlas() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cblas_sgemm), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "cannot tell which library cblas_sgemm comes from";
  }
  const std::string file = info.dli_fname;
  if (file.find("openblas") == std::string::npos) {
    return "cblas_sgemm resolves to " + file + ", not OpenBLAS";
  }
  return "";
}

}  // namespace weft_bench

#endif  // WEFT_BENCH_OPENBLAS_PEER_H_
