// File: tests/fuzz/fuzz_check.h
//
// Helpers shared by the fuzz targets of tests/fuzz.
//
// Contract:
//  * FUZZ_CHECK(cond) aborts (a finding for libFuzzer, a failure for the
//    replay test) with the file, line and condition when `cond` is false; it
//    checks the parsers' documented promises, beyond "does not crash".
//  * Input() views the fuzzer's bytes as a std::string_view.
//  * SplitHeader() splits an optional first line "<header>\n" off an input
//    whose body follows; targets use it to carry a few parameters (an HTTP
//    status, a dialect) next to the body.

#ifndef SLURMOP_TESTS_FUZZ_FUZZ_CHECK_H_
#define SLURMOP_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace slurmop::fuzz {

inline std::string_view Input(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// {first line without '\n', the rest} when the input starts with `marker`;
// else {"", the whole input}.
inline std::pair<std::string_view, std::string_view> SplitHeader(std::string_view in,
                                                                 std::string_view marker) {
  if (in.substr(0, marker.size()) != marker) return {std::string_view(), in};
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return {in, std::string_view()};
  return {in.substr(0, nl), in.substr(nl + 1)};
}

// A decimal number of at most 9 digits at the start of `s` (after `skip`
// characters); `fallback` when there is none.
inline int LeadingNumber(std::string_view s, size_t skip, int fallback) {
  int value = 0;
  size_t digits = 0;
  for (size_t i = skip; i < s.size() && digits < 9 && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
    value = value * 10 + (s[i] - '0');
  }
  return digits == 0 ? fallback : value;
}

}  // namespace slurmop::fuzz

#endif  // SLURMOP_TESTS_FUZZ_FUZZ_CHECK_H_
