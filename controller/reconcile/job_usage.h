// File: controller/reconcile/job_usage.h
//
// A run's usage (#14 item 4): what its Slurm job was allocated, from the
// accounting record of its end (slurm::Allocation), as status.usage and in
// the run's entry of status.runs. Pure: no I/O.
//
// Exactly-once contract of the usage counters
// (slurmjob_operator_allocated_{cpu,gpu}_seconds_total): a run's usage is
// counted by the status write that first records it, i.e. the write whose
// base status (the object it replaces, resourceVersion-checked) does not hold
// that run's usage and whose new status does (NewlyRecordedUsage). The
// API server accepts exactly one such write per run; a write based on a stale
// object is a conflict, and after a restart the object already holds the
// usage, so re-reading the same final record counts nothing. A write that
// succeeded but whose answer was lost is not counted (at most once).

#ifndef SLURMOP_CONTROLLER_RECONCILE_JOB_USAGE_H_
#define SLURMOP_CONTROLLER_RECONCILE_JOB_USAGE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "controller/common/clock.h"
#include "controller/slurm/job_model.h"
#include "slurmoperator/v1alpha1/slurmjob.pb.h"

namespace slurmop::reconcile {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

// Allocated GPUs of an allocation: "gres/gpu", or, when accounting tracks only
// typed GPUs, the sum of "gres/gpu:<type>".
int64_t AllocatedGpus(const slurm::Allocation& allocation);

// The usage of `run` from a final job record with an allocation (nullopt
// otherwise). Elapsed seconds: Slurm's, or end - start when it gave none.
std::optional<v1alpha1::JobUsage> UsageFromJobInfo(const slurm::JobInfo& info, int32_t run);

// status.usage is that of `run`.
bool UsageRecorded(const v1alpha1::SlurmJobStatus& status, int32_t run);

// slurmdbd learns a job's end asynchronously, so the first look at an ended
// run may find accounting without it. Such a run is looked at again (stage
// kAwaitingUsage) 2, 5, 10, 20, 40, 80, 160 and 300 s after its end: this is
// the first of those moments after `last_look` (any of them when nothing was
// looked at yet: a restarted process), nullopt when none is left.
std::optional<Time> NextUsageLook(Time ended, std::optional<Time> last_look);

// The usages (status.usage and runs[].usage, by run) that `after` records and
// `before` does not: what a status write from `before` to `after` records first.
std::vector<v1alpha1::JobUsage> NewlyRecordedUsage(const v1alpha1::SlurmJobStatus& before,
                                                   const v1alpha1::SlurmJobStatus& after);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_JOB_USAGE_H_
