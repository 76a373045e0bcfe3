#ifndef WEFT_SRC_TEST_SUPPORT_THREADS_H_
#define WEFT_SRC_TEST_SUPPORT_THREADS_H_

#include <dirent.h>

#include <fstream>
#include <string>

namespace weft::test {

// Threads of this process now (entries of /proc/self/task).
inline int CountProcessThreads() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++count;
    }
    closedir(dir);
  }
  return count;
}

// Threads of this process whose name starts with "weft-" (pool workers,
// blocking-pool threads): unlike CountProcessThreads, blind to threads a
// sanitizer's runtime starts on its own.
inline int CountWeftThreads() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      std::ifstream comm(std::string("/proc/self/task/") + entry->d_name +
                         "/comm");
      std::string name;
      if (std::getline(comm, name) && name.rfind("weft-", 0) == 0) ++count;
    }
    closedir(dir);
  }
  return count;
}

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_THREADS_H_
