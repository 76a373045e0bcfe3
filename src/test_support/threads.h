#ifndef WEFT_SRC_TEST_SUPPORT_THREADS_H_
#define WEFT_SRC_TEST_SUPPORT_THREADS_H_

#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

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

// The most threads this process had while `work` ran, sampled every 200
// us by one more thread (counted too).
template <class Work>
int MostProcessThreadsDuring(Work work) {
  std::atomic<bool> done{false};
  std::atomic<int> most{0};
  std::thread sampler([&] {
    while (!done.load()) {
      most = std::max(most.load(), CountProcessThreads());
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  work();
  done = true;
  sampler.join();
  return most.load();
}

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_THREADS_H_
