// File: controller/reconcile/job_lifetime.h
//
// How long a SlurmJob lives: spec.ttlSecondsAfterFinished (as batch/v1
// Job's). Pure; the stages kKeptForGitOps, kTtlWaiting and kTtlExpired
// (stage.h) act on it.
//
// Contract (DecideTtl):
//  * kNone: no TTL, or the job has not finished: its jobState is not final,
//    status.endTime is not set, or spec.runId asks for another run.
//  * kKeptForGitOps: finished with a TTL, but a GitOps tool manages the
//    SlurmJob (GitOpsManager): it is never deleted, since the tool would
//    create it again under a new uid and Slurm would run the job again.
//  * kWaiting: finished at E with TTL T and now < E + T; `wait` = E + T - now.
//  * kExpired: now >= E + T: the SlurmJob is deleted (with its uid as
//    precondition, so a SlurmJob re-created under the same name is not).
//
// And spec.activeDeadlineSeconds D, counted from status.firstSubmitTime F
// (the first submit of the current runId; retries keep it, a new runId
// starts it afresh): the job passed its deadline from F + D on. Each submit
// sends Slurm the same deadline (F + D; F is the submit's own time for the
// first), so Slurm ends the job there even while the operator is down.

#ifndef SLURMOP_CONTROLLER_RECONCILE_JOB_LIFETIME_H_
#define SLURMOP_CONTROLLER_RECONCILE_JOB_LIFETIME_H_

#include <map>
#include <optional>
#include <string>

#include "controller/common/clock.h"
#include "controller/reconcile/decide.h"

namespace slurmop::reconcile {

// The label or annotation that shows which GitOps tool manages an object.
struct GitOpsMarker {
  std::string tool;  // "Argo CD" | "Flux"
  std::string kind;  // "annotation" | "label"
  std::string key;   // e.g. argocd.argoproj.io/tracking-id
  std::string value;
};

// The first marker found: Argo CD's annotation argocd.argoproj.io/tracking-id,
// its labels app.kubernetes.io/instance and argocd.argoproj.io/instance, Flux's
// labels kustomize.toolkit.fluxcd.io/{name,namespace} and
// helm.toolkit.fluxcd.io/{name,namespace}. nullopt: none.
std::optional<GitOpsMarker> GitOpsManager(const std::map<std::string, std::string>& labels,
                                          const std::map<std::string, std::string>& annotations);

struct TtlVerdict {
  enum class Kind { kNone, kKeptForGitOps, kWaiting, kExpired };
  Kind kind = Kind::kNone;
  Time expires_at{};                   // all but kNone
  Duration wait{};                     // kWaiting
  std::optional<GitOpsMarker> gitops;  // kKeptForGitOps
};

TtlVerdict DecideTtl(const JobFacts& job, Time now);

// F + D; nullopt without spec.activeDeadlineSeconds or before the first submit.
std::optional<Time> ActiveDeadline(const JobFacts& job);

// The deadline passed and the job's status is not final yet.
bool DeadlinePassed(const JobFacts& job, Time now);

// Slurm's `deadline` (unix seconds) for a submit at `now`; nullopt: none.
std::optional<int64_t> SlurmDeadline(const JobFacts& job, Time now);

// A run that ended without success because of the deadline: Slurm's
// DEADLINE state, or an end at or after it (our cancel).
bool EndedByDeadline(const JobFacts& job, const slurm::JobInfo& record, Time now);

// `ended` (the run's final status) as a run the deadline ended: phase
// Failed, reason DeadlineExceeded, in the message and the conditions.
v1alpha1::SlurmJobStatus StatusDeadlineExceeded(const JobFacts& job, v1alpha1::SlurmJobStatus ended,
                                                Time now);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_JOB_LIFETIME_H_
