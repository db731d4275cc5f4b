// File: controller/agentplatform/google_error.cc
//
// Parsing of google.rpc.Status JSON errors, RetryInfo, ErrorInfo and
// Retry-After (see the header for the contract).

#include "controller/agentplatform/google_error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "controller/agentplatform/token_endpoint.h"
#include "controller/common/bounded_json.h"
#include "controller/common/bounded_text.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {
namespace {

constexpr char kRetryDelayPayload[] = "slurmop.agentplatform/retry-delay-ms";
constexpr char kReasonPayload[] = "slurmop.agentplatform/error-reason";
constexpr char kHttpStatusPayload[] = "slurmop.agentplatform/http-status";
// Longer server-suggested delays are taken as this (a day), so that no
// conversion or deadline computed from a hint can overflow.
constexpr int64_t kMaxDelaySeconds = 86400;

std::chrono::milliseconds DelayFromSeconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(
      std::ceil(std::min(seconds, static_cast<double>(kMaxDelaySeconds)) * 1000)));
}

std::optional<std::string> PayloadString(const absl::Status& status, absl::string_view url) {
  absl::optional<absl::Cord> payload = status.GetPayload(url);
  if (!payload.has_value()) return std::nullopt;
  return std::string(*payload);
}

// RetryInfo.retryDelay: a JSON Duration string, or {"seconds","nanos"}.
std::optional<std::chrono::milliseconds> RetryInfoDelay(const nlohmann::json& detail) {
  auto it = detail.find("retryDelay");
  if (it == detail.end()) return std::nullopt;
  if (it->is_string()) return ParseDurationString(it->get<std::string>());
  if (it->is_object()) {
    double seconds = 0;
    auto s = it->find("seconds");
    auto n = it->find("nanos");
    if (s != it->end() && s->is_number()) seconds += s->get<double>();
    if (s != it->end() && s->is_string()) {
      double v = 0;
      if (absl::SimpleAtod(s->get<std::string>(), &v)) seconds += v;
    }
    if (n != it->end() && n->is_number()) seconds += n->get<double>() / 1e9;
    if (seconds >= 0 && std::isfinite(seconds)) return DelayFromSeconds(seconds);
  }
  return std::nullopt;
}

}  // namespace

std::string DescribeUnquotedBody(const http::Response& response) {
  std::string type;
  if (auto it = response.headers.find("content-type"); it != response.headers.end()) {
    for (char c : it->second) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (c == ';' || type.size() >= 64) break;
      if (absl::ascii_isalnum(u) || c == '/' || c == '+' || c == '.' || c == '-') {
        type.push_back(static_cast<char>(absl::ascii_tolower(u)));
      }
    }
  }
  return absl::StrCat("a ", response.body.size(), "-byte ", type.empty() ? "" : type + " ",
                      "body that is not a JSON error (not quoted)");
}

std::optional<absl::StatusCode> CodeFromName(std::string_view name) {
  static const std::pair<std::string_view, absl::StatusCode> kCodes[] = {
      {"OK", absl::StatusCode::kOk},
      {"CANCELLED", absl::StatusCode::kCancelled},
      {"UNKNOWN", absl::StatusCode::kUnknown},
      {"INVALID_ARGUMENT", absl::StatusCode::kInvalidArgument},
      {"DEADLINE_EXCEEDED", absl::StatusCode::kDeadlineExceeded},
      {"NOT_FOUND", absl::StatusCode::kNotFound},
      {"ALREADY_EXISTS", absl::StatusCode::kAlreadyExists},
      {"PERMISSION_DENIED", absl::StatusCode::kPermissionDenied},
      {"RESOURCE_EXHAUSTED", absl::StatusCode::kResourceExhausted},
      {"FAILED_PRECONDITION", absl::StatusCode::kFailedPrecondition},
      {"ABORTED", absl::StatusCode::kAborted},
      {"OUT_OF_RANGE", absl::StatusCode::kOutOfRange},
      {"UNIMPLEMENTED", absl::StatusCode::kUnimplemented},
      {"INTERNAL", absl::StatusCode::kInternal},
      {"UNAVAILABLE", absl::StatusCode::kUnavailable},
      {"DATA_LOSS", absl::StatusCode::kDataLoss},
      {"UNAUTHENTICATED", absl::StatusCode::kUnauthenticated},
  };
  for (const auto& [n, code] : kCodes) {
    if (n == name) return code;
  }
  return std::nullopt;
}

absl::StatusCode CodeFromHttpStatus(int s) {
  switch (s) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 408:
      return absl::StatusCode::kUnavailable;
    case 409:
      return absl::StatusCode::kAborted;
    case 412:
      return absl::StatusCode::kFailedPrecondition;
    case 416:
      return absl::StatusCode::kOutOfRange;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 499:
      return absl::StatusCode::kCancelled;
    case 501:
      return absl::StatusCode::kUnimplemented;
    case 502:
    case 503:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      break;
  }
  if (s >= 200 && s < 300) return absl::StatusCode::kOk;
  if (s >= 400 && s < 500) return absl::StatusCode::kFailedPrecondition;
  if (s >= 500 && s < 600) return absl::StatusCode::kInternal;
  return absl::StatusCode::kUnknown;
}

std::optional<std::chrono::milliseconds> ParseDurationString(std::string_view in) {
  absl::string_view s = absl::StripAsciiWhitespace(absl::string_view(in.data(), in.size()));
  if (!absl::ConsumeSuffix(&s, "s") || s.empty()) return std::nullopt;
  double seconds = 0;
  if (!absl::SimpleAtod(s, &seconds) || !std::isfinite(seconds) || seconds < 0) {
    return std::nullopt;
  }
  return DelayFromSeconds(seconds);
}

