// File: controller/reconcile/cluster_protection.h
//
// A SlurmCluster, and the credentials Secret it names, stay while SlurmJobs name it (review L3,
// issue 13 item 8). Deleting a namespace deletes everything in it at once; without this the
// SlurmCluster and its Secret went first, the SlurmJobs' cancels were blocked for good, the
// namespace hung in Terminating and the Slurm jobs ran on. The operator keeps its finalizer
// kClusterInUseFinalizer on a SlurmCluster that SlurmJobs name, and kCredentialsInUseFinalizer on
// the Secret of its credentialsSecretRef (recorded in the annotation kProtectedSecretAnnotation,
// so that a changed reference releases the old Secret). Nothing secret is copied anywhere.
//
// PlanProtection is the pure decision: from what the caches say to the steps that make it so.
// The steps are ordered so that a crash between two of them leaves nothing unprotected that a
// SlurmJob still needs, and nothing protected for good: the SlurmCluster gets its finalizer
// before its Secret is protected (a Secret protected for a SlurmCluster that its namespace's
// deletion could still delete at once would never be released), a Secret is protected before the
// annotation names it, released before the annotation stops naming it (a Secret protected but
// not recorded yet is released with the finalizer), and the SlurmCluster's finalizer goes last.
// Nothing is submitted to a SlurmCluster before it is kept and its annotation names its Secret
// (ClusterFacts::unprotected, the stage kClusterUnprotected).

#ifndef SLURMOP_CONTROLLER_RECONCILE_CLUSTER_PROTECTION_H_
#define SLURMOP_CONTROLLER_RECONCILE_CLUSTER_PROTECTION_H_

#include <string>
#include <vector>

namespace slurmop::reconcile {

inline constexpr char kClusterInUseFinalizer[] = "hpc.slurmoperator.dev/cluster-in-use";
inline constexpr char kCredentialsInUseFinalizer[] = "hpc.slurmoperator.dev/credentials-in-use";
// On a SlurmCluster: the name of the Secret (same namespace) it put kCredentialsInUseFinalizer on.
inline constexpr char kProtectedSecretAnnotation[] = "hpc.slurmoperator.dev/protected-secret";

struct ProtectionFacts {
  // Some cached SlurmJob (one being deleted included) names the SlurmCluster.
  bool in_use = false;
  bool deleting = false;         // metadata.deletionTimestamp is set
  bool has_finalizer = false;    // kClusterInUseFinalizer is on it
  std::string wanted_secret;     // spec.credentialsSecretRef.name ("" for none)
  std::string protected_secret;  // kProtectedSecretAnnotation ("" for none)
};

// Whether a SlurmCluster with these facts is kept while SlurmJobs name it:
// the finalizer is on and the Secret it names is the one protected. A
// SlurmJob does not submit before that (the stage kClusterUnprotected).
inline bool KeptWhileInUse(const ProtectionFacts& f) {
  return f.has_finalizer && f.protected_secret == f.wanted_secret;
}

struct ProtectionStep {
  enum class Kind {
    kProtectSecret,  // put kCredentialsInUseFinalizer on `secret` (if it exists)
    kReleaseSecret,  // take it off `secret`, unless another SlurmCluster still protects it
    kPatchCluster,   // set the SlurmCluster's finalizer to `finalizer`, the annotation to `secret`
  };
  Kind kind = Kind::kPatchCluster;
  std::string secret;      // "" with kPatchCluster: no annotation
  bool finalizer = false;  // kPatchCluster

  friend bool operator==(const ProtectionStep&, const ProtectionStep&) = default;
};

// The steps, in order; empty when the SlurmCluster is as it should be. A SlurmCluster being
// deleted without the finalizer cannot get it back (the API server refuses new finalizers then).
std::vector<ProtectionStep> PlanProtection(const ProtectionFacts& facts);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CLUSTER_PROTECTION_H_
