#ifndef WEFT_SRC_TEST_SUPPORT_THREADS_H_
#define WEFT_SRC_TEST_SUPPORT_THREADS_H_

#include <dirent.h>

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

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_THREADS_H_
