// File: controller/reconcile/runs.h
//
// Runs of a SlurmJob: each submission of its Slurm job is one run, numbered
// from 1. A new run starts when a failed run is retried (spec.failurePolicy,
// spec.backoffLimit) or when spec.runId changes. Each run's Slurm job carries
// its own tag (SubmissionTag), so that the search for a run's job never
// finds another run's. Finished runs are kept, bounded, in status.runs.
// Pure: no I/O.

#ifndef SLURMOP_CONTROLLER_RECONCILE_RUNS_H_
#define SLURMOP_CONTROLLER_RECONCILE_RUNS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "controller/common/clock.h"
#include "slurmoperator/v1alpha1/slurmjob.pb.h"

namespace slurmop::reconcile {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

// status.runs keeps this many finished runs.
inline constexpr int kMaxRunHistory = 10;

// The current run's number (status.run; 1 before the first status).
int32_t CurrentRun(const v1alpha1::SlurmJobStatus& status);

// What the failure policy says about a run that ended (status.jobState
// final).
struct FailureVerdict {
  enum class Kind {
    kSucceeded,       // COMPLETED: nothing to decide
    kRetry,           // start a new run, counted against backoffLimit
    kRetryUncounted,  // a rule said Ignore: new run, not counted
    kFail,            // the SlurmJob has failed for good
  };
  Kind kind = Kind::kFail;
  // For the user, e.g. "failurePolicy rule 1 (Retry on NODE_FAIL)" or
  // "backoffLimit 3 reached".
  std::string why;
};

// Matches spec.failurePolicy's rules in order (first match wins); without a
// policy the defaults apply: NODE_FAIL, BOOT_FAIL and PREEMPTED are retried,
// anything else fails. A Retry beyond spec.backoffLimit (status.retries
// already at the limit) is kFail.
FailureVerdict EvaluateFailurePolicy(const v1alpha1::SlurmJobSpec& spec,
                                     const v1alpha1::SlurmJobStatus& status);

// The status that starts the next run: the finished run is appended to
// status.runs (oldest dropped beyond kMaxRunHistory) with `record_message`,
// the job fields are cleared (but firstSubmitTime, unless run_id changes),
// run is incremented, run_id and retries set, and
// the conditions say the job is being submitted again (`reason`, `message`).
v1alpha1::SlurmJobStatus StatusForNewRun(const v1alpha1::SlurmJobStatus& finished,
                                         std::string_view run_id, int32_t retries,
                                         std::string_view record_message, std::string_view reason,
                                         std::string_view message, int64_t generation, Time now);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_RUNS_H_
