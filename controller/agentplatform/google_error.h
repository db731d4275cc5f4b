// File: controller/agentplatform/google_error.h
//
// Google API errors (AIP-193, google.rpc.Status over HTTP/JSON) to
// absl::Status:
//   {"error": {"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED",
//              "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
//                           "retryDelay": "1.5s"},
//                          {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
//                           "reason": "RATE_LIMIT_EXCEEDED", ...}]}}
//
// Contract:
//  * The code comes from error.status when it names a canonical code, else
//    from the HTTP status (google/rpc/code.proto mapping; 408 and 502 ->
//    UNAVAILABLE; other 4xx -> FAILED_PRECONDITION; other 5xx -> INTERNAL).
//  * message = "Agent Platform: <error.message>" (or "HTTP <status> with a
//    N-byte <type> body that is not a JSON error (not quoted)"), plus
//    " (retry after <delay>)" when the server suggested a delay. A body that
//    is not JSON is never quoted, not even in part: Google's front ends
//    answer errors as google.rpc.Status JSON, so such a body comes from
//    something else (a proxy, a listed non-Google host, an internal service
//    a URL was pointed at), and quoting it into a SlurmCluster's status would
//    read that service's answer back to whoever wrote the URL.
//  * The delay is the larger of RetryInfo.retryDelay and the Retry-After
//    header (delta-seconds or HTTP-date); RetryDelay() reads it back. A
//    delay above 24 h (from either source) is taken as 24 h.
//    ErrorInfo.reason is kept as a payload; ErrorReason() reads it back.
//  * The status carries no transport payload, so http::MayHaveBeenDelivered()
//    answers true for it (conservative: the request reached Google).

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_GOOGLE_ERROR_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_GOOGLE_ERROR_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "controller/common/clock.h"
#include "controller/http/http_transport.h"

namespace slurmop::agentplatform {

// Canonical code from its name ("UNAVAILABLE"); nullopt if unknown.
std::optional<absl::StatusCode> CodeFromName(std::string_view name);
// Canonical code for an HTTP status, per google/rpc/code.proto.
absl::StatusCode CodeFromHttpStatus(int http_status);

// A google.protobuf.Duration in JSON form ("1.5s", "30s", "0.000001s").
std::optional<std::chrono::milliseconds> ParseDurationString(std::string_view s);
// A Retry-After header value: delta-seconds or an HTTP-date relative to now.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value, Time now);
// "1.5s", "30s", "250ms".
std::string FormatDelay(std::chrono::milliseconds delay);

// The status for a non-2xx callSlurmRestApi answer. The remote's message is untrusted: `secrets`
// are redacted from it (token_endpoint.h's Redact), then it is cut to kMaxRemoteMessageBytes, in
// that order, so that no cut leaves part of a secret unredacted.
absl::Status GoogleErrorToStatus(const http::Response& response, Time now,
                                 const std::vector<std::string>& secrets = {});

// "a 1234-byte text/html body that is not a JSON error (not quoted)": how a
// remote's non-JSON body is mentioned in messages (size and sanitised
// Content-Type only).
std::string DescribeUnquotedBody(const http::Response& response);

// Attaches / reads the server-suggested retry delay.
void SetRetryDelay(absl::Status& status, std::chrono::milliseconds delay);
// The server-suggested delay attached to a RESOURCE_EXHAUSTED / UNAVAILABLE
// status, if any.
std::optional<std::chrono::milliseconds> RetryDelay(const absl::Status& status);
// ErrorInfo.reason of a Google error (e.g. "RATE_LIMIT_EXCEEDED"), or "".
std::string ErrorReason(const absl::Status& status);
// The outer HTTP status of a Google error answer, or 0 if there was none.
int ErrorHttpStatus(const absl::Status& status);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_GOOGLE_ERROR_H_
