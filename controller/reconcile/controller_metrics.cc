// File: controller/reconcile/controller_metrics.cc
//
// See controller_metrics.h for the contract.

#include "controller/reconcile/controller_metrics.h"

#include <string>
#include <utility>

#include "controller/kube/metrics_hooks.h"
#include "controller/server/metric_names.h"

namespace slurmop::reconcile {

std::vector<double> ReconcileTimeBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
          0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
          6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};
}

std::vector<double> WorkqueueDurationBuckets() {
  std::vector<double> b;
  double v = 10e-9;
  for (int i = 0; i < 12; ++i, v *= 10) b.push_back(v);
  return b;
}

namespace {

using server::Metrics;
namespace metric = server::metric;

void DeclareFamilies(Metrics& m) {
  m.Declare(metric::kReconcileTotal, Metrics::Type::kCounter,
            "Total number of reconciliations per controller");
  m.Declare(metric::kReconcileErrorsTotal, Metrics::Type::kCounter,
            "Total number of reconciliation errors per controller");
  m.Declare(metric::kReconcileTimeSeconds, Metrics::Type::kHistogram,
            "Length of time per reconciliation per controller", ReconcileTimeBuckets());
  m.Declare(metric::kActiveWorkers, Metrics::Type::kGauge,
            "Number of currently used workers per controller");
  m.Declare(metric::kMaxConcurrentReconciles, Metrics::Type::kGauge,
            "Maximum number of concurrent reconciles per controller");
  m.Declare(metric::kWorkqueueDepth, Metrics::Type::kGauge, "Current depth of workqueue");
  m.Declare(metric::kWorkqueueAddsTotal, Metrics::Type::kCounter,
            "Total number of adds handled by workqueue");
  m.Declare(metric::kWorkqueueQueueDurationSeconds, Metrics::Type::kHistogram,
            "How long in seconds an item stays in workqueue before being requested",
            WorkqueueDurationBuckets());
  m.Declare(metric::kWorkqueueWorkDurationSeconds, Metrics::Type::kHistogram,
            "How long in seconds processing an item from workqueue takes.",
            WorkqueueDurationBuckets());
  m.Declare(metric::kWorkqueueRetriesTotal, Metrics::Type::kCounter,
            "Total number of retries handled by workqueue");
  m.Declare(metric::kWorkqueueUnfinishedWorkSeconds, Metrics::Type::kGauge,
            "How many seconds of work has been done that is in progress and hasn't been observed "
            "by work_duration. Large values indicate stuck threads. One can deduce the number of "
            "stuck threads by observing the rate at which this increases.");
  m.Declare(metric::kWorkqueueLongestRunningProcessorSeconds, Metrics::Type::kGauge,
            "How many seconds has the longest running processor for workqueue been running.");
  m.Declare(metric::kRestClientRequestsTotal, Metrics::Type::kCounter,
            "Number of HTTP requests, partitioned by status code, method, and host.");
  m.Declare(metric::kEventsSpamFilteredTotal, Metrics::Type::kCounter,
            "Events dropped by the per-object spam filter (client-go's: burst 25, then one per "
            "5 minutes).");
  m.Declare(metric::kLeaderElectionMasterStatus, Metrics::Type::kGauge,
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. Please "
            "make sure to group by name.");
}

// controller-runtime labels a queue's series with its name twice: {name, controller}.
server::Labels QueueLabels(const std::string& queue) {
  return {{"name", queue}, {"controller", queue}};
}

}  // namespace

void InstallControllerMetrics(Metrics& m) {
  DeclareFamilies(m);
  kube::MetricsHooks hooks;
  hooks.queue_add = [&m](const std::string& q) {
    m.Add(metric::kWorkqueueAddsTotal, QueueLabels(q));
  };
  hooks.queue_retry = [&m](const std::string& q) {
    m.Add(metric::kWorkqueueRetriesTotal, QueueLabels(q));
  };
  hooks.queue_latency = [&m](const std::string& q, double s) {
    m.Observe(metric::kWorkqueueQueueDurationSeconds, QueueLabels(q), s);
  };
  hooks.queue_work_duration = [&m](const std::string& q, double s) {
    m.Observe(metric::kWorkqueueWorkDurationSeconds, QueueLabels(q), s);
  };
  hooks.request_result = [&m](const std::string& code, const std::string& method,
                              const std::string& host) {
    m.Add(metric::kRestClientRequestsTotal, {{"code", code}, {"method", method}, {"host", host}});
  };
  hooks.leader = [&m](const std::string& lease, bool leading) {
    m.Set(metric::kLeaderElectionMasterStatus, {{"name", lease}}, leading ? 1 : 0);
  };
  hooks.event_spam_filtered = [&m] { m.Add(metric::kEventsSpamFilteredTotal, {}); };
  kube::SetMetricsHooks(std::move(hooks));
}

}  // namespace slurmop::reconcile
