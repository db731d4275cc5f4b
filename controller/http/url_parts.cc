// File: controller/http/url_parts.cc
//
// See url_parts.h.

#include "controller/http/url_parts.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace slurmop::http {

absl::StatusOr<UrlParts> SplitHttpUrl(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("URL without scheme: ", url));
  }
  const std::string scheme = absl::AsciiStrToLower(url.substr(0, scheme_end));
  if (scheme != "http" && scheme != "https") {
    return absl::InvalidArgumentError(absl::StrCat("unsupported URL scheme: ", scheme));
  }
  const size_t authority_start = scheme_end + 3;
  const size_t path_start = url.find_first_of("/?#", authority_start);
  UrlParts parts;
  parts.https = scheme == "https";
  parts.base = url.substr(0, path_start);
  if (parts.base.size() <= authority_start) {
    return absl::InvalidArgumentError(absl::StrCat("URL without host: ", url));
  }
  parts.authority = parts.base.substr(authority_start);
  parts.target = path_start == std::string::npos ? "/" : url.substr(path_start);
  if (parts.target.front() != '/') parts.target.insert(0, "/");
  if (const size_t fragment = parts.target.find('#'); fragment != std::string::npos) {
    parts.target.resize(fragment);
  }
  return parts;
}

}  // namespace slurmop::http
