// File: controller/slurm/text_compat.h
//
// Small string helpers that Debian 12's Abseil (20220623) does not provide
// in a form usable with std::string_view:
//  * its absl::string_view is a distinct type from std::string_view, and
//    absl::StrCat & co. do not accept std::string_view: ToAbsl() bridges the
//    two without copying;
//  * it has no absl::StrContainsIgnoreCase: ContainsIgnoreCase() is one
//    (ASCII only).

#ifndef SLURMOP_CONTROLLER_SLURM_TEXT_COMPAT_H_
#define SLURMOP_CONTROLLER_SLURM_TEXT_COMPAT_H_

#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace slurmop::slurm {

inline absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// Whether `needle` occurs in `haystack`, ignoring ASCII case. An empty
// needle occurs everywhere.
inline bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) return false;
  for (size_t start = 0; start + needle.size() <= haystack.size(); ++start) {
    size_t i = 0;
    while (i < needle.size() &&
           absl::ascii_tolower(haystack[start + i]) == absl::ascii_tolower(needle[i])) {
      ++i;
    }
    if (i == needle.size()) return true;
  }
  return false;
}

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_TEXT_COMPAT_H_
