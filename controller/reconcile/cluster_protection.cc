// File: controller/reconcile/cluster_protection.cc

#include "controller/reconcile/cluster_protection.h"

namespace slurmop::reconcile {

std::vector<ProtectionStep> PlanProtection(const ProtectionFacts& f) {
  const bool keep = f.in_use && (f.has_finalizer || !f.deleting);
  const std::string secret = keep ? f.wanted_secret : "";
  std::vector<ProtectionStep> steps;
  const bool keep_first = keep && !f.has_finalizer;
  if (keep_first) steps.push_back({ProtectionStep::Kind::kPatchCluster, f.protected_secret, true});
  if (!secret.empty() && secret != f.protected_secret) {
    steps.push_back({ProtectionStep::Kind::kProtectSecret, secret, false});
  }
  if (!f.protected_secret.empty() && f.protected_secret != secret) {
    if (!keep && f.has_finalizer) {
      // The annotation goes first (the cluster keeps its finalizer), so that it never names a
      // Secret already released: stopped between the two, it would say the Secret is kept while
      // it is not, and a SlurmJob naming the cluster again would find nothing to do. Stopped
      // after this step, the branch below releases the Secret.
      steps.push_back({ProtectionStep::Kind::kPatchCluster, "", true});
    }
    steps.push_back({ProtectionStep::Kind::kReleaseSecret, f.protected_secret, false});
  } else if (!keep && f.has_finalizer && f.protected_secret.empty() && !f.wanted_secret.empty()) {
    // A failure between protecting the Secret and recording it may have left it protected.
    steps.push_back({ProtectionStep::Kind::kReleaseSecret, f.wanted_secret, false});
  }
  if (secret != f.protected_secret || (!keep && f.has_finalizer)) {
    steps.push_back({ProtectionStep::Kind::kPatchCluster, secret, keep});
  }
  return steps;
}

}  // namespace slurmop::reconcile
