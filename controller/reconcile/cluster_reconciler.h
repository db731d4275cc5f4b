// File: controller/reconcile/cluster_reconciler.h
//
// The SlurmCluster reconciler: probes a cluster (GET /slurm/<version>/ping/
// through callSlurmRestApi), writes its Ready condition (cluster_status.h
// decides it), records an Event when readiness changes or stays bad, and
// registers the cluster with the tracker so that it is swept for orphaned
// jobs. The manager hands it the keys "scl:namespace/name" of SlurmClusters
// and "scl:/name" of ClusterSlurmClusters. Before any call it asks
// DecideClusterAccess (cluster_access.h) whose identity it may use: a refused
// cluster gets Ready=False with the reason, an Event, and no request at all.
//
// Thread-safety: Reconcile() may run concurrently for different keys.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CLUSTER_RECONCILER_H_
#define SLURMOP_CONTROLLER_RECONCILE_CLUSTER_RECONCILER_H_

#include <string>

#include "controller/common/clock.h"
#include "controller/kube/client.h"
#include "controller/reconcile/cluster_access.h"
#include "controller/reconcile/cluster_status.h"
#include "controller/reconcile/job_tracker.h"
#include "controller/reconcile/metered_slurm.h"
#include "controller/reconcile/ports.h"

namespace slurmop::reconcile {

class ClusterReconciler {
 public:
  ClusterReconciler(kube::Client& kube, const ObjectCache& clusters,
                    agentplatform::SlurmApi& slurm_api, CredentialsResolver& credentials,
                    EventSink& events, const Clock& clock)
      : kube_(kube),
        clusters_(clusters),
        slurm_(slurm_api),
        credentials_(credentials),
        events_(events),
        clock_(clock) {}

  // Set before the first Reconcile (nullptr: no batched tracking).
  void SetTracker(JobTracker* tracker) { tracker_ = tracker; }
  // Set before the first Reconcile: the ClusterSlurmClusters (nullptr: none) and who may use
  // which identity.
  void SetClusterAccess(const ObjectCache* cluster_clusters, ClusterAccessOptions options) {
    cluster_clusters_ = cluster_clusters;
    access_ = std::move(options);
  }

  // Probes the SlurmCluster "namespace/name" and writes its Ready condition.
  ReconcileResult Reconcile(const std::string& key);

 private:
  ProbeOutcome Probe(const std::string& key, const ClusterIdentity& identity,
                     const v1alpha1::SlurmClusterSpec& spec);
  ReconcileResult WriteStatus(const std::string& key, bool cluster_scoped,
                              const nlohmann::json& cached, const v1alpha1::SlurmCluster& cluster,
                              const v1alpha1::SlurmClusterStatus& desired);

  kube::Client& kube_;
  const ObjectCache& clusters_;
  MeteredSlurm slurm_;
  CredentialsResolver& credentials_;
  EventSink& events_;
  const Clock& clock_;
  JobTracker* tracker_ = nullptr;
  const ObjectCache* cluster_clusters_ = nullptr;
  ClusterAccessOptions access_;
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CLUSTER_RECONCILER_H_
