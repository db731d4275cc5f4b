// File: controller/common/condition_reason.h
//
// A condition reason carried by an absl::Status from the layer that knows it
// (e.g. the endpoint policy: "EndpointNotAllowed") to the pure decisions that
// write conditions, which otherwise derive a reason from the status code.
//
// Contract:
//  * SetConditionReason() attaches `reason` (a CamelCase condition reason) as
//    a payload; copies of the status that keep payloads keep it.
//  * ConditionReason() reads it back, or nullopt.

#ifndef SLURMOP_CONTROLLER_COMMON_CONDITION_REASON_H_
#define SLURMOP_CONTROLLER_COMMON_CONDITION_REASON_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/types/optional.h"

namespace slurmop {

inline constexpr char kConditionReasonPayload[] = "slurmop/condition-reason";

inline void SetConditionReason(absl::Status& status, const std::string& reason) {
  status.SetPayload(kConditionReasonPayload, absl::Cord(reason));
}

inline std::optional<std::string> ConditionReason(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kConditionReasonPayload);
  if (!payload.has_value()) return std::nullopt;
  return std::string(*payload);
}

}  // namespace slurmop

#endif  // SLURMOP_CONTROLLER_COMMON_CONDITION_REASON_H_
