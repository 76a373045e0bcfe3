// Minor page faults, for tests that check a buffer is reused rather than
// mapped afresh (glibc's mmap threshold fixed, as under Dask's nanny).
#ifndef WEFT_SRC_TEST_SUPPORT_PAGE_FAULTS_H_
#define WEFT_SRC_TEST_SUPPORT_PAGE_FAULTS_H_

#include <sys/resource.h>

namespace weft::test {

// Minor page faults of the calling thread so far.
inline long ThreadPageFaults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_PAGE_FAULTS_H_
