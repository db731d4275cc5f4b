// File: controller/kube/metrics_hooks.h
//
// Where the Kubernetes plumbing reports what the standard controller metrics count, without
// depending on a metrics library: the analogue of client-go's metrics providers
// (util/workqueue.SetProvider, tools/metrics.Register, tools/leaderelection.SetProvider).
// The operator installs hooks that feed its registry (reconcile/kube_metrics.cc); unset hooks
// are no-ops, so unit tests and tools need none.
//
// Contract: SetMetricsHooks() is called before the queues, clients and electors it serves run
// (it is not synchronised with them); every hook is thread-safe, quick, and never calls back into
// the reporter (a WorkQueue calls its hooks while holding its lock).

#ifndef SLURMOP_CONTROLLER_KUBE_METRICS_HOOKS_H_
#define SLURMOP_CONTROLLER_KUBE_METRICS_HOOKS_H_

#include <functional>
#include <string>

namespace slurmop::kube {

struct MetricsHooks {
  // A named work queue (WorkQueue with a name) accepted a new key (not one already queued):
  // workqueue_adds_total.
  std::function<void(const std::string& queue)> queue_add;
  // AddRateLimited() was called: workqueue_retries_total.
  std::function<void(const std::string& queue)> queue_retry;
  // Get() handed out a key that waited `seconds` since it was added: workqueue_queue_duration.
  std::function<void(const std::string& queue, double seconds)> queue_latency;
  // Done() for a key processed for `seconds`: workqueue_work_duration_seconds.
  std::function<void(const std::string& queue, double seconds)> queue_work_duration;
  // One HTTP round trip of the Kubernetes REST client: rest_client_requests_total. `code` is the
  // HTTP status, or "<error>" when no response arrived (client-go's convention); `host` is the
  // URL's host:port.
  std::function<void(const std::string& code, const std::string& method, const std::string& host)>
      request_result;
  // This replica started (true) or stopped (false) holding the Lease `lease_name`:
  // leader_election_master_status.
  std::function<void(const std::string& lease_name, bool leading)> leader;
  // The EventRecorder's spam filter dropped an Event
  // (slurmjob_operator_events_spam_filtered_total).
  std::function<void()> event_spam_filtered;
};

void SetMetricsHooks(MetricsHooks hooks);
const MetricsHooks& GetMetricsHooks();

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_METRICS_HOOKS_H_
