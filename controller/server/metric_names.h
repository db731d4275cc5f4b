// File: controller/server/metric_names.h
//
// Every metric family the operator serves at /metrics, in one place, so that the code that
// records a series, the tests, the PrometheusRule (deploy/monitoring/) and the dashboard agree.
//
// The controller_runtime_*, workqueue_*, rest_client_* and leader_election_* names, types and
// label sets are controller-runtime's and client-go's (controller-runtime
// pkg/internal/controller/metrics, pkg/metrics/{workqueue,client_go_adapter,leaderelection}.go),
// so that stock controller dashboards and alerts work unchanged. slurmjob_operator_* are ours.

#ifndef SLURMOP_CONTROLLER_SERVER_METRIC_NAMES_H_
#define SLURMOP_CONTROLLER_SERVER_METRIC_NAMES_H_

namespace slurmop::server::metric {

// controller-runtime. Labels: {controller} ("slurmjob" or "slurmcluster"), plus {result}
// (success, error, requeue_after) on reconcile_total.
inline constexpr char kReconcileTotal[] = "controller_runtime_reconcile_total";
inline constexpr char kReconcileErrorsTotal[] = "controller_runtime_reconcile_errors_total";
inline constexpr char kReconcileTimeSeconds[] = "controller_runtime_reconcile_time_seconds";
inline constexpr char kActiveWorkers[] = "controller_runtime_active_workers";
inline constexpr char kMaxConcurrentReconciles[] = "controller_runtime_max_concurrent_reconciles";

// client-go work queue, as controller-runtime registers it. Labels: {name, controller} (both the
// queue's name).
inline constexpr char kWorkqueueDepth[] = "workqueue_depth";
inline constexpr char kWorkqueueAddsTotal[] = "workqueue_adds_total";
inline constexpr char kWorkqueueQueueDurationSeconds[] = "workqueue_queue_duration_seconds";
inline constexpr char kWorkqueueWorkDurationSeconds[] = "workqueue_work_duration_seconds";
inline constexpr char kWorkqueueRetriesTotal[] = "workqueue_retries_total";
inline constexpr char kWorkqueueUnfinishedWorkSeconds[] = "workqueue_unfinished_work_seconds";
inline constexpr char kWorkqueueLongestRunningProcessorSeconds[] =
    "workqueue_longest_running_processor_seconds";

// client-go REST client. Labels: {code, method, host}; code is "<error>" when no response came.
inline constexpr char kRestClientRequestsTotal[] = "rest_client_requests_total";

// client-go leader election. Labels: {name} (the Lease's name).
inline constexpr char kLeaderElectionMasterStatus[] = "leader_election_master_status";

// The operator's own series.
inline constexpr char kSlurmApiRequestsTotal[] = "slurmjob_operator_slurm_api_requests_total";
inline constexpr char kSlurmApiRequestDurationSeconds[] =
    "slurmjob_operator_slurm_api_request_duration_seconds";
inline constexpr char kJobQueueWaitSeconds[] = "slurmjob_operator_job_queue_wait_seconds";
inline constexpr char kJobRunSeconds[] = "slurmjob_operator_job_run_seconds";
// Allocated CPU- and GPU-seconds of finished runs, from accounting, counted once per run
// (reconcile/job_usage.h). Labels: {namespace, cluster, partition, account}.
inline constexpr char kAllocatedCpuSecondsTotal[] = "slurmjob_operator_allocated_cpu_seconds_total";
inline constexpr char kAllocatedGpuSecondsTotal[] = "slurmjob_operator_allocated_gpu_seconds_total";
inline constexpr char kTokenRefreshesTotal[] = "slurmjob_operator_token_refreshes_total";
inline constexpr char kCallBudgetRequestsPerMinute[] =
    "slurmjob_operator_call_budget_requests_per_minute";
inline constexpr char kCallBudgetPaused[] = "slurmjob_operator_call_budget_paused";
inline constexpr char kCallBudgetHeldBackTotal[] = "slurmjob_operator_call_budget_held_back_total";
inline constexpr char kTrackedJobs[] = "slurmjob_operator_tracked_jobs";
inline constexpr char kOrphansCancelledTotal[] = "slurmjob_operator_orphans_cancelled_total";
inline constexpr char kSlurmJobs[] = "slurmjob_operator_slurmjobs";
inline constexpr char kSlurmClusterReady[] = "slurmjob_operator_slurmcluster_ready";
inline constexpr char kOldestPendingSeconds[] = "slurmjob_operator_oldest_pending_slurmjob_seconds";
inline constexpr char kEventsSpamFilteredTotal[] = "slurmjob_operator_events_spam_filtered_total";

}  // namespace slurmop::server::metric

#endif  // SLURMOP_CONTROLLER_SERVER_METRIC_NAMES_H_
