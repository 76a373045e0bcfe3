// The guard around every call into oneDNN (the product tiles, NhwcConv, the
// products with a constant weight). Debian builds oneDNN on OpenMP; a call
// made without this guard would start an OpenMP team of one thread per CPU
// beside weft's pools, and its blocking would depend on the core count.
#ifndef WEFT_SRC_KERNELS_ONE_OPENMP_THREAD_H_
#define WEFT_SRC_KERNELS_ONE_OPENMP_THREAD_H_

namespace weft::internal {

// For its scope, oneDNN (and anything else on OpenMP) runs with one OpenMP
// thread on the calling weft thread, so that no library thread computes;
// the caller's own OpenMP setting is put back afterwards.
class OneOpenMpThread {
 public:
  OneOpenMpThread();
  ~OneOpenMpThread();
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

 private:
  int previous_;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_ONE_OPENMP_THREAD_H_
