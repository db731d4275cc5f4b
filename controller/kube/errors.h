// File: controller/kube/errors.h
//
// Kubernetes API errors as absl::Status values, and object keys.
//
// Contract (HTTP status of a failed call -> absl code; message = the
// metav1.Status message, or "HTTP <code>: <body>" for non-Status bodies):
//   400 kInvalidArgument    401 kUnauthenticated    403 kPermissionDenied
//   404 kNotFound           405 kUnimplemented      409 kAlreadyExists (reason
//   AlreadyExists), else kAborted (Conflict, failed preconditions)
//   410 kOutOfRange (Expired/Gone)   415 kInvalidArgument   422 kInvalidArgument
//   429 kResourceExhausted (Retry-After kept)   500 kInternal
//   other 5xx kUnavailable (504 Timeout, 503, 502 ...)   anything else kUnknown
// Every such Status carries payloads with the HTTP code, the Status reason,
// the details.causes reasons and Retry-After (header or
// details.retryAfterSeconds; negative ignored, above a day taken as a day),
// read back by the helpers below. Transport
// failures (http::TransportError) pass through unchanged.
//
// The predicates below test the absl code (and, for IsGone, also the
// reason), so a fake Client may simply return e.g. absl::NotFoundError().
// Call them qualified (kube::IsNotFound(s), kube::IsAlreadyExists(s)): absl
// has functions of the same names, and an unqualified call with an
// absl::Status argument is ambiguous through ADL.

#ifndef SLURMOP_CONTROLLER_KUBE_ERRORS_H_
#define SLURMOP_CONTROLLER_KUBE_ERRORS_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "controller/common/clock.h"
#include "controller/http/http_transport.h"

namespace slurmop::kube {

// The Status for a non-2xx response (whose body is usually a metav1.Status).
absl::Status StatusFromResponse(const http::Response& response);

// The Status for a metav1.Status object (e.g. the object of a watch ERROR
// event). `code` comes from the object; `retry_after` may add a header value.
absl::Status StatusFromKubeStatus(const nlohmann::json& kube_status,
                                  std::optional<Duration> retry_after = std::nullopt);

// absl code for an HTTP status code and a metav1 reason.
absl::StatusCode CodeForHttpStatus(int http_status, std::string_view reason);

bool IsNotFound(const absl::Status& status);       // kNotFound (404)
bool IsConflict(const absl::Status& status);       // kAborted (409 Conflict: stale resourceVersion)
bool IsAlreadyExists(const absl::Status& status);  // kAlreadyExists (409 AlreadyExists)
// kOutOfRange (410), or reason Expired/Gone: HTTP or watch ERROR event.
bool IsGone(const absl::Status& status);
bool IsInvalid(const absl::Status& status);          // HTTP 422 only (400 is kInvalidArgument too)
bool IsTooManyRequests(const absl::Status& status);  // kResourceExhausted (429)
// The request got no HTTP answer: the connection was refused, reset or timed
// out (a transport failure: kUnavailable or kDeadlineExceeded without an HTTP
// code). A 503 or 504 is an answer: that server is reachable.
bool IsUnreachable(const absl::Status& status);
// Whether a failed write may still have been applied. A 4xx answer (a conflict, not found,
// invalid, too many requests) says it was not. A 5xx may come after the commit (the API server's
// 504 Timeout says the operation may still complete), and so may a broken connection once the
// request was written (http::MayHaveBeenDelivered). A Status without an HTTP code (a fake
// client's) counts by its code: kAborted, kNotFound, kAlreadyExists, kInvalidArgument,
// kFailedPrecondition, kPermissionDenied, kUnauthenticated, kResourceExhausted and kOutOfRange
// are answers.
bool MayHaveBeenApplied(const absl::Status& status);
// 504 "Too large resource version" (cause ResourceVersionTooLarge): the
// informer relists with resourceVersion "" for it, as for IsGone().
bool IsResourceVersionTooLarge(const absl::Status& status);

// The server's Retry-After, if it sent one.
std::optional<Duration> RetryAfter(const absl::Status& status);
// HTTP status code of an API error, 0 if the Status did not come from one.
int HttpStatusCode(const absl::Status& status);
// metav1.Status reason ("NotFound", "Conflict", "Expired", ...), "" if none.
std::string StatusReason(const absl::Status& status);

// "ns/name", or "name" for cluster-scoped objects (client-go
// MetaNamespaceKeyFunc).
std::string Key(std::string_view ns, std::string_view name);
// Inverse of Key(): {"ns", "name"} or {"", "name"}.
std::pair<std::string, std::string> SplitKey(std::string_view key);
// Key of an object from its metadata.
std::string KeyOf(const nlohmann::json& object);

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_ERRORS_H_
