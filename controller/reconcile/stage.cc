// File: controller/reconcile/stage.cc
//
// The guards of the stage table (stage.h) and the stage they select.

#include "controller/reconcile/stage.h"

#include "absl/strings/str_cat.h"
#include "controller/reconcile/array_status.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/job_lifetime.h"
#include "controller/reconcile/job_usage.h"
#include "controller/reconcile/ownership.h"
#include "controller/reconcile/runs.h"
#include "controller/slurm/dialects.h"

namespace slurmop::reconcile {

namespace guards {

bool BeingDeleted(const JobFacts& job) { return job.deleting; }

bool SubmittedJobKnown(const Known& k) {
  return k.memo.submitted_job_id || SubmitReturnedId(k.out) || TagSearchFoundJob(k.out);
}

bool ScriptNotLoaded(const Known& k) {
  return k.job.spec.has_script_from() && k.script.kind == ScriptFacts::Kind::kNotLoaded;
}

bool DependenciesUnmet(const Known& k, const DependencyPlan& plan) {
  return k.job.spec.depends_on_size() > 0 &&
         (!plan.impossible.empty() || !plan.waiting_for.empty());
}
bool FinalizerGone(const JobFacts& job) { return !job.has_finalizer; }
bool HasSlurmJob(const JobFacts& job) { return job.status.job_id() != 0; }

int64_t KnownJobId(const Known& k) {
  if (k.job.status.job_id() != 0) return k.job.status.job_id();
  if (k.memo.submitted_job_id) return *k.memo.submitted_job_id;
  if (TagSearchFoundJob(k.out)) return *k.out.tag_lookup->value();
  return 0;
}

bool OrphanPolicy(const JobFacts& job) { return job.spec.deletion_policy() == "Orphan"; }
bool Disowned(const Memo& memo) { return memo.disowned; }
bool JobEnded(const JobFacts& job) { return IsFinalJobState(job.status.job_state()); }
bool ClusterFound(const ClusterFacts& cluster) {
  return cluster.kind == ClusterFacts::Kind::kFound;
}

bool ClusterUnprotected(const ClusterFacts& cluster) {
  return ClusterFound(cluster) && cluster.unprotected;
}

std::optional<v1alpha1::SlurmJobLocation> KnownLocation(const Known& k) {
  if (k.job.status.has_submitted_to()) return k.job.status.submitted_to();
  if (k.job.status.job_id() == 0 && k.memo.submitted_job_id)
    return k.memo.submitted_to.ToOptional();
  return std::nullopt;
}

// (The memo's location counts too: a job id known only from the memo was
// submitted where the memo says, #13 repoint step of the simulation.)
bool ClusterMovedSinceSubmit(const Known& k) {
  const std::optional<v1alpha1::SlurmJobLocation> where = KnownLocation(k);
  return where && ClusterFound(k.cluster) && !SameLocation(*where, LocationOf(k.cluster.spec));
}

bool SubmitTargetRecorded(const Known& k) {
  const v1alpha1::SlurmJobLocation here = LocationOf(k.cluster.spec);
  if (k.job.status.has_submit_target()) return SameLocation(k.job.status.submit_target(), here);
  return k.job.noted_target && SameLocation(*k.job.noted_target, here);
}

v1alpha1::SlurmJobLocation SearchLocation(const Known& k) {
  if (k.memo.submit_outcome_unknown && k.memo.submit_target) return *k.memo.submit_target;
  if (k.job.status.has_submit_target()) return k.job.status.submit_target();
  if (k.job.noted_target) return *k.job.noted_target;
  return LocationOf(k.cluster.spec);
}

bool NoSubmitRecorded(const Known& k) {
  return !k.memo.submit_attempt_at && !k.job.status.has_submit_target() && !k.job.noted_target;
}

bool TagSearchUnsent(const Outcomes& out) {
  return TagSearchFailed(out) && out.tag_lookup_unsent &&
         !IsTransient(out.tag_lookup->status().code());
}

bool RecordNotOurs(const Known& k) {
  if (!k.out.query || !k.out.query->ok() || !k.out.query->value().job) return false;
  return !IsOurRecord(k.job, *k.out.query->value().job, k.out.query->value().from_accounting);
}

bool WriteOutcomeUnknown(const Memo& memo) { return memo.write_outcome_unknown; }

bool EarlierSubmitPossible(const Memo& memo) {
  // UpdateMemo sets no_earlier_submit with started_run; both are read so
  // that a memo built by hand means the same.
  return memo.submit_outcome_unknown || (!memo.no_earlier_submit && !memo.started_run);
}

bool SubmitTried(const Outcomes& out) { return out.submit.has_value(); }
bool SubmitReturnedId(const Outcomes& out) { return out.submit && out.submit->ok(); }
bool TagSearchDone(const Outcomes& out) { return out.tag_lookup.has_value(); }
bool TagSearchFailed(const Outcomes& out) { return out.tag_lookup && !out.tag_lookup->ok(); }
bool TagSearchFoundJob(const Outcomes& out) {
  return out.tag_lookup && out.tag_lookup->ok() && out.tag_lookup->value().has_value();
}
bool TagSearchFoundNothing(const Outcomes& out) {
  return out.tag_lookup && out.tag_lookup->ok() && !out.tag_lookup->value().has_value();
}

bool SettleWindowOpen(const Known& k) {
  if (!k.memo.settle_until) return false;
  // UpdateMemo keeps settle_until only while nothing was proven: a search
  // that found nothing now read a list sent before the window closed.
  return TagSearchFoundNothing(k.out) || (!TagSearchDone(k.out) && *k.memo.settle_until > k.now);
}

namespace {
bool ClusterChangedSinceRefusal(const Known& k) {
  return k.memo.refused_cluster_generation &&
         *k.memo.refused_cluster_generation != k.cluster.generation;
}
}  // namespace

bool StatusSaysRejected(const Known& k) {
  const v1alpha1::Condition* stalled = FindCondition(k.job.status.conditions(), kStalled);
  return stalled != nullptr && stalled->status() == "True" &&
         stalled->reason() == "SubmitRejected" &&
         stalled->observed_generation() == k.job.generation;
}

bool RejectedForThisGeneration(const Known& k) {
  return StatusSaysRejected(k) && !ClusterChangedSinceRefusal(k);
}

bool RefusedRecently(const Known& k) {
  return k.memo.submit_refused_at && k.memo.refused_generation == k.job.generation &&
         !ClusterChangedSinceRefusal(k) &&
         k.now - *k.memo.submit_refused_at < k.opt.permission_retry;
}

bool RunIdChanged(const JobFacts& job) { return job.spec.run_id() != job.status.run_id(); }

bool CancelDue(const Known& k) {
  return !k.out.cancel && (!k.memo.cancel_requested_at ||
                           k.now - *k.memo.cancel_requested_at >= k.opt.cancel_resend);
}
bool CancelFailed(const Outcomes& out) { return out.cancel && !out.cancel->ok(); }
bool QueryDone(const Outcomes& out) { return out.query.has_value(); }
bool QueryFailed(const Outcomes& out) { return out.query && !out.query->ok(); }
bool LooksFailingLong(const Known& k) {
  return k.memo.looks_failing_since &&
         k.now - *k.memo.looks_failing_since >= k.opt.tracking_failure_grace;
}

// A look at Slurm younger than the poll interval, taken since the spec last
// changed. A spec change (a new generation: spec.suspend flipped, say) is not
// served by an older look: what it asks of the Slurm job is only decided
// after a fresh one, so a waiting reconcile never sits out the tracker's
// stretched requeue. A look whose status could not be written does not
// count either (Memo::look_unrecorded): the status would stay behind Slurm
// until the next poll, stretched by the tracker to minutes.
bool PolledRecently(const Known& k, Duration poll) {
  return k.memo.last_query_at && !k.memo.look_unrecorded && k.now - *k.memo.last_query_at < poll &&
         k.job.status.observed_generation() == k.job.generation;
}

bool SlurmKnowsNoJob(const Outcomes& out) {
  return out.query && out.query->ok() && !out.query->value().job;
}
bool SlurmSaysEnded(const Outcomes& out) {
  return out.query && out.query->ok() && out.query->value().job &&
         out.query->value().job->IsFinal();
}

bool ArrayIndexesUnseen(const Known& k) {
  if (!k.job.spec.has_array() || !SlurmSaysEnded(k.out)) return false;
  const slurm::JobInfo& live = *k.out.query->value().job;
  if (!live.array) return false;
  return !ObserveArray(k.job.spec.array(), k.job.status.array(), live).record.IsFinal();
}

bool HoldOutOfDate(const Known& k) {
  return QueryDone(k.out) && k.out.query->ok() && k.out.query->value().job &&
         k.out.query->value().job->state == slurm::BaseState::kPending &&
         k.job.spec.suspend() != k.job.status.held();
}
bool HoldUpdated(const Outcomes& out) { return out.update && out.update->ok(); }

bool DeadlinePassed(const Known& k) { return reconcile::DeadlinePassed(k.job, k.now); }

bool TooManyFailedIndexes(const Known& k) {
  const v1alpha1::SlurmJobSpec& spec = k.job.spec;
  if (!spec.has_array() || !spec.array().has_max_failed_indexes()) return false;
  if (!QueryDone(k.out) || !k.out.query->ok() || !k.out.query->value().job) return false;
  const slurm::JobInfo& live = *k.out.query->value().job;
  if (!live.array) return false;
  ArrayObservation a = ObserveArray(spec.array(), k.job.status.array(), live);
  return static_cast<int64_t>(RetryIndexes(spec.array(), a.status).failed_for_good.size()) >
         spec.array().max_failed_indexes();
}

bool UsageAwaited(const Known& k) {
  const v1alpha1::SlurmJobStatus& s = k.job.status;
  if (RunIdChanged(k.job) || !s.has_start_time() || !s.has_end_time()) return false;
  // An array job's usage is its tasks' (one accounting record each): not recorded yet.
  if (k.job.spec.has_array()) return false;
  if (UsageRecorded(s, CurrentRun(s))) return false;
  if (!ClusterFound(k.cluster) || ClusterMovedSinceSubmit(k)) return false;
  return k.now < Time(std::chrono::seconds(s.end_time().seconds())) + k.opt.usage_window;
}

}  // namespace guards

namespace {

using namespace guards;  // NOLINT: the table reads best unqualified

// The first problem, in the order the user should fix them, that keeps the
// spec from being submitted; nullopt when it can be.
std::optional<Blocker> ClusterBlocker(const Known& k) {
  switch (k.cluster.kind) {
    case ClusterFacts::Kind::kUnspecified:
      return Blocker{"ClusterNotSpecified",
                     "spec.clusterRef.name is empty and the operator runs without "
                     "--default-cluster; name a SlurmCluster of this namespace in "
                     "spec.clusterRef.name. Nothing was submitted.",
                     std::nullopt};
    case ClusterFacts::Kind::kNotFound:
      return Blocker{"ClusterNotFound",
                     k.cluster.cluster_scoped
                         ? absl::StrCat("ClusterSlurmCluster \"", k.cluster.name,
                                        "\" does not exist; create it or fix spec.clusterRef. "
                                        "Nothing was submitted.")
                         : absl::StrCat("SlurmCluster \"", k.cluster.name,
                                        "\" does not exist in namespace \"", k.job.id.ns,
                                        "\"; create it or fix spec.clusterRef.name. Nothing was "
                                        "submitted."),
                     std::nullopt};
    case ClusterFacts::Kind::kRefused:
      // Transient (the Namespace is not in the cache yet): look again soon.
      return Blocker{k.cluster.access.reason, absl::StrCat(k.cluster.access.message, "."),
                     k.cluster.access.transient ? std::optional<Duration>(std::chrono::seconds(5))
                                                : std::nullopt};
    case ClusterFacts::Kind::kFound:
      break;
  }
  if (k.cluster.deleting) {
    return Blocker{
        "ClusterBeingDeleted",
        absl::StrCat(k.cluster.cluster_scoped ? "ClusterSlurmCluster \"" : "SlurmCluster \"",
                     k.cluster.name,
                     "\" is being deleted: no new job is submitted to it (jobs "
                     "already submitted are still followed and cancelled). Name "
                     "another cluster in spec.clusterRef. Nothing was submitted."),
        std::nullopt};
  }
  if (absl::Status s = ValidateClusterSpec(k.cluster.spec); !s.ok()) {
    return Blocker{"InvalidCluster", absl::StrCat(s.message(), ". Nothing was submitted."),
                   std::nullopt};
  }
  if (absl::Status s = ValidateJobSpec(k.job.spec); !s.ok()) {
    return Blocker{"InvalidSpec", absl::StrCat(s.message(), ". Nothing was submitted."),
                   std::nullopt};
  }
  return std::nullopt;
}

// A Secret of spec.environment[].valueFrom that could not be read, or whose values come to more
// than a submit carries (its message names the Secret and the key, never a value): retried like a
// missing script, since the Secret may change.
Blocker SecretMissing(const Known& k) {
  const bool too_large = k.out.secret_env->status().code() == absl::StatusCode::kOutOfRange;
  return Blocker{
      too_large ? "SecretTooLarge" : "SecretNotFound",
      absl::StrCat(
          k.out.secret_env->status().message(), ". Nothing was submitted; retrying every ",
          std::chrono::duration_cast<std::chrono::seconds>(k.opt.missing_script_retry).count(),
          " s."),
      k.opt.missing_script_retry};
}

Blocker ScriptMissing(const Known& k) {
  return Blocker{
      "ScriptNotFound",
      absl::StrCat(
          k.script.error, ". Nothing was submitted; retrying every ",
          std::chrono::duration_cast<std::chrono::seconds>(k.opt.missing_script_retry).count(),
          " s."),
      k.opt.missing_script_retry};
}

}  // namespace

SubmitPlan PlanSubmit(const Known& k) {
  SubmitPlan plan;
  if ((plan.blocker = ClusterBlocker(k))) return plan;
  if (guards::ScriptNotLoaded(k)) {
    plan.needs_script = true;
    return plan;
  }
  std::string script_text = k.job.spec.script();
  if (k.job.spec.has_script_from()) {
    if (k.script.kind == ScriptFacts::Kind::kMissing) {
      plan.blocker = ScriptMissing(k);
      return plan;
    }
    script_text = k.script.text;  // kLoaded
  }
  const SecretEnv* secret_env = nullptr;
  if (NeedsSecretEnv(k.job.spec)) {
    if (!k.out.secret_env) {
      plan.needs_secrets = true;
      return plan;
    }
    if (!k.out.secret_env->ok()) {
      plan.blocker = SecretMissing(k);
      return plan;
    }
    secret_env = &k.out.secret_env->value();
  }
  absl::StatusOr<slurm::JobDescriptor> descriptor = BuildJobDescriptor(
      k.job.id, k.job.spec, k.cluster.spec, script_text, CurrentRun(k.job.status), "", secret_env);
  if (!descriptor.ok()) {
    plan.blocker = Blocker{"InvalidSpec",
                           absl::StrCat(descriptor.status().message(), ". Nothing was submitted."),
                           std::nullopt};
    return plan;
  }
  plan.descriptor = std::move(*descriptor);
  plan.descriptor.deadline = SlurmDeadline(k.job, k.now);
  if (k.job.spec.has_array()) {
    // The first run submits spec.array.indexes; a retry only its failed indexes (array_status.h).
    plan.descriptor.array = RunArrayExpression(k.job.spec.array(), k.job.status.array());
  }
  plan.api_version = slurm::VersionOrDefault(k.cluster.spec.slurm_api_version());
  absl::StatusOr<const slurm::Dialect*> dialect = slurm::DialectFor(plan.api_version);
  if (!dialect.ok()) {
    plan.blocker = Blocker{"InvalidCluster", std::string(dialect.status().message()), std::nullopt};
    return plan;
  }
  if (k.job.spec.depends_on_size() > 0) {
    plan.dependencies = PlanDependencies(k.job.dependencies);
    plan.descriptor.dependency = plan.dependencies.expression;
  }
  absl::StatusOr<nlohmann::json> body = (*dialect)->RenderSubmit(plan.descriptor);
  if (!body.ok()) {
    plan.blocker =
        Blocker{"InvalidSpec",
                absl::StrCat("the job cannot be expressed in Slurm REST ", plan.api_version, ": ",
                             body.status().message(), ". Nothing was submitted."),
                std::nullopt};
    return plan;
  }
  plan.body = std::move(*body);
  return plan;
}

namespace {

Stage DeletionStage(const Known& k) {
  if (FinalizerGone(k.job)) return Stage::kReleased;
  if (KnownJobId(k) == 0) {
    // A search that finds nothing proves nothing while a submit may still
    // land (#13 L2): the finalizer stays, so the late job is found and
    // cancelled rather than left running with nobody owning it.
    const bool may_land =
        EarlierSubmitPossible(k.memo) && ClusterFound(k.cluster) && SettleWindowOpen(k);
    return may_land ? Stage::kDeletionSettling : Stage::kDeletingUnsubmitted;
  }
  // An ended job is neither left running nor re-tagged (a TTL's delete).
  if (JobEnded(k.job)) return Stage::kDeletingEnded;
  if (OrphanPolicy(k.job)) return Stage::kDisowning;
  if (!ClusterFound(k.cluster)) return Stage::kCancelBlocked;
  if (ClusterMovedSinceSubmit(k)) return Stage::kDeletionClusterMoved;
  if (RecordNotOurs(k)) return Stage::kDeletionNotOurs;
  return Stage::kCancelling;
}

// The submission stages after kLoadingScript, given a plan without blocker.
Stage ReadySubmissionStage(const Known& k, const SubmitPlan& plan) {
  if (!k.job.has_finalizer) return Stage::kUnprotected;
  // Every row below reads where the stored status says a submit goes (to search there, or to
  // submit without recording it first): after a write without an answer, not from a view that
  // may predate it.
  if (WriteOutcomeUnknown(k.memo)) return Stage::kConfirmingWrite;
  if (!SubmitTried(k.out) && (RejectedForThisGeneration(k) || RefusedRecently(k))) {
    return Stage::kRefused;
  }
  const bool earlier = EarlierSubmitPossible(k.memo);
  if (earlier && SettleWindowOpen(k)) return Stage::kSettling;
  if (earlier && !TagSearchDone(k.out)) return Stage::kSearching;
  if (TagSearchFailed(k.out)) return Stage::kSearchFailed;
  if (SubmitTried(k.out)) return Stage::kSubmitFailed;
  if (k.job.spec.suspend()) return Stage::kSuspended;
  if (DependenciesUnmet(k, plan.dependencies)) return Stage::kWaitingForDeps;
  if (ClusterUnprotected(k.cluster)) return Stage::kClusterUnprotected;
  // A retry of a rejected spec (the SlurmCluster changed since) first takes the rejection out of
  // the stored status: a restart would otherwise read it as final and never look for this submit.
  if (!SubmitTargetRecorded(k) || StatusSaysRejected(k)) return Stage::kRecordingTarget;
  return Stage::kReadyToSubmit;
}

// A job that ended: what spec.ttlSecondsAfterFinished asks (job_lifetime.h);
// a run whose usage accounting did not show yet is looked at again first,
// unless its TTL already expired.
Stage EndedStage(const Known& k) {
  const TtlVerdict::Kind ttl = DecideTtl(k.job, k.now).kind;
  if (ttl == TtlVerdict::Kind::kExpired) return Stage::kTtlExpired;
  if (UsageAwaited(k)) return Stage::kAwaitingUsage;
  switch (ttl) {
    case TtlVerdict::Kind::kKeptForGitOps:
      return Stage::kKeptForGitOps;
    case TtlVerdict::Kind::kWaiting:
      return Stage::kTtlWaiting;
    case TtlVerdict::Kind::kExpired:
    case TtlVerdict::Kind::kNone:
      break;
  }
  return Stage::kEnded;
}

Stage TrackingStage(const Known& k) {
  if (JobEnded(k.job)) return EndedStage(k);
  if (!ClusterFound(k.cluster)) return Stage::kClusterGone;
  if (ClusterMovedSinceSubmit(k)) return Stage::kClusterMoved;
  if (!QueryDone(k.out)) return Stage::kFollowing;
  if (QueryFailed(k.out)) return Stage::kQueryFailed;
  if (SlurmKnowsNoJob(k.out)) return Stage::kJobMissing;
  if (RecordNotOurs(k)) return Stage::kNotOurs;
  if (!SlurmSaysEnded(k.out) && DeadlinePassed(k)) return Stage::kDeadlineExceeded;
  if (!SlurmSaysEnded(k.out) && TooManyFailedIndexes(k)) return Stage::kTooManyFailedIndexes;
  if (SlurmSaysEnded(k.out) && !ArrayIndexesUnseen(k)) return Stage::kJobEnded;
  if (RunIdChanged(k.job) && (CancelDue(k) || CancelFailed(k.out))) return Stage::kSuperseded;
  if (HoldOutOfDate(k) && !HoldUpdated(k.out)) return Stage::kHolding;
  return Stage::kActive;
}

}  // namespace

bool TargetRidesWithFinalizer(const Known& k, const SubmitPlan& plan) {
  if (!k.opt.note_target_with_finalizer || k.job.has_finalizer || !ClusterFound(k.cluster)) {
    return false;
  }
  JobFacts job = k.job;
  job.has_finalizer = true;
  Memo memo = k.memo;
  memo.no_earlier_submit = true;  // UpdateMemo's rule for Outcomes::added_finalizer
  const Known protected_job{job, k.cluster, k.script, k.out, memo, k.now, k.opt};
  return ReadySubmissionStage(protected_job, plan) == Stage::kRecordingTarget;
}

Assessment Assess(const Known& k) {
  Assessment a;
  if (BeingDeleted(k.job)) {
    a.stage = DeletionStage(k);
  } else if (HasSlurmJob(k.job)) {
    a.stage = TrackingStage(k);
  } else if (SubmittedJobKnown(k)) {
    a.stage = Stage::kRecordingSubmit;
  } else {
    a.plan = PlanSubmit(k);
    a.stage = a.plan->blocker                                 ? Stage::kBlocked
              : a.plan->needs_script || a.plan->needs_secrets ? Stage::kLoadingScript
                                                              : ReadySubmissionStage(k, *a.plan);
  }
  return a;
}

const char* StageName(Stage s) {
  switch (s) {
    case Stage::kReleased:
      return "Released";
    case Stage::kDeletionSettling:
      return "DeletionSettling";
    case Stage::kDeletingUnsubmitted:
      return "DeletingUnsubmitted";
    case Stage::kDisowning:
      return "Disowning";
    case Stage::kDeletingEnded:
      return "DeletingEnded";
    case Stage::kCancelBlocked:
      return "CancelBlocked";
    case Stage::kDeletionClusterMoved:
      return "DeletionClusterMoved";
    case Stage::kDeletionNotOurs:
      return "DeletionNotOurs";
    case Stage::kCancelling:
      return "Cancelling";
    case Stage::kRecordingSubmit:
      return "RecordingSubmit";
    case Stage::kBlocked:
      return "Blocked";
    case Stage::kLoadingScript:
      return "LoadingScript";
    case Stage::kUnprotected:
      return "Unprotected";
    case Stage::kConfirmingWrite:
      return "ConfirmingWrite";
    case Stage::kRefused:
      return "Refused";
    case Stage::kSettling:
      return "Settling";
    case Stage::kSearching:
      return "Searching";
    case Stage::kSearchFailed:
      return "SearchFailed";
    case Stage::kSuspended:
      return "Suspended";
    case Stage::kWaitingForDeps:
      return "WaitingForDeps";
    case Stage::kClusterUnprotected:
      return "ClusterUnprotected";
    case Stage::kRecordingTarget:
      return "RecordingTarget";
    case Stage::kReadyToSubmit:
      return "ReadyToSubmit";
    case Stage::kSubmitFailed:
      return "SubmitFailed";
    case Stage::kKeptForGitOps:
      return "KeptForGitOps";
    case Stage::kTtlWaiting:
      return "TtlWaiting";
    case Stage::kTtlExpired:
      return "TtlExpired";
    case Stage::kAwaitingUsage:
      return "AwaitingUsage";
    case Stage::kEnded:
      return "Ended";
    case Stage::kClusterGone:
      return "ClusterGone";
    case Stage::kSuperseded:
      return "Superseded";
    case Stage::kClusterMoved:
      return "ClusterMoved";
    case Stage::kNotOurs:
      return "NotOurs";
    case Stage::kFollowing:
      return "Following";
    case Stage::kQueryFailed:
      return "QueryFailed";
    case Stage::kJobMissing:
      return "JobMissing";
    case Stage::kDeadlineExceeded:
      return "DeadlineExceeded";
    case Stage::kTooManyFailedIndexes:
      return "TooManyFailedIndexes";
    case Stage::kJobEnded:
      return "JobEnded";
    case Stage::kHolding:
      return "Holding";
    case Stage::kActive:
      return "Active";
  }
  return "?";
}

}  // namespace slurmop::reconcile
