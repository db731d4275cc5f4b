// File: controller/slurm/slurm_errors.h
//
// Slurm's errors[] / warnings[] elements in every version's shape, and the
// mapping of a Slurm rejection (HTTP status + errors) onto an absl::Status
// (the error contract documented in controller/slurm/dialect.h).

#ifndef SLURMOP_CONTROLLER_SLURM_SLURM_ERRORS_H_
#define SLURMOP_CONTROLLER_SLURM_SLURM_ERRORS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "controller/slurm/job_model.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

// Slurm error numbers the parsers act on (slurm/slurm_errno.h).
inline constexpr int kErrorInvalidJobId = 2017;    // ESLURM_INVALID_JOB_ID
inline constexpr int kErrorAlreadyDone = 2021;     // ESLURM_ALREADY_DONE
inline constexpr int kErrorNothingFound = 9003;    // ESLURM_REST_EMPTY_RESULT
inline constexpr int kErrorAuthentication = 1007;  // SLURM_PROTOCOL_AUTHENTICATION_ERROR

// One element: {error_number | error_code, error, description, source},
// v0.0.39's warning text under "warning", or a DELETE status[] element
// {error: {code, string, message}}. Non-objects give an empty message.
SlurmMessage ParseSlurmMessage(const nlohmann::json& element);

// The elements of body[key] (e.g. "errors", "warnings"); {} when absent.
std::vector<SlurmMessage> MessagesMember(const nlohmann::json& body, std::string_view key);

bool ContainsErrorNumber(const std::vector<SlurmMessage>& messages, int error_number);
// ASCII case-insensitive search in a message's error and description.
bool MentionsText(const SlurmMessage& message, std::string_view needle);
// Whether any of `messages` MentionsText(needle).
bool ContainsText(const std::vector<SlurmMessage>& messages, std::string_view needle);

// ToString() of each message, joined with "; ".
std::string JoinMessages(const std::vector<SlurmMessage>& messages);

// Many messages as one text of at most `limit` bytes (limit >= 64), for one Event rather than
// one per message, so a remote that sends thousands cannot crowd out the other Events: the
// distinct ToString()s in order, each cut to kMaxRemoteMessageBytes, joined with "; " while they
// fit, then " (and N more)" for those left out. Empty for no messages.
std::string FoldMessages(const std::vector<SlurmMessage>& messages, size_t limit);

// The non-OK Status for a rejection: code per dialect.h's table, message
// = JoinMessages(errors), or the text body, or a generic sentence naming the
// HTTP status when Slurm gave no text at all.
absl::Status RejectionStatus(int http_status, const nlohmann::json& body,
                             const std::vector<SlurmMessage>& errors);

// kInternal for a body Slurm would never send; `what` says what is wrong.
absl::Status MalformedResponse(std::string_view what);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_SLURM_ERRORS_H_
