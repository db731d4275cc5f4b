// File: controller/http/percent_encoding.h
//
// RFC 3986 percent-encoding, for URL path segments, query values and
// application/x-www-form-urlencoded fields built from outside input (project
// ids, Kubernetes names, tokens): everything but the unreserved characters
// A-Z a-z 0-9 - . _ ~ becomes %XX (upper-case hex), so no input can add a
// path segment, a query parameter or a form field.

#ifndef SLURMOP_CONTROLLER_HTTP_PERCENT_ENCODING_H_
#define SLURMOP_CONTROLLER_HTTP_PERCENT_ENCODING_H_

#include <string>
#include <string_view>

namespace slurmop::http {

std::string PercentEncode(std::string_view text);

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_PERCENT_ENCODING_H_
