// File: controller/http/url_parts.h
//
// The one place an absolute http(s) URL is taken apart, for both transports
// (CpprestTransport and the one-shot connections of SpareConnectionClient).

#ifndef SLURMOP_CONTROLLER_HTTP_URL_PARTS_H_
#define SLURMOP_CONTROLLER_HTTP_URL_PARTS_H_

#include <string>

#include "absl/status/statusor.h"

namespace slurmop::http {

struct UrlParts {
  bool https = false;
  std::string base;       // "scheme://authority", as written
  std::string authority;  // "host[:port]" (user info, if any, included)
  std::string target;     // "/path?query": always starts with '/', fragment removed
};

// kInvalidArgument for a URL without scheme, with a scheme other than http
// or https (case-insensitive), or without host.
absl::StatusOr<UrlParts> SplitHttpUrl(const std::string& url);

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_URL_PARTS_H_
