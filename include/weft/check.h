// Contract checks, for conditions that only a programming error can break.
//
//   WEFT_CHECK(n >= 0, "ParallelFor needs n >= 0");
//   WEFT_DCHECK(queue_.empty(), "the queue drained before shutdown");
//
// WEFT_CHECK is always on: when the condition is false it prints
// "weft: check failed: <condition> (<message>) at <file>:<line>" to stderr
// and aborts. WEFT_DCHECK does the same in debug builds (NDEBUG unset) and in
// sanitizer builds, and compiles to nothing otherwise: use it on hot paths.
// The message is evaluated only when the check fails.
//
// Bad input (a file, a feed, an option value) is never a check: it is a
// Status naming what is wrong. A check states a contract that the caller of
// an API broke, where continuing would read or write out of bounds.
#ifndef WEFT_CHECK_H_
#define WEFT_CHECK_H_

#include <string_view>

namespace weft {

// Prints the failed check and aborts. Called by the macros below.
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              std::string_view message);

}  // namespace weft

#define WEFT_CHECK(condition, message)                                \
  do {                                                                \
    if (!(condition)) [[unlikely]] {                                  \
      ::weft::CheckFailed(__FILE__, __LINE__, #condition, (message)); \
    }                                                                 \
  } while (false)

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WEFT_DCHECK_IS_ON 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WEFT_DCHECK_IS_ON 1
#endif
#endif
#if !defined(WEFT_DCHECK_IS_ON) && !defined(NDEBUG)
#define WEFT_DCHECK_IS_ON 1
#endif

#if defined(WEFT_DCHECK_IS_ON)
#define WEFT_DCHECK(condition, message) WEFT_CHECK(condition, message)
#else
// Type-checks the condition without evaluating it.
#define WEFT_DCHECK(condition, message) \
  do {                                  \
    if (false) {                        \
      (void)(condition);                \
    }                                   \
  } while (false)
#endif

#endif  // WEFT_CHECK_H_
