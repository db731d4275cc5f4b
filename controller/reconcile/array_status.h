// File: controller/reconcile/array_status.h
//
// Array jobs (spec.array): status.array from what Slurm reports of the
// current run's array (its records folded into one, slurm/array_folding.h),
// and which indexes a run that ended retries. Pure.
//
// Contract:
//  * status.array accumulates over the runs of the current spec.runId:
//    completedIndexes and failedIndexes keep what earlier looks saw, since
//    Slurm drops each task's record from the live queue on its own
//    (MinJobAge) while others still run. A task's failure is counted in
//    indexFailures once, when its index enters failedIndexes.
//  * runIndexes: the indexes the current run submitted ("" = all of
//    spec.array.indexes, the first run). A retry (RetryIndexes) submits only
//    failed indexes that failed at most backoffLimitPerIndex times, moving
//    them from failedIndexes to runIndexes.
//  * The record the status is computed from is adjusted so that an array is
//    final only when every index of the run is known to have ended, and
//    COMPLETED only when no index of any run failed (a failed index's record
//    may have left the queue before the last task ended). An index never
//    seen ended (its record gone before any look) keeps the array not final:
//    the executor then reads accounting, which lists every task.

#ifndef SLURMOP_CONTROLLER_RECONCILE_ARRAY_STATUS_H_
#define SLURMOP_CONTROLLER_RECONCILE_ARRAY_STATUS_H_

#include <map>

#include "controller/slurm/array_indexes.h"
#include "controller/slurm/job_model.h"
#include "slurmoperator/v1alpha1/slurmjob.pb.h"

namespace slurmop::reconcile {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

struct ArrayObservation {
  slurm::JobInfo record;         // `record`, adjusted (see the contract)
  v1alpha1::ArrayStatus status;  // status.array after it
};

ArrayObservation ObserveArray(const v1alpha1::ArraySpec& spec, const v1alpha1::ArrayStatus& current,
                              const slurm::JobInfo& record);

// status.array.indexFailures as a map, and back ("3:1,7:2").
std::map<int32_t, int32_t> ParseIndexFailures(std::string_view text);
std::string FormatIndexFailures(const std::map<int32_t, int32_t>& failures);

// Of the failed indexes, those a retry runs again (failed at most
// backoffLimitPerIndex times), and those that failed for good.
struct IndexRetry {
  slurm::IndexSet retry, failed_for_good;
};
IndexRetry RetryIndexes(const v1alpha1::ArraySpec& spec, const v1alpha1::ArrayStatus& status);

// status.array for a new run of `retry` (RetryIndexes).
v1alpha1::ArrayStatus ArrayStatusForRetry(const v1alpha1::ArrayStatus& status,
                                          const slurm::IndexSet& retry);

// The --array expression of the current run: spec.array.indexes for the
// first run, else status.array.runIndexes with the spec's throttle.
std::string RunArrayExpression(const v1alpha1::ArraySpec& spec,
                               const v1alpha1::ArrayStatus& status);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_ARRAY_STATUS_H_
