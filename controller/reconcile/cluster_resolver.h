// File: controller/reconcile/cluster_resolver.h
//
// Finds the cluster a SlurmJob names (a SlurmCluster of its namespace, or a ClusterSlurmCluster)
// in the informer caches, and decides with DecideClusterAccess (cluster_access.h) whether the job
// may use it and with which identity. Also the same decision for a cluster's own probe. Reads
// caches only: no requests.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CLUSTER_RESOLVER_H_
#define SLURMOP_CONTROLLER_RECONCILE_CLUSTER_RESOLVER_H_

#include <string>

#include "controller/reconcile/cluster_access.h"
#include "controller/reconcile/decide.h"
#include "controller/reconcile/ports.h"
#include "controller/reconcile/protection_problems.h"

namespace slurmop::reconcile {

// The caches a cluster is looked up in.
struct ClusterCaches {
  const ObjectCache* namespaced = nullptr;      // SlurmClusters
  const ObjectCache* cluster_scoped = nullptr;  // ClusterSlurmClusters (nullptr: none known)
  const ObjectCache* namespaces = nullptr;      // Namespaces (nullptr: none known)
  // Why the protector could not keep a SlurmCluster (nullptr: nothing is ever on record).
  const ProtectionProblems* protection_problems = nullptr;
};

// The cluster of a SlurmJob of namespace `ns` with `ref` (an empty name means `default_cluster`,
// a SlurmCluster), as ClusterFacts: kUnspecified, kNotFound, kRefused (with the reason) or kFound
// (with the identity to call it with).
ClusterFacts ResolveJobCluster(const ClusterCaches& caches, const std::string& ns,
                               const v1alpha1::ClusterReference& ref,
                               const std::string& default_cluster,
                               const ClusterAccessOptions& options);

// Who may probe the cluster `object` (a SlurmCluster, or a ClusterSlurmCluster when
// `cluster_scoped`) with `spec`: the SlurmCluster's own namespace, or the installer.
ClusterAccess ProbeAccess(const nlohmann::json& object, bool cluster_scoped,
                          const v1alpha1::SlurmClusterSpec& spec,
                          const ClusterAccessOptions& options);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CLUSTER_RESOLVER_H_
