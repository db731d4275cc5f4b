// File: controller/reconcile/cluster_protector.h
//
// Carries out PlanProtection (cluster_protection.h) for one SlurmCluster: finalizer and
// annotation on the SlurmCluster (a merge patch conditional on its resourceVersion), the
// finalizer on its credentials Secret (a Secret's content is never read into a log, status or
// Event here; only its metadata matters). The manager hands it the keys "ns/name" of SlurmClusters
// whenever a SlurmCluster changes or a SlurmJob starts or stops naming one. Reads the caches; sends
// requests only when something must change. Two SlurmClusters may share a Secret: the Secret's
// annotation kProtectedForAnnotation names those that keep it, changed with the finalizer in one
// patch conditional on the Secret's resourceVersion (a List of the namespace's SlurmClusters only
// for a Secret kept by an operator from before that annotation).
//
// Until the SlurmJob informer has listed every SlurmJob nothing is decided (a SlurmCluster would
// look unused). Thread-safety: Reconcile() may run concurrently for different keys.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CLUSTER_PROTECTOR_H_
#define SLURMOP_CONTROLLER_RECONCILE_CLUSTER_PROTECTOR_H_

#include <functional>
#include <set>
#include <string>

#include "controller/kube/client.h"
#include "controller/reconcile/cluster_protection.h"
#include "controller/reconcile/ports.h"
#include "controller/reconcile/protection_problems.h"

namespace slurmop::reconcile {

class ClusterProtector {
 public:
  struct JobsView {
    std::function<bool()> synced;  // every SlurmJob is in the cache
    // Whether a cached SlurmJob of `ns` names SlurmCluster `name`.
    std::function<bool(const std::string& ns, const std::string& name)> name_cluster;
  };

  // `events` (may be null) receives a Warning Event on the SlurmCluster when a step is refused
  // (an answer that is neither a conflict nor the API server out of reach): its SlurmJobs submit
  // nothing until the SlurmCluster is kept, and the Event says why.
  ClusterProtector(kube::Client& kube, const ObjectCache& clusters, JobsView jobs,
                   EventSink* events = nullptr)
      : kube_(kube), clusters_(clusters), jobs_(std::move(jobs)), events_(events) {}

  ReconcileResult Reconcile(const std::string& key);

  // Why a SlurmCluster in use could not be kept, by key, for its waiting SlurmJobs (the executor
  // reads it through ClusterCaches); cleared once a reconcile of that key completes.
  const ProtectionProblems& problems() const { return problems_; }

 private:
  absl::Status Apply(const std::string& ns, nlohmann::json& cluster, const ProtectionStep& step);
  // Adds `cluster` to the Secret's owners (kProtectedForAnnotation), with the finalizer.
  absl::Status ProtectSecret(const std::string& ns, const std::string& cluster,
                             const std::string& secret);
  // Takes `cluster` from them; the finalizer goes with the last owner.
  absl::Status ReleaseSecret(const std::string& ns, const std::string& cluster,
                             const std::string& secret);
  // On success `cluster` becomes what the API server answered.
  absl::Status PatchCluster(const std::string& ns, nlohmann::json& cluster,
                            const ProtectionStep& step);
  // The SlurmClusters Secret `s` is kept for: its kProtectedForAnnotation, or for a Secret kept
  // before that annotation, the SlurmClusters kept whose kProtectedSecretAnnotation names it.
  absl::StatusOr<std::set<std::string>> Owners(const std::string& ns, const nlohmann::json& s,
                                               const std::string& secret);

  kube::Client& kube_;
  const ObjectCache& clusters_;
  const JobsView jobs_;
  EventSink* const events_;
  ProtectionProblems problems_;
};

// The facts PlanProtection needs, from a SlurmCluster object.
ProtectionFacts ProtectionFactsOf(const nlohmann::json& cluster, bool in_use);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CLUSTER_PROTECTOR_H_
