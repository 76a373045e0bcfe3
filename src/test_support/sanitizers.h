// Whether this build runs under ASan or TSan, for tests that scale their work
// or their limits down there. GCC defines __SANITIZE_*__; clang answers
// __has_feature instead, and defines neither.
#ifndef WEFT_SRC_TEST_SUPPORT_SANITIZERS_H_
#define WEFT_SRC_TEST_SUPPORT_SANITIZERS_H_

namespace weft::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif
#else
inline constexpr bool kUnderSanitizer = false;
#endif

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_SANITIZERS_H_
