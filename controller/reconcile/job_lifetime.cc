// File: controller/reconcile/job_lifetime.cc

#include "controller/reconcile/job_lifetime.h"

#include <array>

#include "controller/reconcile/job_status.h"

namespace slurmop::reconcile {
namespace {

struct MarkerKey {
  const char* tool;
  bool annotation;
  const char* key;
};

constexpr std::array<MarkerKey, 7> kMarkers = {{
    {"Argo CD", true, "argocd.argoproj.io/tracking-id"},
    {"Argo CD", false, "argocd.argoproj.io/instance"},
    {"Argo CD", false, "app.kubernetes.io/instance"},
    {"Flux", false, "kustomize.toolkit.fluxcd.io/name"},
    {"Flux", false, "kustomize.toolkit.fluxcd.io/namespace"},
    {"Flux", false, "helm.toolkit.fluxcd.io/name"},
    {"Flux", false, "helm.toolkit.fluxcd.io/namespace"},
}};

// When the job finished (status.endTime), if it did.
std::optional<Time> FinishedAt(const JobFacts& job) {
  const v1alpha1::SlurmJobStatus& s = job.status;
  if (!IsFinalJobState(s.job_state()) || !s.has_end_time()) return std::nullopt;
  if (job.spec.run_id() != s.run_id()) return std::nullopt;  // another run is due
  return Time(std::chrono::seconds(s.end_time().seconds()));
}

}  // namespace

std::optional<GitOpsMarker> GitOpsManager(const std::map<std::string, std::string>& labels,
                                          const std::map<std::string, std::string>& annotations) {
  for (const MarkerKey& m : kMarkers) {
    const auto& in = m.annotation ? annotations : labels;
    if (auto it = in.find(m.key); it != in.end()) {
      return GitOpsMarker{m.tool, m.annotation ? "annotation" : "label", m.key, it->second};
    }
  }
  return std::nullopt;
}

TtlVerdict DecideTtl(const JobFacts& job, Time now) {
  TtlVerdict v;
  if (!job.spec.has_ttl_seconds_after_finished()) return v;
  const std::optional<Time> finished = FinishedAt(job);
  if (!finished) return v;
  v.expires_at = *finished + std::chrono::seconds(job.spec.ttl_seconds_after_finished());
  if ((v.gitops = GitOpsManager(job.labels, job.annotations))) {
    v.kind = TtlVerdict::Kind::kKeptForGitOps;
  } else if (now < v.expires_at) {
    v.kind = TtlVerdict::Kind::kWaiting;
    v.wait = v.expires_at - now;
  } else {
    v.kind = TtlVerdict::Kind::kExpired;
  }
  return v;
}

}  // namespace slurmop::reconcile
