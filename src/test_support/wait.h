// Helpers shared by weft's tests.
#ifndef WEFT_SRC_TEST_SUPPORT_WAIT_H_
#define WEFT_SRC_TEST_SUPPORT_WAIT_H_

#include <chrono>
#include <thread>

namespace weft::test {

// Polls condition until it holds or `limit` passes; returns its last value.
// Tests assert on the condition afterwards, so a hang becomes a failure.
template <class Condition>
bool WaitFor(Condition condition,
             std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_WAIT_H_
