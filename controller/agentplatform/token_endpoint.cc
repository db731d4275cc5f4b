// File: controller/agentplatform/token_endpoint.cc
//
// Token-endpoint plumbing shared by the credential types (see the header).

#include "controller/agentplatform/token_endpoint.h"

#include <cctype>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "controller/agentplatform/google_error.h"
#include "controller/common/bounded_json.h"
#include "controller/common/bounded_text.h"
#include "controller/common/json_members.h"
#include "controller/http/percent_encoding.h"

namespace slurmop::agentplatform {

std::string FormEncode(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [key, value] : fields) {
    if (!out.empty()) out.push_back('&');
    absl::StrAppend(&out, http::PercentEncode(key), "=", http::PercentEncode(value));
  }
  return out;
}

std::string JoinScopes(const std::vector<std::string>& scopes, std::string_view sep) {
  std::string out;
  for (const auto& s : scopes) {
    if (!out.empty()) out.append(sep);
    out += s;
  }
  return out;
}

std::string Redact(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& secret : secrets) {
    if (secret.size() < 4) continue;  // too short to be a secret; avoid mangling text
    absl::StrReplaceAll({{secret, "[REDACTED]"}}, &text);
    // Also its form-encoded spelling, in case a server echoes the request body.
    const std::string encoded = http::PercentEncode(secret);
    if (encoded != secret) absl::StrReplaceAll({{encoded, "[REDACTED]"}}, &text);
  }
  return text;
}

absl::Status RedactStatus(const absl::Status& status, const std::vector<std::string>& secrets) {
  if (status.ok()) return status;
  absl::Status out(status.code(), Redact(std::string(status.message()), secrets));
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

absl::StatusOr<AccessToken> ExchangeForToken(http::Transport& transport,
                                             const http::Request& request,
                                             const TokenExchange& exchange, Time now) {
  absl::StatusOr<http::Response> response = SendTokenRequest(transport, request, exchange);
  if (!response.ok()) return response.status();
  if (response->status < 200 || response->status >= 300) {
    return TokenEndpointError(*response, exchange);
  }
  absl::StatusOr<AccessToken> token = ParseOAuthTokenResponse(*response, now, exchange);
  if (!token.ok()) return RedactStatus(token.status(), exchange.secrets);
  return token;
}

http::Request FormPost(std::string url, std::string body, std::chrono::milliseconds timeout) {
  http::Request request;
  request.method = "POST";
  request.url = std::move(url);
  request.headers["Content-Type"] = "application/x-www-form-urlencoded";
  request.headers["Accept"] = "application/json";
  request.body = std::move(body);
  request.timeout = timeout;
  return request;
}

absl::StatusOr<http::Response> SendTokenRequest(http::Transport& transport,
                                                const http::Request& request,
                                                const TokenExchange& exchange) {
  http::Request capped = request;
  capped.max_body_bytes = kMaxTokenResponseBytes;
  absl::StatusOr<http::Response> response = transport.Send(capped);
  if (response.ok()) return response;
  const bool timeout = response.status().code() == absl::StatusCode::kDeadlineExceeded;
  return RedactStatus(absl::UnavailableError(absl::StrCat(
                          "could not reach ", exchange.what, timeout ? " (timed out): " : ": ",
                          response.status().message(), "; ", exchange.hint)),
                      exchange.secrets);
}

absl::Status TokenEndpointError(const http::Response& response, const TokenExchange& exchange) {
  const nlohmann::json body = ParseBoundedJson(response.body, kMaxRemoteJsonDepth);
  std::string error;        // OAuth "error" or Google "status"
  std::string description;  // OAuth "error_description" or Google "message"
  if (body.is_object() && body.contains("error")) {
    const nlohmann::json& e = body["error"];
    if (e.is_string()) {
      error = e.get<std::string>();
      description = StringMember(body, "error_description");
    } else if (e.is_object()) {
      error = StringMember(e, "status");
      description = StringMember(e, "message");
    }
  }

  absl::StatusCode code = absl::StatusCode::kUnauthenticated;
  const int s = response.status;
  if (s >= 500 || s == 408 || s == 429 || error == "internal_failure" || error == "server_error" ||
      error == "temporarily_unavailable" || error == "UNAVAILABLE") {
    code = absl::StatusCode::kUnavailable;
  } else if (s == 403 || error == "access_denied" || error == "unauthorized_client" ||
             error == "PERMISSION_DENIED") {
    code = absl::StatusCode::kPermissionDenied;
  }

  std::string detail;
  if (!error.empty()) detail = error;
  if (!description.empty()) absl::StrAppend(&detail, detail.empty() ? "" : ": ", description);
  // Redacted before it is cut: a cut through a secret would leave its start unredacted.
  detail = CutText(Redact(detail, exchange.secrets), kMaxRemoteMessageBytes);
  if (detail.empty() && !body.is_object()) detail = DescribeUnquotedBody(response);
  std::string message = absl::StrCat(exchange.what, " answered HTTP ", s);
  if (!detail.empty()) absl::StrAppend(&message, " (", detail, ")");
  if (!exchange.hint.empty()) absl::StrAppend(&message, "; ", exchange.hint);
  return RedactStatus(absl::Status(code, message), exchange.secrets);
}

absl::StatusOr<nlohmann::json> ParseJsonObject(const http::Response& response,
                                               const TokenExchange& exchange) {
  nlohmann::json body = ParseBoundedJson(response.body, kMaxRemoteJsonDepth);
  if (!body.is_object()) {
    return absl::UnavailableError(absl::StrCat(exchange.what, " answered HTTP ", response.status,
                                               " with a body that is not a JSON object; ",
                                               exchange.hint));
  }
  return body;
}

absl::StatusOr<AccessToken> ParseOAuthTokenResponse(const http::Response& response, Time now,
                                                    const TokenExchange& exchange,
                                                    bool require_token_type) {
  absl::StatusOr<nlohmann::json> body = ParseJsonObject(response, exchange);
  if (!body.ok()) return body.status();
  auto malformed = [&](absl::string_view why) {
    return absl::UnavailableError(
        absl::StrCat(exchange.what, " answered with an unusable token response (", why, ")"));
  };
  const auto token = body->find("access_token");
  if (token == body->end() || !token->is_string() || token->get<std::string>().empty()) {
    return malformed("no access_token");
  }
  const auto expires_in = body->find("expires_in");
  if (expires_in == body->end() || !expires_in->is_number() || !(expires_in->get<double>() > 0)) {
    return malformed("no positive expires_in");
  }
  // Checked before the conversion below (a double beyond int64 is undefined
  // behaviour there); NaN fails both comparisons.
  if (!(expires_in->get<double>() <= kMaxTokenLifetimeSeconds)) {
    return malformed(absl::StrCat("expires_in is over ", kMaxTokenLifetimeSeconds, " s"));
  }
  if (require_token_type) {
    const std::string type = StringMember(*body, "token_type");
    if (absl::AsciiStrToLower(type) != "bearer") return malformed("token_type is not Bearer");
  }
  const auto lifetime =
      std::chrono::milliseconds(static_cast<int64_t>(expires_in->get<double>() * 1000));
  return AccessToken{token->get<std::string>(),
                     now + std::chrono::duration_cast<Time::duration>(lifetime)};
}

}  // namespace slurmop::agentplatform
