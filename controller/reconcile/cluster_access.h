// File: controller/reconcile/cluster_access.h
//
// Whose identity the operator lends to whom. One pure decision: "may the SlurmJobs (or the probe)
// of namespace N use cluster C, and with which Google identity?" Every Slurm call the operator
// makes for a SlurmJob or a cluster probe goes through it first, so no tenant input can make the
// operator call a cluster with its own identity unless the installer said so.
//
// The trust model (README "Security model"):
//  * The installer is trusted: the operator's flags, its own Application Default Credentials, the
//    cluster-scoped ClusterSlurmClusters and the operator's own namespace.
//  * Namespace tenants are not: a SlurmCluster, SlurmJob or Secret in their namespace can only
//    make the operator act with credentials of that same namespace (credentialsSecretRef), or with
//    the operator's identity when the installer allowed it for namespaced SlurmClusters
//    (--allow-operator-identity-for-namespaced-clusters), or through a ClusterSlurmCluster whose
//    namespaceSelector matches their namespace.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CLUSTER_ACCESS_H_
#define SLURMOP_CONTROLLER_RECONCILE_CLUSTER_ACCESS_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "slurmoperator/v1alpha1/common.pb.h"
#include "slurmoperator/v1alpha1/slurmcluster.pb.h"

namespace slurmop::reconcile {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

// The Google identity a cluster is called with.
struct ClusterIdentity {
  enum class Source {
    kNone,      // none: nothing may be called (the default, so a forgotten check fails closed)
    kOperator,  // the operator's own Application Default Credentials
    kSecret,    // a credentials JSON file in a Secret
  };
  Source source = Source::kNone;
  std::string secret_namespace;  // kSecret
  std::string secret_name;       // kSecret
  std::string secret_key;        // kSecret ("credentials.json" when the reference has none)
  // kSecret: the Secret is the installer's (a ClusterSlurmCluster's, in the operator's own
  // namespace, which tenants cannot write), so its credentials file may use what the operator's
  // own ADC may (external_account with a file or url source, any token URL). false: a tenant's
  // Secret, restricted (agentplatform::CredentialsTrust::kTenant).
  bool installer_secret = false;

  friend bool operator==(const ClusterIdentity&, const ClusterIdentity&) = default;
};

// What the installer decided (operator flags).
struct ClusterAccessOptions {
  // --allow-operator-identity-for-namespaced-clusters: a namespaced SlurmCluster without
  // credentialsSecretRef is called with the operator's identity. Off by default: right for one
  // trusted team (and the local demo), wrong when namespaces belong to different tenants.
  bool allow_operator_identity_for_namespaced_clusters = false;
  // Where the Secrets named by ClusterSlurmClusters live: the operator's own namespace.
  std::string operator_namespace;
};

// The cluster being asked for.
struct ClusterAccessRequest {
  bool cluster_scoped = false;  // a ClusterSlurmCluster (else a SlurmCluster)
  std::string cluster_name;
  // The SlurmCluster's namespace, or the namespace of the SlurmJob asking for a
  // ClusterSlurmCluster; "" for the probe of a ClusterSlurmCluster (no tenant involved).
  std::string tenant_namespace;
  // The tenant namespace's labels; nullopt when the Namespace is not known (yet).
  std::optional<std::map<std::string, std::string>> namespace_labels;
  // The cluster's spec.credentialsSecretRef, if set.
  std::optional<v1alpha1::SecretKeySelector> credentials_secret_ref;
  // ClusterSlurmCluster only: spec.namespaceSelector, if set.
  std::optional<v1alpha1::LabelSelector> namespace_selector;
};

struct ClusterAccess {
  bool allowed = false;
  ClusterIdentity identity;  // when allowed
  // When refused: a condition reason (CamelCase) and a message saying what to do.
  std::string reason;
  std::string message;
  // Refused only until something outside the cluster's spec is known (the Namespace is not in the
  // cache yet): retry, do not report it as the user's mistake.
  bool transient = false;
};

ClusterAccess DecideClusterAccess(const ClusterAccessRequest& request,
                                  const ClusterAccessOptions& options);

// Whether `labels` satisfy `selector` (metav1.LabelSelector semantics: every matchLabels entry and
// every matchExpressions requirement must hold; {} matches everything). InvalidArgument, naming the
// requirement, for an unknown operator, In/NotIn without values, or Exists/DoesNotExist with
// values.
absl::StatusOr<bool> SelectorMatches(const v1alpha1::LabelSelector& selector,
                                     const std::map<std::string, std::string>& labels);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CLUSTER_ACCESS_H_
