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
// The steps are ordered so that a stop between any two of them (a conflict, a crash), followed by
// any change of use or of the Secret reference, leaves nothing unprotected that a SlurmJob relies
// on and nothing protected for good: the SlurmCluster gets its finalizer before its Secret is
// protected (a Secret protected for a SlurmCluster that its namespace's deletion could still
// delete at once would never be released); a Secret is named in the annotation
// kPendingSecretAnnotation before it is protected and in kProtectedSecretAnnotation only after,
// so every Secret the cluster may have protected is remembered; a Secret is moved out of
// kProtectedSecretAnnotation (into the pending one) before it is released, so the protected
// annotation never names a released Secret; a pending Secret that is not wanted is released; the
// SlurmCluster's finalizer goes last. Nothing is submitted to a SlurmCluster before it is kept and
// its protected annotation names its Secret (ClusterFacts::unprotected, the stage
// kClusterUnprotected). tests/reconcile/cluster_protection_test.cc checks every history of up to
// three plans, each stopped after any step.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CLUSTER_PROTECTION_H_
#define SLURMOP_CONTROLLER_RECONCILE_CLUSTER_PROTECTION_H_

#include <string>
#include <vector>

namespace slurmop::reconcile {

inline constexpr char kClusterInUseFinalizer[] = "hpc.slurmoperator.dev/cluster-in-use";
inline constexpr char kCredentialsInUseFinalizer[] = "hpc.slurmoperator.dev/credentials-in-use";
// On a SlurmCluster: the name of the Secret (same namespace) it put kCredentialsInUseFinalizer on.
inline constexpr char kProtectedSecretAnnotation[] = "hpc.slurmoperator.dev/protected-secret";
// On a Secret: the SlurmClusters (names, comma-separated, sorted) that put
// kCredentialsInUseFinalizer on it. Added to and taken from in the same conditional patch as the
// finalizer, so that two SlurmClusters sharing the Secret never release it under each other.
inline constexpr char kProtectedForAnnotation[] = "hpc.slurmoperator.dev/protected-for";
// On a SlurmCluster: a Secret it may have put kCredentialsInUseFinalizer on without relying on it
// (being protected, or being released); released unless it becomes the protected one.
inline constexpr char kPendingSecretAnnotation[] = "hpc.slurmoperator.dev/pending-secret";

struct ProtectionFacts {
  // Some cached SlurmJob (one being deleted included) names the SlurmCluster.
  bool in_use = false;
  bool deleting = false;         // metadata.deletionTimestamp is set
  bool has_finalizer = false;    // kClusterInUseFinalizer is on it
  std::string wanted_secret;     // spec.credentialsSecretRef.name ("" for none)
  std::string protected_secret;  // kProtectedSecretAnnotation ("" for none)
  std::string pending_secret;    // kPendingSecretAnnotation ("" for none)
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
    // set the SlurmCluster's finalizer to `finalizer`, kProtectedSecretAnnotation to `secret` and
    // kPendingSecretAnnotation to `pending` ("": no annotation)
    kPatchCluster,
  };
  Kind kind = Kind::kPatchCluster;
  std::string secret;
  bool finalizer = false;  // kPatchCluster
  std::string pending;     // kPatchCluster

  friend bool operator==(const ProtectionStep&, const ProtectionStep&) = default;
};

// The steps, in order; empty when the SlurmCluster is as it should be. A SlurmCluster being
// deleted without the finalizer cannot get it back (the API server refuses new finalizers then).
std::vector<ProtectionStep> PlanProtection(const ProtectionFacts& facts);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CLUSTER_PROTECTION_H_
