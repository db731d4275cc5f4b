// File: controller/server/metric_names.h
//
// Every metric family the operator serves at /metrics, in one place, so that the code that
// records a series, the tests and the README agree.
//
// The controller_runtime_* and workqueue_* names, types and label sets are controller-runtime's
// (pkg/internal/controller/metrics, pkg/metrics/workqueue.go), so that stock controller
// dashboards and alerts work unchanged. slurmjob_operator_* are ours.

#ifndef SLURMOP_CONTROLLER_SERVER_METRIC_NAMES_H_
#define SLURMOP_CONTROLLER_SERVER_METRIC_NAMES_H_

namespace slurmop::server::metric {

// controller-runtime. Labels: {controller} ("slurmjob" or "slurmcluster"), plus {result}
// (success, error, requeue_after) on reconcile_total.
inline constexpr char kReconcileTotal[] = "controller_runtime_reconcile_total";
inline constexpr char kReconcileTimeSeconds[] = "controller_runtime_reconcile_time_seconds";

// client-go work queue, as controller-runtime registers it. Labels: {name}.
inline constexpr char kWorkqueueDepth[] = "workqueue_depth";

// The operator's own series.
inline constexpr char kSlurmApiRequestsTotal[] = "slurmjob_operator_slurm_api_requests_total";
inline constexpr char kSlurmApiRequestDurationSeconds[] =
    "slurmjob_operator_slurm_api_request_duration_seconds";
inline constexpr char kJobQueueWaitSeconds[] = "slurmjob_operator_job_queue_wait_seconds";
inline constexpr char kJobRunSeconds[] = "slurmjob_operator_job_run_seconds";
inline constexpr char kTokenRefreshesTotal[] = "slurmjob_operator_token_refreshes_total";
inline constexpr char kTrackedJobs[] = "slurmjob_operator_tracked_jobs";
inline constexpr char kOrphansCancelledTotal[] = "slurmjob_operator_orphans_cancelled_total";
inline constexpr char kSlurmJobs[] = "slurmjob_operator_slurmjobs";

}  // namespace slurmop::server::metric

#endif  // SLURMOP_CONTROLLER_SERVER_METRIC_NAMES_H_
