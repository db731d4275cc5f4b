// File: tests/testing/sanitizers.h
//
// Whether this test binary was built with a sanitizer that changes what a test can afford or
// expect: g++ says so with __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang (the sanitizer build
// of scripts/test-sanitizers.sh) only through __has_feature.
#ifndef SLURMOP_TESTS_TESTING_SANITIZERS_H_
#define SLURMOP_TESTS_TESTING_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__)
#define SLURMOP_TESTING_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLURMOP_TESTING_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define SLURMOP_TESTING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SLURMOP_TESTING_TSAN 1
#endif
#endif

namespace slurmop::testing {

// True in a build with AddressSanitizer (and so LeakSanitizer).
inline constexpr bool kAddressSanitizer =
#ifdef SLURMOP_TESTING_ASAN
    true;
#else
    false;
#endif

// True in a build with ThreadSanitizer.
inline constexpr bool kThreadSanitizer =
#ifdef SLURMOP_TESTING_TSAN
    true;
#else
    false;
#endif

}  // namespace slurmop::testing

#endif  // SLURMOP_TESTS_TESTING_SANITIZERS_H_
