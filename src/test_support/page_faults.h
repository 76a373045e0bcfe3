// Minor page faults, for tests that check a buffer is reused rather than
// mapped afresh (glibc's mmap threshold fixed, as under Dask's nanny), and
// whether the kernel may back an address with transparent huge pages.
#ifndef WEFT_SRC_TEST_SUPPORT_PAGE_FAULTS_H_
#define WEFT_SRC_TEST_SUPPORT_PAGE_FAULTS_H_

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace weft::test {

// Minor page faults of the calling thread so far.
inline long ThreadPageFaults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// The "THPeligible:" line of the mapping holding `address` in
// /proc/self/smaps: whether the kernel may back it with huge pages (-1
// where the kernel does not say).
inline int HugePageEligible(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t first = 0, last = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> first >> dash >> last && dash == '-') {
      inside = first <= at && at < last;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) {
      return std::stoi(line.substr(12));
    }
  }
  return -1;
}

inline bool TransparentHugePagesOff() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(mode, text);
  return text.empty() || text.find("[never]") != std::string::npos;
}

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_PAGE_FAULTS_H_
