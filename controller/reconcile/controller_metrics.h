// File: controller/reconcile/controller_metrics.h
//
// The standard controller metrics (controller-runtime's and client-go's names, types, label sets
// and buckets; see server/metric_names.h): declares their families in a registry and routes the
// kube plumbing's hooks (kube/metrics_hooks.h: work queue, REST client, leader election) into it.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CONTROLLER_METRICS_H_
#define SLURMOP_CONTROLLER_RECONCILE_CONTROLLER_METRICS_H_

#include <vector>

#include "controller/server/metrics.h"

namespace slurmop::reconcile {

// Declares the families and installs kube::SetMetricsHooks() feeding `metrics`. Call once at
// start-up, before any queue, client or elector runs (the hooks are not synchronised).
void InstallControllerMetrics(server::Metrics& metrics);

// controller-runtime's controller_runtime_reconcile_time_seconds buckets (0.005 .. 60 s).
std::vector<double> ReconcileTimeBuckets();
// client-go's work queue duration buckets: 10 ns * 10^i for i in 0..11 (controller-runtime's
// prometheus.ExponentialBuckets(10e-9, 10, 12)).
std::vector<double> WorkqueueDurationBuckets();

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CONTROLLER_METRICS_H_
