// File: controller/reconcile/job_lifetime.cc

#include "controller/reconcile/job_lifetime.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "controller/common/time_format.h"
#include "controller/reconcile/conditions.h"
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

namespace {

// spec.activeDeadlineSeconds as used: the CRD sets no maximum, and a sum past int64 (or a Time
// past int64 nanoseconds, year 2262) is undefined and wrapped round, into the past: a job asked
// to run for 10,000,000,000 s was cancelled at once as past its deadline. A deadline more than
// 100 years on is as good as none.
constexpr int64_t kMaxDeadlineSeconds = int64_t{100} * 366 * 24 * 3600;

int64_t DeadlineSeconds(const JobFacts& job) {
  return std::min(job.spec.active_deadline_seconds(), kMaxDeadlineSeconds);
}

// A status's time in seconds, within what a Time holds with room for the deadline (the status
// is the operator's own write, but a restored backup may carry anything).
int64_t BoundedSeconds(int64_t unix_seconds) {
  constexpr int64_t kMaxUnixSeconds = int64_t{4'000'000'000};  // year 2096
  return std::clamp<int64_t>(unix_seconds, 0, kMaxUnixSeconds);
}

}  // namespace

std::optional<Time> ActiveDeadline(const JobFacts& job) {
  if (!job.spec.has_active_deadline_seconds() || !job.status.has_first_submit_time()) {
    return std::nullopt;
  }
  return Time(std::chrono::seconds(BoundedSeconds(job.status.first_submit_time().seconds()) +
                                   DeadlineSeconds(job)));
}

bool DeadlinePassed(const JobFacts& job, Time now) {
  const std::optional<Time> deadline = ActiveDeadline(job);
  return deadline && now >= *deadline && !IsFinalJobState(job.status.job_state());
}

std::optional<int64_t> SlurmDeadline(const JobFacts& job, Time now) {
  if (!job.spec.has_active_deadline_seconds()) return std::nullopt;
  const int64_t first =
      job.status.has_first_submit_time()
          ? BoundedSeconds(job.status.first_submit_time().seconds())
          : std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  return first + DeadlineSeconds(job);
}

bool EndedByDeadline(const JobFacts& job, const slurm::JobInfo& record, Time now) {
  const std::optional<Time> deadline = ActiveDeadline(job);
  if (!deadline || record.state == slurm::BaseState::kCompleted) return false;
  if (record.state == slurm::BaseState::kDeadline) return true;
  const Time end = record.end_time.value_or(now);
  // Slurm cut the time limit to whole minutes before the deadline, so its
  // TIMEOUT comes up to a minute early. Our cancel at the deadline can land
  // on that job while it completes after its TIMEOUT: Slurm then records
  // CANCELLED with the timeout's end time (seen on 22.05 in CI: end 1 s
  // before the deadline, our cancel 1 s after it).
  if (record.state == slurm::BaseState::kTimeout || record.state == slurm::BaseState::kCancelled) {
    return end >= *deadline - std::chrono::minutes(1);
  }
  return end >= *deadline;
}

v1alpha1::SlurmJobStatus StatusDeadlineExceeded(const JobFacts& job, v1alpha1::SlurmJobStatus ended,
                                                Time now) {
  const std::string deadline = absl::StrCat(
      "spec.activeDeadlineSeconds (", job.spec.active_deadline_seconds(),
      " s from the first submit at ",
      FormatRfc3339(Time(std::chrono::seconds(ended.first_submit_time().seconds()))), ")");
  const bool started = ended.has_start_time() && ended.has_end_time() &&
                       ended.start_time().seconds() < ended.end_time().seconds();
  // A job Slurm never started (deadline_ok()) wrote no output either.
  const bool unstarted = ended.job_state() == "DEADLINE" && !started;
  std::string why;
  if (unstarted) {
    why = absl::StrCat(
        "Slurm did not start it: its time limit would have ended after the deadline of ", deadline,
        " (Slurm starts a job with a deadline only when it can finish by then). Not retried.");
  } else if (ended.job_state() == "TIMEOUT") {
    why = absl::StrCat("it reached the time limit Slurm cut to end by the deadline of ", deadline,
                       ". Not retried.");
  } else {
    why = absl::StrCat(deadline, " passed. Not retried.");
  }
  const std::string msg = absl::StrCat("Slurm job ", ended.job_id(), " ended ", ended.job_state(),
                                       ": ", why, unstarted ? "" : OutputHint(ended));
  ended.set_phase(std::string(kPhaseFailed));
  ended.set_reason("DeadlineExceeded");
  ended.set_message(msg);
  auto* conds = ended.mutable_conditions();
  const int64_t gen = job.generation;
  SetCondition(conds, kReady, ConditionStatus::kFalse, "DeadlineExceeded", msg, gen, now);
  SetCondition(conds, kStalled, ConditionStatus::kTrue, "DeadlineExceeded", msg, gen, now);
  SetCondition(conds, kFailed, ConditionStatus::kTrue, "DeadlineExceeded", msg, gen, now);
  RemoveCondition(conds, kSucceeded);
  return ended;
}

}  // namespace slurmop::reconcile
