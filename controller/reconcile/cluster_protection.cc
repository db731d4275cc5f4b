// File: controller/reconcile/cluster_protection.cc

#include "controller/reconcile/cluster_protection.h"

namespace slurmop::reconcile {
namespace {

// The plan under construction, with what the SlurmCluster will say once its steps are done.
class Planner {
 public:
  explicit Planner(const ProtectionFacts& f)
      : finalizer_(f.has_finalizer), protected_(f.protected_secret), pending_(f.pending_secret) {}

  void Protect(const std::string& secret) {
    steps_.push_back({ProtectionStep::Kind::kProtectSecret, secret});
  }
  void Release(const std::string& secret) {
    steps_.push_back({ProtectionStep::Kind::kReleaseSecret, secret});
  }
  void Patch(bool finalizer, const std::string& protected_secret, const std::string& pending) {
    steps_.push_back({ProtectionStep::Kind::kPatchCluster, protected_secret, finalizer, pending});
    finalizer_ = finalizer;
    protected_ = protected_secret;
    pending_ = pending;
  }

  bool finalizer() const { return finalizer_; }
  const std::string& protected_secret() const { return protected_; }
  const std::string& pending() const { return pending_; }
  std::vector<ProtectionStep> Take() { return std::move(steps_); }

 private:
  bool finalizer_;
  std::string protected_, pending_;
  std::vector<ProtectionStep> steps_;
};

}  // namespace

std::vector<ProtectionStep> PlanProtection(const ProtectionFacts& f) {
  const bool keep = f.in_use && (f.has_finalizer || !f.deleting);
  const std::string target = keep ? f.wanted_secret : "";
  Planner plan(f);
  std::string pending = f.pending_secret;
  if (!keep && f.has_finalizer && f.protected_secret.empty() && pending.empty()) {
    // An operator from before the pending annotation protected a Secret before recording it.
    pending = f.wanted_secret;
  }
  // A Secret a move stopped midway may have left protected, wanted no more: released first (the
  // annotation still naming it is overwritten by the next patch).
  if (!pending.empty() && pending != target && pending != f.protected_secret) {
    plan.Release(pending);
  }
  if (f.protected_secret != target) {
    const bool finalizer = keep || f.has_finalizer;
    if (!target.empty()) {
      // Recorded before it is protected, so that a stop right after is undone by the next plan.
      if (plan.pending() != target || plan.finalizer() != finalizer) {
        plan.Patch(finalizer, f.protected_secret, target);
      }
      plan.Protect(target);
    }
    // The old Secret is no longer named as protected before it is released: a plan stopped in
    // between never leaves the annotation naming a released Secret.
    const std::string old = f.protected_secret;
    plan.Patch(finalizer, target, old);
    if (!old.empty()) plan.Release(old);
  }
  const bool settled =
      plan.pending().empty() && plan.finalizer() == keep && plan.protected_secret() == target;
  if (!settled) plan.Patch(keep, target, "");
  return plan.Take();
}

}  // namespace slurmop::reconcile
