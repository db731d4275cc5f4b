// File: controller/reconcile/cluster_protection.cc

#include "controller/reconcile/cluster_protection.h"

namespace slurmop::reconcile {

std::vector<ProtectionStep> PlanProtection(const ProtectionFacts& f) {
  const bool keep = f.in_use && (f.has_finalizer || !f.deleting);
  const std::string secret = keep ? f.wanted_secret : "";
  std::vector<ProtectionStep> steps;
  if (!secret.empty() && secret != f.protected_secret) {
    steps.push_back({ProtectionStep::Kind::kProtectSecret, secret, false});
  }
  if (!f.protected_secret.empty() && f.protected_secret != secret) {
    steps.push_back({ProtectionStep::Kind::kReleaseSecret, f.protected_secret, false});
  }
  if (keep != f.has_finalizer || secret != f.protected_secret) {
    steps.push_back({ProtectionStep::Kind::kPatchCluster, secret, keep});
  }
  return steps;
}

}  // namespace slurmop::reconcile
