// File: controller/reconcile/job_status.h
//
// What a SlurmJob's status should say, given what Slurm last reported about
// its job. Pure: the same inputs always give the same status, so the
// executor can skip writes that would change nothing.
//
// Conditions follow kstatus (the convention Flux and Argo CD build on) with
// the semantics of a batch Job: while the Slurm job is queued or running the
// SlurmJob is InProgress (Reconciling=True, Ready=False); a job that
// completed is Current (Ready=True); a job that failed, timed out or was
// cancelled is Failed (Stalled=True, Ready=False). Submitted, Running,
// Succeeded and Failed record the job's own milestones.

#ifndef SLURMOP_CONTROLLER_RECONCILE_JOB_STATUS_H_
#define SLURMOP_CONTROLLER_RECONCILE_JOB_STATUS_H_

#include <string>
#include <string_view>
#include <vector>

#include "controller/common/clock.h"
#include "controller/slurm/job_model.h"
#include "slurmoperator/v1alpha1/slurmjob.pb.h"

namespace slurmop::reconcile {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

// status.phase values.
inline constexpr std::string_view kPhasePending = "Pending";
inline constexpr std::string_view kPhaseRunning = "Running";
inline constexpr std::string_view kPhaseSucceeded = "Succeeded";
inline constexpr std::string_view kPhaseFailed = "Failed";
inline constexpr std::string_view kPhaseCancelled = "Cancelled";
inline constexpr std::string_view kPhaseUnknown = "Unknown";

// An Event the executor records once the status that announces it is written.
// Kubernetes Event types (core/v1 Event.type).
inline constexpr char kNormal[] = "Normal";
inline constexpr char kWarning[] = "Warning";

struct EventSpec {
  std::string type;    // kNormal | kWarning
  std::string reason;  // CamelCase, e.g. Submitted
  std::string action;  // what the operator did or saw, e.g. Submit, Track
  std::string note;    // human text
  bool operator==(const EventSpec&) const = default;
};

// True when status.jobState names a state from which a Slurm job never moves
// (the status only ever records a terminal state once Slurm reported it final).
bool IsFinalJobState(std::string_view job_state);

// The status after Slurm reported `info` for the job. `we_cancelled` tells
// whether the operator asked for the cancellation (for the message).
v1alpha1::SlurmJobStatus StatusFromJobInfo(const v1alpha1::SlurmJobStatus& current,
                                           const slurm::JobInfo& info, int64_t generation, Time now,
                                           std::vector<EventSpec>* events);

// The status right after Slurm accepted the job as `job_id`.
v1alpha1::SlurmJobStatus StatusAfterSubmit(const v1alpha1::SlurmJobStatus& current, int64_t job_id,
                                           std::string_view cluster, bool adopted,
                                           int64_t generation, Time now,
                                           std::vector<EventSpec>* events);

// The status while the job cannot be found in the live queue nor in
// accounting: Unknown, never Failed (it may reappear; nothing is deleted).
v1alpha1::SlurmJobStatus StatusJobNotFound(const v1alpha1::SlurmJobStatus& current,
                                           int64_t generation, Time now);

// The status when the job cannot be submitted until the user changes
// something (Stalled=True). `reason` is CamelCase; `message` says what to do.
v1alpha1::SlurmJobStatus StatusStalled(const v1alpha1::SlurmJobStatus& current,
                                       std::string_view reason, std::string_view message,
                                       int64_t generation, Time now);

// The status while the operator retries something transient (Reconciling=True).
v1alpha1::SlurmJobStatus StatusRetrying(const v1alpha1::SlurmJobStatus& current,
                                        std::string_view reason, std::string_view message,
                                        int64_t generation, Time now);

// Where to look for what the current run's job printed, for the message of a
// run that failed: " Its output is in <status.standardOutput> on the
// cluster." (both paths named when they differ); "" while neither is known.
std::string OutputHint(const v1alpha1::SlurmJobStatus& status);

// Status messages compared field by field: map entries in any order, and
// whether an optional field is set counts (a set 0 is not an unset field).
bool SameStatus(const v1alpha1::SlurmJobStatus& a, const v1alpha1::SlurmJobStatus& b);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_JOB_STATUS_H_
