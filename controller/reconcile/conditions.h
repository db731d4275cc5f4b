// File: controller/reconcile/conditions.h
//
// metav1.Condition bookkeeping with the API conventions' rules:
// lastTransitionTime changes only when `status` changes; reason, message and
// observedGeneration are refreshed on every set. Conditions are kept in a
// stable order (by insertion), so repeated writes compare equal.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CONDITIONS_H_
#define SLURMOP_CONTROLLER_RECONCILE_CONDITIONS_H_

#include <string_view>

#include "controller/common/clock.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "slurmoperator/v1alpha1/common.pb.h"

namespace slurmop::reconcile {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

using Conditions = google::protobuf::RepeatedPtrField<v1alpha1::Condition>;

// Condition types written on SlurmJobs and SlurmClusters.
inline constexpr std::string_view kReady = "Ready";
inline constexpr std::string_view kReconciling = "Reconciling";
inline constexpr std::string_view kStalled = "Stalled";
inline constexpr std::string_view kSubmitted = "Submitted";
inline constexpr std::string_view kRunning = "Running";
inline constexpr std::string_view kSucceeded = "Succeeded";
inline constexpr std::string_view kFailed = "Failed";
// spec.ttlSecondsAfterFinished is not applied (a GitOps tool manages the SlurmJob).
inline constexpr std::string_view kTtlSkipped = "TTLSkipped";

enum class ConditionStatus { kTrue, kFalse, kUnknown };

// Sets (adds or updates) the condition `type`.
void SetCondition(Conditions* conditions, std::string_view type, ConditionStatus status,
                  std::string_view reason, std::string_view message, int64_t generation, Time now);

// Removes the condition `type` if present.
void RemoveCondition(Conditions* conditions, std::string_view type);

// The condition `type`, or nullptr.
const v1alpha1::Condition* FindCondition(const Conditions& conditions, std::string_view type);

// True when the condition is present with status "True".
bool IsConditionTrue(const Conditions& conditions, std::string_view type);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CONDITIONS_H_
