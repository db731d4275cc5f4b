// File: controller/kube/errors.cc
//
// See errors.h for the contract.

#include "controller/kube/errors.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "controller/common/bounded_json.h"
#include "controller/common/bounded_text.h"

namespace slurmop::kube {
namespace {

constexpr char kHttpCodeUrl[] = "type.slurmop.dev/kube.HttpCode";
constexpr char kReasonUrl[] = "type.slurmop.dev/kube.Reason";
constexpr char kCausesUrl[] = "type.slurmop.dev/kube.Causes";
constexpr char kRetryAfterUrl[] = "type.slurmop.dev/kube.RetryAfterMillis";
constexpr size_t kMaxBodyInMessage = 256;

std::string PayloadString(const absl::Status& status, const char* url) {
  auto payload = status.GetPayload(url);
  if (!payload.has_value()) return "";
  return std::string(*payload);
}

std::optional<long long> ParseInt(std::string_view text) {
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string StringField(const nlohmann::json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// metav1.StatusReason -> HTTP code, for Status objects without a code.
int CodeForReason(const std::string& reason) {
  static const std::pair<const char*, int> kReasons[] = {
      {"BadRequest", 400},       {"Unauthorized", 401},
      {"Forbidden", 403},        {"NotFound", 404},
      {"MethodNotAllowed", 405}, {"AlreadyExists", 409},
      {"Conflict", 409},         {"Gone", 410},
      {"Expired", 410},          {"UnsupportedMediaType", 415},
      {"Invalid", 422},          {"TooManyRequests", 429},
      {"InternalError", 500},    {"ServiceUnavailable", 503},
      {"Timeout", 504},          {"ServerTimeout", 504}};
  for (const auto& [name, code] : kReasons) {
    if (reason == name) return code;
  }
  return 0;
}

absl::Status BuildStatus(int http_code, const std::string& reason, std::string message,
                         const std::string& causes, std::optional<Duration> retry_after) {
  if (http_code == 0) http_code = CodeForReason(reason);
  if (message.empty()) message = reason.empty() ? absl::StrCat("HTTP ", http_code) : reason;
  absl::Status status(CodeForHttpStatus(http_code, reason), message);
  if (status.ok()) status = absl::UnknownError(message);
  status.SetPayload(kHttpCodeUrl, absl::Cord(std::to_string(http_code)));
  if (!reason.empty()) status.SetPayload(kReasonUrl, absl::Cord(reason));
  if (!causes.empty()) status.SetPayload(kCausesUrl, absl::Cord(causes));
  if (retry_after.has_value()) {
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(*retry_after);
    status.SetPayload(kRetryAfterUrl, absl::Cord(std::to_string(millis.count())));
  }
  return status;
}

std::string CauseReasons(const nlohmann::json& kube_status) {
  std::string causes;
  auto details = kube_status.find("details");
  if (details == kube_status.end() || !details->is_object()) return causes;
  auto list = details->find("causes");
  if (list == details->end() || !list->is_array()) return causes;
  for (const nlohmann::json& cause : *list) {
    if (!cause.is_object()) continue;
    const std::string reason = StringField(cause, "reason");
    if (reason.empty()) continue;
    if (!causes.empty()) causes += ",";
    causes += reason;
  }
  return causes;
}

// A server's Retry-After in seconds: negative -> none; above a day -> a day,
// so that converting it to a Duration (nanoseconds) cannot overflow.
std::optional<Duration> RetryAfterSeconds(long long seconds) {
  constexpr long long kMaxSeconds = 86400;
  if (seconds < 0) return std::nullopt;
  return std::chrono::seconds(std::min(seconds, kMaxSeconds));
}

std::optional<Duration> RetryAfterFromDetails(const nlohmann::json& kube_status) {
  auto details = kube_status.find("details");
  if (details == kube_status.end() || !details->is_object()) return std::nullopt;
  auto seconds = details->find("retryAfterSeconds");
  if (seconds == details->end() || !seconds->is_number_integer()) return std::nullopt;
  if (seconds->is_number_unsigned()) {  // nlohmann's type for every integer >= 0
    return RetryAfterSeconds(static_cast<long long>(
        std::min<uint64_t>(seconds->get<uint64_t>(), std::numeric_limits<long long>::max())));
  }
  return RetryAfterSeconds(seconds->get<long long>());
}

}  // namespace

absl::StatusCode CodeForHttpStatus(int http_status, std::string_view reason) {
  switch (http_status) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 415:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 500:
      return absl::StatusCode::kInternal;
    default:
      break;
  }
  if (http_status > 500 && http_status < 600) return absl::StatusCode::kUnavailable;
  if (http_status >= 200 && http_status < 300) return absl::StatusCode::kOk;
  return absl::StatusCode::kUnknown;
}

absl::Status StatusFromKubeStatus(const nlohmann::json& kube_status,
                                  std::optional<Duration> retry_after) {
  if (!kube_status.is_object()) {
    return absl::InternalError("malformed Status object");
  }
  int code = 0;
  if (auto it = kube_status.find("code"); it != kube_status.end() && it->is_number_integer()) {
    code = it->get<int>();
  }
  if (!retry_after.has_value()) retry_after = RetryAfterFromDetails(kube_status);
  // An admission webhook's message is the webhook's own text, of any length.
  return BuildStatus(code, StringField(kube_status, "reason"),
                     CutText(StringField(kube_status, "message"), kMaxRemoteMessageBytes),
                     CauseReasons(kube_status), retry_after);
}

absl::Status StatusFromResponse(const http::Response& response) {
  std::optional<Duration> retry_after;
  if (auto it = response.headers.find("retry-after"); it != response.headers.end()) {
    if (std::optional<long long> seconds = ParseInt(it->second)) {
      retry_after = RetryAfterSeconds(*seconds);
    }
  }
  nlohmann::json body = ParseBoundedJson(response.body, kMaxKubeAnswerJsonDepth);
  if (body.is_object() && StringField(body, "kind") == "Status") {
    // The HTTP code is authoritative; the Status code is usually the same.
    body["code"] = response.status;
    return StatusFromKubeStatus(body, retry_after);
  }
  std::string excerpt = Utf8Prefix(response.body, kMaxBodyInMessage);
  std::string message = excerpt.empty() ? absl::StrCat("HTTP ", response.status)
                                        : absl::StrCat("HTTP ", response.status, ": ", excerpt);
  return BuildStatus(response.status, "", message, "", retry_after);
}

bool IsNotFound(const absl::Status& status) { return status.code() == absl::StatusCode::kNotFound; }

bool IsConflict(const absl::Status& status) { return status.code() == absl::StatusCode::kAborted; }

bool IsAlreadyExists(const absl::Status& status) {
  return status.code() == absl::StatusCode::kAlreadyExists;
}

bool IsGone(const absl::Status& status) {
  if (status.code() == absl::StatusCode::kOutOfRange) return true;
  const std::string reason = StatusReason(status);
  return reason == "Expired" || reason == "Gone";
}

bool IsInvalid(const absl::Status& status) { return HttpStatusCode(status) == 422; }

bool IsTooManyRequests(const absl::Status& status) {
  return status.code() == absl::StatusCode::kResourceExhausted;
}

bool IsUnreachable(const absl::Status& status) {
  const absl::StatusCode code = status.code();
  return (code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded) &&
         HttpStatusCode(status) == 0;
}

bool MayHaveBeenApplied(const absl::Status& status) {
  if (status.ok()) return true;
  const int http_status = HttpStatusCode(status);
  if (http_status >= 400 && http_status < 500) return false;
  if (http_status >= 500) return true;
  switch (status.code()) {
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kOutOfRange:
      return false;
    default:
      return http::MayHaveBeenDelivered(status);
  }
}

bool IsResourceVersionTooLarge(const absl::Status& status) {
  if (HttpStatusCode(status) != 504) return false;
  const std::string causes = PayloadString(status, kCausesUrl);
  return causes.find("ResourceVersionTooLarge") != std::string::npos ||
         std::string(status.message()).find("Too large resource version") != std::string::npos;
}

std::optional<Duration> RetryAfter(const absl::Status& status) {
  std::optional<long long> millis = ParseInt(PayloadString(status, kRetryAfterUrl));
  if (!millis.has_value()) return std::nullopt;
  return std::chrono::milliseconds(*millis);
}

int HttpStatusCode(const absl::Status& status) {
  std::optional<long long> code = ParseInt(PayloadString(status, kHttpCodeUrl));
  return code.has_value() ? static_cast<int>(*code) : 0;
}

std::string StatusReason(const absl::Status& status) { return PayloadString(status, kReasonUrl); }

std::string Key(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  std::string key(ns);
  key += "/";
  key += name;
  return key;
}

std::pair<std::string, std::string> SplitKey(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return {"", std::string(key)};
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

std::string KeyOf(const nlohmann::json& object) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  return Key(StringField(*metadata, "namespace"), StringField(*metadata, "name"));
}

}  // namespace slurmop::kube
