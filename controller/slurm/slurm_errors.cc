// File: controller/slurm/slurm_errors.cc
//
// Message parsing and the rejection -> absl::Status mapping.

#include "controller/slurm/slurm_errors.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/common/bounded_text.h"
#include "controller/slurm/json_fields.h"
#include "controller/slurm/text_compat.h"

namespace slurmop::slurm {
namespace {

std::optional<int> ErrorNumberOf(const nlohmann::json& element) {
  for (std::string_view key : {"error_number", "error_code", "code"}) {
    std::optional<int64_t> n = IntegerMember(element, key);
    if (n.has_value()) return static_cast<int>(*n);
  }
  return std::nullopt;
}

bool IsUnauthenticated(int http_status, const std::vector<SlurmMessage>& errors) {
  return http_status == 401 || http_status == 511 ||
         ContainsErrorNumber(errors, kErrorAuthentication);
}

bool IsControllerUnreachableNumber(int n) {
  // SLURM_COMMUNICATIONS_*_ERROR 1001-1004, SLURMCTLD_COMMUNICATIONS_* 1800-1804,
  // ESLURM_DB_CONNECTION 7000.
  return (n >= 1001 && n <= 1004) || (n >= 1800 && n <= 1804) || n == 7000;
}

bool IsRequestErrorNumber(int n) {
  // ESLURM_REST_INVALID_QUERY / FAIL_PARSING / INVALID_JOBS_DESC, the
  // ESLURM_DATA_* parser errors, ESLURM_JOB_SCRIPT_MISSING,
  // ESLURM_MISSING_WORK_DIR, ESLURM_ENVIRONMENT_MISSING.
  return (n >= 9000 && n <= 9002) || (n >= 9200 && n <= 9299) || n == 2009 || n == 2063 ||
         n == 2127;
}

bool AnyNumber(const std::vector<SlurmMessage>& errors, bool (*pred)(int)) {
  for (const SlurmMessage& m : errors) {
    if (m.error_number.has_value() && pred(*m.error_number)) return true;
  }
  return false;
}

}  // namespace

SlurmMessage ParseSlurmMessage(const nlohmann::json& element) {
  SlurmMessage m;
  if (!element.is_object()) {
    if (element.is_string()) m.description = element.get<std::string>();
    return m;
  }
  // DELETE status[] element (v0.0.40+ served by 24.11+): the error is nested.
  const nlohmann::json* nested = FindMember(element, "error");
  if (nested != nullptr && nested->is_object()) {
    m.error_number = ErrorNumberOf(*nested);
    m.error = StringMember(*nested, "string");
    m.description = StringMember(*nested, "message");
    m.source = "slurm_kill_jobs()";
    return m;
  }
  m.error_number = ErrorNumberOf(element);
  m.error = StringMember(element, "error");
  m.description = StringMember(element, "description");
  m.source = StringMember(element, "source");
  if (m.description.empty()) m.description = StringMember(element, "warning");
  return m;
}

std::vector<SlurmMessage> MessagesMember(const nlohmann::json& body, std::string_view key) {
  std::vector<SlurmMessage> out;
  const nlohmann::json* list = FindMember(body, key);
  if (list == nullptr || !list->is_array()) return out;
  for (const nlohmann::json& element : *list) out.push_back(ParseSlurmMessage(element));
  return out;
}

bool ContainsErrorNumber(const std::vector<SlurmMessage>& messages, int error_number) {
  for (const SlurmMessage& m : messages) {
    if (m.error_number == error_number) return true;
  }
  return false;
}

bool MentionsText(const SlurmMessage& message, std::string_view needle) {
  return ContainsIgnoreCase(message.error, needle) ||
         ContainsIgnoreCase(message.description, needle);
}

bool ContainsText(const std::vector<SlurmMessage>& messages, std::string_view needle) {
  for (const SlurmMessage& m : messages) {
    if (MentionsText(m, needle)) return true;
  }
  return false;
}

std::string JoinMessages(const std::vector<SlurmMessage>& messages) {
  return absl::StrJoin(messages, "; ", [](std::string* out, const SlurmMessage& m) {
    absl::StrAppend(out, m.ToString());
  });
}

std::string FoldMessages(const std::vector<SlurmMessage>& messages, size_t limit) {
  // Room kept for the " (and N more)" tail, whatever N is.
  constexpr size_t kTail = 32;
  std::string out;
  absl::flat_hash_set<std::string> seen;
  size_t left_out = 0;
  for (const SlurmMessage& m : messages) {
    std::string text = CutText(m.ToString(), kMaxRemoteMessageBytes);
    if (!seen.insert(text).second) continue;  // a repeat says nothing new
    const size_t needed = (out.empty() ? 0 : 2) + text.size();
    if (left_out > 0 || out.size() + needed + kTail > limit) {
      ++left_out;
      continue;
    }
    absl::StrAppend(&out, out.empty() ? "" : "; ", text);
  }
  if (left_out > 0) absl::StrAppend(&out, " (and ", left_out, " more)");
  return out;
}

absl::Status RejectionStatus(int http_status, const nlohmann::json& body,
                             const std::vector<SlurmMessage>& errors) {
  std::string text = JoinMessages(errors);
  if (text.empty() && body.is_string()) {
    text = std::string(absl::StripAsciiWhitespace(body.get<std::string>()));
  }
  if (text.empty()) {
    text = absl::StrCat("Slurm REST API answered HTTP ", http_status, " without an error message");
  }
  text = CutText(text, kMaxRemoteMessageBytes);
  if (IsUnauthenticated(http_status, errors)) return absl::UnauthenticatedError(text);
  if (http_status == 502 || http_status == 503 || http_status == 504 ||
      AnyNumber(errors, IsControllerUnreachableNumber)) {
    return absl::UnavailableError(text);
  }
  if (http_status == 400 || http_status == 422 || AnyNumber(errors, IsRequestErrorNumber)) {
    return absl::InvalidArgumentError(text);
  }
  return absl::FailedPreconditionError(text);
}

absl::Status MalformedResponse(std::string_view what) {
  return absl::InternalError(absl::StrCat("unexpected Slurm REST API response: ", ToAbsl(what)));
}

}  // namespace slurmop::slurm