std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view in, Time now) {
  absl::string_view value = absl::StripAsciiWhitespace(absl::string_view(in.data(), in.size()));
  if (value.empty()) return std::nullopt;
  int64_t seconds = 0;
  if (absl::SimpleAtoi(value, &seconds)) {
    if (seconds < 0) return std::nullopt;
    return std::chrono::milliseconds(std::min(seconds, kMaxDelaySeconds) * 1000);
  }
  // HTTP-date (RFC 9110 IMF-fixdate): "Tue, 14 Nov 2023 22:13:50 GMT".
  std::string date(value);
  if (absl::ConsumeSuffix(&value, " GMT")) date = std::string(value) + " +0000";
  absl::Time when;
  std::string err;
  if (!absl::ParseTime(absl::RFC1123_full, date, &when, &err) &&
      !absl::ParseTime(absl::RFC1123_no_wday, date, &when, &err)) {
    return std::nullopt;
  }
  // ToChronoTime saturates far dates; compare first so that no subtraction
  // overflows.
  const Time at = absl::ToChronoTime(when);
  if (at <= now) return std::chrono::milliseconds(0);
  const auto delta = at - now;
  if (delta >= std::chrono::seconds(kMaxDelaySeconds))
    return std::chrono::seconds(kMaxDelaySeconds);
  return std::chrono::ceil<std::chrono::milliseconds>(delta);
}

std::string FormatDelay(std::chrono::milliseconds delay) {
  const int64_t ms = delay.count();
  if (ms % 1000 == 0) return absl::StrCat(ms / 1000, "s");
  if (ms < 1000) return absl::StrCat(ms, "ms");
  std::string s = absl::StrFormat("%.3f", static_cast<double>(ms) / 1000.0);
  while (!s.empty() && s.back() == '0') s.pop_back();
  return s + "s";
}

void SetRetryDelay(absl::Status& status, std::chrono::milliseconds delay) {
  status.SetPayload(kRetryDelayPayload, absl::Cord(absl::StrCat(delay.count())));
}

std::optional<std::chrono::milliseconds> RetryDelay(const absl::Status& status) {
  std::optional<std::string> value = PayloadString(status, kRetryDelayPayload);
  int64_t ms = 0;
  if (!value.has_value() || !absl::SimpleAtoi(*value, &ms)) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

std::string ErrorReason(const absl::Status& status) {
  return PayloadString(status, kReasonPayload).value_or("");
}

int ErrorHttpStatus(const absl::Status& status) {
  std::optional<std::string> value = PayloadString(status, kHttpStatusPayload);
  int s = 0;
  if (!value.has_value() || !absl::SimpleAtoi(*value, &s)) return 0;
  return s;
}

absl::Status GoogleErrorToStatus(const http::Response& response, Time now,
                                 const std::vector<std::string>& secrets) {
  nlohmann::json body = ParseBoundedJson(response.body, kMaxRemoteJsonDepth);
  const bool is_json = !body.is_discarded();
  // Some front ends wrap the error in a one-element array.
  if (body.is_array() && body.size() == 1) body = body[0];
  const nlohmann::json* error = nullptr;
  if (body.is_object()) {
    auto it = body.find("error");
    if (it != body.end() && it->is_object()) error = &*it;
  }

  absl::StatusCode code = CodeFromHttpStatus(response.status);
  std::string message;
  std::string reason;
  std::optional<std::chrono::milliseconds> delay;
  if (error != nullptr) {
    auto status_it = error->find("status");
    if (status_it != error->end() && status_it->is_string()) {
      std::optional<absl::StatusCode> named = CodeFromName(status_it->get<std::string>());
      if (named.has_value() && *named != absl::StatusCode::kOk) code = *named;
    }
    auto message_it = error->find("message");
    if (message_it != error->end() && message_it->is_string()) {
      message = CutText(Redact(message_it->get<std::string>(), secrets), kMaxRemoteMessageBytes);
    }
    auto details = error->find("details");
    if (details != error->end() && details->is_array()) {
      for (const nlohmann::json& detail : *details) {
        if (!detail.is_object()) continue;
        auto type = detail.find("@type");
        if (type == detail.end() || !type->is_string()) continue;
        const std::string t = type->get<std::string>();
        if (absl::EndsWith(t, "google.rpc.RetryInfo")) {
          if (auto d = RetryInfoDelay(detail); d.has_value()) {
            delay = std::max(delay.value_or(*d), *d);
          }
        } else if (absl::EndsWith(t, "google.rpc.ErrorInfo") && reason.empty()) {
          auto r = detail.find("reason");
          if (r != detail.end() && r->is_string()) reason = r->get<std::string>();
        }
      }
    }
  }
  if (auto header = response.headers.find("retry-after"); header != response.headers.end()) {
    if (auto d = ParseRetryAfter(header->second, now); d.has_value()) {
      delay = std::max(delay.value_or(*d), *d);
    }
  }
  if (message.empty()) {
    message = absl::StrCat("HTTP ", response.status);
    if (!is_json && !response.body.empty()) {
      absl::StrAppend(&message, " with ", DescribeUnquotedBody(response));
    }
  }
  std::string text = absl::StrCat("Agent Platform: ", message);
  if (delay.has_value()) absl::StrAppend(&text, " (retry after ", FormatDelay(*delay), ")");

  absl::Status status(code, text);
  if (delay.has_value()) SetRetryDelay(status, *delay);
  if (!reason.empty()) status.SetPayload(kReasonPayload, absl::Cord(reason));
  status.SetPayload(kHttpStatusPayload, absl::Cord(absl::StrCat(response.status)));
  return status;
}

}  // namespace slurmop::agentplatform
