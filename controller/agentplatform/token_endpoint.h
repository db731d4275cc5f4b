// File: controller/agentplatform/token_endpoint.h
//
// Shared plumbing for talking to token endpoints (OAuth2 token endpoint,
// STS, IAM Credentials, metadata server): form encoding, sending through the
// transport, parsing token responses, and turning failures into statuses
// that tell the user what to check.
//
// Contract:
//  * SendTokenRequest() returns the response for any HTTP status; a
//    transport failure becomes kUnavailable ("could not reach <what>"). It
//    reads at most kMaxTokenResponseBytes of the answer.
//  * TokenEndpointError() maps an error response: 5xx, 408, 429 and the
//    OAuth errors internal_failure/server_error/temporarily_unavailable ->
//    kUnavailable; 403, access_denied, unauthorized_client, PERMISSION_DENIED
//    -> kPermissionDenied; other 4xx -> kUnauthenticated. The message names
//    the endpoint, the server's error text (from a JSON error body only: a
//    body that is not JSON is described by its size and type, never quoted,
//    see DescribeUnquotedBody) and `hint`.
//  * ParseOAuthTokenResponse() accepts expires_in in (0, 7 days].
//  * Every message is passed through Redact() with the request's secrets
//    before it leaves this file, so no token, assertion, refresh token or
//    client secret can appear in it even if a server echoes one.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_TOKEN_ENDPOINT_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_TOKEN_ENDPOINT_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/agentplatform/cached_token_source.h"
#include "controller/common/clock.h"
#include "controller/http/http_transport.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {

inline constexpr char kGoogleTokenUri[] = "https://oauth2.googleapis.com/token";

// The largest answer read from a token endpoint, the metadata server, the IAM
// Credentials API or a subject-token URL: 1 MiB (a token answer is a few KB).
inline constexpr size_t kMaxTokenResponseBytes = size_t{1} << 20;
// The longest token lifetime accepted (expires_in): 7 days. Google's access
// tokens live at most 12 h; anything beyond a week is a broken or hostile
// endpoint (and a huge value would overflow the expiry's time point).
inline constexpr double kMaxTokenLifetimeSeconds = 7 * 24 * 3600;

// application/x-www-form-urlencoded body, fields in the given order.
std::string FormEncode(const std::vector<std::pair<std::string, std::string>>& fields);
// Joins scopes with `sep`.
std::string JoinScopes(const std::vector<std::string>& scopes, std::string_view sep);

// Replaces every occurrence of each non-empty secret by "[REDACTED]".
std::string Redact(std::string text, const std::vector<std::string>& secrets);
absl::Status RedactStatus(const absl::Status& status, const std::vector<std::string>& secrets);

// Describes one exchange for error messages, e.g. what = "the OAuth2 token
// endpoint https://oauth2.googleapis.com/token", hint = "check that ...".
struct TokenExchange {
  std::string what;
  std::string hint;
  std::vector<std::string> secrets;  // redacted from every message
};

absl::StatusOr<http::Response> SendTokenRequest(http::Transport& transport,
                                                const http::Request& request,
                                                const TokenExchange& exchange);

absl::Status TokenEndpointError(const http::Response& response, const TokenExchange& exchange);

// Parses a 2xx JSON body; kUnavailable when it is not a JSON object.
absl::StatusOr<nlohmann::json> ParseJsonObject(const http::Response& response,
                                               const TokenExchange& exchange);

// Reads {"access_token","expires_in","token_type"} (RFC 6749 §5.1); token_type
// must be Bearer (case-insensitive) when `require_token_type`.
absl::StatusOr<AccessToken> ParseOAuthTokenResponse(const http::Response& response, Time now,
                                                    const TokenExchange& exchange,
                                                    bool require_token_type = true);

// The whole grant of an OAuth2 token (refresh token, JWT bearer, STS token
// exchange): sends `request`, maps a non-2xx answer with TokenEndpointError
// and reads a 2xx one with ParseOAuthTokenResponse; every error redacted.
absl::StatusOr<AccessToken> ExchangeForToken(http::Transport& transport,
                                             const http::Request& request,
                                             const TokenExchange& exchange, Time now);

// An HTTP request with a form body to `url`.
http::Request FormPost(std::string url, std::string body, std::chrono::milliseconds timeout);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_TOKEN_ENDPOINT_H_
